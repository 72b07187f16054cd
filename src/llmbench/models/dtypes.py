"""Bytes per parameter of every weight, activation and KV-cache type llmbench names: the plain
dtypes and the GGUF block types (a block's bytes over its weights: Q4_0 is 16 bytes of 4-bit
values plus a 2-byte fp16 scale per 32 weights). A model format's fact, read by the roofline and
by the engines' weight rules alike."""

from __future__ import annotations

BYTES = {"fp32": 4.0, "tf32": 4.0, "bf16": 2.0, "fp16": 2.0, "fp8": 1.0, "int8": 1.0,
         "int4": 0.5, "q8_0": 34 / 32, "q4_0": 18 / 32, "q4_1": 20 / 32, "q5_0": 22 / 32,
         "q5_1": 24 / 32, "q4_k": 144 / 256, "q6_k": 210 / 256}


def dtype_bytes(dtype: str) -> float:
    try:
        return BYTES[dtype.lower()]
    except KeyError:
        raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(BYTES)}") from None
