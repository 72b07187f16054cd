"""The request shapes, by name: one module each (base.py says what a shape owns), one line
here. Without `--shape`, requests are plain text."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llmbench.registry import load

if TYPE_CHECKING:
    from llmbench.loadgen.shapes.base import RequestShape

DEFAULT = "text"
SHAPES: dict[str, str] = {   # name -> "module:class"
    "text": "llmbench.loadgen.shapes.text:Text",
    # structured output and tool calls (issue 40 item 2)
    "structured": "llmbench.loadgen.shapes.structured:Structured",
    "tools": "llmbench.loadgen.shapes.tools:Tools",
    # pooling requests: embeddings and reranking (issue 41 item 2)
    "embeddings": "llmbench.loadgen.shapes.embeddings:Embeddings",
    "rerank": "llmbench.loadgen.shapes.rerank:Rerank",
    # many LoRA adapters (issue 41 item 1)
    "lora": "llmbench.loadgen.shapes.lora:Lora",
    # chat requests carrying images (issue 41 item 3)
    "images": "llmbench.loadgen.shapes.images:Images",
}


def shape_class(name: str) -> type[RequestShape]:
    return load(SHAPES, name, "--shape", "request shape")


def shape_for(cfg) -> RequestShape:
    """The request shape `cfg` names (`--shape`, default text), its options parsed."""
    return shape_class(cfg.shape)(cfg)
