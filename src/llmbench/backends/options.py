"""Options every engine understands the meaning of (a sweep's `options`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class EngineOptions(BaseModel):
    """Options every engine understands the meaning of. A backend refuses a value it cannot
    honour (e.g. tensor_parallel > 1 on llama.cpp) instead of silently ignoring it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tensor_parallel: int = Field(1, ge=1)
    pipeline_parallel: int = Field(1, ge=1)
    kv_block_size: int | None = Field(None, ge=1, description="KV-cache block (page) size in tokens")
    kv_cache_dtype: str | None = Field(None, description="auto|fp16|bf16|fp8|q8_0|q4_0 ...")
    weight_quant: str | None = Field(None, description="weight quantization, e.g. int8, fp8")
    compile: bool = False
    attn_impl: str | None = Field(None, description="sdpa|eager|flash_attention_2 ...")
    kv_cache: Literal["dynamic", "static"] | None = None
    # A launched server's mode, not an offline option (no backend's `supports` has it): left out
    # of dumps so that offline point keys stay what they were.
    embedding: bool = Field(False, exclude=True, description="serve the model's pooling "
                            "endpoints (embeddings, score/rerank) instead of generation")
