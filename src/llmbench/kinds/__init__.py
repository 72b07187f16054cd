"""Every kind of point, one folder each, side by side: inference (offline and perplexity),
serving and training. Each owns its config and points, its PointKind (launch/kind.py), its
workload (the timing loop) and its summary; the pipeline (launch/) imports none of them: it
finds a kind by name in the registry (registry.py), where each kind is one line."""
