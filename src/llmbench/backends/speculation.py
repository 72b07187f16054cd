"""Speculative decoding as an engine option: what to propose each step, and how many tokens.

`ngram:k=4[,min=2][,max=4]`: n-gram (prompt-lookup) speculation: the last n tokens of the
sequence are looked up earlier in the prompt and output, and the k tokens that followed are
proposed (vLLM `method: ngram`; llama-cpp-python's server `--draft_model
prompt-lookup-decoding`, which fixes n at 2). `draft:MODEL[,k=N]`: a smaller model proposes k
tokens (vLLM `method: draft_model`). The target model verifies every proposal; under greedy
decoding the output is the same as without speculation (kinds/serving/speculation.py checks).

Each engine says what it can do (`Engine.speculation_args`, a backend's `supports`); one that
cannot honour a mode refuses it naming the flag (exit 2)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from llmbench.errors import SpecError, did_you_mean

METHODS = ("ngram", "draft")
SYNTAX = "ngram[:k=N][,min=N][,max=N] | draft:MODEL[,k=N]"


class Speculation(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    method: Literal["ngram", "draft"]
    k: int = Field(4, ge=1, le=64, description="tokens proposed per step")
    draft_model: str | None = Field(None, description="draft: the proposing model (catalog name or path)")
    ngram_min: int | None = Field(None, ge=1, description="ngram: shortest n-gram looked up (engine default)")
    ngram_max: int | None = Field(None, ge=1, description="ngram: longest n-gram looked up (engine default)")

    @model_validator(mode="after")
    def _fields_of_method(self) -> Speculation:
        if self.method == "draft" and not self.draft_model:
            raise ValueError("draft speculation names its draft model: draft:MODEL")
        if self.method == "ngram" and self.draft_model:
            raise ValueError("n-gram speculation takes no draft model")
        if self.method == "draft" and (self.ngram_min or self.ngram_max):
            raise ValueError("min/max are n-gram settings")
        if self.ngram_min and self.ngram_max and self.ngram_min > self.ngram_max:
            raise ValueError(f"min={self.ngram_min} > max={self.ngram_max}")
        return self

    @property
    def label(self) -> str:
        """The flag's text back (`ngram:k=4`, `draft:smollm2-135m,k=4`)."""
        if self.method == "draft":
            return f"draft:{self.draft_model},k={self.k}"
        extra = "".join(f",{n}={v}" for n, v in (("min", self.ngram_min), ("max", self.ngram_max)) if v)
        return f"ngram:k={self.k}{extra}"


_KEYS = {"k": "k", "min": "ngram_min", "max": "ngram_max"}


def parse_speculation(text: str | None, flag: str = "--speculative") -> Speculation | None:
    """`--speculative` TEXT as a Speculation (None for none/off/empty); bad text: SpecError."""
    if text is None or text.strip().lower() in ("", "none", "off"):
        return None
    method, _, rest = text.strip().partition(":")
    if method not in METHODS:
        raise SpecError([(flag, f"unknown speculation {method!r}{did_you_mean(method, METHODS)}; "
                                f"give {SYNTAX}")])
    fields: dict = {"method": method}
    for i, item in enumerate(p.strip() for p in rest.split(",") if p.strip()):
        key, eq, value = item.partition("=")
        if not eq:
            if method == "draft" and i == 0:
                fields["draft_model"] = item
                continue
            raise SpecError([(flag, f"{item!r} is not KEY=VALUE; give {SYNTAX}")])
        if key.strip() not in _KEYS:
            raise SpecError([(flag, f"unknown setting {key.strip()!r}"
                                    f"{did_you_mean(key.strip(), _KEYS)}; give {SYNTAX}")])
        try:
            fields[_KEYS[key.strip()]] = int(value)
        except ValueError:
            raise SpecError([(flag, f"{item!r}: {key.strip()} is a whole number")]) from None
    try:
        return Speculation(**fields)
    except ValidationError as e:
        raise SpecError([(flag, err["msg"].removeprefix("Value error, ") +
                          (f" ({err['loc'][0]})" if err["loc"] else "")) for err in e.errors()]) from None
