"""The analytical bound: the least time a model x hardware x workload can take.

Every phase is bounded by the slowest of three resources, each used at its datasheet peak
and with perfect overlap between them (so the result is a lower bound on time, an upper bound
on throughput):
- memory:       bytes that must cross the memory bus / (devices in a stage x bandwidth)
- compute:      matmul FLOPs / (devices x peak FLOP/s of the compute dtype)
- interconnect: bytes that must cross device links / link bandwidth (TP all-reduce, EP
                all-to-all, PP sends); omitted (and said so) where the link is not public

Accounting (one place, used by every caller):
- Weight bytes = all parameters x bytes per parameter (or the GGUF's tensor bytes): what is
  stored. A forward step over T tokens reads every matrix whole, but from a lookup table (an
  untied input embedding, a learned position table) only the rows it looks up, at most
  min(T, rows): at batch 1 an untied LLaMA-3-8B step reads N - V*h + h parameters, 6.5% less
  than N. A tied embedding is the output projection, read whole once. So decode tok/s at
  batch 1 = bandwidth / (bytes a step reads), not bandwidth / stored bytes as papers often
  quote (that over-counts, and a real run could then beat the "bound").
- MoE: a step reads the dense part plus k of the E experts per layer, whatever the batch:
  when every token routes alike (identical prompts in a batch do) no more is needed, so
  anything more would not be a bound. Uniform routing would touch E(1 - (1 - k/E)^T)
  experts for T tokens; the published Mixtral TRT-LLM rows beat that by up to 38%.
  Compute uses k experts per token.
- Matmul FLOPs per token = 2 x (parameters that multiply: all but the input-embedding and
  position tables); attention adds 4 x layers x q_dim x context (QK^T and AV), causal.
- KV cache: decode step t reads B x (s + t) cached tokens and writes B new ones; prefill
  writes B x s. Without a KV cache (kv_cache=False) every step recomputes the whole prefix.
- Tensor/expert parallel over g devices divides bytes and FLOPs by g, adds 2 ring all-reduces
  per layer of T x hidden activations (2(g-1)/g of the message per device).
- Pipeline parallel over P stages: a token still has to traverse every stage's weights in
  turn, so the memory term does not shrink with P (the KV cache, split across stages, does);
  compute does, with the batch split into P micro-batches. Plus (P-1) activation sends.
- decode_tok_s: the classic roofline of one decode step, B / max(weight bytes / bandwidth,
  B x matmul FLOPs / peak), KV cache excluded: at batch 1 it is bandwidth / weight bytes.
  decode_phase_tok_s is the tighter bound over the actual steps (KV reads, attention, links).
- TTFT (offline batch, mean over requests): the larger of one request's prefill and
  (B+1)/2 prefill FLOP-times (k-th request cannot finish before k prefills of work).
- TPOT: mean decode step. Batch latency: prefill + every decode step.
- Training step: time from the FLOPs a step must do, roofline/flops.py with causal attention
  (tokens x (6 x matmul params + 6 x layers x q_dim x (seq + 1)): mean context (seq+1)/2,
  forward + backward = 3 x forward); bytes = params x (4 x weight bytes + 24) (weights read
  forward and backward, gradient written and read, fp32 master/m/v read and written);
  data-parallel gradient all-reduce on the link. Its TFLOP/s bound is in the MFU convention
  (flops.py: full s x s attention) over that step time, so measured / bound is the same
  efficiency whether read from TFLOP/s or from tokens/s.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from llmbench.roofline.flops import flops_per_token  # the training study's count too

RESOURCES = ("memory", "compute", "interconnect")


# The arithmetic reads plain values only: workload.py gathers them from the model and hardware
# catalogs once (`facts`), so a bound never calls back into models/ or hardware/.
@dataclass(frozen=True)
class Shape:
    """A model's shape and parameter counts (models/catalog.py's ModelArch, as numbers)."""
    family: str
    layers: int
    hidden: int
    q_dim: int
    kv_dim: int
    ffn: int
    vocab: int
    max_position: int
    tie_embeddings: bool
    num_experts: int
    experts_per_token: int
    params: int          # every parameter stored
    active_params: int   # touched per token (fewer for mixture-of-experts)


@dataclass(frozen=True)
class Device:
    """A hardware entry's peaks and bandwidths (hardware/entry.py), in FLOP/s and bytes/s."""
    id: str
    memory_gb: float | None
    mem_bw: float | None
    link_bw: float | None
    peak_flops: Mapping[str, float | None]  # per dtype llmbench names: the matmul peak it runs at
    measured: bool = False  # peaks measured on this machine (the local CPU), not a datasheet's


@dataclass(frozen=True)
class Facts:
    """Everything a bound reads of a model on a device, and each dtype's bytes per element."""
    shape: Shape
    device: Device
    dtype_bytes: Mapping[str, float]

    def width(self, dtype: str) -> float:
        try:
            return self.dtype_bytes[dtype.lower()]
        except KeyError:
            raise ValueError(f"unknown dtype {dtype!r}; known: {', '.join(self.dtype_bytes)}") from None

    def peak(self, dtype: str) -> float | None:
        # a dtype the hardware has no rule for runs at its bf16 rate (Hardware.peak_flops)
        return self.device.peak_flops.get(dtype, self.device.peak_flops["bf16"])


@dataclass(frozen=True)
class Workload:
    batch_size: float = 1   # a serving bound uses the mean requests in flight
    input_len: int = 128
    output_len: int = 128
    weight_dtype: str = "bf16"
    kv_dtype: str | None = None          # default: the compute dtype's width (16-bit for quant)
    compute_dtype: str | None = None     # default: weight dtype (int8 for GGUF-style quant)
    weight_bytes: float | None = None    # total weight bytes, overriding params x dtype
    tensor_parallel: int = 1
    pipeline_parallel: int = 1
    expert_parallel: int = 1
    kv_cache: bool = True
    act_bytes: float = 2.0

    def compute(self) -> str:
        if self.compute_dtype:
            return self.compute_dtype
        return self.weight_dtype if self.weight_dtype in ("fp32", "bf16", "fp16", "fp8", "int8") else "int8"

    def kv(self, facts: Facts) -> float:
        if self.kv_dtype:
            return facts.width(self.kv_dtype)
        c = self.compute()
        return 4.0 if c == "fp32" else 2.0


@dataclass
class Phase:
    time_s: float
    memory_s: float
    compute_s: float
    interconnect_s: float
    binding: str


@dataclass
class InferenceBound:
    prefill_s: float
    ttft_s: float
    tpot_s: float | None
    decode_s: float
    batch_latency_s: float
    output_throughput_tok_s: float
    total_throughput_tok_s: float
    decode_tok_s: float | None
    decode_phase_tok_s: float | None
    prefill_tok_s: float
    binding_resource: str
    prefill_binding: str
    decode_binding: str | None
    weight_bytes: float                  # stored
    decode_weight_bytes: float           # read by one decode step of the batch (lookups: rows)
    kv_bytes_per_token: float
    flops_per_token: float
    devices: int
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class TrainingBound:
    step_time_s: float
    tokens_per_s: float
    tflops: float           # model TFLOP/s (MFU convention, full attention) at the bound's pace
    peak_tflops: float      # aggregate datasheet peak of the devices
    flops_per_step: float   # the work a step must do (causal attention): what step time uses
    model_flops_per_step: float  # the MFU convention (full attention), what `tflops` counts
    binding_resource: str
    devices: int
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def lookup_tables(arch: Shape) -> list[tuple[int, int]]:
    """(rows, parameters) of each table a step reads by row, never in a matmul: an untied input
    embedding (a tied one is the output projection, a matmul read whole) and learned positions."""
    tables = []
    if not arch.tie_embeddings:
        tables.append((arch.vocab, arch.vocab * arch.hidden))
    if arch.family in ("gpt2", "opt"):
        tables.append((arch.max_position, arch.max_position * arch.hidden))
    return tables


def matmul_params(arch: Shape) -> float:
    """Parameters that take part in a matmul per token (lookup tables excluded)."""
    n = arch.active_params if arch.num_experts > 1 else arch.params
    return float(n - sum(p for _, p in lookup_tables(arch)))


def _expert_bytes_fraction(arch: Shape, params: int,
                           tokens: np.ndarray | float) -> tuple[float, np.ndarray | float]:
    """(dense weight share, expert share read) for a step over `tokens` tokens."""
    if arch.num_experts <= 1:
        return 1.0, 0.0
    expert_params = arch.layers * 3 * arch.hidden * arch.ffn * arch.num_experts
    share = expert_params / params
    return 1.0 - share, share * arch.experts_per_token / arch.num_experts


class _Model:
    """Per-call constants: a model on a hardware under one workload's dtypes and parallelism."""

    def __init__(self, facts: Facts, w: Workload):
        arch, hw = facts.shape, facts.device
        self.arch, self.hw, self.w = arch, hw, w
        self.notes: list[str] = []
        self.params = arch.params
        self.weight_bytes = (w.weight_bytes if w.weight_bytes is not None
                             else self.params * facts.width(w.weight_dtype))
        self.kvbpt = 2 * arch.layers * arch.kv_dim * w.kv(facts)
        self.nm = matmul_params(arch)
        self.attn = 4.0 * arch.layers * arch.q_dim  # FLOPs per (token, context position)
        self.g = w.tensor_parallel * w.expert_parallel
        self.P = w.pipeline_parallel
        self.devices = self.g * self.P
        self.peak = facts.peak(w.compute())
        self.bw = hw.mem_bw
        self.link = hw.link_bw
        if self.peak is None:
            self.notes.append(f"{hw.id} has no public {w.compute()} peak: no compute term")
        if self.bw is None:
            self.notes.append(f"{hw.id} memory bandwidth is not public: no memory term")
        if (self.g > 1 or self.P > 1) and self.link is None:
            self.notes.append(f"{hw.id} link bandwidth is not public: no interconnect term")

    def weights_read(self, tokens) -> np.ndarray | float:
        """Weight bytes a forward step over `tokens` tokens must read: matrices whole, lookup
        tables only the rows looked up (at most one per token)."""
        dense, experts = _expert_bytes_fraction(self.arch, self.params, tokens)
        per_param = self.weight_bytes / self.params  # a GGUF: its mean width
        skipped = sum(p * (1.0 - np.minimum(tokens, rows) / rows)
                      for rows, p in lookup_tables(self.arch))
        return self.weight_bytes * (dense + experts) - skipped * per_param

    def step(self, tokens, flops, kv_read_bytes, kv_write_bytes) -> tuple[np.ndarray, ...]:
        """Memory, compute and interconnect seconds of forward steps (arrays broadcast)."""
        mem = np.zeros_like(np.asarray(flops, dtype=float))
        if self.bw is not None:
            per_stage = self.weights_read(tokens) + (kv_read_bytes + kv_write_bytes) / self.P
            mem = mem + per_stage / (self.g * self.bw)
        comp = np.zeros_like(mem)
        if self.peak is not None:
            comp = comp + flops / (self.devices * self.peak)
        comm = np.zeros_like(mem)
        if self.link is not None:
            msg = np.asarray(tokens, dtype=float) * self.arch.hidden * self.w.act_bytes
            if self.g > 1:
                comm = comm + 2 * self.arch.layers * 2 * (self.g - 1) / self.g * msg / self.link
            if self.P > 1:
                comm = comm + (self.P - 1) * msg / self.link
        return mem, comp, comm


def _phase(mem, comp, comm) -> Phase:
    if np.ndim(mem) == np.ndim(comp) == np.ndim(comm) == 0:  # one step (prefill): plain floats
        m, c, k = float(mem), float(comp), float(comm)
        t = max(max(m, c), k)
        shares = {"memory": t if m >= c and m >= k else 0.0,
                  "compute": t if c > m and c >= k else 0.0,
                  "interconnect": t if k > m and k > c else 0.0}
        return Phase(t, m, c, k, max(shares, key=shares.get))
    mem, comp, comm = (np.atleast_1d(np.asarray(x, dtype=float)) for x in (mem, comp, comm))
    t = np.maximum(np.maximum(mem, comp), comm)
    shares = {"memory": float(np.sum(np.where((mem >= comp) & (mem >= comm), t, 0.0))),
              "compute": float(np.sum(np.where((comp > mem) & (comp >= comm), t, 0.0))),
              "interconnect": float(np.sum(np.where((comm > mem) & (comm > comp), t, 0.0)))}
    return Phase(float(t.sum()), float(mem.sum()), float(comp.sum()), float(comm.sum()),
                 max(shares, key=shares.get))


def inference_bound(facts: Facts, w: Workload) -> InferenceBound:
    m = _Model(facts, w)
    hw = facts.device
    B, s, o = w.batch_size, w.input_len, w.output_len
    # prefill: B x s tokens, causal attention, the cache written
    pf_flops = B * (2 * m.nm * s + m.attn * s * (s + 1) / 2)
    prefill = _phase(*m.step(B * s, pf_flops, 0.0, B * s * m.kvbpt if w.kv_cache else 0.0))
    one_flops = 2 * m.nm * s + m.attn * s * (s + 1) / 2
    one = _phase(*m.step(s, one_flops, 0.0, s * m.kvbpt if w.kv_cache else 0.0))
    ttft = one.time_s
    if m.peak is not None:
        ttft = max(ttft, (B + 1) / 2 * one_flops / (m.devices * m.peak))

    decode = None
    if o > 1:
        c = s + np.arange(1, o, dtype=float)  # context each decode step attends to
        if w.kv_cache:
            flops = B * (2 * m.nm + m.attn * c)
            decode = _phase(*m.step(B, flops, B * (c - 1) * m.kvbpt, B * m.kvbpt))
        else:  # recompute the whole prefix every step
            flops = B * (2 * m.nm * c + m.attn * c * (c + 1) / 2)
            decode = _phase(*m.step(B * c, flops, 0.0, 0.0))
    decode_s = decode.time_s if decode else 0.0
    total = prefill.time_s + decode_s
    # the classic roofline of a decode step: weights streamed once vs matmul FLOPs (no KV)
    roof = [float(m.weights_read(B)) / (m.g * m.bw)] if m.bw is not None else []
    if m.peak is not None:
        roof.append(B * 2 * m.nm / (m.devices * m.peak))
    roof_tok_s = B / max(roof) if roof else None
    if hw.memory_gb and w.kv_cache:
        need = m.weight_bytes + B * (s + o) * m.kvbpt
        if need > hw.memory_gb * 1e9 * m.devices:
            m.notes.append(f"weights + KV cache ({need / 1e9:.0f} GB) exceed the devices' "
                           f"{hw.memory_gb * m.devices:.0f} GB: the engine must queue or offload; "
                           "the bound assumes everything fits")
    binding = prefill.binding
    if decode and decode_s > prefill.time_s:
        binding = decode.binding
    return InferenceBound(
        prefill_s=prefill.time_s, ttft_s=ttft,
        tpot_s=decode_s / (o - 1) if decode else None, decode_s=decode_s,
        batch_latency_s=total, output_throughput_tok_s=B * o / total if total else float("inf"),
        total_throughput_tok_s=B * (s + o) / total if total else float("inf"),
        decode_tok_s=roof_tok_s,
        decode_phase_tok_s=B * (o - 1) / decode_s if decode and decode_s else None,
        prefill_tok_s=B * s / prefill.time_s if prefill.time_s else float("inf"),
        binding_resource=binding,
        prefill_binding=prefill.binding, decode_binding=decode.binding if decode else None,
        weight_bytes=m.weight_bytes, decode_weight_bytes=float(m.weights_read(B)),
        kv_bytes_per_token=m.kvbpt,
        flops_per_token=2 * m.nm, devices=m.devices, notes=m.notes)


@dataclass
class OperatorTerms:
    """The bytes and FLOPs of each operator of a batch's inference, per device, for a time
    model that gives each operator its own efficiency (analysis/predict_physics.py): the
    roofline's accounting (this module's docstring) split by operator, with two departures
    that make it an estimate's skeleton rather than a bound:
    - a decode step of a mixture of experts reads the union of the experts its tokens route
      to, E x (1 - (1 - k/E)^T) in expectation (uniform routing), not the bound's k;
    - a batch whose weights + KV cache at full context exceed `memory_utilization` of the
      devices' memory runs in `waves` of `batch_in_flight` sequences (an engine queues or
      preempts the rest), and the terms are those of one wave.
    Linear layers (the matmuls over the weights) and attention (its KV reads and writes and
    its FLOPs) are separate operators: their kernels reach different shares of the peaks."""
    prefill_linear_bytes: float
    prefill_linear_flops: float
    prefill_attention_bytes: float
    prefill_attention_flops: float
    decode_steps: int
    decode_linear_bytes_per_step: float
    decode_linear_flops_per_step: float
    decode_attention_bytes: float      # every step's KV reads and writes, summed
    decode_attention_flops: float
    link_bytes: float                  # TP all-reduces and PP sends, every step, summed
    collectives: float                 # their count: each pays the link's latency, whatever its size
    batch_in_flight: float
    waves: float
    mem_bw: float | None               # bytes/s per device
    peak_flops: float | None           # FLOP/s per device, the compute dtype's
    link_bw: float | None

    def as_dict(self) -> dict:
        return asdict(self)


def operator_terms(facts: Facts, w: Workload, memory_utilization: float = 0.9) -> OperatorTerms:
    m = _Model(facts, w)
    s, o = w.input_len, w.output_len
    B = float(w.batch_size)
    in_flight, waves = B, 1.0
    memory = (facts.device.memory_gb or 0.0) * 1e9 * m.devices * memory_utilization
    per_seq = (s + o) * m.kvbpt if w.kv_cache else 0.0
    if memory > 0 and per_seq > 0 and m.weight_bytes + B * per_seq > memory:
        in_flight = max(1.0, min(B, float(np.floor((memory - m.weight_bytes) / per_seq))))
        waves = B / in_flight
    B = in_flight

    def linear_bytes(tokens: float) -> float:
        # a step reads whole matrices; a lookup table only its looked-up rows; a mixture of
        # experts the union of the experts its tokens route to
        dense, _ = _expert_bytes_fraction(m.arch, m.params, tokens)
        union = 0.0
        if m.arch.num_experts > 1:
            e, k = m.arch.num_experts, m.arch.experts_per_token
            union = (1.0 - dense) * (1.0 - (1.0 - k / e) ** tokens)
        skipped = sum(p * (1.0 - min(tokens, rows) / rows) for rows, p in lookup_tables(m.arch))
        return (m.weight_bytes * (dense + union) - skipped * m.weight_bytes / m.params) / m.g

    steps = max(o - 1, 0)
    kv_w = m.kvbpt if w.kv_cache else 0.0
    ctx = s * steps + steps * (steps + 1) / 2.0    # sum over decode steps of the context read
    if w.kv_cache:
        dec_attn_bytes = B * ctx * m.kvbpt / (m.g * m.P)  # step t reads c - 1 tokens, writes 1
        dec_attn_flops = B * m.attn * ctx / m.devices
    else:   # every step recomputes its whole prefix: a prefill of c tokens per step
        cs = s + np.arange(1, steps + 1, dtype=float)
        dec_attn_bytes = 0.0
        dec_attn_flops = float(B * np.sum(m.attn * cs * (cs + 1) / 2)) / m.devices
    lin_flops_dec = B * 2 * m.nm / m.devices
    if not w.kv_cache and steps:
        lin_flops_dec = float(B * 2 * m.nm * np.mean(s + np.arange(1, steps + 1))) / m.devices
    link = collectives = 0.0
    tokens_total = B * s + B * steps
    if m.g > 1:
        link += 2 * m.arch.layers * 2 * (m.g - 1) / m.g * tokens_total * m.arch.hidden * w.act_bytes
        collectives += 2 * m.arch.layers * (steps + 1)
    if m.P > 1:
        link += (m.P - 1) * tokens_total * m.arch.hidden * w.act_bytes
        collectives += (m.P - 1) * (steps + 1)
    return OperatorTerms(
        prefill_linear_bytes=linear_bytes(B * s),
        prefill_linear_flops=B * 2 * m.nm * s / m.devices,
        prefill_attention_bytes=B * s * kv_w / (m.g * m.P),
        prefill_attention_flops=B * m.attn * s * (s + 1) / 2 / m.devices,
        decode_steps=steps, decode_linear_bytes_per_step=linear_bytes(B),
        decode_linear_flops_per_step=lin_flops_dec,
        decode_attention_bytes=dec_attn_bytes, decode_attention_flops=dec_attn_flops,
        link_bytes=link, collectives=collectives, batch_in_flight=B, waves=waves,
        mem_bw=m.bw, peak_flops=m.peak, link_bw=m.link)


def training_bound(facts: Facts, *, batch_size: int, seq_len: int, devices: int = 1,
                   dtype: str = "bf16", grad_accum: int = 1) -> TrainingBound:
    notes: list[str] = []
    arch, hw = facts.shape, facts.device
    n = arch.params
    tokens = batch_size * seq_len * grad_accum
    flops = tokens * flops_per_token(matmul_params(arch), arch.layers, arch.q_dim, seq_len,
                                     causal_attention=True)
    model_flops = tokens * flops_per_token(matmul_params(arch), arch.layers, arch.q_dim, seq_len)
    peak = facts.peak(dtype)
    wb = facts.width(dtype)
    mem = comp = comm = 0.0
    if peak is not None:
        comp = flops / (devices * peak)
    else:
        notes.append(f"{hw.id} has no public {dtype} peak: no compute term")
    if hw.mem_bw is not None:
        # every device holds a full replica (data parallel): its bytes do not shrink with devices
        mem = (grad_accum * 3 * wb + wb + 24) * n / hw.mem_bw
    if devices > 1 and hw.link_bw is not None:
        comm = 2 * (devices - 1) / devices * n * wb / hw.link_bw
    ph = _phase(mem, comp, comm)
    return TrainingBound(step_time_s=ph.time_s, tokens_per_s=tokens / ph.time_s,
                         tflops=model_flops / ph.time_s / 1e12,
                         peak_tflops=(peak or 0.0) * devices / 1e12, flops_per_step=flops,
                         model_flops_per_step=model_flops,
                         binding_resource=ph.binding, devices=devices, notes=notes)
