"""Image requests: chat requests whose user turn carries images (PNG data URLs made here,
loadgen/png.py: nothing downloaded) before its text, for vision-language models.

Options: `resolution=WxH[,WxH...]` (default 448x448) and `count=N[,N...]` (images per request,
default 1). Every (resolution, count) pair is a group; the planned requests are split evenly
over the groups in a seeded order, once over the whole planned list, so a level run alone sends
what it would have sent in the sweep. Every image of every request is its own (seeded by the
plan's seed, the request and the image), so no image or prefix cache answers for another.

Image tokens as the server counted them: its `usage.prompt_tokens` minus the request's text
tokens, the served model's tokenizer's count of the same chat turn without images (its chat
template applied, as the server applies it; `chat_counter`). Expected image tokens: where the
served model's preprocessor_config.json names an image processor models/vision.py has the
formula of (Qwen2-VL's, Idefics3's / SmolVLM's; `image_formula`, the model directory or
--tokenizer), count x that formula; each answer is then judged, and a request
whose server count differs is `image_tokens_mismatch` (`image_tokens_unknown` when there is no
usage or no chat template to count against). With both known, a request's prompt_len (what
token parity compares the server's count with) is its text tokens plus its expected image
tokens; else it stays the text's.

Per point: `serving["by_images"]` per group (TTFT, E2E, the server's image tokens per request,
the expected ones, output tokens/s over the point's span); metrics `image_tokens_per_request`
and `image_throughput_img_per_s` (metrics.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from llmbench.loadgen.client import Outcome, RequestSpec, interpret
from llmbench.loadgen.shapes.base import RequestShape, by_tag

_RES = re.compile(r"^(\d+)x(\d+)$")
MAX_SIDE = 16384
MAX_COUNT = 64


def _items(v: Any) -> list:
    """'a,b' or [a, b] or a single value, as a list."""
    if isinstance(v, str):
        return [x.strip() for x in v.split(",")]
    return list(v) if isinstance(v, (list, tuple)) else [v]


class ImagesOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    resolution: tuple[str, ...] = ("448x448",)     # WIDTHxHEIGHT, one group each
    count: tuple[int, ...] = (1,)                  # images per request, one group each

    @field_validator("resolution", mode="before")
    @classmethod
    def _resolutions(cls, v: Any) -> tuple[str, ...]:
        out = []
        for r in _items(v):
            m = _RES.match(str(r).strip().lower())
            if not m:
                raise ValueError(f"{r!r} is not WIDTHxHEIGHT (e.g. 448x448)")
            w, h = int(m[1]), int(m[2])
            if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
                raise ValueError(f"{r!r}: each side from 1 to {MAX_SIDE} pixels")
            out.append(f"{w}x{h}")
        return _unique(out, "resolution")

    @field_validator("count", mode="before")
    @classmethod
    def _counts(cls, v: Any) -> tuple[int, ...]:
        out = []
        for c in _items(v):
            try:
                n = int(str(c))
            except ValueError:
                raise ValueError(f"{c!r} is not a whole number of images") from None
            if not 1 <= n <= MAX_COUNT:
                raise ValueError(f"{n}: from 1 to {MAX_COUNT} images per request")
            out.append(n)
        return _unique(out, "count")

    def groups(self) -> list[tuple[int, int, int]]:
        """(width, height, images per request) of every group, resolutions first."""
        return [(*map(int, r.split("x")), n) for r in self.resolution for n in self.count]


def _unique(values: list, name: str) -> tuple:
    if len(set(values)) != len(values):
        raise ValueError(f"{name} repeats a value: {', '.join(map(str, values))}")
    return tuple(values)


def group_label(width: int, height: int, count: int) -> str:
    return f"{count}@{width}x{height}"


@dataclass
class ImageSpec(RequestSpec):
    width: int = 0
    height: int = 0
    count: int = 0
    image_seed: tuple[int, ...] = ()
    text_tokens: int | None = None             # the chat turn without images, as the server counts it
    expected_image_tokens: int | None = None   # the model's formula, when known


@dataclass
class ImagesOutcome(Outcome):
    text_tokens: int | None = None
    expected_image_tokens: int | None = None
    images: int = 0

    @property
    def image_tokens(self) -> int | None:
        """The server's prompt count less the text's: what its images cost it."""
        if self.usage_prompt_tokens is None or self.text_tokens is None:
            return None
        return self.usage_prompt_tokens - self.text_tokens


class Images(RequestShape):
    name = "images"
    Options = ImagesOptions
    apis = ("chat",)

    def __init__(self, cfg):
        super().__init__(cfg)
        from llmbench.models.vision import image_formula

        d = served_model_dir(cfg)
        self.formula = image_formula(d) if d is not None else None
        self.judged = self.formula is not None

    def plan(self, specs: list[RequestSpec], seed: int, prompts=None) -> list[RequestSpec]:
        groups = self.options.groups()
        rng = np.random.default_rng([seed, 0x1A6E5])     # its own stream: the prompts' draw is untouched
        picks = np.arange(len(specs)) % len(groups)
        rng.shuffle(picks)
        count_chat = self._chat_counter()
        out = []
        for i, (s, g) in enumerate(zip(specs, picks)):
            w, h, n = groups[int(g)]
            text = count_chat(s.prompt) if count_chat else None
            expected = n * self.formula.prompt_tokens(w, h) if self.formula else None
            asked = text + expected if text is not None and expected is not None else s.prompt_len
            out.append(ImageSpec(prompt=s.prompt, prompt_len=asked, output_len=s.output_len,
                                 history=s.history, tag=group_label(w, h, n), width=w, height=h,
                                 count=n, image_seed=(seed, i), text_tokens=text,
                                 expected_image_tokens=expected))
        return out

    def _chat_counter(self):
        d = served_model_dir(self.cfg)
        return chat_counter(d) if d is not None else None

    def body(self, body: dict[str, Any], spec: RequestSpec) -> dict[str, Any]:
        from llmbench.loadgen.png import png_data_url

        if not isinstance(spec, ImageSpec):
            return body
        images = [{"type": "image_url",
                   "image_url": {"url": png_data_url(spec.width, spec.height, (*spec.image_seed, j))}}
                  for j in range(spec.count)]
        *before, last = body["messages"]
        return {**body, "messages": [*before, {"role": last["role"], "content": [
            *images, {"type": "text", "text": last["content"]}]}]}

    def read(self, resp, t_ref: float, spec: RequestSpec, count_tokens=None) -> Outcome:
        base = interpret(resp, t_ref, spec, count_tokens)
        out = ImagesOutcome(**{f.name: getattr(base, f.name) for f in fields(Outcome)})
        out.tag = spec.tag
        if isinstance(spec, ImageSpec):
            out.text_tokens, out.expected_image_tokens = spec.text_tokens, spec.expected_image_tokens
            out.images = spec.count
        if out.ok:
            out.invalid = self.judge(out)
        return out

    def judge(self, out: Outcome) -> str | None:
        if not self.judged or not isinstance(out, ImagesOutcome):
            return None
        if out.image_tokens is None:
            return "image_tokens_unknown"
        return None if out.image_tokens == out.expected_image_tokens else "image_tokens_mismatch"

    def summarize(self, outcomes: list[Outcome], metrics: dict, serving: dict, notes: list[str]) -> None:
        from llmbench.measure.stats import summarize

        super().summarize(outcomes, metrics, serving, notes)
        serving["by_images"] = by_images(outcomes)
        counted = [o.image_tokens for o in outcomes
                   if o.ok and isinstance(o, ImagesOutcome) and o.image_tokens is not None]
        if counted:
            metrics["image_tokens_per_request"] = summarize(counted, "tokens")
        elif any(o.ok for o in outcomes):
            notes.append("image tokens not counted: the server sent no usage, or the tokenizer "
                         "has no chat template to count the text with")
        if outcomes and "window_s" in serving:
            w = serving["window_s"]
            t0 = min(o.timeline.t_ref for o in outcomes)
            a, b = t0 + w["steady_start"], t0 + w["steady_end"]
            done = [o for o in outcomes if o.ok and o.timeline.t_last is not None
                    and a <= o.timeline.t_last <= b]
            metrics["image_throughput_img_per_s"] = summarize(
                [sum(getattr(o, "images", 0) for o in done) / max(b - a, 1e-9)], "img/s",
                keep_samples=False)


def by_images(outcomes: list[Outcome]) -> dict[str, dict]:
    """Per group (the outcome's tag, `count@WxH`): requests, answered, TTFT and E2E statistics,
    the server's image tokens per request, the expected ones, output tokens/s over the point's
    span (the same span for every group, so the groups' rates add up to the point's)."""
    from llmbench.measure.stats import summarize

    span_s, groups = by_tag(outcomes, "none", _group_order)
    out = {}
    for label, group, ok in groups:
        tokens = sum(o.timeline.output_tokens for o in ok)
        counted = [o.image_tokens for o in ok if isinstance(o, ImagesOutcome) and o.image_tokens is not None]
        expected = {o.expected_image_tokens for o in group if isinstance(o, ImagesOutcome)}
        stats = lambda xs, unit: summarize(xs, unit, keep_samples=False).model_dump(exclude_none=True)  # noqa: E731
        out[label] = {
            "requests": len(group), "answered": len(ok), "output_tokens": tokens,
            "output_tok_s": tokens / span_s if span_s else None,
            "ttft_s": stats([o.timeline.ttft_s() for o in ok], "s"),
            "e2e_s": stats([o.timeline.e2e_s() for o in ok], "s"),
            "image_tokens_per_request": stats(counted, "tokens"),
            "expected_image_tokens_per_request": expected.pop() if len(expected) == 1 else None,
        }
    return out


def _group_order(label: str) -> tuple:
    m = re.match(r"^(\d+)@(\d+)x(\d+)$", label)
    return (int(m[2]) * int(m[3]), int(m[1])) if m else (-1, -1)


def chat_counter(model_dir: Path) -> Callable[[str], int] | None:
    """A one-turn chat prompt's length as a chat server counts it: the model's tokenizer with
    its chat template applied (default system turn and generation prompt included), as a
    function of the turn's text; None without transformers or a chat template."""
    try:
        from transformers import AutoTokenizer
    except ImportError:
        return None
    tok = AutoTokenizer.from_pretrained(model_dir)
    if not getattr(tok, "chat_template", None):
        return None

    def count(text: str) -> int:
        ids = tok.apply_chat_template([{"role": "user", "content": text}],
                                      add_generation_prompt=True, tokenize=True)
        return len(ids["input_ids"] if hasattr(ids, "keys") else ids)

    return count


def served_model_dir(cfg) -> Path | None:
    """The served model's local directory (--tokenizer or --model as a directory, or a Hub id
    in the local cache), where its preprocessor_config.json would be; None if there is none."""
    from llmbench.errors import LLMBenchError
    from llmbench.models.sources import resolve

    for name in (cfg.tokenizer, cfg.model):
        if name and Path(name).expanduser().is_dir():
            return Path(name).expanduser()
    try:
        ref = resolve(cfg.model)
    except LLMBenchError:
        return None
    return ref.path if ref.source == "hf-dir" else None
