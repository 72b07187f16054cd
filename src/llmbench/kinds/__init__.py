"""Every kind of point, one folder each, side by side: inference (offline and perplexity),
serving and training. Each owns its config and points, its PointKind (launch/kind.py), its
workload (the timing loop) and its summary; the pipeline (launch/) imports none of them."""
