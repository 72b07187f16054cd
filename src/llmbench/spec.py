"""What to run: typed sweep specs that expand into points.

A sweep is loaded from YAML and/or CLI flags; every list-valued axis is swept (cartesian
product). Validation happens before anything runs and reports every bad field at once.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from llmbench.errors import SpecError

Dtype = Literal["auto", "fp32", "fp16", "bf16"]


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class EngineOptions(Strict):
    """Options every engine understands the meaning of. A backend refuses a value it cannot
    honour (e.g. tensor_parallel > 1 on llama.cpp) instead of silently ignoring it."""

    tensor_parallel: int = Field(1, ge=1)
    pipeline_parallel: int = Field(1, ge=1)
    kv_block_size: int | None = Field(None, ge=1, description="KV-cache block (page) size in tokens")
    kv_cache_dtype: str | None = Field(None, description="auto|fp16|bf16|fp8|q8_0|q4_0 ...")
    weight_quant: str | None = Field(None, description="weight quantization, e.g. int8, fp8")
    compile: bool = False
    attn_impl: str | None = Field(None, description="sdpa|eager|flash_attention_2 ...")
    kv_cache: Literal["dynamic", "static"] | None = None


class PerplexityConfig(Strict):
    text: Path | None = Field(None, description="UTF-8 text file; default: the bundled text")
    context_len: int = Field(256, ge=8)
    stride: int = Field(128, ge=1)


def _as_list(v: Any) -> Any:
    return v if isinstance(v, list) else [v]


class SweepSpec(Strict):
    """An inference sweep: backends x models x dtype x batch x input/output length x options."""

    name: str = "sweep"
    workload: Literal["offline", "perplexity"] = "offline"
    backends: list[str] = Field(default_factory=lambda: ["llamacpp", "transformers"], min_length=1)
    models: list[str] = Field(default_factory=lambda: ["smollm2-135m"], min_length=1)
    device: str = "cpu"
    dtype: list[Dtype] = Field(default_factory=lambda: ["auto"], min_length=1)
    batch_size: list[int] = Field(default_factory=lambda: [1, 4], min_length=1)
    input_len: list[int] = Field(default_factory=lambda: [32], min_length=1)
    output_len: list[int] = Field(default_factory=lambda: [32], min_length=1)
    options: dict[str, Any] = Field(default_factory=dict,
                                    description="EngineOptions fields; a list value is swept")
    backend_options: dict[str, dict[str, Any]] = Field(
        default_factory=dict, description="per backend name: its own options; a list is swept")
    repeats: int = Field(3, ge=1)
    warmups: int = Field(1, ge=0)
    seed: int = 0
    timeout_s: float | None = Field(None, gt=0, description="per-point time limit")
    energy_min_window_s: float = Field(
        2.0, ge=0, description="offline: repeat the batch inside each energy window until it "
        "lasts this long (NVML's counter is too coarse for shorter ones); 0 = one batch")
    perplexity: PerplexityConfig = PerplexityConfig()

    @field_validator("backends", "models", "dtype", "batch_size", "input_len", "output_len",
                     mode="before")
    @classmethod
    def _listify(cls, v: Any) -> Any:
        return _as_list(v)

    @field_validator("batch_size", "input_len", "output_len")
    @classmethod
    def _positive(cls, v: list[int]) -> list[int]:
        bad = [x for x in v if x < 1]
        if bad:
            raise ValueError(f"every value must be >= 1, got {bad}")
        return v

    @field_validator("device")
    @classmethod
    def _device(cls, v: str) -> str:
        if v != "cpu" and not (v == "cuda" or v.startswith("cuda:")):
            raise ValueError("must be 'cpu', 'cuda' or 'cuda:N'")
        return v

    def points(self) -> list[Point]:
        return expand(self)


class Point(Strict):
    """One measured configuration. Its `key` identifies it across runs (resume, dedup)."""

    workload: Literal["offline", "perplexity"] = "offline"
    backend: str
    model: str
    device: str = "cpu"
    dtype: Dtype = "auto"
    batch_size: int = 1
    input_len: int = 32
    output_len: int = 32
    options: EngineOptions = EngineOptions()
    backend_options: dict[str, Any] = Field(default_factory=dict)
    repeats: int = 3
    warmups: int = 1
    seed: int = 0
    timeout_s: float | None = None
    energy_min_window_s: float = 2.0
    perplexity: PerplexityConfig | None = None

    @property
    def key(self) -> str:
        # how long to run or meter a point does not change what it measures: not in the key
        blob = json.dumps(self.model_dump(mode="json", exclude={"timeout_s", "energy_min_window_s"}),
                          sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def load_key(self) -> tuple:
        """Points with the same load_key share one loaded engine."""
        return (self.backend, self.model, self.device, self.dtype,
                json.dumps(self.options.model_dump(), sort_keys=True),
                json.dumps(self.backend_options, sort_keys=True, default=str))

    def workload_fields(self) -> dict[str, Any]:
        """Every swept parameter, by the record contract's names."""
        o = self.options
        w: dict[str, Any] = {
            "tensor_parallel": o.tensor_parallel, "pipeline_parallel": o.pipeline_parallel,
            "kv_block_size": o.kv_block_size, "kv_cache_dtype": o.kv_cache_dtype,
            "weight_dtype": self.dtype, "weight_quant": o.weight_quant, "compile": o.compile,
            "attn_impl": o.attn_impl, "kv_cache": o.kv_cache,
            "repeats": self.repeats, "warmups": self.warmups,
        }
        if self.workload == "offline":
            w.update(batch_size=self.batch_size, input_len=self.input_len,
                     output_len=self.output_len, concurrency=self.batch_size)
        elif self.perplexity is not None:
            w.update(context_len=self.perplexity.context_len, stride=self.perplexity.stride,
                     text=str(self.perplexity.text) if self.perplexity.text else "bundled")
        return w


def _sweep_axes(d: dict[str, Any]) -> list[dict[str, Any]]:
    keys = list(d)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(_as_list(d[k]) for k in keys))]


def expand(spec: SweepSpec) -> list[Point]:
    """Cartesian product of every axis, validating options with each backend's own model."""
    from llmbench.backends import backend_class  # the registry; imports nothing heavy

    problems: list[tuple[str, str]] = []
    for name in spec.backend_options:
        if name not in spec.backends:
            problems.append((f"backend_options.{name}", f"not one of the swept backends {spec.backends}"))
    option_sets: list[EngineOptions] = []
    for combo in _sweep_axes(spec.options):
        try:
            option_sets.append(EngineOptions(**combo))
        except ValidationError as e:
            problems.extend(_problems(e, prefix="options"))
            break
    classes = {}
    for b in spec.backends:
        try:
            classes[b] = backend_class(b)
        except SpecError as e:
            problems.extend(e.problems)
    if problems:
        raise SpecError(problems)

    shapes = ([(1, 1, 1)] if spec.workload == "perplexity" else
              list(itertools.product(spec.batch_size, spec.input_len, spec.output_len)))
    points: list[Point] = []
    for b, cls in classes.items():
        for bopts in _sweep_axes(spec.backend_options.get(b, {})):
            try:
                cls.Options(**bopts)
            except ValidationError as e:
                raise SpecError(_problems(e, prefix=f"backend_options.{b}")) from None
            for model, dtype, opts, (bs, il, ol) in itertools.product(
                    spec.models, spec.dtype, option_sets, shapes):
                points.append(Point(
                    workload=spec.workload, backend=b, model=model, device=spec.device,
                    dtype=dtype, batch_size=bs, input_len=il, output_len=ol, options=opts,
                    backend_options=bopts, repeats=spec.repeats, warmups=spec.warmups,
                    seed=spec.seed, timeout_s=spec.timeout_s,
                    energy_min_window_s=spec.energy_min_window_s,
                    perplexity=spec.perplexity if spec.workload == "perplexity" else None))
    return points


def _problems(e: ValidationError, prefix: str = "") -> list[tuple[str, str]]:
    out = []
    for err in e.errors():
        loc = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in err["loc"])
        loc = loc.replace(".[", "[")
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        out.append((loc, msg))
    return out


def _unknown_field_hint(model: type[BaseModel], problems: list[tuple[str, str]]) -> list[tuple[str, str]]:
    allowed = ", ".join(model.model_fields)
    return [(f, f"{m} (allowed: {allowed})" if m == "unknown field" and "." not in f else m)
            for f, m in problems]


def load_spec(path: Path | None = None, overrides: dict[str, Any] | None = None) -> SweepSpec:
    """Load a sweep from a YAML file (safe-loaded) and apply CLI overrides on top."""
    data: dict[str, Any] = {}
    if path is not None:
        try:
            text = Path(path).read_text()
        except OSError as e:
            raise SpecError([(str(path), f"cannot read spec file: {e.strerror}")]) from None
        try:
            loaded = yaml.safe_load(text)
        except yaml.YAMLError as e:
            raise SpecError([(str(path), f"invalid YAML: {e}")]) from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise SpecError([(str(path), "a sweep spec must be a YAML mapping")])
        data.update(loaded)
    for k, v in (overrides or {}).items():
        if k in ("options", "backend_options") and isinstance(v, dict):
            merged = dict(data.get(k) or {}) if isinstance(data.get(k), dict) else {}
            for kk, vv in v.items():
                if isinstance(vv, dict) and isinstance(merged.get(kk), dict):
                    merged[kk] = {**merged[kk], **vv}
                else:
                    merged[kk] = vv
            data[k] = merged
        else:
            data[k] = v
    try:
        spec = SweepSpec(**data)
    except ValidationError as e:
        raise SpecError(_unknown_field_hint(SweepSpec, _problems(e))) from None
    except TypeError as e:
        raise SpecError(str(e)) from None
    return spec


def parse_list(text: str, typ: type = str) -> list[Any]:
    """'1,4,16' -> [1, 4, 16]; names the bad item."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    out = []
    for t in items:
        out.append(parse_scalar(t) if typ is Any else _convert(t, typ))
    return out


def _convert(t: str, typ: type) -> Any:
    if typ is int:
        try:
            return int(t)
        except ValueError:
            raise SpecError([("", f"{t!r} is not an integer")]) from None
    return typ(t)


def parse_scalar(t: str) -> Any:
    low = t.lower()
    if low in ("true", "on", "yes"):
        return True
    if low in ("false", "off", "no"):
        return False
    if low in ("none", "null"):
        return None
    for typ in (int, float):
        try:
            return typ(t)
        except ValueError:
            pass
    return t


def parse_assignments(items: list[str], flag: str) -> dict[str, Any]:
    """['compile=true,false', 'kv_cache=static'] -> {'compile': [True, False], 'kv_cache': 'static'}"""
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise SpecError([(flag, f"{item!r} is not KEY=VALUE[,VALUE...]")])
        k, v = item.split("=", 1)
        vals = parse_list(v, Any)
        out[k.strip()] = vals if len(vals) != 1 else vals[0]
    return out
