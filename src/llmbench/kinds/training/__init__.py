"""Training study: block micro-benchmark, GPT-2, GenSLM (`llmbench train`). Imports nothing heavy."""
