"""Many LoRA adapters behind one base model: each request goes to one adapter, drawn from a
mix (uniform, Zipf with an exponent, or one hot adapter), and is sent with `model` set to that
adapter's served name (`<prefix><i>`, as `--lora-modules` names them at launch).

The draw is seeded and made once over the whole planned list, so a level run alone sends what
it would have sent in the sweep. Per point the record gets `serving["by_adapter"]`: requests,
answered, TTFT and TPOT statistics and output tokens/s per adapter (tokens over the point's
span, the same span for every adapter, so the adapters' rates add up to the point's).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from llmbench.loadgen.client import Outcome, RequestSpec
from llmbench.loadgen.shapes.base import RequestShape, by_tag, tagged
from llmbench.measure.stats import summarize as describe

_MIX = re.compile(r"^(uniform|zipf:(?P<s>[0-9.]+)|hot:(?P<p>[0-9.]+))$")


class LoraOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    adapters: int = Field(8, ge=1, le=4096)
    mix: str = "uniform"            # uniform | zipf:S (S > 0) | hot:P (0 < P < 1, adapter 0's share)
    prefix: str = "lora"            # served names: prefix + index
    # a launched server's adapters (models/lora.py LoraSet): random, of this rank over q/v
    rank: int = Field(8, ge=1, le=512)
    alpha: float = Field(16.0, gt=0)
    zero_b: int = Field(0, ge=0)    # the first zero_b adapters have B = 0: they answer as the base
    max_loras: int | None = Field(None, ge=1)   # active at once; below `adapters` forces swaps
    # the same requests again to the base model after the adapters' pass: the adapters' cost
    base_reference: bool = True

    @field_validator("mix")
    @classmethod
    def _mix_form(cls, v: str) -> str:
        m = _MIX.match(v)
        if not m:
            raise ValueError(f"mix {v!r} is not uniform, zipf:S or hot:P")
        if m["s"] is not None and not float(m["s"]) > 0:
            raise ValueError("zipf:S needs S > 0")
        if m["p"] is not None and not 0 < float(m["p"]) < 1:
            raise ValueError("hot:P needs 0 < P < 1")
        return v

    @model_validator(mode="after")
    def _at_most_adapters(self) -> LoraOptions:
        for name in ("max_loras", "zero_b"):
            v = getattr(self, name)
            if v is not None and v > self.adapters:
                raise ValueError(f"{name} {v} is more than the {self.adapters} adapters")
        return self


def mix_probabilities(mix: str, n: int) -> np.ndarray:
    """The probability of each adapter 0..n-1 under `mix`: uniform 1/n; zipf:S proportional to
    1/(i+1)^S; hot:P adapter 0 gets P, the others share 1-P evenly (all of it when n == 1)."""
    m = _MIX.match(mix)
    if m["s"] is not None:
        w = 1.0 / np.arange(1, n + 1) ** float(m["s"])
        return w / w.sum()
    if m["p"] is not None and n > 1:
        p = float(m["p"])
        return np.array([p] + [(1 - p) / (n - 1)] * (n - 1))
    return np.full(n, 1.0 / n)


class Lora(RequestShape):
    name = "lora"
    Options = LoraOptions

    def served_name(self, i: int) -> str:
        return f"{self.options.prefix}{i}"

    def plan(self, specs: list[RequestSpec], seed: int, prompts=None) -> list[RequestSpec]:
        o = self.options
        rng = np.random.default_rng([seed, 0x10AA])     # its own stream: the prompts' draw is untouched
        picks = rng.choice(o.adapters, size=len(specs), p=mix_probabilities(o.mix, o.adapters))
        return [tagged(s, self.served_name(int(i))) for s, i in zip(specs, picks)]

    def server_mode(self) -> dict[str, Any]:
        """A launched server loads the adapters the requests name."""
        from llmbench.models.lora import LoraSet

        o = self.options
        return {"lora": LoraSet(adapters=o.adapters, prefix=o.prefix, rank=o.rank, alpha=o.alpha,
                                zero_b=o.zero_b, max_loras=o.max_loras)}

    def reference(self, specs: list[RequestSpec]) -> list[RequestSpec] | None:
        """The same requests to the base model (no adapter named: the served base name)."""
        return [tagged(s, None) for s in specs] if self.options.base_reference else None

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        return {**body, "model": spec.tag} if spec.tag else body

    def summarize(self, outcomes: list[Outcome], metrics: dict, serving: dict, notes: list[str]) -> None:
        serving["by_adapter"] = by_adapter(outcomes)

    def server_view(self, serving: dict, notes: list[str]) -> None:
        serving["adapter_swaps"] = adapter_swaps(serving["server_metrics"])


def adapter_swaps(server_metrics: dict) -> dict:
    """The adapters' state as the server reported it (loadgen/adapter_metrics.py), or why there
    is none; either way whether a swap count was reported (no engine here reports one)."""
    from llmbench.loadgen.adapter_metrics import NO_SWAP_COUNT

    view = server_metrics.get("adapters")
    if view is not None:
        return {"reported": True, **view}
    why = server_metrics.get("reason") if not server_metrics.get("available") else \
        f"its /metrics ({server_metrics.get('server')}) carries no adapter state"
    return {"reported": False, "reason": f"the server reports no adapter state: {why}",
            "swaps": None, "swaps_reason": NO_SWAP_COUNT}


def by_adapter(outcomes: list[Outcome]) -> dict[str, dict]:
    """Per adapter (the outcome's tag): requests, answered, TTFT/TPOT statistics and output
    tokens/s over the point's span (first scheduled send to last token of any request)."""
    span_s, groups = by_tag(outcomes, "base", _natural)
    out = {}
    for name, group, ok in groups:
        tokens = sum(o.timeline.output_tokens for o in ok)
        out[name] = {
            "requests": len(group), "answered": len(ok), "output_tokens": tokens,
            "output_tok_s": tokens / span_s if span_s else None,
            "ttft_s": describe([o.timeline.ttft_s() for o in ok], "s", keep_samples=False).model_dump(exclude_none=True),
            "tpot_s": describe([o.timeline.tpot_s() for o in ok], "s", keep_samples=False).model_dump(exclude_none=True),
        }
    return out


def _natural(name: str) -> tuple:
    m = re.match(r"^(.*?)(\d+)$", name)
    return (m[1], int(m[2])) if m else (name, -1)
