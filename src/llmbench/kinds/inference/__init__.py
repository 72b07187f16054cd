"""Inference points (offline and perplexity): their spec, kind, workloads and prompts."""
