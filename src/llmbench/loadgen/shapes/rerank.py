"""Reranking requests: a query (the planned prompt) and `documents` texts, each of the asked
token lengths (--input-len; shapes/pooled.py plans them and reads the answer as one event),
sent to vLLM's /v1/rerank (`route=rerank`: {query, documents}) or /score (`route=score`:
{text_1, text_2}); inputs/s counts the documents scored.

Judged: one finite score per document (rerank: `results[].relevance_score`, score:
`data[].score`).
"""

from __future__ import annotations

import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from llmbench.loadgen.client import RequestSpec
from llmbench.loadgen.shapes.pooled import PooledShape, texts_of

ROUTES = {"rerank": "/v1/rerank", "score": "/score"}


class RerankOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    documents: int = Field(8, ge=1, le=4096, description="documents scored against each query")
    route: Literal["rerank", "score"] = "rerank"


class Rerank(PooledShape):
    name = "rerank"
    Options = RerankOptions

    @property
    def texts_per_request(self) -> int:
        return 1 + self.options.documents

    @property
    def inputs_per_request(self) -> int:
        return self.options.documents

    def path(self, api: str) -> str:
        return ROUTES[self.options.route]

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        query, *docs = texts_of(spec)
        asked = {"query": query, "documents": docs} if self.options.route == "rerank" else \
            {"text_1": query, "text_2": docs}
        return {"model": body["model"], **asked, **(self.cfg.extra_body or {})}

    def judge_answer(self, obj: dict, n_texts: int) -> str | None:
        got = scores(obj)
        if got is None:
            return "no_scores"
        if len(got) != n_texts - 1:
            return "wrong_count"
        if not all(isinstance(x, (int, float)) and math.isfinite(x) for x in got):
            return "not_finite"
        return None


def scores(obj: dict) -> list[float] | None:
    """The answer's scores in document order, from either route's answer, or None."""
    for key, field in (("results", "relevance_score"), ("data", "score")):
        items = obj.get(key)
        if isinstance(items, list) and all(isinstance(d, dict) and field in d for d in items):
            return [d[field] for d in sorted(items, key=lambda d: d.get("index", 0))]
    return None
