"""llama.cpp through llama-cpp-python's low-level API.

`batch_size` means that many sequences decoded together: one llama_batch holding one sequence
id per request, as llama.cpp's `batched` example does (not n_batch, which is only the prefill
chunk). The high-level `Llama` object loads the model and tokenizer; each point gets its own
context with n_seq_max = batch size, created outside the timed window.

Sampling is greedy (argmax over the logits of each sequence's last token) and never stops at
end-of-generation, so every sequence yields exactly output_len tokens.

GPU: `device: cuda` offloads every layer (n_gpu_layers -1) unless told otherwise. What llama.cpp
actually did is read from its own log while the model loads and the context is made, and stated
in the record: layers offloaded of the total, the devices used, and flash attention as resolved
(llama.cpp's default `auto` enables it where every device supports it).
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import sys
import time
from contextlib import contextmanager
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from llmbench.backends.base import Backend
from llmbench.backends.options import EngineOptions
from llmbench.backends.engine import PrometheusNames, RooflineAsk, ServerCommand, WeightRule
from llmbench.errors import EngineError, SpecError
from llmbench.measure.timeline import RequestTimeline
from llmbench.backends.call import EngineCall

_KV_TYPES = {"f16": 1, "fp16": 1, "q4_0": 2, "q8_0": 8, "f32": 0, "fp32": 0, "bf16": 30}


def lora_server(base: dict, model: str, port: int, lora) -> ServerCommand:
    """llama-cpp-python's server takes one lora_path per model; several adapters are several
    model entries of its --config_file (the same GGUF, each its own lora_path and model_alias;
    the base first, the default). It holds ONE entry loaded at a time: a request for another
    entry closes the loaded model and loads the GGUF again with that adapter, so every switch
    of adapter is a full model load (max_loras is 1 here, whatever is asked), and a model name
    it does not know is served by the default entry. The config file lives beside the adapters
    (named by its content); the port comes from PORT, so the file does not change with it."""
    import hashlib
    import json

    from llmbench.models.lora import gguf_adapter
    from llmbench.models.sources import model_path

    if lora.max_loras not in (None, 1):
        raise SpecError([("--shape-opt max_loras", "llama-cpp-python's server holds one adapter "
                                                   "loaded at a time (every switch reloads the "
                                                   "model): leave max_loras out or give 1")])
    hf = model_path(model, "hf")
    entries = [base] + [{**base, "model_alias": name, "lora_path": str(gguf_adapter(hf, spec))}
                        for name, spec in lora.named()]
    text = json.dumps({"host": "127.0.0.1", "interrupt_requests": False, "models": entries}, indent=1)
    path = gguf_adapter(hf, lora.named()[0][1]).parent / \
        f"llamacpp-server-{hashlib.sha256(text.encode()).hexdigest()[:12]}.json"
    if not path.is_file():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(text)
        os.replace(tmp, path)
    return ServerCommand([sys.executable, "-m", "llama_cpp.server", "--config_file", str(path)],
                         {"PORT": str(port)}, "/v1/models")


class LlamaCppOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    n_threads: int | None = Field(None, ge=1, description="default: every core")
    n_batch: int = Field(512, ge=1, description="prefill chunk (llama.cpp's n_batch), not concurrency")
    n_gpu_layers: int | None = Field(None, description="default: 0 on cpu, all (-1) on cuda")
    flash_attn: bool | None = Field(None, description="default: llama.cpp's auto (on where every "
                                                      "device supports it)")
    gguf_type: Literal["f16", "q8_0", "q4_0"] | None = Field(
        None, description="a synthetic model's random-weight GGUF type (default f16); a real "
        "GGUF re-written in it by llama.cpp's quantiser (default: the file's own types)")


class LlamaCppBackend(Backend):
    name = "llamacpp"
    package = "llama_cpp"
    distribution = "llama-cpp-python"
    extra = "llamacpp"
    Options = LlamaCppOptions
    supports = frozenset({"kv_cache_dtype"})
    scores_text = True
    next_token_logprobs_kind = "full"
    launches = True
    # llama-cpp-python 0.3.36's CUDA build segfaults while loading a model when numpy was
    # imported before it (seen on the H200: numpy 2.5 loaded first, then
    # llama_model_load_from_file crashes; llama_cpp first, then numpy, works). So a worker of
    # llama.cpp points loads it first, and this module imports numpy only inside methods.
    preload = ("llama_cpp",)
    # llama.cpp's own `llama-server --metrics` (llama-cpp-python's server has no /metrics)
    prometheus = PrometheusNames(
        prefix="llamacpp:",
        counters={"prompt_tokens": ("llamacpp:prompt_tokens_total",),
                  "generation_tokens": ("llamacpp:tokens_predicted_total",)},
        gauges={"requests_running": ("llamacpp:requests_processing",),
                "requests_waiting": ("llamacpp:requests_deferred",),
                "kv_cache_usage": ("llamacpp:kv_cache_usage_ratio",)})

    @classmethod
    def server_command(cls, model: str, port: int, device: str,
                       options: EngineOptions | None = None) -> ServerCommand:
        """llama-cpp-python's OpenAI server. interrupt_requests off: its default aborts a running
        stream when a new request comes, which would turn every concurrency > 1 into truncated
        answers. `embedding`: its /v1/embeddings on (the model's own pooling type: none for
        SmolLM2's GGUF, one vector per token; the server has no flag to set it)."""
        from llmbench.models.sources import model_path, resolve

        model_settings = {"model": str(model_path(model, "gguf")), "model_alias": resolve(model).name,
                          "n_threads": os.cpu_count() or 1}
        if device.startswith("cuda"):
            model_settings["n_gpu_layers"] = -1
        if options is not None and options.embedding:
            model_settings["embedding"] = True
        if options is not None and options.lora is not None:
            return lora_server(model_settings, model, port, options.lora)
        first = ("model", "model_alias", "n_threads")
        m, alias, threads = (str(model_settings[k]) for k in first)
        argv = [sys.executable, "-m", "llama_cpp.server", "--model", m, "--host", "127.0.0.1",
                "--port", str(port), "--model_alias", alias, "--n_threads", threads,
                "--interrupt_requests", "False",
                *(a for k, v in model_settings.items() if k not in first for a in (f"--{k}", str(v)))]
        return ServerCommand(argv, {}, "/v1/models")

    structured_dialect = "json-object"

    @classmethod
    def check_request_shape(cls, shape: str, options) -> None:
        """What llama-cpp-python 0.3.36's server cannot be asked (read from its server/app.py
        and types, and tried 2026-12-07): it has no /v1/rerank or /score route, no field for a
        regular expression, and its chat handlers honour no `tool_choice: required` (the
        answers come back as text)."""
        if shape == "rerank":
            raise SpecError([("--shape", "llama-cpp-python's server has no /v1/rerank or /score "
                                         "route (only /v1/embeddings): rerank with --launch vllm")])
        if shape == "structured" and options.get("mode") == "regex":
            raise SpecError([("--structured", "llama-cpp-python's server has no field for a regular "
                                              "expression (a JSON schema or a GBNF grammar only): "
                                              "use json-schema= or choice=")])
        if shape == "tools" and options.get("tool_choice") == "required":
            raise SpecError([("--tool-choice", "llama-cpp-python's server does not honour "
                                               "tool_choice=required (its answers come back as text): "
                                               "use --tool-choice auto, or --launch vllm")])

    @classmethod
    def speculation_args(cls, spec) -> list[str]:
        """llama-cpp-python 0.3.36's server speculates by prompt lookup only
        (LlamaPromptLookupDecoding: the last 2 tokens looked up, else the last 1; any
        --draft_model text turns it on); it loads no draft model."""
        if spec.method != "ngram":
            raise SpecError([("--speculative", "llama-cpp-python's server speculates by prompt lookup "
                                               "only (ngram:k=N); it cannot load a draft model")])
        if (spec.ngram_min or 1) != 1 or (spec.ngram_max or 2) != 2:
            raise SpecError([("--speculative", "llama-cpp-python's prompt lookup fixes its n-grams at "
                                               "2 then 1 token: leave min/max out (or give min=1,max=2)")])
        return ["--draft_model", "prompt-lookup-decoding", "--draft_model_num_pred_tokens", str(spec.k)]

    @classmethod
    def roofline_weights(cls, ask: RooflineAsk) -> WeightRule:
        return roofline_weights(ask)

    @classmethod
    def check(cls, call: EngineCall, model) -> list[tuple[str, str]]:
        problems = super().check(call, model)
        if model.source not in ("bundled", "gguf", "synthetic"):
            problems.append(("model", f"llama.cpp needs a GGUF model; {model.name!r} is {model.source}"))
        kv = call.options.kv_cache_dtype
        if kv is not None and kv not in _KV_TYPES and kv != "auto":
            problems.append(("options.kv_cache_dtype", f"{kv!r} is not one of {sorted(_KV_TYPES)}"))
        if model.source == "synthetic" and model.arch is not None:
            from llmbench.models.gguf_synth import gguf_unsupported

            why = gguf_unsupported(model.arch)
            if why:
                problems.append(("model", why))
        if call.dtype not in ("auto",):
            problems.append(("dtype", "llama.cpp runs the GGUF's own weight types; use dtype auto"))
        limit = model.arch.max_position if model.arch else None
        if limit and call.workload == "offline" and call.input_len + call.output_len > limit:
            problems.append(("input_len+output_len", f"{call.input_len + call.output_len} exceeds "
                                                     f"the model's context of {limit} tokens"))
        return problems

    # -- life cycle -------------------------------------------------------------------------
    def load(self) -> None:
        import llama_cpp

        from llmbench.models.sources import model_path

        self._ll = llama_cpp
        o = self.options
        gpu = self.call.device.startswith("cuda")
        self.n_threads = o.n_threads or os.cpu_count() or 1
        self.n_gpu_layers = o.n_gpu_layers if o.n_gpu_layers is not None else (-1 if gpu else 0)
        self.path = model_path(self.call.model, "gguf", gguf_type=o.gguf_type)
        with _llama_log(llama_cpp) as log:
            self.llm = llama_cpp.Llama(str(self.path), n_ctx=512, n_threads=self.n_threads,
                                       n_gpu_layers=self.n_gpu_layers, verbose=False)
        self._placement = placement_from_log(log, llama_cpp.llama_model_n_layer(self.llm.model))
        self._flash_attn_used: str | None = None
        self.vocab = llama_cpp.llama_model_get_vocab(self.llm.model)
        self._n_vocab = llama_cpp.llama_vocab_n_tokens(self.vocab)
        self.ctx = None
        self._ctx_shape = None
        self._last_perf = {}

    def model_facts(self) -> dict:
        buf = ctypes.create_string_buffer(256)
        self._ll.llama_model_desc(self.llm.model, buf, len(buf))
        return {"weight_bytes": int(self._ll.llama_model_size(self.llm.model)),
                "description": buf.value.decode("utf-8", "replace"), "file": str(self.path)}

    def workload_facts(self) -> dict:
        # llama.cpp's description ends in the file's dominant weight type ("llama 8B Q4_0")
        desc = self.model_facts()["description"].split()
        return {"gguf_type": desc[-1].lower()} if desc else {}

    def version(self) -> str | None:
        import llama_cpp

        return llama_cpp.__version__

    def effective_options(self) -> dict:
        eff = super().effective_options()
        eff.update(n_threads=getattr(self, "n_threads", None),
                   n_gpu_layers=getattr(self, "n_gpu_layers", None),
                   n_ctx=(self._ctx_shape or (None,))[0], n_seq_max=(self._ctx_shape or (0, None))[1],
                   kv_cache_dtype=self.engine_options.kv_cache_dtype or "f16",
                   flash_attn=getattr(self, "_flash_attn_used", None) or _FA_NAMES[self.options.flash_attn],
                   flash_attn_requested=_FA_NAMES[self.options.flash_attn],
                   **getattr(self, "_placement", {}),
                   sampling="greedy (argmax), EOS ignored", gguf=str(getattr(self, "path", "")))
        return eff

    def close(self) -> None:
        self._free_ctx()
        if getattr(self, "llm", None) is not None:
            self.llm.close()
            self.llm = None

    def _free_ctx(self) -> None:
        if getattr(self, "ctx", None) is not None:
            self._ll.llama_free(self.ctx)
            self.ctx = None

    # -- token space ------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    @property
    def vocab_size(self) -> int:
        return self._n_vocab

    @property
    def context_len(self) -> int | None:
        return self._ll.llama_model_n_ctx_train(self.llm.model)

    # -- contexts ---------------------------------------------------------------------------
    def _context(self, n_seq: int, n_ctx: int) -> None:
        """A context holding n_seq sequences of up to n_ctx/n_seq tokens each."""
        ll = self._ll
        n_ctx = -(-n_ctx // 256) * 256
        if self._ctx_shape == (n_ctx, n_seq):
            return
        self._free_ctx()
        p = ll.llama_context_default_params()
        p.n_ctx, p.n_seq_max = n_ctx, n_seq
        p.n_batch = max(self.options.n_batch, n_seq)  # one decode step holds every sequence
        p.n_ubatch = p.n_batch
        p.n_threads = p.n_threads_batch = self.n_threads
        p.no_perf = False  # keep llama.cpp's own timings for the cross-check
        p.kv_unified = True  # sequences share one cache: n_ctx is the total, not per sequence
        kv = self.engine_options.kv_cache_dtype
        if kv and kv != "auto":
            p.type_k = p.type_v = _KV_TYPES[kv]
        if self.options.flash_attn is not None:
            p.flash_attn_type = 1 if self.options.flash_attn else 0
        with _llama_log(ll) as log:
            self.ctx = ll.llama_init_from_model(self.llm.model, p)
        self._flash_attn_used = flash_attn_from_log(log) or self._flash_attn_used
        if not self.ctx:
            raise EngineError(f"llama_init_from_model failed (n_ctx={n_ctx}, n_seq_max={n_seq})")
        self._ctx_shape = (n_ctx, n_seq)
        self._batch_cap = p.n_batch

    def prepare(self, call: EngineCall) -> None:
        if call.workload == "offline":
            self._context(call.batch_size, call.batch_size * (call.input_len + call.output_len) + 16)

    # -- generation -------------------------------------------------------------------------
    def _decode(self, batch, tokens, positions, seqs, want_logits) -> None:
        ll = self._ll
        for i, (tok, pos, sq, lg) in enumerate(zip(tokens, positions, seqs, want_logits)):
            batch.token[i] = tok
            batch.pos[i] = pos
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = sq
            batch.logits[i] = lg
        batch.n_tokens = len(tokens)
        rc = ll.llama_decode(self.ctx, batch)
        if rc != 0:
            raise EngineError(f"llama_decode returned {rc} (batch of {len(tokens)} tokens)")

    def _argmax(self, i: int) -> int:
        import numpy as np

        ptr = self._ll.llama_get_logits_ith(self.ctx, i)
        return int(np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).argmax())

    def generate(self, prompts: list[list[int]], output_len: int, t_ref: float) -> list[RequestTimeline]:
        import numpy as np

        ll = self._ll
        n = len(prompts)
        need = sum(len(p) for p in prompts) + n * output_len
        if self._ctx_shape is None or self._ctx_shape[1] != n or self._ctx_shape[0] < need:
            self._context(n, need + 16)  # untimed only when prepare() was called for this shape
        ll.llama_memory_clear(ll.llama_get_memory(self.ctx), True)
        ll.llama_perf_context_reset(self.ctx)
        cap = self._batch_cap
        batch = ll.llama_batch_init(cap, 0, 1)
        timelines = [RequestTimeline(t_ref=t_ref, t_send=t_ref, prompt_tokens=len(p)) for p in prompts]
        try:
            # Prefill every prompt, in chunks of at most n_batch tokens; the logits of each
            # prompt's last token give that sequence's first output token.
            flat = [(tok, pos, s, pos == len(p) - 1) for s, p in enumerate(prompts)
                    for pos, tok in enumerate(p)]
            last_index: dict[int, int] = {}
            nxt = [0] * n
            out: list[list[int]] = [[] for _ in range(n)]
            for c in range(0, len(flat), cap):
                chunk = flat[c:c + cap]
                self._decode(batch, *zip(*chunk))
                for i, (_, _, s, is_last) in enumerate(chunk):
                    if is_last:
                        last_index[s] = i
                if last_index:
                    for s, i in last_index.items():
                        nxt[s] = self._argmax(i)
                        out[s].append(nxt[s])
                    t = time.perf_counter()
                    for s in last_index:
                        timelines[s].add(t)
                    last_index = {}
            pos = [len(p) for p in prompts]
            seqs, every = list(range(n)), [True] * n
            for _ in range(output_len - 1):
                self._decode(batch, nxt, pos, seqs, every)
                # one vectorised argmax over the n rows (outputs come in batch order)
                logits = np.ctypeslib.as_array(ll.llama_get_logits(self.ctx), shape=(n, self._n_vocab))
                nxt = logits.argmax(axis=1).tolist()
                t = time.perf_counter()
                for s in range(n):
                    timelines[s].add(t)
                    pos[s] += 1
                    out[s].append(nxt[s])
        finally:
            ll.llama_batch_free(batch)
        self.last_tokens = out  # the generated ids per sequence (tests compare engines with them)
        perf = ll.llama_perf_context(self.ctx)
        self._last_perf = {"prefill_s": perf.t_p_eval_ms / 1e3, "decode_s": perf.t_eval_ms / 1e3,
                           "prefill_tokens": float(perf.n_p_eval), "decode_steps": float(perf.n_eval)}
        return timelines

    def engine_timings(self) -> dict[str, float]:
        return dict(self._last_perf)

    # -- perplexity -------------------------------------------------------------------------
    def loglikelihood(self, tokens: list[int], context_len: int, stride: int) -> tuple[float, int]:
        import numpy as np

        from llmbench.backends.windows import windows

        ll = self._ll
        self._context(1, context_len + 16)
        batch = ll.llama_batch_init(self._batch_cap, 0, 1)
        nll, count = 0.0, 0
        try:
            for begin, end, score_from in windows(len(tokens), context_len, stride):
                ll.llama_memory_clear(ll.llama_get_memory(self.ctx), True)
                window = tokens[begin:end]
                logits_rows = []
                for c in range(0, len(window), self._batch_cap):
                    part = window[c:c + self._batch_cap]
                    self._decode(batch, part, list(range(c, c + len(part))), [0] * len(part),
                                 [True] * len(part))
                    for i in range(len(part)):
                        ptr = ll.llama_get_logits_ith(self.ctx, i)
                        logits_rows.append(np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).astype(np.float64))
                # row j predicts window[j + 1]; score the targets at absolute positions >= score_from
                for j in range(max(score_from - begin, 1) - 1, len(window) - 1):
                    row = logits_rows[j]
                    m = row.max()
                    lse = m + np.log(np.exp(row - m).sum())
                    nll += lse - row[window[j + 1]]
                    count += 1
        finally:
            ll.llama_batch_free(batch)
        return nll, count

    def next_token_logprobs(self, sequence: list[int], start: int, top_k: int):
        """The sequence decoded in one context with logits at every position (llama.cpp's
        logits_all), in chunks of n_batch; log-softmax in float64."""
        import numpy as np

        from scipy.special import log_softmax

        ll = self._ll
        self._context(1, len(sequence) + 16)
        ll.llama_memory_clear(ll.llama_get_memory(self.ctx), True)
        batch = ll.llama_batch_init(self._batch_cap, 0, 1)
        rows = []
        try:
            for c in range(0, len(sequence), self._batch_cap):
                part = sequence[c:c + self._batch_cap]
                want = [c + i >= start - 1 for i in range(len(part))]
                self._decode(batch, part, list(range(c, c + len(part))), [0] * len(part), want)
                for i in (i for i, w in enumerate(want) if w):
                    ptr = ll.llama_get_logits_ith(self.ctx, i)
                    rows.append(np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).astype(np.float64))
        finally:
            ll.llama_batch_free(batch)
        return log_softmax(np.stack(rows[:len(sequence) - start]).astype(np.float64), axis=-1)


_FA_NAMES = {None: "auto", True: "enabled", False: "disabled"}


@contextmanager
def _llama_log(ll):
    """Collect llama.cpp's log lines (instead of printing them) while the block runs, then give
    logging back to llama-cpp-python's own handler."""
    lines: list[str] = []

    @ll.llama_log_callback
    def collect(level, text, user_data):
        lines.append(text.decode("utf-8", "replace"))

    ll.llama_log_set(collect, ctypes.c_void_p(0))
    try:
        yield lines
    finally:
        from llama_cpp import _logger

        ll.llama_log_set(_logger.llama_log_callback, ctypes.c_void_p(0))


def placement_from_log(lines: list[str], n_layer: int) -> dict:
    """Where llama.cpp put the model, as its loader logged it ("offloaded 33/33 layers to GPU",
    "using device CUDA0 (NVIDIA H200) ..."). Only what the log says; nothing is inferred."""
    text = "".join(lines)
    out: dict = {"layers_total": n_layer}
    m = re.search(r"offloaded (\d+)/(\d+) layers to GPU", text)
    if m:
        out["layers_offloaded"], out["layers_offloadable"] = int(m[1]), int(m[2])
    else:
        out["layers_offloaded"] = 0  # the loader logs the line only when a GPU backend exists
    devices = re.findall(r"using device (\S+) \(([^)]*)\)", text)
    out["ggml_devices"] = [f"{d} ({name})" for d, name in devices] or ["CPU"]
    out["ggml_backend"] = "CUDA" if any(d.startswith("CUDA") for d, _ in devices) else \
        (devices[0][0].rstrip("0123456789") if devices else "CPU")
    return out


def flash_attn_from_log(lines: list[str]) -> str | None:
    """Flash attention as the context resolved it: 'enabled' / 'disabled', or None when the log
    does not say (older llama.cpp)."""
    text = "".join(lines)
    if re.search(r"Flash Attention (not supported|.*set to disabled)", text):
        return "disabled"
    if re.search(r"Flash Attention enabled", text):
        return "enabled"
    m = re.search(r"flash_attn\s+=\s+(enabled|disabled)", text)
    return m[1] if m else None


# -- the roofline's rules for llama.cpp records -----------------------------------------------
# llama.cpp runs the GGUF's own types under dtype 'auto': its weight bytes are the record's
# model.weight_bytes when it carries them, else the bundled SmolLM2 GGUF's tensor bytes (Q4_1
# blocks, Q8_0 embeddings: 96.6 MB, 5.7 bits/param), else Q4_1 (5.0 bits/param: 32 4-bit
# weights + fp16 scale + fp16 min per block). Its compute roof is the arithmetic its kernels run
# for the record's GGUF type (`gguf_type`: llama.cpp's own description of the file, else the
# type asked of a synthetic model): 16-bit types the 16-bit peak, quantised types the int8 peak.
Q4_1_BYTES_PER_PARAM = 20 / 32

# What llama.cpp computes each GGUF weight type's matmuls in, read in the llama.cpp that
# llama-cpp-python 0.3.36 vendors (docs/roofline.md cites the functions): quantised types run
# int8 dot products (CUDA MMQ / MMVQ on q8_1 activations, ggml-cuda/mmq.cu
# ggml_cuda_should_use_mmq; CPU vec_dot against q8_0/q8_K), F16/BF16 their 16-bit type on CUDA
# (cuBLAS, ggml-cuda.cu ggml_cuda_mul_mat), F16 fp32 FMAs on an x86 CPU.
GGUF_MMQ_TYPES = frozenset({"q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_k", "q3_k", "q4_k",
                            "q5_k", "q6_k", "iq1_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs",
                            "iq3_s", "iq4_xs", "iq4_nl", "mxfp4"})
GGUF_FLOAT_TYPES = {"f16": "fp16", "fp16": "fp16", "bf16": "bf16", "f32": "fp32", "fp32": "fp32"}


def roofline_weights(ask: RooflineAsk) -> WeightRule:
    """The record's weights as llama.cpp stores and multiplies them (see above)."""
    from llmbench.models.dtypes import BYTES

    notes: list[str] = []
    kv = ask.kv_dtype or "fp16"   # llama.cpp's default cache type (type_k / type_v F16)
    if ask.weight_dtype is not None:
        return WeightRule(ask.weight_dtype, None, gguf_compute(ask.weight_dtype, ask.hardware, notes),
                          kv, notes)
    gt = gguf_type(ask)
    weight_bytes = ask.weight_bytes
    if weight_bytes is None and gt is None and ask.arch.bundled:
        weight_bytes = _bundled_gguf_bytes()
    if weight_bytes is None and gt is not None and gt in BYTES:
        weight_bytes = ask.arch.param_count() * BYTES[gt]
        notes.append(f"llama.cpp weights {gt} ({BYTES[gt] * 8:.2f} bits/param)")
    elif weight_bytes is None:
        weight_bytes = ask.arch.param_count() * Q4_1_BYTES_PER_PARAM
        notes.append("llama.cpp weights assumed Q4_1 (5.0 bits/param)")
    else:
        notes.append(f"llama.cpp weight bytes {weight_bytes / 1e6:.1f} MB from the GGUF")
    t = gt or "q4_1"
    compute = gguf_compute(t, ask.hardware, notes)
    return WeightRule(GGUF_FLOAT_TYPES.get(t, t), weight_bytes, compute, kv, notes)


def gguf_compute(gguf_type: str, hw, notes: list[str]) -> str:
    """The peak llama.cpp's matmuls on `gguf_type` weights can reach on `hw` (see above)."""
    t = gguf_type.lower()
    if t in GGUF_FLOAT_TYPES:
        c = GGUF_FLOAT_TYPES[t]
        if c == "fp16" and hw.vendor == "cpu":
            notes.append("llama.cpp F16 on a CPU multiplies in fp32: the fp32 peak")
            return "fp32"
        return c
    if t in GGUF_MMQ_TYPES:
        return "int8"
    # not an MMQ type: dequantised to 16-bit (CUDA) -- take the faster peak, a bound either way
    notes.append(f"llama.cpp weight type {gguf_type!r}: kernels not read, the higher of the "
                 "int8 and 16-bit peaks")
    peaks = {d: hw.peak_flops(d) or 0.0 for d in ("int8", "fp16")}
    return max(peaks, key=peaks.get)


def gguf_type(ask: RooflineAsk) -> str | None:
    """A record's dominant GGUF weight type: llama.cpp's own description (workload), else the
    type asked of a synthetic model (backend options; f16 its default), else None."""
    for v in (ask.workload.get("gguf_type"), ask.backend_options.get("gguf_type")):
        if isinstance(v, str) and v.strip():
            return v.strip().lower()
    return "f16" if ask.synthetic_weights else None


@functools.cache  # reading the GGUF's tensor table takes seconds; once per process is enough
def _bundled_gguf_bytes() -> float | None:
    try:
        from llmbench.models.sources import smollm2_gguf

        path = smollm2_gguf()
    except Exception:
        return None
    try:
        from gguf import GGUFReader

        return float(sum(int(t.n_bytes) for t in GGUFReader(path).tensors))
    except Exception:  # gguf missing: the file size (metadata included, ~2% more)
        return float(path.stat().st_size)
