"""SGLang (0.5.17): in process through its offline `Engine` API, and its server for
`llmbench serve --launch sglang` (its /metrics mapped below). Facts are from the 0.5.17 wheel's
source (server_args.py, entrypoints/engine.py, observability/metrics_collector.py); the GPU
paths have not yet run (issue 39: the H200 campaign proves them).

One point's batch is `batch_size` requests sent together with `async_generate(stream=True)` on
the engine's own event loop, so the scheduler runs them as that many concurrent sequences.
Output is forced: `{"max_new_tokens": N, "ignore_eos": True, "temperature": 0}` (greedy; with
ignore_eos nothing but the length ends a request). Prompts go in as token ids; a config-only
(synthetic) model loads with `load_format="dummy"` and `skip_tokenizer_init=True`.

Timestamps. A streamed chunk carries the cumulative `meta_info.completion_tokens`; its arrival
(`time.perf_counter()` as it reaches this process) is the arrival time of every token it adds.
When the engine coalesces k > 1 tokens into one chunk (it yields only the latest of queued
outputs), those k tokens are recorded at that one time (one timeline event of k tokens; no
times are invented between them); the ITL metric then splits the chunk's gap evenly over its
k tokens (measure/timeline.py), as SGLang's bench_serving native backend does.

Warm-up and graph capture. SGLang captures its CUDA graphs while the Engine is built (`load`,
timed as load_time_s); `prepare` runs one untimed 2-token batch of the point's shape, so the
kernels a new batch or prompt length JIT-compiles are built before the workload's warm-ups.

Processes. The Engine sets the spawn start method and starts its scheduler and detokenizer as
child processes, so a script needs the `if __name__ == "__main__":` guard (llmbench's worker has
one). Its `shutdown()` SIGKILLs every descendant of the calling process, not just its own.
llmbench's worker runs one group's engine and no other long-lived child (its samplers are
threads), so that is safe there; `close()` still checks: when a child that was alive before
`load` is alive, it skips `shutdown()` and ends only the processes started since `load`.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from llmbench.backends.base import Backend
from llmbench.backends.options import EngineOptions
from llmbench.backends.call import EngineCall
from llmbench.backends.engine import PrometheusNames, ServerCommand
from llmbench.errors import EngineError, SpecError
from llmbench.measure.timeline import RequestTimeline

DTYPES = {"auto": "auto", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
# llmbench's KV-cache names -> SGLang's (server_args.py l.671). fp8 is e4m3: fa3 (the H200
# default) silently switches to triton for e5m2 (arg_groups/overrides.py:2189).
KV_CACHE_DTYPES = {"auto": "auto", "bf16": "bfloat16", "bfloat16": "bfloat16", "fp8": "fp8_e4m3",
                   "fp8_e4m3": "fp8_e4m3", "fp8_e5m2": "fp8_e5m2"}
# weight quantizations for dense FP8 checkpoints or online FP8 (QUANTIZATION_CHOICES l.137)
WEIGHT_QUANTS = ("fp8", "modelopt_fp8", "w8a8_fp8")
ATTENTION_BACKENDS = ("triton", "torch_native", "flex_attention", "fa3", "fa4", "flashinfer",
                      "trtllm_mha")


class SglangOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    attention_backend: Literal[ATTENTION_BACKENDS] | None = Field(  # type: ignore[valid-type]
        None, description="default: SGLang's (fa3 on the H200; fa3 and triton fetch nothing)")
    sampling_backend: Literal["pytorch", "flashinfer"] = Field(
        "pytorch", description="pytorch keeps flashinfer out of sampling (greedy uses argmax)")
    mem_fraction_static: float | None = Field(None, gt=0, le=1,
                                              description="memory for weights + KV cache; default SGLang's")
    chunked_prefill_size: int | None = Field(None, ge=-1, description="tokens per prefill chunk; "
                                             "-1 disables; default SGLang's (8192 on the H200)")
    cuda_graph: bool = Field(True, description="false: disable_cuda_graph (eager decode)")
    cuda_graph_max_bs_decode: int | None = Field(None, ge=1, description="largest batch captured; "
                                                 "default SGLang's (256 on the H200 at tp < 4)")
    disable_radix_cache: bool = Field(True, description="prefix cache off: llmbench's prompts differ")
    random_seed: int = 0
    log_level: str = "error"

    @field_validator("chunked_prefill_size")
    @classmethod
    def _chunk_size(cls, v: int | None) -> int | None:
        if v == 0:
            raise ValueError("0 is not a size; -1 disables chunking")
        return v


class SglangBackend(Backend):
    name = "sglang"
    package = "sglang"
    distribution = "sglang"
    extra = "sglang"
    launches = True
    prometheus = PrometheusNames(
        prefix="sglang:",
        # its token and request counters move when a request finishes (vLLM's every step)
        counters={"prompt_tokens": ("sglang:prompt_tokens_total",),
                  "generation_tokens": ("sglang:generation_tokens_total",),
                  "preemptions": ("sglang:num_retracted_requests_total",),
                  # its cached tokens against the prompt tokens of finished requests
                  "prefix_cache_queries": ("sglang:prompt_tokens_total",),
                  "prefix_cache_hits": ("sglang:cached_tokens_total",),
                  "requests_finished": ("sglang:num_requests_total",)},
        gauges={"requests_running": ("sglang:num_running_reqs",),
                "requests_waiting": ("sglang:num_queue_reqs",),
                "kv_cache_usage": ("sglang:token_usage",)},   # 0..1, rounded to 0.01
        histograms={"ttft_s": ("sglang:time_to_first_token_seconds",),
                    # a k-token chunk adds its gap to _sum and k to _count: a per-token mean
                    "itl_s": ("sglang:inter_token_latency_seconds",),
                    "e2e_s": ("sglang:e2e_request_latency_seconds",),
                    "queue_s": ("sglang:queue_time_seconds",)})   # the scheduler's wait queue
    Options = SglangOptions
    supports = frozenset({"tensor_parallel", "pipeline_parallel", "kv_cache_dtype", "weight_quant"})

    @classmethod
    def server_command(cls, model: str, port: int, device: str,
                       options: EngineOptions | None = None) -> ServerCommand:
        """SGLang's HTTP server with /metrics on. Readiness is /health, which answers 200 only
        once one token was generated (polled before the load only, never during a point)."""
        from llmbench.models.sources import model_path, resolve

        if options is not None and options.embedding:
            raise SpecError([("--shape", "llmbench does not launch SGLang's embedding mode; "
                                         "start it yourself and give its URL")])
        ref = resolve(model)
        if ref.source == "gguf":
            raise SpecError([("model", f"SGLang here serves HF models; {ref.name!r} is a GGUF file")])
        path = str(model_path(model, "hf"))
        argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", path,
                "--host", "127.0.0.1", "--port", str(port), "--enable-metrics",
                "--served-model-name", ref.name]
        if ref.synthetic_weights:  # config + made-up full-vocabulary tokenizer: random weights
            argv += ["--load-format", "dummy", "--tokenizer-path", path]
        argv += _device_args(device, "--base-gpu-id")
        return ServerCommand(argv, {}, "/health")

    @classmethod
    def check(cls, call: EngineCall, model) -> list[tuple[str, str]]:
        problems = super().check(call, model)
        if model.source == "gguf":
            problems.append(("model", f"SGLang here runs HF models; {model.name!r} is a GGUF file"))
        if call.workload != "offline":
            problems.append(("workload", f"backend 'sglang' runs the offline workload, not {call.workload!r}"))
        if not call.device.startswith("cuda"):
            problems.append(("device", f"backend 'sglang' runs on cuda here, not {call.device!r}"))
        kv = call.options.kv_cache_dtype
        if kv is not None and kv not in KV_CACHE_DTYPES:
            problems.append(("options.kv_cache_dtype",
                             f"{kv!r}: SGLang takes {', '.join(KV_CACHE_DTYPES)}"))
        wq = call.options.weight_quant
        if wq is not None and wq not in WEIGHT_QUANTS:
            problems.append(("options.weight_quant", f"{wq!r}: llmbench runs SGLang with {', '.join(WEIGHT_QUANTS)}"))
        return problems

    # -- life cycle -------------------------------------------------------------------------
    def engine_kwargs(self) -> dict[str, Any]:
        """The Engine's keyword arguments (its ServerArgs fields) for this call."""
        from llmbench.models.sources import model_path

        eo, o = self.engine_options, self.options
        path = str(model_path(self.call.model, "hf"))
        kw: dict[str, Any] = dict(
            model_path=path, dtype=DTYPES[self.call.dtype], tp_size=eo.tensor_parallel,
            pp_size=eo.pipeline_parallel, random_seed=o.random_seed, log_level=o.log_level,
            disable_radix_cache=o.disable_radix_cache, sampling_backend=o.sampling_backend,
            disable_cuda_graph=not o.cuda_graph, skip_tokenizer_init=True)
        if self.model.synthetic_weights:
            kw["load_format"] = "dummy"
        if ":" in self.call.device:
            kw["base_gpu_id"] = int(self.call.device.split(":")[1])
        for key, value in (("kv_cache_dtype", KV_CACHE_DTYPES.get(eo.kv_cache_dtype or "")),
                           ("quantization", eo.weight_quant),
                           ("attention_backend", o.attention_backend),
                           ("mem_fraction_static", o.mem_fraction_static),
                           ("chunked_prefill_size", o.chunked_prefill_size),
                           ("cuda_graph_max_bs_decode", o.cuda_graph_max_bs_decode)):
            if value is not None:
                kw[key] = value
        return kw

    def load(self) -> None:
        import psutil

        self._children_before = {c.pid for c in psutil.Process().children(recursive=True)}
        self._kwargs = self.engine_kwargs()
        import sglang

        try:
            self.engine = sglang.Engine(**self._kwargs)
        except BaseException:  # a half-started engine: end the processes it left, by pid
            _end_processes(self._new_children())
            raise
        self._config = _read_config(self._kwargs["model_path"])

    def prepare(self, call: EngineCall) -> None:
        n = call.batch_size
        self.generate([[1] * call.input_len] * n, min(2, call.output_len), time.perf_counter())

    def version(self) -> str | None:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return version("sglang")
        except PackageNotFoundError:
            return None

    def effective_options(self) -> dict:
        eff = super().effective_options()
        eff.update(requested={k: v for k, v in getattr(self, "_kwargs", {}).items() if k != "model_path"},
                   sampling="greedy (temperature 0), max_new_tokens = output_len, EOS ignored",
                   timestamps="perf_counter per streamed chunk; a k-token chunk gives k tokens one time")
        engine = getattr(self, "engine", None)
        args = getattr(engine, "server_args", None)
        if args is not None:  # as SGLang resolved them (auto attention backend, graph sizes ...)
            for key in ("dtype", "quantization", "kv_cache_dtype", "tp_size", "pp_size",
                        "attention_backend", "prefill_attention_backend", "decode_attention_backend",
                        "sampling_backend", "chunked_prefill_size", "mem_fraction_static",
                        "disable_cuda_graph", "cuda_graph_max_bs_decode", "disable_radix_cache",
                        "max_running_requests", "context_length", "random_seed", "load_format"):
                if hasattr(args, key):
                    eff[f"resolved_{key}"] = getattr(args, key)
        return eff

    def close(self) -> None:
        engine = getattr(self, "engine", None)
        if engine is None:
            return
        self.engine = None
        foreign = self._foreign_children()
        if not foreign:
            engine.shutdown()
            return
        # shutdown() would SIGKILL these too: end only what SGLang started since load
        _end_processes(self._new_children())
        raise EngineError(f"SGLang's shutdown() kills every child of this process; processes "
                          f"{sorted(foreign)} predate the engine, so only its own were ended")

    def _children(self):
        import psutil

        return [c for c in psutil.Process().children(recursive=True) if c.is_running()]

    def _foreign_children(self) -> set[int]:
        before = getattr(self, "_children_before", set())
        return {c.pid for c in self._children() if c.pid in before}

    def _new_children(self):
        before = getattr(self, "_children_before", set())
        return [c for c in self._children() if c.pid not in before]

    # -- token space ------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        if self.model.synthetic_weights:
            raise EngineError("a synthetic (random-weight) model has no tokenizer")
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(self._kwargs["model_path"])
        return list(tok.encode(text, add_special_tokens=False))

    @property
    def vocab_size(self) -> int:
        return int(self._config["vocab_size"])

    @property
    def context_len(self) -> int | None:
        return self._config.get("max_position_embeddings")

    # -- work -------------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]], output_len: int, t_ref: float) -> list[RequestTimeline]:
        import asyncio

        params = {"max_new_tokens": output_len, "ignore_eos": True, "temperature": 0}
        timelines = [RequestTimeline(t_ref=t_ref, t_send=None, prompt_tokens=len(p)) for p in prompts]

        async def one(prompt: list[int], tl: RequestTimeline) -> None:
            tl.t_send = time.perf_counter()
            stream = await self.engine.async_generate(input_ids=list(prompt), sampling_params=params,
                                                      stream=True)
            seen = 0
            async for chunk in stream:
                t = time.perf_counter()
                done = chunk["meta_info"]["completion_tokens"]
                if done > seen:
                    tl.add(t, done - seen)
                    seen = done
                if chunk["meta_info"].get("prompt_tokens", len(prompt)) != len(prompt):
                    raise EngineError(f"SGLang saw {chunk['meta_info']['prompt_tokens']} prompt "
                                      f"tokens, llmbench sent {len(prompt)}")

        async def batch() -> None:
            await asyncio.gather(*(one(p, tl) for p, tl in zip(prompts, timelines)))

        self.engine.loop.run_until_complete(batch())
        return timelines


def _device_args(device: str, flag: str) -> list[str]:
    if device.startswith("cuda"):
        return [flag, device.split(":")[1]] if ":" in device else []
    raise SpecError([("device", f"llmbench runs SGLang on cuda, not {device!r}")])


def _read_config(model_dir: str) -> dict:
    from pathlib import Path

    return json.loads((Path(model_dir) / "config.json").read_text())


def _end_processes(procs, wait_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL what is left: by pid, these processes only."""
    import psutil

    for p in procs:
        try:
            p.terminate()
        except psutil.NoSuchProcess:
            pass
    _, alive = psutil.wait_procs(procs, timeout=wait_s)
    for p in alive:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
