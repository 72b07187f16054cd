"""Importers: external result data (other tools' outputs, the published study) as ordinary
records in the store, all through one protocol (common.py) and one path (registry.py)."""
