"""The serving workload: load-test an OpenAI-compatible server, one record per load point.

Prompts are built in the model's own tokenizer so that each has exactly the asked number of
tokens (decoded text re-encodes to the same length; checked, and the actual length recorded if
a text refuses to round-trip), different for every request (random windows of the bundled
English text) so no prefix cache helps unless a shared-prefix fraction asks for it. Or they
come from a ShareGPT-format JSON file. The output length is forced (ignore_eos + min_tokens)
and verified: short answers are counted and noted.

Warm-up and cool-down: the steady-state window is [start + warmup, end - cooldown]; the
headline metrics use it and every metric is also kept over the whole run as `all_<name>`.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from llmbench.errors import SpecError
from llmbench.loadgen.client import Api, Outcome, RequestSpec, encode_request, interpret
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.run import LoadResult, run_load, run_sync
from llmbench.loadgen.schedule import Schedule

SLO_KEYS = ("ttft_s", "tpot_s", "e2e_s")


# -- lengths ----------------------------------------------------------------------------------
class LengthDist(BaseModel):
    """'32' (fixed), 'uniform:16:64', 'normal:64:16' (clipped to >= 1)."""

    model_config = ConfigDict(frozen=True)
    kind: Literal["fixed", "uniform", "normal"] = "fixed"
    a: float
    b: float = 0.0

    @classmethod
    def parse(cls, text: str | int, flag: str = "length") -> LengthDist:
        s = str(text).strip()
        try:
            if ":" not in s:
                d = cls(kind="fixed", a=int(s))
            else:
                kind, a, b = s.split(":")
                d = cls(kind=kind, a=float(a), b=float(b))
        except (ValueError, TypeError):
            raise SpecError([(flag, f"{s!r} is not N, uniform:LO:HI or normal:MEAN:STD")]) from None
        if d.a < 1 or (d.kind == "uniform" and d.b < d.a) or (d.kind == "normal" and d.b < 0):
            raise SpecError([(flag, f"{s!r}: lengths must be >= 1 (and HI >= LO, STD >= 0)")])
        return d

    def sample(self, rng: random.Random) -> int:
        if self.kind == "fixed":
            return int(self.a)
        if self.kind == "uniform":
            return rng.randint(int(self.a), int(self.b))
        return max(1, round(rng.gauss(self.a, self.b)))

    @property
    def mean(self) -> float:
        return (self.a + self.b) / 2 if self.kind == "uniform" else self.a

    def __str__(self) -> str:
        return str(int(self.a)) if self.kind == "fixed" else f"{self.kind}:{self.a:g}:{self.b:g}"


# -- configuration ------------------------------------------------------------------------------
class ServeConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", arbitrary_types_allowed=True)

    model: str = "smollm2-135m"
    served_model: str | None = Field(None, description="name the server knows the model by")
    api: Api = "completions"
    tokenizer: str | None = None
    dataset: Path | None = None
    input_len: LengthDist = LengthDist(a=32)
    output_len: LengthDist | None = None       # None: 32, or the dataset's own lengths
    shared_prefix: float = Field(0.0, ge=0.0, lt=1.0)
    concurrency: list[int] = Field(default_factory=list)
    rate: list[float] = Field(default_factory=list)
    burstiness: float = Field(1.0, gt=0)
    max_concurrency: int | None = Field(None, ge=1)
    num_prompts: int | None = Field(None, ge=1)
    duration_s: float | None = Field(None, gt=0)
    warmup: str = "0"                           # seconds, or "10%" of the run
    cooldown: str = "0"
    slo: dict[str, float] = Field(default_factory=dict)
    timeout_s: float = Field(300.0, gt=0)
    seed: int = 0
    force_output: bool = True
    extra_body: dict[str, Any] = Field(default_factory=dict)
    use_uvloop: bool = True

    @field_validator("slo")
    @classmethod
    def _slo(cls, v: dict[str, float]) -> dict[str, float]:
        bad = [k for k in v if k not in SLO_KEYS]
        if bad:
            raise ValueError(f"unknown SLO {bad}; allowed: {', '.join(SLO_KEYS)}")
        return v

    def schedules(self) -> list[Schedule]:
        n = None if self.duration_s else (self.num_prompts or 100)
        out = []
        if self.rate:
            caps = self.concurrency or [self.max_concurrency]
            for r in self.rate:
                for c in caps:
                    out.append(Schedule(rate=r, burstiness=self.burstiness, concurrency=c,
                                        num_prompts=n, duration_s=self.duration_s, seed=self.seed))
        else:
            for c in self.concurrency or [1]:
                out.append(Schedule(concurrency=c, num_prompts=n, duration_s=self.duration_s,
                                    seed=self.seed))
        return out


def parse_window(text: str, run_s: float, flag: str) -> float:
    s = str(text).strip()
    try:
        v = float(s[:-1]) / 100 * run_s if s.endswith("%") else float(s.rstrip("s"))
    except ValueError:
        raise SpecError([(flag, f"{s!r} is not seconds (e.g. 2 or 2s) or a percentage (10%)")]) from None
    if v < 0:
        raise SpecError([(flag, "must be >= 0")])
    return v


def parse_slo(text: str | None) -> dict[str, float]:
    if not text:
        return {}
    out = {}
    for item in text.split(","):
        k, _, v = item.partition("=")
        k = k.strip()
        if k not in SLO_KEYS:
            raise SpecError([("--slo", f"unknown SLO {k!r}; allowed: {', '.join(SLO_KEYS)}")])
        try:
            out[k] = float(v.rstrip("s"))
        except ValueError:
            raise SpecError([("--slo", f"{item!r} is not KEY=SECONDS")]) from None
    return out


# -- tokenizer -----------------------------------------------------------------------------------
class Tokenizer:
    """Encode/decode without special tokens (prompts are measured as the server sees the text)."""

    def __init__(self, tok: Any, source: str):
        self._tok, self.source = tok, source
        self._fast = hasattr(tok, "encode_batch")   # a `tokenizers.Tokenizer`

    def encode(self, text: str) -> list[int]:
        if self._fast:
            return self._tok.encode(text, add_special_tokens=False).ids
        return self._tok.encode(text, add_special_tokens=False)

    def decode(self, ids: list[int]) -> str:
        return self._tok.decode(ids, skip_special_tokens=False) if not self._fast \
            else self._tok.decode(ids, skip_special_tokens=False)

    def count(self, text: str) -> int:
        return len(self.encode(text))


def load_tokenizer(name: str) -> Tokenizer:
    """A tokenizer by catalog model name, HF directory, tokenizer.json or .gguf file. The
    bundled model's is extracted from its GGUF once and cached as tokenizer.json."""
    from llmbench.models.sources import cache_dir

    p = Path(name).expanduser()
    if p.is_file() and p.name.endswith(".json"):
        return _fast(p)
    if p.is_dir():
        if (p / "tokenizer.json").exists():
            return _fast(p / "tokenizer.json")
        from transformers import AutoTokenizer

        return Tokenizer(AutoTokenizer.from_pretrained(p), str(p))
    if p.suffix == ".gguf" and p.is_file():
        return Tokenizer(_from_gguf(p), str(p))
    from llmbench.models.sources import model_path, resolve

    ref = resolve(name)   # raises the catalog's "unknown model" error
    cached = cache_dir() / "tokenizers" / ref.name
    if (cached / "tokenizer.json").exists():
        return _fast(cached / "tokenizer.json")
    hf = cache_dir() / "models" / f"{ref.name}-hf"
    if (hf / "tokenizer.json").exists():
        return _fast(hf / "tokenizer.json")
    if ref.source != "bundled":
        raise SpecError([("--tokenizer", f"no tokenizer for {name!r} ({ref.source}); give "
                          "--tokenizer PATH (an HF directory, tokenizer.json or .gguf)")])
    tok = _from_gguf(model_path(name, "gguf"))
    cached.mkdir(parents=True, exist_ok=True)
    tok.save_pretrained(cached)
    return _fast(cached / "tokenizer.json")


def _fast(path: Path) -> Tokenizer:
    from tokenizers import Tokenizer as TK

    return Tokenizer(TK.from_file(str(path)), str(path))


def _from_gguf(path: Path):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)


# -- prompts -------------------------------------------------------------------------------------
def exact_text(tok: Tokenizer, ids: list[int], fill: Callable[[int], list[int]]) -> tuple[str, int]:
    """Text whose encoding has len(ids) tokens: decode, re-encode, trim or top up, repeat."""
    want = len(ids)
    text = tok.decode(ids)
    for _ in range(8):
        got = tok.encode(text)
        if len(got) == want:
            return text, want
        got = got[:want] if len(got) > want else got + fill(want - len(got))
        text = tok.decode(got)
    return text, tok.count(text)


def synthetic_prompts(tok: Tokenizer, n: int, input_len: LengthDist, output_len: LengthDist,
                      shared_prefix: float, seed: int) -> list[RequestSpec]:
    from llmbench.workloads.prompts import bundled_text

    corpus = tok.encode(bundled_text())
    m = len(corpus)
    rng = random.Random(f"serving/{seed}")
    lens = [input_len.sample(rng) for _ in range(n)]
    prefix_len = [round(shared_prefix * L) for L in lens]
    starts = rng.sample(range(m), k=min(n, m)) + [rng.randrange(m) for _ in range(max(0, n - m))]

    def window(s: int, k: int) -> list[int]:
        return [corpus[(s + i) % m] for i in range(k)]

    out = []
    for i, (L, p, s) in enumerate(zip(lens, prefix_len, starts)):
        ids = window(0, p) + window(s, L - p)
        text, actual = exact_text(tok, ids, lambda k, s=s: window(s + L, k))
        out.append(RequestSpec(text, actual, output_len.sample(rng)))
    return out


def sharegpt_prompts(path: Path, tok: Tokenizer, n: int, output_len: LengthDist | None,
                     seed: int) -> tuple[list[RequestSpec], list[str]]:
    """First human turn as the prompt; the reply's token count as output length (unless given)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        raise SpecError([("--dataset", f"cannot read ShareGPT JSON {path}: {e}")]) from None
    if not isinstance(data, list):
        raise SpecError([("--dataset", "a ShareGPT file is a JSON list of conversations")])
    rng = random.Random(f"sharegpt/{seed}")
    rng.shuffle(data)
    out: list[RequestSpec] = []
    for conv in data:
        turns = conv.get("conversations") or conv.get("conversation") if isinstance(conv, dict) else None
        if not turns or len(turns) < 2:
            continue
        prompt, reply = turns[0].get("value") or "", turns[1].get("value") or ""
        pl = tok.count(prompt)
        ol = output_len.sample(rng) if output_len else tok.count(reply)
        if pl < 4 or ol < 4 or pl > 1024 or pl + ol > 2048:   # vLLM's ShareGPT filter
            continue
        out.append(RequestSpec(prompt, pl, ol))
        if len(out) == n:
            break
    notes = []
    if not out:
        raise SpecError([("--dataset", f"{path} holds no usable conversation (human turn then reply)")])
    if len(out) < n:
        notes.append(f"dataset gave {len(out)} usable prompts for {n} requests; prompts repeat")
    return out, notes


# -- one run ---------------------------------------------------------------------------------------
@dataclass
class Target:
    """Where the server is and what it is (for the record)."""

    url: str
    backend: str = "openai-server"
    backend_version: str | None = None
    backend_options: dict[str, Any] | None = None
    device: str = "unknown"        # cpu | cuda | cuda:N | unknown (a remote server)
    device_count: int = 1
    api_key: str | None = None     # used for the request bytes only; never recorded


def run_serving(cfg: ServeConfig, target: Target, run_id: str,
                progress: Callable[[str], None] | None = None,
                on_record: Callable[[Any], None] | None = None) -> list:
    """Run every load point; `on_record` gets each record as soon as its point ends (the CLI
    stores it then, so a later failure never costs an earlier point)."""
    from llmbench.measure.env import capture, hardware
    from llmbench.measure.power import EnergyMeter, open_meter
    from llmbench.models.sources import resolve
    from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record

    ep = Endpoint.parse(target.url)
    tok = load_tokenizer(cfg.tokenizer or cfg.model)
    schedules = cfg.schedules()
    # Every point gets its own prompts: a prompt seen at an earlier point would be a prefix-cache
    # hit at the next one.
    counts = [s.num_prompts or _duration_pool(s) for s in schedules]
    pool_n = sum(counts)
    notes0: list[str] = []
    if cfg.dataset:
        specs, notes0 = sharegpt_prompts(cfg.dataset, tok, pool_n, cfg.output_len, cfg.seed)
    else:
        specs = synthetic_prompts(tok, pool_n, cfg.input_len, cfg.output_len or LengthDist(a=32),
                                  cfg.shared_prefix, cfg.seed)
        off = sum(1 for s in specs if s.prompt_len != _nominal(cfg.input_len, s.prompt_len))
        if off:
            notes0.append(f"{off} prompt(s) could not be made exactly input_len tokens long; "
                          "their real length is used")
    if not cfg.dataset and pool_n > len(tok.encode(_corpus_text())) and cfg.shared_prefix == 0:
        notes0.append(f"{pool_n} prompts outnumber the start positions in the bundled text: "
                      "some prompts share a beginning")
    served = cfg.served_model or _served_model(ep, target.api_key) or cfg.model
    try:
        ref = resolve(cfg.model)
        model = ModelInfo(name=ref.name, source=ref.source, params=ref.params,
                          synthetic_weights=ref.synthetic_weights)
    except SpecError:
        model = ModelInfo(name=cfg.model, source="server")
    if target.device == "unknown":
        hw = HardwareInfo(name="remote server (unknown hardware)", count=target.device_count)
        meter = EnergyMeter("the server's hardware is not on this machine")
    else:
        hw = HardwareInfo(**hardware(target.device, target.device_count))
        meter = open_meter(target.device, target.device_count) if target.device.startswith("cuda") \
            else open_meter("cpu")
    env = capture()
    _redact_argv(env)
    records = []
    offset = 0
    for sch, count in zip(schedules, counts):
        if progress:
            progress(sch.label())
        mine = [specs[(offset + i) % len(specs)] for i in range(count)]
        offset += count
        reqs = [encode_request(ep, s, served, cfg.api, force_output=cfg.force_output,
                               extra=cfg.extra_body, api_key=target.api_key) for s in mine]
        with meter.window() as win:
            res = run_sync(run_load(ep, reqs, sch, timeout_s=cfg.timeout_s), cfg.use_uvloop)
        outcomes = [interpret(s.resp, s.t_sched, mine[s.index % len(mine)], tok.count) for s in res.sent]
        metrics, serving, notes = summarize_point(outcomes, res, cfg, tok, win.energy_j)
        workload = _workload(cfg, sch, mine, res)
        key = hashlib.sha256(json.dumps([target.url, target.backend, cfg.model, workload],
                                        sort_keys=True, default=str).encode()).hexdigest()[:16]
        bad = serving["requests"] and serving["errors_total"] == serving["requests"]
        records.append(Record(
            run_id=run_id, point_key=key, kind="serving",
            status="failed" if bad else "ok",
            error=f"every request failed: {serving['errors_by_kind']}" if bad else None,
            backend=BackendInfo(name=target.backend, version=target.backend_version,
                                options={"api": cfg.api, "served_model": served,
                                         **(target.backend_options or {})}),
            model=model, hardware=hw, workload=workload, metrics=metrics,
            power=meter.describe(), notes=notes0 + notes, env=env, serving=serving))
        _annotate(records[-1])
        if on_record:
            on_record(records[-1])
    return records


def _annotate(rec) -> None:
    try:
        from llmbench.roofline import annotate
    except ImportError:
        return
    annotate(rec)


def _corpus_text() -> str:
    from llmbench.workloads.prompts import bundled_text

    return bundled_text()


def _nominal(d: LengthDist, actual: int) -> int:
    return int(d.a) if d.kind == "fixed" else actual


def _duration_pool(s: Schedule) -> int:
    # Enough distinct prompts for most runs; beyond it prompts repeat (noted in the record).
    if s.rate and not math.isinf(s.rate):
        return min(20000, int(s.rate * s.duration_s * 1.5) + 16)
    return 2000


_SECRET_FLAG = re.compile(r"(?i)^--?[\w-]*(api[-_]?key|token|secret|password)[\w-]*$")


def redact_args(args: list[str]) -> list[str]:
    """Command-line words with secrets blanked: values of --api-key/--token-like flags (as the
    next word or after '='), and anything that looks like a key (sk-..., Bearer ...)."""
    out, hide = [], False
    for a in args:
        if hide:
            out.append("<redacted>")
            hide = False
            continue
        flag, eq, _ = a.partition("=")
        if _SECRET_FLAG.match(flag) and not flag.endswith(("-env", "-file", "_env", "_file")):
            if eq:
                out.append(f"{flag}=<redacted>")
                continue
            hide = True
        out.append(re.sub(r"(?i)(sk-|bearer\s+)\S+", r"\1<redacted>", a))
    return out


def _redact_argv(env: dict) -> None:
    env["argv"] = redact_args(env.get("argv", []))


def _served_model(ep: Endpoint, api_key: str | None) -> str | None:
    """The first model id the server lists (GET /v1/models), else None."""
    import urllib.request

    req = urllib.request.Request(f"{'https' if ep.tls else 'http'}://{ep.host_header}{ep.base_path}/v1/models")
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            data = json.loads(r.read()).get("data") or []
        return data[0]["id"] if data else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError, IndexError):
        return None


def _workload(cfg: ServeConfig, sch: Schedule, specs: list[RequestSpec], res: LoadResult) -> dict:
    rate = sch.rate
    return {
        "load": "closed" if sch.closed_loop else "open",
        "concurrency": sch.concurrency if sch.closed_loop else None,
        "max_concurrency": None if sch.closed_loop else sch.concurrency,
        "request_rate": rate if rate is not None and not math.isinf(rate) else None,
        "request_rate_label": "closed" if rate is None else ("inf" if math.isinf(rate) else f"{rate:g}"),
        "burstiness": None if sch.closed_loop else sch.burstiness,
        "num_prompts": sch.num_prompts, "duration_s": sch.duration_s,
        "requests_sent": len(res.sent),
        "input_len": round(sum(s.prompt_len for s in specs) / len(specs)) if cfg.dataset
        else int(cfg.input_len.mean),
        "output_len": round(sum(s.output_len for s in specs) / len(specs)) if cfg.output_len is None
        and cfg.dataset else int((cfg.output_len or LengthDist(a=32)).mean),
        "input_len_dist": "dataset" if cfg.dataset else str(cfg.input_len),
        "output_len_dist": str(cfg.output_len) if cfg.output_len else ("dataset" if cfg.dataset else "32"),
        "dataset": str(cfg.dataset) if cfg.dataset else "synthetic",
        "shared_prefix": cfg.shared_prefix, "api": cfg.api, "warmup": cfg.warmup,
        "cooldown": cfg.cooldown, "slo": ",".join(f"{k}={v:g}" for k, v in cfg.slo.items()) or None,
        "force_output": cfg.force_output, "seed": cfg.seed, "timeout_s": cfg.timeout_s,
        "batch_size": None,
    }


def summarize_point(outcomes: list[Outcome], res: LoadResult, cfg: ServeConfig, tok: Tokenizer,
                    energy_j: float | None) -> tuple[dict, dict, list[str]]:
    from llmbench.measure.stats import summarize
    from llmbench.metrics import serving_metrics

    tls = [o.timeline for o in outcomes]
    ends = [t for tl in tls if (t := tl.t_last) is not None] + \
           [s.resp.t_headers or s.t_sched for s in res.sent]
    t_start = min((tl.t_ref for tl in tls), default=res.t_start)
    t_end = max(ends, default=res.t_end)
    run_s = t_end - t_start
    ws = t_start + parse_window(cfg.warmup, run_s, "--warmup")
    we = t_end - parse_window(cfg.cooldown, run_s, "--cooldown")
    notes: list[str] = []
    if we <= ws:
        notes.append("warm-up + cool-down cover the whole run: steady-state view = whole run")
        ws, we = t_start, t_end
    whole = (ws, we) == (t_start, t_end)
    metrics = serving_metrics(tls, (ws, we), slo=cfg.slo, energy_j=energy_j if whole else None)
    for k, v in serving_metrics(tls, (t_start, t_end), slo=cfg.slo, energy_j=energy_j,
                                keep_samples=False).items():
        metrics[f"all_{k}"] = v
    if "ttft_s" not in metrics and "all_ttft_s" in metrics:
        notes.append("no request lies wholly inside the steady-state window; see all_* metrics")
    if energy_j is not None and not whole:
        notes.append("energy covers the whole run only (all_energy_j)")

    ok = [o for o in outcomes if o.ok]
    out_tokens = sum(o.timeline.output_tokens for o in ok)
    sc = res.selfcheck
    metrics["client_loop_lag_s"] = summarize(sc.lags_s, "s", keep_samples=False)
    metrics["client_cpu_util"] = summarize([sc.cpu_util], "fraction", keep_samples=False)
    if out_tokens:
        metrics["client_cpu_s_per_token"] = summarize([sc.cpu_s / out_tokens], "s/tok",
                                                      keep_samples=False)
    notes += sc.warnings()

    errors = Counter(o.error_kind for o in outcomes if not o.ok)
    examples = {}
    for o in outcomes:
        if not o.ok and o.error_kind not in examples:
            examples[o.error_kind] = (o.detail or "")[:200]
    short = [o for o in ok if o.timeline.output_tokens < o.expected_output_len]
    if short:
        notes.append(f"{len(short)} of {len(ok)} request(s) returned fewer tokens than asked "
                     f"(shortest {min(o.timeline.output_tokens for o in short)})")
    # Token counts: the server's usage when it sent one, else the tokenizer's re-count. The
    # cross-check: usage vs the tokenizer where usage came, else the stream's events vs it.
    sources = Counter(o.token_source for o in ok)
    src = "server usage" if sources.get("usage") == len(ok) else \
        ("tokenizer" if sources.get("tokenizer") == len(ok) else f"mixed {dict(sources)}")
    comp_diff = [(o.usage_completion_tokens if o.token_source == "usage" else o.n_events)
                 - tok.count(o.text) for o in ok]
    prompt_diff = [o.usage_prompt_tokens - o.prompt_len_sent for o in ok
                   if o.usage_prompt_tokens is not None]
    disagree = {
        "compared": "server usage vs tokenizer" if src == "server usage" else "stream events vs tokenizer",
        "completion_requests_differing": sum(1 for d in comp_diff if d),
        "completion_mean_diff_tokens": sum(comp_diff) / len(comp_diff) if comp_diff else None,
        "prompt_requests_differing": sum(1 for d in prompt_diff if d),
        "prompt_mean_diff_tokens": sum(prompt_diff) / len(prompt_diff) if prompt_diff else None,
    }
    if disagree["completion_requests_differing"]:
        notes.append(f"output token counts ({disagree['compared']}) differ in "
                     f"{disagree['completion_requests_differing']} request(s), mean "
                     f"{disagree['completion_mean_diff_tokens']:+.2f} tokens")
    if disagree["prompt_requests_differing"]:
        notes.append(f"the server counted prompts differently from the tokenizer in "
                     f"{disagree['prompt_requests_differing']} request(s), mean "
                     f"{disagree['prompt_mean_diff_tokens']:+.2f} tokens (chat template, BOS?)")
    if errors:
        notes.append("errors: " + ", ".join(f"{k}={v}" for k, v in sorted(errors.items())))
    if res.prompts_reused:
        notes.append("the run outlasted the prompt pool: prompts repeated (prefix caches may help)")
    serving = {
        "requests": len(outcomes), "errors_total": sum(errors.values()),
        "errors_by_kind": dict(errors), "error_examples": examples,
        "short_outputs": len(short), "token_count_source": src,
        "token_split": dict(Counter(o.token_split for o in ok)),
        "tokenizer": tok.source, "token_count_disagreement": disagree,
        "window_s": {"start": 0.0, "steady_start": ws - t_start, "steady_end": we - t_start,
                     "end": run_s},
        "client": {"loop": sc.loop, "cpu_s": sc.cpu_s, "wall_s": sc.wall_s,
                   "cpu_util": sc.cpu_util, "loop_lag_p99_s": sc.lag_p99_s(),
                   "bottleneck": bool(sc.warnings()), "connections_opened": res.connections_opened},
    }
    return metrics, serving, notes

