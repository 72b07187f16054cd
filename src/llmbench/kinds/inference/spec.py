"""What to run: typed sweep specs that expand into points.

A sweep is loaded from YAML and/or CLI flags; every list-valued axis is swept (cartesian
product). Validation happens before anything runs and reports every bad field at once.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator

from llmbench.backends.call import EngineCall
from llmbench.backends.options import EngineOptions
from llmbench.errors import SpecError, did_you_mean
from llmbench.kinds.base import Frozen, point_key
from llmbench.measure.power import PowerSampling

Dtype = Literal["auto", "fp32", "fp16", "bf16"]


class PerplexityConfig(Frozen):
    text: Path | None = Field(None, description="UTF-8 text file; default: the bundled text")
    context_len: int = Field(256, ge=8)
    stride: int = Field(128, ge=1)


def _as_list(v: Any) -> Any:
    return v if isinstance(v, list) else [v]


class SweepSpec(Frozen):
    """An inference sweep: backends x models x dtype x batch x input/output length x options."""

    name: str = "sweep"
    workload: Literal["offline", "perplexity"] = "offline"
    backends: list[str] = Field(default_factory=lambda: ["llamacpp", "transformers"], min_length=1)
    models: list[str] = Field(default_factory=lambda: ["smollm2-135m"], min_length=1)
    device: str = Field("auto", description="auto: the first visible accelerator, else cpu")
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
    power_sampling: PowerSampling = Field(
        "auto", description="the power-sampling thread inside the window: auto (dense only "
        "where the energy counter fails), dense (every window), off (never)")
    perplexity: PerplexityConfig = PerplexityConfig()
    fidelity: int | None = Field(None, ge=1, description="offline: compare greedy tokens and "
                                 "log-probabilities on this many prompts with the reference "
                                 "(transformers fp32 on the CPU; docs/fidelity.md)")

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
        if v not in ("auto", "cpu", "cuda") and not (v.startswith("cuda:") and v[5:].isdigit()):
            raise ValueError(f"{v!r} is not a device: use auto, cpu, cuda or cuda:N")
        return v

    @model_validator(mode="after")
    def _fidelity_offline(self) -> "SweepSpec":
        if self.fidelity is not None and self.workload != "offline":
            raise ValueError(f"fidelity compares generated tokens: it needs workload offline, "
                             f"not {self.workload!r}")
        return self

    def points(self) -> list[Point]:
        return expand(self)


class Point(Frozen):
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
    power_sampling: PowerSampling = "auto"
    perplexity: PerplexityConfig | None = None
    fidelity: int | None = None  # prompts compared with the reference; None: no comparison

    @property
    def key(self) -> str:
        # how long to run or meter a point does not change what it measures: not in the key
        # (the record's `observers` and `spec` say how it was metered); no fidelity, no field,
        # so points measured before it existed keep their keys
        skip = {"timeout_s", "energy_min_window_s", "power_sampling"}
        return point_key(self.model_dump(mode="json", exclude=skip | (
            {"fidelity"} if self.fidelity is None else set())))

    @property
    def load_key(self) -> tuple:
        """Points with the same load_key share one loaded engine."""
        return (self.backend, self.model, self.device, self.dtype,
                json.dumps(self.options.model_dump(), sort_keys=True),
                json.dumps(self.backend_options, sort_keys=True, default=str))

    def engine_call(self) -> EngineCall:
        """What the backend is asked to run for this point (backends/call.py)."""
        return EngineCall(model=self.model, workload=self.workload, device=self.device,
                          dtype=self.dtype, batch_size=self.batch_size, input_len=self.input_len,
                          output_len=self.output_len, options=self.options,
                          backend_options=dict(self.backend_options), warmups=self.warmups,
                          seed=self.seed,
                          context_len=self.perplexity.context_len if self.perplexity else None)

    def workload_fields(self) -> dict[str, Any]:
        """Every swept parameter, by the record contract's names."""
        o = self.options
        w: dict[str, Any] = {
            "tensor_parallel": o.tensor_parallel, "pipeline_parallel": o.pipeline_parallel,
            "kv_block_size": o.kv_block_size, "kv_cache_dtype": o.kv_cache_dtype,
            "weight_dtype": self.dtype, "weight_quant": o.weight_quant, "compile": o.compile,
            "attn_impl": o.attn_impl, "kv_cache": o.kv_cache,
        }
        if self.workload == "offline":
            w.update(batch_size=self.batch_size, input_len=self.input_len,
                     output_len=self.output_len, concurrency=self.batch_size,
                     repeats=self.repeats, warmups=self.warmups)
            if self.fidelity is not None:
                w["fidelity_prompts"] = self.fidelity
        elif self.perplexity is not None:
            # what was done: perplexity is computed once, whatever the sweep's repeats
            w.update(repeats=1, warmups=0,
                     context_len=self.perplexity.context_len, stride=self.perplexity.stride,
                     text=str(self.perplexity.text) if self.perplexity.text else "bundled")
        return w


def _sweep_axes(d: dict[str, Any]) -> list[dict[str, Any]]:
    keys = list(d)
    return [dict(zip(keys, combo)) for combo in itertools.product(*(_as_list(d[k]) for k in keys))]


def expand(spec: SweepSpec) -> list[Point]:
    """Cartesian product of every axis, validating options with each backend's own model.
    Every problem is reported at once; the SpecError carries the points the valid rest
    expands into, so that later checks can add theirs to the same report."""
    from llmbench.backends import backend_class  # the registry; imports nothing heavy

    problems: list[tuple[str, str]] = []
    for name in spec.backend_options:
        if name not in spec.backends:
            problems.append((f"backend_options.{name}", f"not one of the swept backends "
                             f"({', '.join(spec.backends)}){did_you_mean(name, spec.backends)}"))
    option_sets: list[EngineOptions] = []
    for combo in _sweep_axes(spec.options):
        try:
            option_sets.append(EngineOptions(**combo))
        except ValidationError as e:
            problems.extend(_problems(e, prefix="options", model=EngineOptions))
            option_sets.extend(_valid_rest(EngineOptions, combo, e))  # to check the rest
    classes = {}
    for b in spec.backends:
        try:
            classes[b] = backend_class(b)
        except SpecError as e:
            problems.extend(e.problems)

    shapes = ([(1, 1, 1)] if spec.workload == "perplexity" else
              list(itertools.product(spec.batch_size, spec.input_len, spec.output_len)))
    from llmbench.hardware.device import resolve_device

    device = resolve_device(spec.device)  # once: every point of the sweep records the same one
    points: list[Point] = []
    for b, cls in classes.items():
        for bopts in _sweep_axes(spec.backend_options.get(b, {})):
            try:
                cls.Options(**bopts)
            except ValidationError as e:
                problems.extend(_problems(e, prefix=f"backend_options.{b}", model=cls.Options))
                rest = _valid_rest(cls.Options, bopts, e)
                if not rest:
                    continue
                bopts = {k: v for k, v in bopts.items() if k in rest[0].model_fields_set}
            for model, dtype, opts, (bs, il, ol) in itertools.product(
                    spec.models, spec.dtype, option_sets, shapes):
                points.append(Point(
                    workload=spec.workload, backend=b, model=model, device=device,
                    dtype=dtype, batch_size=bs, input_len=il, output_len=ol, options=opts,
                    backend_options=bopts, repeats=spec.repeats, warmups=spec.warmups,
                    seed=spec.seed, timeout_s=spec.timeout_s,
                    energy_min_window_s=spec.energy_min_window_s,
                    power_sampling=spec.power_sampling,
                    perplexity=spec.perplexity if spec.workload == "perplexity" else None,
                    fidelity=spec.fidelity if spec.workload == "offline" else None))
    if problems:
        raise SpecError(problems, points=points)
    return points


def _valid_rest(model: type[BaseModel], values: dict[str, Any], e: ValidationError) -> list:
    """`model` built from `values` less the keys `e` found bad ([] if even that fails): a
    stand-in that lets the later checks of a broken spec run, never a point that runs."""
    bad = {err["loc"][0] for err in e.errors() if err["loc"]}
    try:
        return [model(**{k: v for k, v in values.items() if k not in bad})]
    except ValidationError:
        return []


def _loc(parts) -> str:
    loc = ".".join(str(p) if not isinstance(p, int) else f"[{p}]" for p in parts)
    return loc.replace(".[", "[")


def _problems(e: ValidationError, prefix: str = "",
              model: type[BaseModel] | None = None) -> list[tuple[str, str]]:
    """pydantic's errors, one (field, message) each, worded for people."""
    out = []
    for err in e.errors():
        loc = _loc(err["loc"])
        if prefix:
            loc = f"{prefix}.{loc}" if loc else prefix
        out.append((loc, _message(err, model)))
    return out


def _message(err: dict, model: type[BaseModel] | None) -> str:
    """One pydantic error as a sentence: what was given, what is allowed."""
    kind, ctx, given = err["type"], err.get("ctx") or {}, err.get("input")
    shown = repr(given) if isinstance(given, (str, int, float, bool)) or given is None else \
        type(given).__name__
    if kind == "extra_forbidden":
        noun = "field" if model is SweepSpec or model is None else "option"
        if model is not None and len(err["loc"]) == 1:
            names = list(model.model_fields)
            return (f"unknown {noun}{did_you_mean(err['loc'][0], names)}; allowed: "
                    f"{', '.join(names) or 'none'}")
        return f"unknown {noun}"
    if kind == "literal_error":
        allowed = [a.strip().strip("'") for a in str(ctx.get("expected", "")).replace(" or ", ",").split(",")]
        allowed = [a for a in allowed if a]
        return f"{shown} is not one of: {', '.join(allowed)}{did_you_mean(given, allowed)}"
    if kind in ("int_parsing", "int_type", "int_from_float"):
        return f"{shown} is not a whole number"
    if kind in ("float_parsing", "float_type"):
        return f"{shown} is not a number"
    if kind in ("bool_parsing", "bool_type"):
        return f"{shown} is not true or false"
    if kind in ("string_type",):
        return f"{shown} is not text"
    if kind in ("dict_type", "model_type"):
        return f"needs a mapping (KEY: VALUE lines), got {shown}"
    if kind in ("list_type",):
        return f"needs a list, got {shown}"
    if kind == "too_short":
        return "needs at least one value"
    if kind == "missing":
        return "is required"
    for bound, word in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
        if bound in ctx and kind.startswith(("greater", "less")):
            return f"{shown} is too {'small' if bound in ('ge', 'gt') else 'large'}: must be {word} {ctx[bound]}"
    msg = str(err["msg"])
    for voice in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(voice)
    return msg.replace("Input should be", "should be")


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
        return SweepSpec(**data)
    except ValidationError as e:
        problems = _problems(e, model=SweepSpec)
        bad = {err["loc"][0] for err in e.errors() if err["loc"]}
    except TypeError as e:
        raise SpecError(str(e)) from None
    # Check the rest as if the bad fields were left out, so one pass reports every problem.
    try:
        rest = SweepSpec(**{k: v for k, v in data.items() if k not in bad})
    except (ValidationError, TypeError):
        raise SpecError(problems) from None
    try:
        points = rest.points()
    except SpecError as e2:
        raise SpecError(problems + e2.problems, points=e2.points) from None
    raise SpecError(problems, points=points)
