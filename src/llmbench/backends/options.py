"""Options every engine understands the meaning of (a sweep's `options`)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_serializer

from llmbench.backends.speculation import Speculation, parse_speculation
from llmbench.models.lora import LoraSet


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
    # Also a launched server's mode only (the lora request shape's adapters), out of dumps.
    lora: LoraSet | None = Field(None, exclude=True, description="LoRA adapters the server "
                                 "loads beside the base model (models/lora.py LoraSet)")
    speculative: Speculation | None = Field(None, description="speculative decoding: "
                                            "'ngram:k=4' | 'draft:MODEL,k=4' (backends/speculation.py)")

    @field_validator("speculative", mode="before")
    @classmethod
    def _speculative_text(cls, v):
        return parse_speculation(v, "options.speculative") if isinstance(v, str) else v

    @model_serializer(mode="wrap")
    def _without_unset_speculation(self, handler):
        # no speculation leaves the dump -- and so every earlier point key -- as it was
        out = handler(self)
        if out.get("speculative", 0) is None:
            del out["speculative"]
        return out
