"""llmbench: benchmarks for LLM inference and training on AI accelerators.

Importing this package is cheap: engines (torch, vllm, llama_cpp) are imported only inside
the backend or workload that runs them.
"""

__version__ = "0.1.0"
SCHEMA_VERSION = "1.0"
