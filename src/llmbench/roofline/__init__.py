"""Roofline bounds: the least time a model x hardware x workload can take (model.py, pure
arithmetic; flops.py, the FLOP count), and the one step that puts them on a record
(annotate.py, from the record's workload built once by workload.py)."""

from llmbench.roofline.annotate import annotate, bound_for

__all__ = ["annotate", "bound_for"]
