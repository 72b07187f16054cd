"""Hugging Face transformers (PyTorch) on the CPU or a CUDA GPU.

Two decoding loops, both greedy and forced to exactly output_len tokens:
- `generate`: `model.generate()` with the dynamic or static KV cache. With kv_cache=static and
  compile, generate() compiles the model's forward itself (its `compile_config`).
- `step`: our own loop over transformers' `StaticCache` whose decode step (forward + argmax) is
  one `torch.compile`d function, so with mode "reduce-overhead" a step is one CUDA-graph replay.
  Sampling stays on the device: each step's tokens go into a preallocated device tensor and feed
  the next step, so the host only queues work (gpt-fast style). This is the fast path;
  `loop: auto` takes it whenever kv_cache=static and compile are both on.

Per-token times. `generate` stamps them in a streamer whose `put()` receives every step's tokens
already copied to the host (that copy is the step's synchronisation). `step` on CUDA (option
token_clock=device) records a CUDA event after each step and synchronises once, after the last:
event times are offsets from a start event recorded on an idle device right after a host
timestamp, so they land on the same perf_counter timeline (TTFT still counts from the batch
start and includes prefill). On a CPU the host is the device: a host timestamp after each step.
token_clock=host_sync keeps the old per-token synchronisation, to measure what it costs.

Compilation happens lazily on the first call with a new shape, i.e. in the warm-ups (check()
refuses compile without one), never in the timed repeats.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llmbench.backends.base import Backend
from llmbench.errors import EngineError, ModelError
from llmbench.measure.timeline import RequestTimeline
from llmbench.backends.call import EngineCall

ATTN_IMPLS = ("sdpa", "eager", "flash_attention_2")
CompileMode = Literal["default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"]


class TransformersOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    loop: Literal["auto", "generate", "step"] = Field(
        "auto", description="auto: 'step' when kv_cache=static and compile, else 'generate'")
    compile_mode: CompileMode = Field(
        "reduce-overhead", description="torch.compile mode; reduce-overhead = CUDA graphs")
    coordinate_descent_tuning: bool = Field(
        True, description="inductor's extra kernel tuning (gpt-fast turns it on for decode)")
    token_clock: Literal["device", "host_sync"] = Field(
        "device", description="step loop's per-token times: device = CUDA events, one host sync "
                              "per generation (host clock on a CPU); host_sync = sync every token")
    prefill: Literal["compiled", "eager"] = Field(
        "compiled", description="step loop with compile: the prompt's forward compiled too (one "
                                "graph per prompt shape, in the compile mode), or eager (one "
                                "kernel launch per op: the host's launch rate sets TTFT)")
    threads: int | None = Field(None, ge=1, description="torch CPU threads (default: torch's)")


def _limit(model) -> int | None:
    """The model's context length, without loading it."""
    if model.arch is not None:
        return model.arch.max_position
    if model.source == "hf-dir":
        try:
            cfg = json.loads((Path(model.path) / "config.json").read_text())
        except (OSError, ValueError):
            return None
        return cfg.get("max_position_embeddings") or cfg.get("n_positions")
    return None


class TransformersBackend(Backend):
    name = "transformers"
    package = "transformers"
    distribution = "transformers"
    extra = "transformers"
    Options = TransformersOptions
    supports = frozenset({"compile", "attn_impl", "kv_cache"})
    scores_text = True
    next_token_logprobs_kind = "full"

    @classmethod
    def check(cls, call: EngineCall, model) -> list[tuple[str, str]]:
        problems = super().check(call, model)
        o = call.options
        opts = call.backend_options
        if o.attn_impl is not None and o.attn_impl not in ATTN_IMPLS:
            problems.append(("options.attn_impl", f"{o.attn_impl!r} is not one of {list(ATTN_IMPLS)}"))
        if o.attn_impl == "flash_attention_2":
            import importlib.util

            if importlib.util.find_spec("flash_attn") is None:
                problems.append(("options.attn_impl", "flash_attention_2 needs the flash-attn "
                                                      "package, which is not installed"))
            elif not call.device.startswith("cuda"):
                problems.append(("options.attn_impl", "flash_attention_2 runs on CUDA only"))
        if o.compile and o.kv_cache != "static":
            problems.append(("options.compile", "needs kv_cache=static: the dynamic cache grows "
                                                "every step, so a compiled forward would recompile"))
        if o.compile and call.workload == "offline" and call.warmups < 1:
            problems.append(("warmups", "compile needs at least one warm-up, else compilation "
                                        "time lands in the measured repeats"))
        if opts.get("loop") == "step" and o.kv_cache != "static":
            problems.append(("backend_options.transformers.loop",
                             "the 'step' loop decodes into a static cache: set kv_cache=static"))
        if model.source == "synthetic" and call.workload == "perplexity":
            problems.append(("workload", f"{model.name!r} has random weights and no tokenizer: "
                                         "perplexity means nothing there"))
        limit = _limit(model)
        if limit and call.workload == "offline" and call.input_len + call.output_len > limit:
            problems.append(("input_len+output_len", f"{call.input_len + call.output_len} exceeds "
                                                     f"the model's context of {limit} tokens"))
        if limit and call.workload == "perplexity" and call.context_len is not None \
                and call.context_len > limit:
            problems.append(("perplexity.context_len", f"{call.context_len} exceeds "
                                                       f"the model's context of {limit} tokens"))
        return problems

    # -- life cycle -------------------------------------------------------------------------
    def load(self) -> None:
        import torch

        self._torch = torch
        if self.options.threads:
            torch.set_num_threads(self.options.threads)
        self.device = torch.device(self.call.device)
        if self.device.type == "cuda":
            self.device = torch.device("cuda", self.device.index or 0)
            if not torch.cuda.is_available():
                raise EngineError(f"device {self.call.device!r}: this torch "
                                  f"({torch.__version__}) sees no CUDA device")
            torch.cuda.set_device(self.device)
        self.dtype_name = {"auto": "bf16" if self.device.type == "cuda" else "fp32"}.get(
            self.call.dtype, self.call.dtype)
        self.dtype = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}[self.dtype_name]
        self.attn_impl = self.engine_options.attn_impl or "sdpa"
        self.kv_cache = self.engine_options.kv_cache or "dynamic"
        self.loop = self.options.loop
        if self.loop == "auto":
            self.loop = "step" if self.kv_cache == "static" and self.engine_options.compile else "generate"
        self.tokenizer = None
        if self.model.synthetic_weights:
            self.hf = self._build_synthetic()
        else:
            self.hf = self._load_pretrained()
        self.hf.eval()
        self.hf.generation_config.pad_token_id = self.hf.generation_config.pad_token_id or 0
        self._cache = None
        self._cache_shape = None
        self._settled: set[tuple[int, int]] = set()  # prefill shapes recorded on this cache
        self._step_fn = None

    def _build_synthetic(self):
        """Random weights straight on the target device in the target dtype (an 8B model never
        passes through CPU fp32); transformers' own init draws them (normal, std 0.02)."""
        from transformers import AutoConfig, AutoModelForCausalLM

        from llmbench.models.sources import hf_config_dict

        cfg_dict = dict(hf_config_dict(self.model.arch))
        model_type = cfg_dict.pop("model_type")
        config = AutoConfig.for_model(model_type, **cfg_dict)
        config._attn_implementation = self.attn_impl
        self._torch.manual_seed(self.call.seed)
        with self.device:  # from_config(dtype=) sets the default dtype while it builds
            return AutoModelForCausalLM.from_config(config, dtype=self.dtype,
                                                    attn_implementation=self.attn_impl)

    def _load_pretrained(self):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from llmbench.models.sources import model_path

        kw = {}
        if self.model.source == "gguf":
            path, kw = self.model.path.parent, {"gguf_file": self.model.path.name}
        else:
            path = model_path(self.call.model, "hf")
        self.path = path
        self.tokenizer = AutoTokenizer.from_pretrained(path, **kw)
        return AutoModelForCausalLM.from_pretrained(path, dtype=self.dtype, device_map=self.device,
                                                    attn_implementation=self.attn_impl, **kw)

    def version(self) -> str | None:
        import transformers

        return transformers.__version__

    def effective_options(self) -> dict:
        eff = super().effective_options()
        hf = getattr(self, "hf", None)
        eff.update(
            device=self.call.device, dtype=getattr(self, "dtype_name", None),
            attn_impl=getattr(hf.config, "_attn_implementation", None) if hf is not None else None,
            kv_cache=getattr(self, "kv_cache", None), loop=getattr(self, "loop", None),
            compile_mode=self.options.compile_mode if self.engine_options.compile else None,
            sampling="greedy (argmax), exactly output_len tokens (EOS ignored)",
            token_times=self._token_times(),
            torch=getattr(self, "_torch", None) and self._torch.__version__,
            torch_threads=getattr(self, "_torch", None) and self._torch.get_num_threads())
        if getattr(self, "path", None):
            eff["model_path"] = str(self.path)
        return eff

    def _token_times(self) -> str | None:
        """How the per-token times were taken, in words (recorded beside token_clock)."""
        device = getattr(self, "device", None)
        if device is None:
            return None
        if getattr(self, "loop", None) != "step":
            return "host clock after each step's copy of its tokens to the host (streamer)"
        if device.type != "cuda":
            return "host clock after each step (on a CPU the step has run when it returns)"
        if self.options.token_clock == "host_sync":
            return "host clock after a device synchronisation every token"
        return ("CUDA events after each step, placed on the host clock by a start event on the "
                "idle device; the host waits for the device once, after the last step")

    def close(self) -> None:
        self.hf = self._cache = self._step_fn = None
        torch = getattr(self, "_torch", None)
        if torch is not None and torch.cuda.is_available():
            torch.cuda.empty_cache()

    # -- token space ------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        if self.tokenizer is None:
            raise ModelError([("model", f"{self.model.name!r} has random weights and no tokenizer")])
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    @property
    def vocab_size(self) -> int:
        return int(self.hf.config.get_text_config().vocab_size)

    @property
    def context_len(self) -> int | None:
        cfg = self.hf.config.get_text_config()
        return getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)

    # -- per-point set-up -------------------------------------------------------------------
    def prepare(self, call: EngineCall) -> None:
        torch = self._torch
        if self.device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(self.device)
        if call.workload != "offline":
            return
        if self.loop == "step":
            self._static_cache(call.batch_size, call.input_len + call.output_len)
            self._settle_prefill(call.batch_size, call.input_len)
        elif self.kv_cache == "static" and self.engine_options.compile:
            self._inductor_config()

    def _inductor_config(self) -> None:
        import torch._inductor.config as ic

        ic.coordinate_descent_tuning = self.options.coordinate_descent_tuning
        ic.fx_graph_cache = True
        # Each point brings its own static cache, so dynamo recompiles once per point shape.
        cfg = self._torch._dynamo.config
        name = "recompile_limit" if hasattr(cfg, "recompile_limit") else "cache_size_limit"
        setattr(cfg, name, max(getattr(cfg, name), 64))

    def _static_cache(self, batch: int, length: int) -> None:
        """A StaticCache sized for this call. One untimed token allocates its tensors (marked
        as static addresses, so CUDA graphs can write into them); the compiled step itself is
        traced on its first call, in the warm-up."""
        from transformers import StaticCache

        if self._cache_shape == (batch, length):
            return
        torch = self._torch
        self._cache = None
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        self._cache = StaticCache(config=self.hf.config, max_cache_len=length)
        with torch.inference_mode():
            ids = torch.zeros((batch, 1), dtype=torch.long, device=self.device)
            self.hf(input_ids=ids, past_key_values=self._cache, use_cache=True)
        self._cache_shape = (batch, length)
        self._settled.clear()  # graphs recorded on the old cache's addresses do not carry over
        if self._step_fn is None:
            step, prefill = self._decode_step, self._prefill
            if self.engine_options.compile:
                self._inductor_config()
                step = torch.compile(step, mode=self.options.compile_mode, fullgraph=True)
                if self.options.prefill == "compiled":
                    # not fullgraph: transformers' causal-mask shortcut branches on the cache
                    # position (a tensor) at prefill; dynamo breaks the graph there once
                    prefill = torch.compile(prefill, mode=self.options.compile_mode, dynamic=False)
            self._step_fn, self._prefill_fn = step, prefill

    def _settle_prefill(self, batch: int, n_in: int) -> None:
        """Three untimed prefills of the point's prompt shape: a CUDA-graph mode compiles on the
        first call and records its graph on the second, so without these the first timed
        repeat's TTFT held the recording (seen on an H200: 39.7 ms, then 8.6 ms). A prefill
        runs once per generation, unlike the decode step, which the warm-up repeats settle.
        Once per shape and cache: a point repeated on the same cache pays nothing again (on an
        H200 three prefills take ~25 ms, most of the 33 ms a point that harness_overhead.py
        found outside the window)."""
        if self._prefill_fn == self._prefill or (batch, n_in) in self._settled:
            return  # eager (`==`: a bound method is a new object on each access), or settled
        self._settled.add((batch, n_in))
        torch = self._torch
        mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
        ids = torch.zeros((batch, n_in), dtype=torch.long, device=self.device)
        with torch.inference_mode():
            for _ in range(3):
                self._cache.reset()
                if mark is not None:
                    mark()
                self._prefill_fn(ids)

    def _prefill(self, ids):
        logits = self.hf(input_ids=ids, past_key_values=self._cache, use_cache=True,
                         logits_to_keep=1).logits
        return logits[:, -1].argmax(-1)

    def _decode_step(self, tokens, position_ids):
        out = self.hf(input_ids=tokens, past_key_values=self._cache, position_ids=position_ids,
                      use_cache=True)
        return out.logits[:, -1].argmax(-1)

    # -- generation -------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]], output_len: int, t_ref: float) -> list[RequestTimeline]:
        torch = self._torch
        timelines = [RequestTimeline(t_ref=t_ref, t_send=t_ref, prompt_tokens=len(p)) for p in prompts]
        if len({len(p) for p in prompts}) != 1:
            raise EngineError("prompts of one batch must have the same length (no padding here)")
        ids = torch.tensor(prompts, dtype=torch.long, device=self.device)
        with torch.inference_mode():
            if self.loop == "step":
                tokens, times_s = self._generate_step(ids, output_len)
                stamp_steps(timelines, times_s)
                steps = len(times_s)
            else:
                streamer = _streamer(timelines)
                self._generate_hf(ids, output_len, streamer)
                tokens, steps = streamer.tokens, streamer.steps
        self.last_tokens = tokens
        if steps != output_len:
            raise EngineError(f"generated {steps} tokens per sequence, asked {output_len}")
        return timelines

    def _generate_hf(self, ids, output_len: int, streamer) -> None:
        from transformers import CompileConfig, GenerationConfig

        torch = self._torch
        static = self.kv_cache == "static"
        gc = GenerationConfig(
            max_new_tokens=output_len, min_new_tokens=output_len, do_sample=False,
            num_beams=1, eos_token_id=self.hf.generation_config.eos_token_id,
            pad_token_id=self.hf.generation_config.pad_token_id,
            cache_implementation="static" if static else "dynamic",
            # generate() compiles the forward on its own whenever the cache is static (on CUDA);
            # an uncompiled static point must say so.
            disable_compile=not self.engine_options.compile,
            compile_config=CompileConfig(fullgraph=True, dynamic=False, mode=self.options.compile_mode)
            if self.engine_options.compile else None)
        self.hf.generate(input_ids=ids, attention_mask=torch.ones_like(ids), generation_config=gc,
                         streamer=streamer)

    def _generate_step(self, ids, output_len: int) -> tuple[list[list[int]], list[float]]:
        """Prefill, then output_len - 1 decode steps; returns each sequence's tokens and the
        perf_counter time at which each step's tokens were ready."""
        torch = self._torch
        batch, n_in = ids.shape
        self._static_cache(batch, n_in + output_len)
        clock = self._clock()  # first: the device is idle here, and the reset stays asynchronous
        self._cache.reset()  # rewinds the write position (generate() does the same)
        # (step, sequence): each step writes one contiguous row, read back once at the end
        out = torch.empty((output_len, batch), dtype=torch.long, device=self.device)
        mark = getattr(torch.compiler, "cudagraph_mark_step_begin", None)
        graphs = mark is not None and self.engine_options.compile
        if graphs:
            mark()
        out[0] = self._prefill_fn(ids)
        clock.mark()
        positions = torch.arange(n_in, n_in + output_len, device=self.device)[None, :]
        step = self._step_fn
        for i in range(1, output_len):
            if graphs:
                mark()
            # the copy into `out` also keeps the token: a CUDA-graph output is overwritten by
            # the next replay
            out[i] = step(out[i - 1][:, None], positions[:, i - 1:i])
            clock.mark()
        times_s = clock.times_s()  # the CUDA clock's one synchronisation
        return out.T.tolist(), times_s

    def _clock(self):
        """The step loop's per-token clock (see the module's docstring)."""
        torch = self._torch
        if self.device.type != "cuda":
            return _HostClock()
        if self.options.token_clock == "host_sync":
            return _HostClock(sync=lambda: torch.cuda.synchronize(self.device))
        return _EventClock(torch, self.device)

    def memory_peak_gib(self) -> float | None:
        torch = getattr(self, "_torch", None)
        if torch is not None and self.device.type == "cuda":
            # max_memory_allocated's value, without the flattening of every allocator statistic
            # into one sorted dict that it does first (~0.2 ms on an H200 host, each point)
            stats = torch.cuda.memory_stats_as_nested_dict(self.device)
            return stats.get("allocated_bytes", {}).get("all", {}).get("peak", 0) / 2**30
        # Linux reports ru_maxrss in KiB: the process's peak resident memory.
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20

    # -- perplexity -------------------------------------------------------------------------
    def loglikelihood(self, tokens: list[int], context_len: int, stride: int) -> tuple[float, int]:
        from llmbench.backends.windows import windows

        torch = self._torch
        nll, count = 0.0, 0
        with torch.inference_mode():
            for begin, end, score_from in windows(len(tokens), context_len, stride):
                window = torch.tensor([tokens[begin:end]], dtype=torch.long, device=self.device)
                logits = self.hf(input_ids=window, use_cache=False).logits[0].double()
                # row j predicts window[j + 1]; score the targets at absolute positions >= score_from
                first = max(score_from - begin, 1) - 1
                rows = logits[first:-1]
                targets = window[0, first + 1:]
                logp = torch.log_softmax(rows, dim=-1).gather(1, targets[:, None])
                nll -= float(logp.sum())
                count += int(targets.numel())
        return nll, count

    def next_token_logprobs(self, sequence: list[int], start: int, top_k: int):
        """One forward pass over the whole sequence (the prefill path), log-softmax in float64."""
        torch = self._torch
        with torch.inference_mode():
            ids = torch.tensor([sequence], dtype=torch.long, device=self.device)
            logits = self.hf(input_ids=ids, use_cache=False).logits[0, start - 1:-1].double()
            return torch.log_softmax(logits, dim=-1).cpu().numpy()


def event_times_s(anchor_s: float, offsets_ms: list[float]) -> list[float]:
    """perf_counter times of events measured in ms after a start event taken at anchor_s."""
    return [anchor_s + ms / 1e3 for ms in offsets_ms]


def stamp_steps(timelines: list[RequestTimeline], times_s: list[float]) -> None:
    """Every step brings one token to each sequence of the batch at once."""
    for tl in timelines:
        for t in times_s:
            tl.add(t)


class _HostClock:
    """Host time after each step; `sync` (if given) first waits for the device."""

    def __init__(self, sync=None):
        self.sync = sync
        self.stamps_s: list[float] = []

    def mark(self) -> None:
        if self.sync is not None:
            self.sync()
        self.stamps_s.append(time.perf_counter())

    def times_s(self) -> list[float]:
        return self.stamps_s


class _EventClock:
    """A CUDA event after each step, read after one synchronisation at the end.

    The anchor: after a synchronize the stream is idle, so the start event recorded right after
    the host timestamp runs within microseconds of it; every later event is placed on the host
    timeline by its elapsed time since that start event."""

    def __init__(self, torch, device):
        self.torch = torch
        torch.cuda.synchronize(device)
        self.anchor_s = time.perf_counter()
        self.start = self._record()
        self.events = []

    def _record(self):
        event = self.torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    def mark(self) -> None:
        self.events.append(self._record())

    def times_s(self) -> list[float]:
        if not self.events:
            return []
        self.events[-1].synchronize()
        return event_times_s(self.anchor_s, [self.start.elapsed_time(e) for e in self.events])


class _Stamps:
    """Time-stamps each step of generate() (transformers' streamer protocol: put/end).

    generate() first puts the prompt, then one tensor of new tokens (one per sequence) per
    step, already copied to the host: that copy is where the host waits for the device, so
    the time taken right after it is when the step's tokens became available."""

    def __init__(self, timelines: list[RequestTimeline]):
        self.timelines = timelines
        self.prompt_seen = False
        self.steps = 0
        self.tokens: list[list[int]] = [[] for _ in timelines]

    def put(self, value) -> None:
        if not self.prompt_seen:
            self.prompt_seen = True
            return
        ids = value.reshape(-1).tolist()  # a no-op sync when generate() already copied it
        t = time.perf_counter()
        if len(ids) != len(self.timelines):
            raise EngineError(f"streamer got {len(ids)} tokens for a batch of {len(self.timelines)}")
        self.steps += 1
        for tl, tok, out in zip(self.timelines, ids, self.tokens):
            tl.add(t)
            out.append(tok)

    def end(self) -> None:
        pass


def _streamer(timelines: list[RequestTimeline]) -> _Stamps:
    """A `_Stamps` that is also a transformers BaseStreamer (imported only when generating)."""
    global _StampsStreamer
    if _StampsStreamer is None:
        from transformers.generation.streamers import BaseStreamer

        _StampsStreamer = type("StampsStreamer", (_Stamps, BaseStreamer), {})
    return _StampsStreamer(timelines)


_StampsStreamer = None
