"""The one catalog of metrics (name, unit, label, short column name, direction, definition)
that every reader uses, and the latency/throughput metrics computed once, from timelines.

A metric a record can carry has one `Metric` below (or belongs to one of the families that
`metric()` resolves: `all_<m>`, `server_<m>`, `ttft_s_turn<N>`); the report, the dashboard,
`llmbench results`, `llmbench compare` and the store's columns look its facts up here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Literal

from llmbench.measure.stats import summarize
from llmbench.measure.timeline import BatchTiming, RequestTimeline
from llmbench.measure.metric_stats import MetricStats
from llmbench.numfmt import fmt
from llmbench.store.store import STATS

Direction = Literal["higher", "lower", "none"]


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str         # as the record's MetricStats.unit says it
    label: str        # axis title / legend text
    short: str        # column header of a table (results, report): a few characters
    direction: Direction  # which way is better; "none": a count or setting, not a merit
    description: str


_M = Metric
CATALOG: dict[str, Metric] = {m.name: m for m in (
    # -- latency (offline: from the batch start; serving: from the request's scheduled send)
    _M("ttft_s", "s", "Time to first token (s)", "TTFT s", "lower",
       "batch start (offline) or scheduled send (serving) -> the request's first token"),
    _M("tpot_s", "s", "Time per output token (s)", "TPOT s", "lower",
       "(t_last - t_first) / (output_tokens - 1), per request"),
    _M("itl_s", "s", "Inter-token latency (s)", "ITL s", "lower",
       "every gap between tokens, pooled; a chunk of k tokens counts k (measure/timeline.py)"),
    _M("itl_per_chunk_s", "s", "Inter-chunk latency (s)", "ITL/chunk s", "lower",
       "an imported tool's gaps between streamed chunks, when its per-token split is unknown"),
    _M("paper_itl_s", "s", "Inter-token latency, the study's definition (s)", "paper ITL s", "lower",
       "the published study's ITL: (latency - TTFT) / (batch x (output_len - 1))"),
    _M("e2e_s", "s", "End-to-end latency (s)", "E2E s", "lower",
       "batch start (offline) or scheduled send (serving) -> the request's last token"),
    _M("ttft_from_send_s", "s", "Time to first token from the actual send (s)", "TTFT send s",
       "lower", "an imported tool's TTFT from the request's actual send, when it had no schedule"),
    _M("e2e_from_send_s", "s", "End-to-end latency from the actual send (s)", "E2E send s",
       "lower", "an imported tool's E2E from the request's actual send, when it had no schedule"),
    _M("per_token_step_s", "s", "Decode step time (s)", "step/token s", "lower",
       "an imported tool's per-step decode time, when it is not one gap per token"),
    _M("request_latency_s", "s", "Request latency (s)", "request s", "lower",
       "an imported tool's per-request latency, send -> response complete"),
    _M("batch_latency_s", "s", "Batch latency (s)", "latency s", "lower",
       "one offline batch, start -> its last token as the backend stamped it (per repeat)"),
    _M("warmup_batch_latency_s", "s", "Warm-up batch latency (s)", "warm-up s", "lower",
       "batch latency of the warm-up runs, never averaged into batch_latency_s"),
    _M("generate_return_s", "s", "Batch start to generate() return (s)", "return s", "lower",
       "batch start -> generate() returned (>= batch_latency_s)"),
    _M("send_lag_s", "s", "Send lag (s)", "send lag s", "lower",
       "actual - scheduled send time (client queueing under a cap, or lag)"),
    _M("queue_s", "s", "Server queue time (s)", "queue s", "lower",
       "time a request waited in the server's queue (server histogram only)"),
    _M("ttft_reasoning_s", "s", "Time to first reasoning token (s)", "TTFT reasoning s", "lower",
       "scheduled send -> the first reasoning token"),
    _M("ttft_answer_s", "s", "Time to first answer token (s)", "TTFT answer s", "lower",
       "scheduled send -> the first answer token after the reasoning"),
    _M("load_time_s", "s", "Model load time (s)", "load s", "lower",
       "loading the engine and model, before any timed run"),
    # -- throughput
    _M("output_throughput_tok_s", "tok/s", "Output throughput (generated tok/s)", "out tok/s",
       "higher", "generated tokens / batch latency (offline) or / window length (serving)"),
    _M("total_throughput_tok_s", "tok/s", "Total throughput (prompt + generated tok/s)",
       "total tok/s", "higher", "(prompt + generated tokens) / the same time (the study's definition)"),
    _M("request_throughput_req_s", "req/s", "Request throughput (req/s)", "req/s", "higher",
       "requests finished / batch latency (offline) or / window length (serving)"),
    _M("goodput_req_s", "req/s", "Goodput (req/s)", "goodput req/s", "higher",
       "finished requests meeting every SLO / window length"),
    _M("eval_throughput_tok_s", "tok/s", "Perplexity evaluation throughput (tok/s)", "eval tok/s",
       "higher", "tokens scored / evaluation time"),
    # -- an engine's own counters (Backend.engine_timings; llama-bench), as engine_<key>
    _M("engine_prefill_s", "s", "Engine-reported prefill time (s)", "engine prefill s", "lower",
       "the engine's own prompt-processing time"),
    _M("engine_decode_s", "s", "Engine-reported decode time (s)", "engine decode s", "lower",
       "the engine's own generation time"),
    _M("engine_total_s", "s", "Engine-reported prefill + decode time (s)", "engine total s",
       "lower", "llama-bench's combined prompt + generation test time"),
    _M("engine_prefill_tok_s", "tok/s", "Engine-reported prefill throughput (tok/s)",
       "engine prefill tok/s", "higher", "the engine's own prompt tokens / prefill time"),
    _M("engine_decode_tok_s", "tok/s", "Engine-reported decode throughput (tok/s)",
       "engine decode tok/s", "higher", "the engine's own generated tokens / decode time"),
    _M("engine_total_tok_s", "tok/s", "Engine-reported prefill + decode throughput (tok/s)",
       "engine total tok/s", "higher", "llama-bench's combined test tokens / its time"),
    _M("engine_ttft_mean_s", "s", "Engine-reported mean TTFT (s)", "engine TTFT s", "lower",
       "vLLM's own first-token times, mean over the batch"),
    _M("engine_last_token_mean_s", "s", "Engine-reported mean last-token time (s)",
       "engine last s", "lower", "vLLM's own last-token times, mean over the batch"),
    _M("engine_last_token_max_s", "s", "Engine-reported last token of the batch (s)",
       "engine last max s", "lower", "vLLM's own last-token time, the batch's latest"),
    _M("engine_preemptions", "", "Engine-reported preemptions", "preemptions", "lower",
       "requests vLLM preempted during the batch"),
    _M("engine_corrupted_requests", "", "Engine-reported corrupted requests", "corrupted", "lower",
       "requests vLLM flagged as corrupted"),
    _M("engine_prefill_tokens", "", "Engine-reported prompt tokens", "engine prompt tok", "none",
       "prompt tokens the engine says it evaluated"),
    _M("engine_decode_steps", "", "Engine-reported decode steps", "engine steps", "none",
       "generation steps the engine says it ran"),
    # -- serving load and the client's own health
    _M("duration_s", "s", "Window length (s)", "window s", "none",
       "the measured window (or whole run, all_duration_s)"),
    _M("requests_completed", "req", "Requests completed", "done", "none",
       "successful requests finishing inside the window"),
    _M("requests_failed", "req", "Requests failed", "failed", "lower",
       "failed requests scheduled in the window"),
    _M("error_rate", "fraction", "Error rate", "errors", "lower",
       "failed / all requests scheduled in the window"),
    _M("inflight_mean", "requests", "Mean requests in flight", "in flight", "none",
       "time-weighted mean number of requests in flight (the load the server carried)"),
    _M("short_outputs", "requests", "Requests with a different output length", "short", "lower",
       "requests that returned a different number of tokens than output_len"),
    _M("client_loop_lag_s", "s", "Client event-loop lag (s)", "loop lag s", "lower",
       "how late the load generator's event loop woke (a busy client distorts latency)"),
    _M("client_cpu_util", "fraction", "Client CPU utilisation", "client CPU", "none",
       "the load generator's CPU time / wall time"),
    _M("client_cpu_s_per_token", "s/tok", "Client CPU time per token (s)", "client CPU s/tok",
       "none", "the load generator's CPU time / generated tokens"),
    _M("prefix_cache_hit_rate", "fraction", "Prefix-cache hit rate", "prefix hits", "none",
       "the server's own prefix-cache hits / lookups over the point"),
    # token parity (kinds/serving/parity.py): what the server counted / what llmbench asked for,
    # over the point's successful requests; 1 is parity, flagged more than 1% off
    _M("prompt_tokens_usage_ratio", "ratio", "Prompt tokens, server usage / asked",
       "prompt parity", "none", "the prompt tokens the server's usage reported / the prompt "
       "lengths llmbench built (special tokens included), over the requests that sent usage"),
    _M("output_tokens_usage_ratio", "ratio", "Output tokens, server usage / asked",
       "output parity", "none", "the completion tokens the server's usage reported / the output "
       "lengths llmbench forced, over the requests that sent usage"),
    _M("prompt_tokens_metrics_ratio", "ratio", "Prompt tokens, server /metrics / asked",
       "prompt parity /metrics", "none", "the server's prompt-token counter's delta over the "
       "point (/metrics) / the prompt lengths llmbench built"),
    _M("output_tokens_metrics_ratio", "ratio", "Output tokens, server /metrics / asked",
       "output parity /metrics", "none", "the server's generation-token counter's delta over "
       "the point (/metrics) / the output lengths llmbench forced"),
    _M("reasoning_tokens", "tokens", "Reasoning tokens", "reasoning tok", "none",
       "tokens a reasoning model spent before its answer"),
    _M("answer_tokens", "tokens", "Answer tokens", "answer tok", "none",
       "tokens after the reasoning"),
    # -- power and energy (only where a meter read)
    _M("avg_power_w", "W", "Average power (W)", "power W", "lower",
       "energy over the measured window / the time the energy covers (the window itself where "
       "the driver's power samples are integrated over it; the counter's reads, a thread start "
       "after the window's edges with NVML, EnergyWindow.counter_span_s)"),
    _M("energy_j", "J", "Energy (J)", "energy J", "lower",
       "energy per batch (offline: the window's energy / the batches inside it) or per window"),
    _M("tokens_per_joule", "tok/J", "Generated tokens per joule", "tok/J", "higher",
       "generated tokens / energy"),
    _M("total_tokens_per_joule", "tok/J", "Total tokens per joule", "total tok/J", "higher",
       "(prompt + generated tokens) / energy (the study's definition)"),
    _M("energy_per_token_j", "J/tok", "Energy per token (J)", "J/tok", "lower",
       "energy / (prompt + generated) tokens; training: energy / tokens trained"),
    _M("energy_per_output_token_j", "J/tok", "Energy per generated token (J)", "J/out tok",
       "lower", "energy / generated tokens"),
    _M("energy_window_s", "s", "Energy window (s)", "energy window s", "none",
       "the window the meter read over behind each repeat"),
    _M("energy_batches_per_window", "batches", "Batches per energy window", "batches/window",
       "none", "batches run inside one energy window"),
    # -- perplexity
    _M("perplexity", "", "Perplexity", "perplexity", "lower",
       "exp(mean negative log-likelihood per scored token)"),
    _M("nll_per_token", "nats", "Negative log-likelihood per token (nats)", "NLL / token", "lower",
       "mean negative log-likelihood per scored token"),
    _M("scored_tokens", "tokens", "Scored tokens", "scored tokens", "none",
       "tokens whose likelihood was scored"),
    _M("eval_time_s", "s", "Perplexity evaluation time (s)", "eval s", "lower",
       "wall time of the evaluation"),
    # -- training (train/record.py defines them)
    _M("step_time_s", "s", "Step time (s)", "step s", "lower", "one timed optimiser step"),
    _M("first_step_s", "s", "First step time (s)", "first step s", "lower",
       "the first step, compile and warm-up included"),
    _M("compile_time_s", "s", "Compile time (s)", "compile s", "lower",
       "first step - median timed step (compiled runs only)"),
    _M("tokens_per_s", "tok/s", "Training tokens/s", "train tok/s", "higher",
       "tokens in a step, all devices / step time"),
    _M("tokens_per_s_per_device", "tok/s", "Training tokens/s per device", "tok/s/device",
       "higher", "tokens_per_s / device count"),
    _M("samples_per_s", "samples/s", "Training samples/s", "samples/s", "higher",
       "samples in a step / step time"),
    _M("tflops", "TFLOP/s", "Achieved TFLOP/s", "TFLOP/s", "higher",
       "tokens_per_s x model FLOPs per token / 1e12"),
    _M("tflops_per_device", "TFLOP/s", "Achieved TFLOP/s per device", "TFLOP/s/device", "higher",
       "tflops / device count"),
    _M("tflops_causal", "TFLOP/s", "Achieved TFLOP/s, causal attention FLOPs", "causal TFLOP/s",
       "higher", "tflops counting only the causal half of attention"),
    _M("mfu", "ratio", "Model FLOPs utilisation", "MFU", "higher",
       "tflops_per_device / the hardware's dense peak for the precision"),
    _M("mfu_measured_peak", "ratio", "MFU against the measured matmul peak", "MFU (measured)",
       "higher", "tflops_per_device / the matrix-product peak measured in the same run"),
    _M("matmul_peak_tflops", "TFLOP/s", "Measured matmul peak (TFLOP/s)", "matmul TFLOP/s", "none",
       "the matrix-product peak measured in the same run"),
    _M("mem_peak_gib", "GiB", "Peak memory (GiB)", "memory GiB", "lower",
       "the peak accelerator (or process) memory over the point"),
    _M("loss_first", "nat", "First-step loss", "loss first", "none", "the training loss at step one"),
    _M("loss_last", "nat", "Last-step loss", "loss last", "lower", "the training loss at the last step"),
    _M("scaling_efficiency", "ratio", "Scaling efficiency", "scaling eff.", "higher",
       "tokens_per_s / (devices x the one-device tokens_per_s)"),
    _M("speedup_vs_dense", "ratio", "Speed-up over dense", "vs dense", "higher",
       "tokens_per_s / the dense point's tokens_per_s"),
    # -- the GPU's own counters over the measured window (measure/gpm.py): one value a record,
    # stored as the flat column of the same name (no stats)
    _M("gpu_dram_bw_util_pct", "%", "DRAM bandwidth utilisation, NVML GPM (%)", "DRAM %", "none",
       "the DRAM bandwidth the GPU itself measured, as a share of its peak"),
    _M("gpu_sm_util_pct", "%", "SM utilisation, NVML GPM (%)", "SM %", "none",
       "the share of time the streaming multiprocessors were busy"),
    _M("gpu_sm_occupancy_pct", "%", "SM occupancy, NVML GPM (%)", "occupancy %", "none",
       "resident warps as a share of the maximum"),
    _M("gpu_tensor_util_pct", "%", "Tensor-core utilisation, NVML GPM (%)", "tensor %", "none",
       "the share of time the tensor cores were busy"),
    # -- speculative decoding (kinds/serving/speculation.py; docs/metrics.md)
    _M("spec_acceptance_rate", "fraction", "Speculation acceptance rate", "accept rate", "higher",
       "draft tokens the target model accepted / draft tokens proposed, the server's own "
       "counters over the point (vLLM spec_decode_num_accepted_tokens / _num_draft_tokens)"),
    _M("spec_accepted_len", "tokens", "Tokens per speculative step", "accept len", "higher",
       "1 + accepted draft tokens / steps that had a draft (the server's counters): the tokens "
       "one verification step yields, its accepted proposals plus the target's own token"),
    _M("tokens_per_chunk", "tokens", "Tokens per streamed chunk", "tok/chunk", "none",
       "the client's count: tokens in a request's streamed chunks after its first / those "
       "chunks, pooled over the point's requests (1 without speculation or batched streaming)"),
    _M("spec_greedy_match_fraction", "fraction", "Greedy tokens unchanged by speculation",
       "spec match", "higher", "--check-speculation: tokens before each prompt's first divergence "
       "from the same engine without speculation (greedy) / its tokens; 1 = identical"),
    # -- judged request shapes (loadgen/shapes/structured.py, tools.py; issue 40 item 2)
    _M("valid_fraction", "fraction", "Valid answers (fraction)", "valid", "higher",
       "requests whose answer the shape's judge accepts / requests sent (a request without "
       "an answer is not valid: cause no_answer)"),
    # -- pooling requests (loadgen/shapes/pooled.py: embeddings, rerank): an answer of vectors or
    # scores generates no token; its latency is e2e_s and its throughput counts inputs
    _M("input_throughput_inputs_per_s", "inputs/s", "Input throughput (inputs/s)", "inputs/s", "higher",
       "inputs (embedded texts, or scored documents) of the requests answered inside the window "
       "/ window length"),
    _M("input_throughput_tok_s", "tok/s", "Input token throughput (tok/s)", "in tok/s", "higher",
       "the server's usage.prompt_tokens (else the tokenizer's) of the requests answered inside "
       "the window / window length"),
    # -- fidelity beside speed (kinds/inference/fidelity.py, docs/fidelity.md): an offline
    # point's greedy output against transformers fp32 on the CPU, one sample per prompt
    _M("fidelity_match_frac", "ratio", "Tokens matching the fp32 reference", "match", "higher",
       "share of generated positions whose greedy token equals the reference's, per prompt"),
    _M("fidelity_first_divergence_tok", "tokens", "First divergence from the fp32 reference "
       "(tokens)", "1st diff tok", "higher",
       "index of the first generated token unlike the reference's; output_len when none is"),
    _M("fidelity_kl_nats", "nats", "KL divergence from the fp32 reference (nats)", "KL nats",
       "lower", "mean over the reference's continuation (teacher-forced) of KL(P_ref || Q_engine) "
       "of the next token; a top-k engine's is a lower bound (k tokens + one bucket)"),
    _M("fidelity_top1_agree_frac", "ratio", "Top-1 agreement with the fp32 reference", "top-1",
       "higher", "share of the reference's continuation (teacher-forced) where the engine's most "
       "likely next token is the reference's"),
    # -- image requests (loadgen/shapes/images.py; issue 41 item 3): per group (count@WxH) the
    # record's serving.by_images splits TTFT and these by image count and resolution
    _M("image_tokens_per_request", "tokens", "Image tokens per request (server's count)",
       "img tok", "none", "the server's usage.prompt_tokens minus the request's text tokens (the "
       "served tokenizer's count of the same chat turn without images, chat template applied)"),
    _M("image_throughput_img_per_s", "img/s", "Image throughput (images/s)", "img/s", "higher",
       "images of the requests answered inside the steady window / window length"),
)}
# A request shape's headline (workload.request_shape; loadgen/shapes), shown before its kind's
# own columns: the one place the report, the dashboard and `llmbench results` read it. A shape
# not named here (text, lora, a new one) is shown under its kind's headline (SHOWN_FIRST).
SHAPE_SHOWN_FIRST: dict[str, tuple[str, ...]] = {
    # pooling answers are vectors or scores: no token stream, so no TTFT/TPOT; inputs count
    **{shape: ("request_throughput_req_s_mean", "input_throughput_inputs_per_s_mean",
               "input_throughput_tok_s_mean", "e2e_s_p50", "e2e_s_p90", "e2e_s_p99")
       for shape in ("embeddings", "rerank")},
    # judged answers: how many were what was asked for, before how fast they came
    **{shape: ("valid_fraction_mean",) for shape in ("structured", "tools")},
}
# A speculating engine's headline (backend.options.speculative): what it accepted and whether
# greedy tokens stayed the same, beside its speed; a table drops the columns no row has.
# (tokens per chunk is in every serving record, 1.0 without speculation: not a headline)
SPECULATION_SHOWN_FIRST = ("spec_acceptance_rate_mean", "spec_accepted_len_mean",
                           "spec_greedy_match_fraction_mean")

# What a table shows first for each record kind (the report's kind tables, `llmbench results`),
# as flat columns, the most telling first: a narrow terminal keeps the left ones.
SHOWN_FIRST: dict[str, tuple[str, ...]] = {
    "inference": ("output_throughput_tok_s_mean", "fidelity_match_frac_mean", "fidelity_kl_nats_mean",
                  "batch_latency_s_mean", "ttft_s_p50", "tpot_s_p50",
                  "total_throughput_tok_s_mean", "request_throughput_req_s_mean",
                  "roofline_efficiency_total_throughput_tok_s", "gpu_dram_bw_util_pct"),
    "serving": ("output_throughput_tok_s_mean", "ttft_s_p50", "ttft_s_p99", "tpot_s_p50", "e2e_s_p50",
                "request_throughput_req_s_mean", "goodput_req_s_mean", "gpu_dram_bw_util_pct"),
    "perplexity": ("perplexity_mean", "nll_per_token_mean", "scored_tokens_mean",
                   "eval_throughput_tok_s_mean"),
    "training": ("tokens_per_s_mean", "tflops_mean", "mfu_mean", "step_time_s_mean",
                 "mem_peak_gib_mean", "avg_power_w_mean", "scaling_efficiency_mean",
                 "roofline_efficiency_tokens_per_s", "gpu_dram_bw_util_pct"),
    "estimate": ("output_throughput_tok_s_mean", "batch_latency_s_mean"),  # llmbench predict --save
}
# What the report's and dashboard's figures plot on their y axis, by role: a figure draws the
# first of a role's metrics that a record has (an offline record's total throughput, a training
# record's tokens/s), so every kind finds its own on the same view.
FIGURE_Y: dict[str, tuple[str, ...]] = {
    "throughput": ("total_throughput_tok_s", "output_throughput_tok_s", "tokens_per_s"),
    "efficiency": ("roofline_efficiency_total_throughput_tok_s",
                   "roofline_efficiency_output_throughput_tok_s",
                   "roofline_efficiency_batch_latency_s", "roofline_efficiency_tpot_s",
                   "roofline_efficiency_tokens_per_s"),
}
# A metric's statistics in the order a reader wants them (a suggestion lists the first).
STATS_FIRST = ("mean", "median", "p50", "p90", "p99", "p95", "min", "max", "std", "ci95_low",
               "ci95_high", "n")
# Units whose values are counts: shown whole.
_COUNTS = {"req", "requests", "tokens", "batches"}

# Families: one rule each, derived from the base metric's entry.
_TURN = re.compile(r"^(?P<base>.+)_turn(?P<n>\d+)$")
ROOFLINE_EFFICIENCY = "roofline_efficiency_"


def metric(name: str) -> Metric | None:
    """The catalog entry of a metric name, families included; None for a name it lacks (an
    older record's, or a tool's own): readers then show the bare name, with no direction."""
    if name in CATALOG:
        return CATALOG[name]
    if name.startswith("all_") and (b := CATALOG.get(name[4:])):
        return replace(b, name=name, label=f"{_stem(b.label)}, whole run{_unit_of(b.label)}",
                       short=f"all {b.short}", description=b.description
                       + "; over the whole run, warm-up and cool-down included")
    if name.startswith("server_") and (b := CATALOG.get(name[7:])):
        return replace(b, name=name, label=f"{_stem(b.label)}, server's histogram{_unit_of(b.label)}",
                       short=f"server {b.short}", description=b.description
                       + "; from the server's own histogram (bucket-interpolated)")
    if (t := _TURN.match(name)) and (b := CATALOG.get(t["base"])):
        return replace(b, name=name, label=f"{_stem(b.label)}, turn {t['n']}{_unit_of(b.label)}",
                       short=f"{b.short} t{t['n']}", description=b.description
                       + f"; requests of conversation turn {t['n']}")
    return None


def _stem(label: str) -> str:
    return label.split(" (")[0]


def _unit_of(label: str) -> str:
    return label[len(_stem(label)):]


def unit(name: str) -> str:
    """The unit a record states for this metric (this module's computations read it here)."""
    return CATALOG[name].unit


def direction(name: str) -> Direction:
    m = metric(name)
    return m.direction if m else "none"


def split_column(col: str) -> tuple[Metric, str] | None:
    """A flat column `<metric>_<stat>` as (its metric, the stat); None when its metric is not
    in the catalog."""
    for st in STATS:
        if col.endswith("_" + st) and (m := metric(col[:-len(st) - 1])):
            return m, st
    return None


def shown_first(kinds) -> list[str]:
    """The columns SHOWN_FIRST names for these kinds, each once, in the kinds' order; serving
    adds the pooling shapes' headline (a table drops the columns no row has)."""
    shapes = tuple(c for cs in SHAPE_SHOWN_FIRST.values() for c in cs) + SPECULATION_SHOWN_FIRST
    return list(dict.fromkeys(c for k in kinds
                              for c in SHOWN_FIRST.get(k, ()) + (shapes if k == "serving" else ())))


def option_headline(shapes=None) -> tuple[str, ...]:
    """The columns the records of these request shapes (all: None) and of a speculating
    engine are read by (validity, acceptance): a table narrower than its columns keeps these
    with the first metric. A kind's own columns (TTFT, E2E, req/s) are not among them."""
    general = {c for cs in SHOWN_FIRST.values() for c in cs}
    own = [cs for shape, cs in SHAPE_SHOWN_FIRST.items() if shapes is None or shape in shapes]
    return tuple(dict.fromkeys(c for cs in (*own, SPECULATION_SHOWN_FIRST) for c in cs if c not in general))


def headline(kind: str, shape: str | None = None) -> list[str]:
    """The columns a table of one kind's records of one request shape shows first: the
    shape's own headline (SHAPE_SHOWN_FIRST), then the kind's (a table drops the columns none
    of its rows has: a pooling shape's TTFT, which its records never carry)."""
    return list(dict.fromkeys(SHAPE_SHOWN_FIRST.get(shape or "", ()) + SHOWN_FIRST.get(kind, ())))


def _column_metric(col: str) -> tuple[Metric, str] | None:
    """A flat column's metric and stat ('value' for a one-value column: a GPU counter, a
    roofline efficiency, whose unit is a ratio)."""
    if col.startswith(ROOFLINE_EFFICIENCY):
        m = metric(col[len(ROOFLINE_EFFICIENCY):])
        return (replace(m, unit="ratio"), "value") if m else None
    if col.startswith("gpu_") and col in CATALOG:
        return CATALOG[col], "value"
    return split_column(col)


def format_value(col: str, v) -> str:
    """A flat column's value as a table shows it, by its metric's unit: a ratio or fraction as
    a percentage (0.394 -> 39.4%), a '%' reading whole (30.86 -> 31%), a count whole, anything
    else to 3 significant digits (numfmt.fmt); '–' for none. A column no metric explains is
    shown as it is."""
    if v is None or (isinstance(v, float) and v != v):
        return "–"
    found = _column_metric(col)
    if found is None or isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    m, st = found
    if st == "n" or m.unit in _COUNTS:
        return f"{v:,.0f}"
    if m.unit in ("ratio", "fraction"):
        return f"{v:.1%}"
    if m.unit == "%":
        return f"{v:.0f}%"
    return fmt(float(v))


def column_header(col: str) -> str | None:
    """A table's header for a flat column: the metric's short name, with a stat other than the
    mean before its unit ('TTFT p50 s'); the roofline efficiency of a metric as 'efficiency
    (out)'; a GPU counter's short name. None for a column that is no catalogued metric."""
    if col.startswith("gpu_") and col in CATALOG:
        return CATALOG[col].short
    if col.startswith(ROOFLINE_EFFICIENCY):
        m = metric(col[len(ROOFLINE_EFFICIENCY):])
        return f"efficiency ({_short_stem(m)})" if m else None
    found = split_column(col)
    if found is None:
        return None
    m, st = found
    if st == "mean":
        return m.short
    stem = _short_stem(m)
    return f"{stem} {st} {m.short[len(stem) + 1:]}" if stem != m.short else f"{m.short} {st}"


def _short_stem(m: Metric) -> str:
    """The short name less its unit ('out tok/s' -> 'out')."""
    return m.short[:-len(m.unit) - 1] if m.unit and m.short.endswith(" " + m.unit) else m.short


def per_request(timelines: list[RequestTimeline]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"ttft_s": [], "tpot_s": [], "itl_s": [], "e2e_s": []}
    for r in timelines:
        if r.error or not r.events:
            continue
        out["ttft_s"].append(r.ttft_s())
        out["e2e_s"].append(r.e2e_s())
        if (t := r.tpot_s()) is not None:
            out["tpot_s"].append(t)
        out["itl_s"].extend(r.itl_s())
    return out


def last_token_time(timelines: list[RequestTimeline], default: float) -> float:
    """An offline batch's end: its last token's arrival, as the backend stamped it (`default`,
    e.g. when generate() returned, if no request produced a token)."""
    return max((t for r in timelines if (t := r.t_last) is not None), default=default)


def offline_metrics(batches: list[BatchTiming], input_len: int) -> dict[str, MetricStats]:
    """The batches' timing metrics (energy_metrics has their energy)."""
    pooled: dict[str, list[float]] = {"ttft_s": [], "tpot_s": [], "itl_s": [], "e2e_s": []}
    per_batch: dict[str, list[float]] = {k: [] for k in (
        "batch_latency_s", "generate_return_s", "output_throughput_tok_s", "total_throughput_tok_s",
        "request_throughput_req_s")}
    for b in batches:
        for k, v in per_request(b.requests).items():
            pooled[k].extend(v)
        lat = b.latency_s
        out_tok = sum(r.output_tokens for r in b.requests)
        prompt_tok = sum(r.prompt_tokens if r.prompt_tokens is not None else input_len
                         for r in b.requests)
        per_batch["batch_latency_s"].append(lat)
        per_batch["output_throughput_tok_s"].append(out_tok / lat)
        per_batch["total_throughput_tok_s"].append((prompt_tok + out_tok) / lat)
        per_batch["request_throughput_req_s"].append(len(b.requests) / lat)
        if b.t_return is not None:
            per_batch["generate_return_s"].append(b.t_return - b.t_start)
    return _summaries({**pooled, **per_batch})


def energy_metrics(batches: list[BatchTiming]) -> dict[str, MetricStats]:
    """The batches' energy metrics (none for batches without an energy reading)."""
    per_batch: dict[str, list[float]] = {k: [] for k in (
        "avg_power_w", "energy_j", "tokens_per_joule", "energy_window_s",
        "energy_batches_per_window")}
    for b in (b for b in batches if b.energy_j is not None):
        out_tok = sum(r.output_tokens for r in b.requests)
        per_batch["energy_j"].append(b.energy_j)
        per_batch["avg_power_w"].append(b.avg_power_w if b.avg_power_w is not None
                                        else b.energy_j / b.latency_s)
        if b.energy_j > 0:
            per_batch["tokens_per_joule"].append(out_tok / b.energy_j)
        if b.energy_window_s is not None:
            per_batch["energy_window_s"].append(b.energy_window_s)
            per_batch["energy_batches_per_window"].append(b.energy_batches)
    return _summaries(per_batch)


def _summaries(values: dict[str, list[float]]) -> dict[str, MetricStats]:
    return {k: summarize(v, unit(k)) for k, v in values.items() if v}


def inflight_mean(timelines: list[RequestTimeline], window: tuple[float, float]) -> float:
    """Time-weighted mean number of requests in flight over [t0, t1] (the load the server
    really carried; Little's law: request rate x mean latency). A request is in flight from
    its actual send (its scheduled send when unknown) to its last token; one that produced no
    token has no known end and is left out."""
    t0, t1 = window
    if t1 <= t0:
        return 0.0
    busy = 0.0
    for r in timelines:
        if not r.events:
            continue
        start = r.t_send if r.t_send is not None else r.t_ref
        busy += max(0.0, min(r.t_last, t1) - max(start, t0))
    return busy / (t1 - t0)


def meets_slo(r: RequestTimeline, slo: dict[str, float]) -> bool:
    got = {"ttft_s": r.ttft_s(), "tpot_s": r.tpot_s(), "e2e_s": r.e2e_s()}
    # A one-token answer has no TPOT: that SLO cannot be missed.
    return all(got[k] is None and k == "tpot_s" or got[k] is not None and got[k] <= v
               for k, v in slo.items())


def serving_metrics(timelines: list[RequestTimeline], window: tuple[float, float], *,
                    slo: dict[str, float] | None = None, energy_j: float | None = None
                    ) -> dict[str, MetricStats]:
    """Serving load metrics over a time window [t0, t1] (perf_counter seconds).

    Serving (an open or closed load, not a batch):
    - ttft_s / tpot_s / itl_s / e2e_s  per request, from the *scheduled* send time; only
      requests scheduled at or after t0 that finished by t1, so warm-up and cool-down can be cut
    - send_lag_s               actual - scheduled send (client queueing under a cap, or lag)
    - output_throughput_tok_s  output tokens that arrived inside the window / window length
    - total_throughput_tok_s   + prompt tokens of requests whose first token came in the window
    - request_throughput_req_s successful requests finishing inside the window / window length
    - goodput_req_s            of those, the ones meeting every SLO / window length
    - error_rate               failed / all requests scheduled in the window
    - inflight_mean            time-weighted mean of requests in flight (`inflight_mean()`);
      the roofline bounds serving throughput at this concurrency
    - energy_j, avg_power_w, tokens_per_joule   when a meter read over this window
    """
    t0, t1 = window
    span = max(t1 - t0, 1e-9)
    inside = [r for r in timelines if r.t_ref >= t0 and (r.t_last if r.t_last is not None else r.t_ref) <= t1]
    ok = [r for r in inside if not r.error and r.events]
    samples = per_request(ok)
    samples["send_lag_s"] = [x for r in inside if (x := r.send_lag_s()) is not None]
    out_tok = prompt_tok = done = good = 0
    for r in timelines:
        if r.error or not r.events:
            continue
        out_tok += sum(k for t, k in r.events if t0 <= t <= t1)
        if t0 <= r.t_first <= t1:
            prompt_tok += r.prompt_tokens or 0
        if t0 <= r.t_last <= t1:
            done += 1
            good += bool(slo) and meets_slo(r, slo)
    scheduled = [r for r in timelines if t0 <= r.t_ref <= t1]
    failed = sum(1 for r in scheduled if r.error or not r.events)
    single = {"output_throughput_tok_s": out_tok / span,
              "total_throughput_tok_s": (prompt_tok + out_tok) / span,
              "request_throughput_req_s": done / span, "duration_s": span,
              "requests_completed": done, "requests_failed": failed,
              "error_rate": failed / len(scheduled) if scheduled else 0.0,
              "inflight_mean": inflight_mean(timelines, window)}
    if slo:
        single["goodput_req_s"] = good / span
    if energy_j is not None:
        single["energy_j"] = energy_j
        single["avg_power_w"] = energy_j / span
        if energy_j > 0:
            single["tokens_per_joule"] = out_tok / energy_j
    result = {k: summarize(v, unit(k)) for k, v in samples.items() if v}
    result.update({k: summarize([v], unit(k), keep_samples=False) for k, v in single.items()})
    return result
