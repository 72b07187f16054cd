"""Embedding requests: POST /v1/embeddings with `inputs` texts of the asked token lengths
(--input-len each; shapes/pooled.py plans them and reads the answer as one event).

Judged: one vector per input, each of `dimension` floats (when given: the model's hidden
size; else all of one length), all finite. A server that returns one vector per token
(llama-cpp-python's server on a model without a pooling type) is `not_pooled`.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from llmbench.loadgen.client import RequestSpec
from llmbench.loadgen.shapes.pooled import PooledShape, texts_of


class EmbeddingsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    inputs: int = Field(1, ge=1, le=4096, description="texts per request")
    dimension: int | None = Field(None, ge=1, description="the vectors' expected length (the "
                                                          "model's hidden size)")


class Embeddings(PooledShape):
    name = "embeddings"
    Options = EmbeddingsOptions

    @property
    def texts_per_request(self) -> int:
        return self.options.inputs

    def path(self, api: str) -> str:
        return "/v1/embeddings"

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        return {"model": body["model"], "input": texts_of(spec), "encoding_format": "float",
                **(self.cfg.extra_body or {})}

    def judge_answer(self, obj: dict, n_texts: int) -> str | None:
        vecs = vectors(obj)
        if vecs is None:
            return "no_vectors"
        if len(vecs) != n_texts:
            return "wrong_count"
        if any(v and isinstance(v[0], list) for v in vecs):
            return "not_pooled"
        dims = {len(v) for v in vecs}
        want = self.options.dimension
        if len(dims) != 1 or (want is not None and dims != {want}):
            return "wrong_dimension"
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for v in vecs for x in v):
            return "not_finite"
        return None


def vectors(obj: dict) -> list[list] | None:
    """The answer's vectors in input order (OpenAI's `data[i].embedding`), or None."""
    data = obj.get("data")
    if not isinstance(data, list) or not all(isinstance(d, dict) and isinstance(d.get("embedding"), list)
                                             for d in data):
        return None
    return [d["embedding"] for d in sorted(data, key=lambda d: d.get("index", 0))]
