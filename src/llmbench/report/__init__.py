"""Figures over the store (one library for the static report and the live dashboard).

Needs the `dashboard` extra (plotly, pandas); `import llmbench` never imports this package.
"""
