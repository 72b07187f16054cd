"""The study's findings, one by one, re-tested on the user's own hardware.

For each finding of LLM-Inference-Bench (its text's figure and hardware): the same quantity
recomputed from the imported reference data (the queries of docs/reproducing-llm-inference-bench.md:
one row per configuration, first occurrence, impossible rows left out: analysis/claims.BASE),
the same quantity from the user's own records, each configuration also as a fraction of its
own hardware's roofline, the hardware's own DRAM-utilisation counter beside the model's
efficiency where the record has it (measure/gpm.py), and a verdict in words:

- holds: the own figure agrees with the study's (within TOLERANCE for a magnitude, on the same
  side of 1 for a direction such as "FP8 is faster than FP16");
- differs: by how much, and the likely reason, taken apart into the bound's own ratio on each
  hardware and the efficiencies (a ratio of throughputs = ratio of bounds x ratio of efficiencies);
- cannot run here: why (the engine refused, as its own message says; the machine has too few
  GPUs; the engine does not install);
- not measured: which records would answer it (the campaign part that makes them).

    llmbench findings --results DIR [--reference DIR] [--format text|markdown|json]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

THR = "total_throughput_tok_s_mean"           # the study's throughput definition
EFF = "roofline_efficiency_total_throughput_tok_s"
BOUND = "roofline_bound_total_throughput_tok_s"
LAT = "batch_latency_s_mean"
DRAM = "gpu_dram_bw_util_pct"
TOLERANCE = 1.25        # a magnitude holds when own / study is within [1/1.25, 1.25]
COUNTER_GAP = 0.15      # DRAM utilisation vs the model's efficiency: disagree beyond 15 points
MAIN = "Plots/All_results.csv"


@dataclass
class Side:
    """One side's figure: the value, on which hardware, from which configurations."""
    value: float | None
    hardware: str
    what: str                                   # the configuration(s), in words
    parts: list[dict[str, Any]] = field(default_factory=list)   # each configuration measured
    unit: str = "x"                             # "x": a ratio; "tok/s": a throughput


@dataclass
class Finding:
    key: str
    title: str
    published: str                  # the study's text: figure and hardware
    study: list[Side]               # recomputed from the imported data
    own: list[Side]                 # from the user's records
    verdict: str                    # holds | differs | cannot run here | not measured
    reason: str
    counters: list[str] = field(default_factory=list)   # DRAM counter vs the roofline, per record

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- rows -------------------------------------------------------------------------------------
def _part(r: dict[str, Any], label: str) -> dict[str, Any]:
    return {"label": label, "throughput_tok_s": r.get(THR), "efficiency": r.get(EFF),
            "bound_tok_s": r.get(BOUND), "batch_latency_s": r.get(LAT),
            "dram_bw_util_pct": r.get(DRAM), "hardware": r.get("hardware"),
            "point_key": r.get("point_key"), "source": r.get("source")}


def _block(r: dict[str, Any]) -> int | None:
    """The KV block size a record ran with: the swept value, else the engine's effective one."""
    return r.get("kv_block_size") or r.get("engine_kv_block_size")


def _kv(r: dict[str, Any]) -> str:
    d = str(r.get("kv_cache_dtype") or r.get("engine_kv_cache_dtype") or "16-bit").lower()
    return "16-bit" if d in ("auto", "fp16", "bf16", "bfloat16", "float16", "16-bit", "f16") else d


def _weights(r: dict[str, Any]) -> str:
    if r.get("backend") == "llamacpp":
        return str(r.get("gguf_type") or "f16").lower()
    q = r.get("weight_quant")
    return str(q).lower() if q else "16-bit"


def record_rows(docs: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Flat rows of record documents, plus what the engine reported it ran with (the flat row
    keeps the swept workload value, None when the engine's default was taken: vLLM's effective
    KV block size and cache dtype are in backend.options)."""
    from llmbench.store.store import flatten

    out = []
    for d in docs:
        row = flatten(d)
        opts = (d.get("backend") or {}).get("options") or {}
        if isinstance(opts, dict):
            row["engine_kv_block_size"] = opts.get("kv_block_size")
            row["engine_kv_cache_dtype"] = opts.get("kv_cache_dtype")
        out.append(row)
    return out


def own_rows(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The user's own inference records (never the study's, never another tool's import)."""
    return [r for r in rows if r.get("kind") == "inference" and not r.get("source_tool")]


class Own:
    """Lookup over the user's records of one hardware (a ratio never mixes two machines): the
    newest ok record of a configuration. Default hardware: the one with the most ok records."""

    def __init__(self, rows: list[dict[str, Any]], hardware: str | None = None):
        from collections import Counter

        if hardware is None:
            n = Counter(r.get("hardware") for r in rows if r.get("status") == "ok" and r.get("hardware"))
            hardware = n.most_common(1)[0][0] if n else None
        self.name = hardware
        self.rows = [r for r in rows if hardware is None or r.get("hardware") == hardware]

    def find(self, *, failed: bool = False, **want) -> dict[str, Any] | None:
        hits = []
        for r in self.rows:
            if (r.get("status") == "ok") == failed:
                continue
            if (r.get("hardware_count") or 1) != 1:
                continue
            ok = True
            for k, v in want.items():
                got = {"block": _block, "kv": _kv, "weights": _weights}.get(k, lambda r, k=k: r.get(k))(r)
                if got != v:
                    ok = False
                    break
            if ok and (failed or r.get(THR) is not None):
                hits.append(r)
        return max(hits, key=lambda r: r.get("created_at") or "") if hits else None

    def hardware(self) -> str:
        return self.name or "no own records"


def _needed():
    import pyarrow as pa

    ints = ("hardware_count", "batch_size", "input_len", "output_len", "n_batch", "tensor_parallel",
            "pipeline_parallel", "expert_parallel", "kv_block_size", "source_row")
    strs = ("hardware", "backend", "model", "weight_dtype", "kv_cache_dtype", "kv_cache", "speculative_model",
            "ttft_definition", "source", "in_files", "status", "kind")
    floats = (THR, EFF, BOUND, LAT, "roofline_efficiency_batch_latency_s")
    return {**{c: pa.int64 for c in ints}, **{c: pa.string for c in strs}, **{c: pa.float64 for c in floats},
            "context_overflow": pa.bool_}


class Study:
    """The imported reference records, queried as docs/reproducing-llm-inference-bench.md does."""

    def __init__(self, table):
        import duckdb

        from llmbench.analysis.claims import BASE

        import pyarrow as pa

        # a store whose study records lack a column the queries name (a partial import, a few
        # hand-made records) reads it as NULL, never fails
        for name, typ in _needed().items():
            if name not in table.column_names:
                table = table.append_column(name, pa.nulls(table.num_rows, typ()))
        self.con = duckdb.connect()
        self.con.register("records", table)
        self.base = BASE

    def rows(self, where: str) -> list[dict[str, Any]]:
        rel = self.con.sql(self.base + f"SELECT * FROM base WHERE {where}")
        cols = rel.columns
        return [dict(zip(cols, v)) for v in rel.fetchall()]

    def one(self, where: str) -> dict[str, Any] | None:
        rs = self.rows(where)
        return rs[0] if rs else None

    def raw(self, sql: str) -> list[dict[str, Any]]:
        rel = self.con.sql(sql)
        return [dict(zip(rel.columns, v)) for v in rel.fetchall()]


# -- arithmetic and words ---------------------------------------------------------------------
def _ratio(a: dict | None, b: dict | None, key: str = THR) -> float | None:
    if a is None or b is None or not a.get(key) or not b.get(key):
        return None
    return a[key] / b[key]


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.0f}%"


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _ratio_side(num: dict | None, den: dict | None, hardware: str, what: str, ln: str, ld: str,
                key: str = THR) -> Side:
    parts = [_part(r, lab) for r, lab in ((num, ln), (den, ld)) if r is not None]
    return Side(_ratio(num, den, key), hardware, what, parts)


def explain(study: Side, own: Side) -> str:
    """Why two throughput ratios differ: each is (its bounds' ratio) x (its efficiencies'
    ratio); say which factor moved, with the numbers."""
    def factors(s: Side):
        if len(s.parts) != 2:
            return None, None, None
        a, b = s.parts
        rb = a["bound_tok_s"] / b["bound_tok_s"] if a.get("bound_tok_s") and b.get("bound_tok_s") else None
        re_ = a["efficiency"] / b["efficiency"] if a.get("efficiency") and b.get("efficiency") else None
        return rb, re_, (a, b)

    sb, se, sp = factors(study)
    ob, oe, op = factors(own)
    if None in (sb, se, ob, oe):
        return "the records lack the roofline bounds to take the difference apart"
    bound_move, eff_move = ob / sb, oe / se
    words = []
    if abs(bound_move - 1) > 0.1:
        words.append(f"the roofline itself predicts {_x(ob)} on {own.hardware} against {_x(sb)} on "
                     f"{study.hardware} (the balance of bandwidth, compute and capacity differs)")
    if abs(eff_move - 1) > 0.1:
        (sa, sb_), (oa, ob_) = sp, op
        words.append(f"the engines reach different fractions of their bounds: {oa['label']} "
                     f"{_pct(oa['efficiency'])} vs {ob_['label']} {_pct(ob_['efficiency'])} here, "
                     f"{_pct(sa['efficiency'])} vs {_pct(sb_['efficiency'])} in the study")
    return "; ".join(words) or "within 10% on both the bound and the efficiency: noise or engine version"


def verdict_magnitude(study: Side, own: Side) -> tuple[str, str]:
    if own.value is None:
        return "not measured", ""
    if study.value is None:
        return "differs", "the study's data has no such point"
    q = own.value / study.value
    if 1 / TOLERANCE <= q <= TOLERANCE:
        return "holds", f"{_x(own.value)} here vs {_x(study.value)} in the study ({q:.2f} of it)"
    return "differs", (f"{_x(own.value)} here vs {_x(study.value)} in the study "
                       f"({(q - 1) * 100:+.0f}%): " + explain(study, own))


def verdict_direction(study: Side, own: Side, faster: bool = True) -> tuple[str, str]:
    if own.value is None:
        return "not measured", ""
    same = (own.value > 1) == faster
    word = "faster" if own.value > 1 else "slower"
    text = f"{_x(own.value)} here ({word}); the study {_x(study.value)}"
    return ("holds" if same else "differs"), (text if same else text + ": " + explain(study, own))


def counter_checks(parts: Iterable[dict[str, Any]]) -> list[str]:
    """The hardware's DRAM-utilisation counter beside the model's efficiency, per own record:
    both are the share of peak HBM bandwidth when the bound is memory's; where they part by more
    than COUNTER_GAP, say so and which way."""
    out, missing = [], []
    for p in parts:
        e, d = p.get("efficiency"), p.get("dram_bw_util_pct")
        if e is None:
            continue
        if d is None:
            missing.append(f"{p['label']} {_pct(e)}")
            continue
        gap = d / 100 - e
        if abs(gap) <= COUNTER_GAP:
            out.append(f"{p['label']}: roofline {_pct(e)}, DRAM busy {d:.0f}%: they agree")
        elif gap > 0:
            out.append(f"{p['label']}: roofline {_pct(e)}, DRAM busy {d:.0f}%: DISAGREE, the GPU moved "
                       "more bytes than the model counts (activations, KV re-reads, or the bound "
                       "is not memory's for this point)")
        else:
            out.append(f"{p['label']}: roofline {_pct(e)}, DRAM busy {d:.0f}%: DISAGREE, fewer bytes "
                       "reached DRAM than the model counts (cache hits, or time outside the kernels)")
    if missing:
        out.append("roofline " + ", ".join(missing) + ": DRAM counter not in the record (CPU, an older "
                   "GPU, or a record from before the counters)")
    return out


# -- the findings -----------------------------------------------------------------------------
def _plain(extra: str = "") -> str:
    return (f"in_files LIKE '%{MAIN}%' AND hardware_count=1 AND weight_dtype='fp16' "
            f"AND COALESCE(kv_cache_dtype,'fp16')='fp16'{extra}")


def f_batch(st: Study, own: Own) -> Finding:
    q = "backend='vllm' AND model='llama-3-8b' AND hardware='A100-SXM4-40GB' AND input_len={io} AND output_len={io} AND batch_size={b} AND " + _plain()
    s = [_ratio_side(st.one(q.format(io=io, b=64)), st.one(q.format(io=io, b=1)), "A100-SXM4-40GB",
                     f"vLLM LLaMA-3-8B, in/out {io}", "batch 64", "batch 1") for io in (2048, 1024)]
    o = [_ratio_side(own.find(backend="vllm", model="llama-3-8b", batch_size=64, input_len=io, output_len=io,
                              weights="16-bit", kv="16-bit"),
                     own.find(backend="vllm", model="llama-3-8b", batch_size=1, input_len=io, output_len=io,
                              weights="16-bit", kv="16-bit"),
                     own.hardware(), f"vLLM LLaMA-3-8B, in/out {io}", "batch 64", "batch 1") for io in (2048,)]
    v, why = verdict_magnitude(s[0], o[0])
    note = (f". The data gives {_x(s[0].value)} at in/out 2048 and {_x(s[1].value)} at 1024: the "
            "published 26.6x matches in/out 1024, not 2048 (at 2048 the A100's 40 GB forces queueing).")
    if v == "not measured":
        why = "needs vLLM LLaMA-3-8B bf16 at batch 1 and 64, in/out 2048 (campaign part vllm)"
    return Finding("batch-64-vs-1", "Batch 64 vs batch 1 at in/out 2048",
                   "26.6x throughput (A100)", s, o, v, why + note)


def f_io(st: Study, own: Own) -> Finding:
    sql = ("SELECT * FROM records WHERE source LIKE '%Heatmap_input_vs_output.csv' AND input_len={i} "
           "AND output_len={o} ORDER BY source_row LIMIT 1")  # the file repeats rows: the first
    def lat(i, o):
        rs = st.raw(sql.format(i=i, o=o))
        return rs[0] if rs else None
    s = [_ratio_side(lat(128, 1024), lat(1024, 128), "A100-SXM4-40GB", "TRT-LLM LLaMA-3-8B, batch 1",
                     "in 128 / out 1024", "in 1024 / out 128", key=LAT),
         _ratio_side(lat(128, 2048), lat(2048, 128), "A100-SXM4-40GB", "TRT-LLM LLaMA-3-8B, batch 1",
                     "in 128 / out 2048", "in 2048 / out 128", key=LAT)]
    o = [_ratio_side(own.find(backend="vllm", model="llama-3-8b", batch_size=1, input_len=128, output_len=1024,
                              weights="16-bit", kv="16-bit"),
                     own.find(backend="vllm", model="llama-3-8b", batch_size=1, input_len=1024, output_len=128,
                              weights="16-bit", kv="16-bit"),
                     own.hardware(), "vLLM LLaMA-3-8B, batch 1", "in 128 / out 1024", "in 1024 / out 128",
                     key=LAT)]
    v, why = verdict_magnitude(s[0], o[0])
    if v == "differs" and o[0].value is not None:
        why = (f"{_x(o[0].value)} here vs {_x(s[0].value)} in the study: the mirror costs out/in x the "
               "decode-step time over the prefill time; a faster prefill (compute) relative to decode "
               "(bandwidth) on this hardware and engine makes output tokens relatively dearer")
    if v == "not measured":
        why = "needs vLLM LLaMA-3-8B at batch 1, in/out 1024/128 and 128/1024 (campaign part findings-vllm)"
    return Finding("io-asymmetry", "Input/output {1024, 128} vs {128, 1024} (latency of the mirror)",
                   "14.6x (A100, TRT-LLM)", s, o, v,
                   why.rstrip(".") + f". The study's 14.6x is the data's (2048, 128) pair ({_x(s[1].value)}); its "
                   f"(1024, 128) pair is {_x(s[0].value)}.")


def f_block(st: Study, own: Own) -> Finding:
    rows = {r["kv_block_size"]: r for r in st.rows(
        "in_files LIKE '%Fig_2_b%' AND model='llama-3-8b' AND batch_size=64 AND hardware_count=1")}
    s = [Side(_ratio(rows.get(16), rows.get(8)), "A100-SXM4-40GB", "vLLM LLaMA-3-8B, batch 64, io 1024",
              [_part(rows[b], f"block {b}") for b in sorted(rows)])]
    found = {}
    io = None
    for n in (128, 1024):
        for b in (16, 32, 64, 128):
            r = own.find(backend="vllm", model="llama-3-8b", batch_size=64, input_len=n, output_len=n,
                         weights="16-bit", kv="16-bit", block=b)
            if r:
                found[b] = r
        if found:
            io = n
            break
    refused = own.find(failed=True, backend="vllm", model="llama-3-8b", kv_block_size=8)
    parts = [_part(found[b], f"block {b}") for b in sorted(found)]
    best = max(found, key=lambda b: found[b][THR]) if found else None
    spread = (max(r[THR] for r in found.values()) / min(r[THR] for r in found.values()) - 1) if found else None
    o = [Side(_ratio(found.get(16), found.get(best)) if best else None, own.hardware(),
              f"vLLM LLaMA-3-8B, batch 64, io {io}" if io else "vLLM LLaMA-3-8B, batch 64", parts)]
    if refused:
        err = (refused.get("error") or "").replace("\n", " ")
        o[0].parts.append({"label": "block 8", "refused": err[:400]})
    if not found and not refused:
        return Finding("kv-block-size", "KV-cache block size", "16 and above best on A100; at batch 64 "
                       "block 16 is 1.27x block 8", s, o, "not measured",
                       "needs vLLM LLaMA-3-8B at batch 64 over block sizes (campaign part findings-models)")
    words = []
    if refused:
        words.append("block 8 cannot run here: the engine refused it ("
                     + (refused.get("error") or "").splitlines()[-1][:200] + ")")
    if found:
        words.append(f"blocks {', '.join(map(str, sorted(found)))} span {spread * 100:.1f}%, best "
                     f"{best}" + (": 16 and above are alike, as in the study" if spread < 0.05 else ""))
    if len(found) < 2:   # one block size says nothing about block sizes
        v = "cannot run here" if refused else "not measured"
        words.append("the other block sizes need campaign part findings-models")
    else:  # the part that can run; the 16-vs-8 ratio cannot be measured where 8 is refused
        v = "holds" if spread < 0.05 else "differs"
    return Finding("kv-block-size", "KV-cache block size",
                   "16 and above best on A100; at batch 64 block 16 is 1.27x block 8", s, o, v,
                   "; ".join(words) + f". The data's 16/8 ratio is {_x(s[0].value)} (io 1024).")


def f_quant(st: Study, own: Own) -> Finding:
    def med(where: str) -> Side:
        rs = st.raw(st.base + f"""
            , r AS (SELECT hardware, backend, model, batch_size, input_len,
                           weight_dtype || '+' || COALESCE(kv_cache_dtype,'fp16') AS d,
                           {THR} AS thr, {EFF} AS eff, {BOUND} AS bound FROM base WHERE hardware_count=1)
            SELECT q.hardware, q.d, median(q.thr / f.thr) AS ratio, median(q.eff) AS qe,
                   median(f.eff) AS fe, median(q.bound) AS qb, median(f.bound) AS fb, count(*) AS n
            FROM r q JOIN r f USING (hardware, backend, model, batch_size, input_len)
            WHERE f.d='fp16+fp16' AND {where} GROUP BY ALL""")
        if not rs:
            return Side(None, "", where)
        r = rs[0]
        return Side(r["ratio"], r["hardware"], f"{r['d']} over fp16, median of {r['n']} points",
                    [{"label": r["d"], "efficiency": r["qe"], "bound_tok_s": r["qb"]},
                     {"label": "fp16", "efficiency": r["fe"], "bound_tok_s": r["fb"]}])
    s = [med("q.hardware='H100-SXM' AND q.backend='vllm' AND q.d='fp8+fp16' AND q.batch_size=1"),
         med("q.hardware='H100-SXM' AND q.backend='vllm' AND q.d='fp8+fp16' AND q.batch_size=64"),
         med("q.hardware='A100-SXM4-40GB' AND q.backend='tensorrt-llm' AND q.d LIKE 'int8%int8'")]
    base = dict(backend="vllm", model="llama-3-8b", input_len=128, output_len=128)
    o = []
    for b in (1, 64):
        bf = own.find(**base, batch_size=b, weights="16-bit", kv="16-bit")
        o.append(_ratio_side(own.find(**base, batch_size=b, weights="fp8", kv="16-bit"), bf, own.hardware(),
                             f"vLLM FP8 weights over bf16, batch {b}, in/out 128", "fp8 weights", "bf16"))
        o.append(_ratio_side(own.find(**base, batch_size=b, weights="16-bit", kv="fp8"), bf, own.hardware(),
                             f"vLLM FP8 KV cache over bf16, batch {b}, in/out 128", "fp8 KV", "bf16 KV"))
    for b in (1, 64):
        lb = dict(backend="llamacpp", model="llama-3-8b", input_len=128, output_len=128, batch_size=b)
        for q in ("q8_0", "q4_0"):
            o.append(_ratio_side(own.find(**lb, weights=q), own.find(**lb, weights="f16"), own.hardware(),
                                 f"llama.cpp {q.upper()} over F16, batch {b}, in/out 128", q.upper(), "F16"))
    w1 = next((x for x in o if "FP8 weights" in x.what and x.value is not None), None)
    if w1 is None:
        return Finding("fp8-int8", "FP8 (H100) and INT8 (A100) vs FP16", "FP8 on H100 and INT8 on A100 "
                       "faster than FP16", s, o, "not measured",
                       "needs vLLM LLaMA-3-8B with weight_quant=fp8 and bf16 (campaign part findings-vllm)")
    v, why = verdict_direction(s[0], w1)
    rest = [f"{x.what}: {_x(x.value)}" for x in o if x.value is not None and x is not w1]
    return Finding("fp8-int8", "FP8 (H100) and INT8 (A100) vs FP16",
                   "FP8 on H100 and INT8 on A100 faster than FP16", s, o, v,
                   f"{w1.what}: {why}" + ("; " + "; ".join(rest) if rest else ""))


def f_gqa(st: Study, own: Own) -> Finding:
    q = ("backend='vllm' AND model='{m}' AND hardware='{h}' AND batch_size=64 AND input_len={io} "
         "AND output_len={io} AND " + _plain())
    s = []
    for h in ("H100-SXM", "A100-SXM4-40GB"):
        for m in ("llama-3-8b", "mistral-7b"):
            for io in (2048, 128):
                s.append(_ratio_side(st.one(q.format(m=m, h=h, io=io)), st.one(q.format(m="llama-2-7b", h=h, io=io)),
                                     h, f"vLLM {m} over LLaMA-2-7B, batch 64, io {io}", m, "llama-2-7b"))
    s.append(_ratio_side(st.one(q.format(m="llama-2-7b", h="A100-SXM4-40GB", io=128)),
                         st.one(q.format(m="llama-3-8b", h="A100-SXM4-40GB", io=128)), "A100-SXM4-40GB",
                         "vLLM LLaMA-2-7B over LLaMA-3-8B, batch 64, io 128", "llama-2-7b", "llama-3-8b"))
    o = []
    mha = own.find(backend="vllm", model="llama-2-7b", batch_size=64, input_len=128, output_len=128,
                   weights="16-bit", kv="16-bit")
    for m in ("llama-3-8b", "mistral-7b", "qwen2-7b"):
        o.append(_ratio_side(own.find(backend="vllm", model=m, batch_size=64, input_len=128, output_len=128,
                                      weights="16-bit", kv="16-bit"), mha, own.hardware(),
                             f"vLLM {m} over LLaMA-2-7B, batch 64, io 128", m, "llama-2-7b"))
    main = o[0]
    if main.value is None:
        return Finding("gqa", "GQA (Mistral-7B, LLaMA-3-8B) vs MHA (LLaMA-2-7B) at batch 64",
                       "~1.9x (H100) and ~2.79x (A100) faster; on one A100 LLaMA-2-7B 1.18x faster than "
                       "LLaMA-3-8B at batch 64, in/out 128", s, o, "not measured",
                       "needs vLLM LLaMA-2-7B, LLaMA-3-8B, Mistral-7B at batch 64, in/out 128 "
                       "(campaign part findings-models)")
    study128 = next(x for x in s if x.hardware == "H100-SXM" and "llama-3-8b" in x.what and "io 128" in x.what)
    v, why = verdict_magnitude(study128, main)
    extra = [f"{x.what}: {_x(x.value)}" for x in o[1:] if x.value is not None]
    inv = s[-1]
    return Finding("gqa", "GQA (Mistral-7B, LLaMA-3-8B) vs MHA (LLaMA-2-7B) at batch 64",
                   "~1.9x (H100) and ~2.79x (A100) faster; on one A100 LLaMA-2-7B 1.18x faster than "
                   "LLaMA-3-8B at batch 64, in/out 128", s, o, v,
                   f"against the H100's io-128 ratio: {why}" + ("; " + "; ".join(extra) if extra else "")
                   + f". The data's A100 LLaMA-2-7B over LLaMA-3-8B at io 128 is {_x(inv.value)}; the "
                   "large GQA gains are at io 2048, where MHA's KV cache fills the memory.")


def f_70b(st: Study, own: Own) -> Finding:
    q = ("backend='tensorrt-llm' AND model='llama-3-70b' AND hardware='{h}' AND hardware_count=4 AND "
         "batch_size={b} AND input_len={io} AND output_len={io} AND in_files LIKE '%" + MAIN + "%'")
    s = [_ratio_side(st.one(q.format(h="H100-SXM", b=64, io=io)), st.one(q.format(h="A100-SXM4-40GB", b=64, io=io)),
                     "4x H100-SXM vs 4x A100-SXM4-40GB", f"TRT-LLM, batch 64, io {io}", "H100 x4", "A100 x4")
         for io in (1024, 2048)]
    s.append(_ratio_side(st.one(q.format(h="H100-SXM", b=64, io=1024)), st.one(q.format(h="H100-SXM", b=1, io=1024)),
                         "4x H100-SXM", "TRT-LLM, io 1024", "batch 64", "batch 1"))
    s.append(_ratio_side(st.one(q.format(h="A100-SXM4-40GB", b=64, io=2048)),
                         st.one(q.format(h="A100-SXM4-40GB", b=1, io=2048)),
                         "4x A100-SXM4-40GB", "TRT-LLM, io 2048", "batch 64", "batch 1"))
    b = dict(backend="vllm", model="llama-3-70b", input_len=128, output_len=128, weights="fp8")
    o = [_ratio_side(own.find(**b, batch_size=64), own.find(**b, batch_size=1), own.hardware(),
                     "vLLM LLaMA-3-70B FP8 weights on ONE GPU, in/out 128", "batch 64", "batch 1")]
    if o[0].value is None:
        return Finding("llama-3-70b", "LLaMA-3-70B: H100 vs A100, batch 1 -> 64",
                       "H100 7.8x A100 at batch 64; batch 1 -> 64: 39x on H100, 3x on A100", s, o,
                       "not measured", "needs vLLM LLaMA-3-70B FP8 at batch 1 and 64 (campaign part "
                       "findings-models); bf16 (141 GB of weights) does not fit one H200")
    v, why = verdict_magnitude(s[2], o[0])
    return Finding("llama-3-70b", "LLaMA-3-70B: H100 vs A100, batch 1 -> 64",
                   "H100 7.8x A100 at batch 64; batch 1 -> 64: 39x on H100, 3x on A100", s, o, v,
                   f"batch scaling against 4 H100s: {why}. Not like for like: one GPU with FP8 weights "
                   "here, 4 GPUs in fp16 with tensor parallelism there; the H100-vs-A100 ratio needs "
                   f"both GPUs, which this machine does not have (the data: {_x(s[0].value)} at io 1024, "
                   f"{_x(s[1].value)} at io 2048, where the A100s' 160 GB queue the batch; the published 7.8x is "
                   "not in the main sweep's rows).")


def f_parallel(st: Study, own: Own) -> Finding:
    rs = st.rows("in_files LIKE '%Fig_5_a%' AND model='llama-3-8b' AND hardware_count=4")
    tp = [r for r in rs if r.get("tensor_parallel") == 4]
    pp = [r for r in rs if r.get("pipeline_parallel") == 4]
    hy = [r for r in rs if r.get("tensor_parallel") == 2 and r.get("pipeline_parallel") == 2]

    def pair(other, label):
        for t in tp:
            for x in other:
                if (t["batch_size"], t["input_len"]) == (x["batch_size"], x["input_len"]):
                    return _ratio_side(t, x, "4x A100-SXM4-40GB", f"TRT-LLM LLaMA-3-8B, TP4 over {label}",
                                       "TP4", label)
        return Side(None, "4x A100-SXM4-40GB", f"TP4 over {label}: no matching rows")

    s = [pair(hy, "TP2xPP2"), pair(pp, "PP4")]
    mii = st.raw(st.base + f"""
        , r AS (SELECT backend, model, {THR} AS thr FROM base WHERE {_plain()} AND hardware='A100-SXM4-40GB'
                AND batch_size=64 AND input_len=2048 AND output_len=2048)
        SELECT median(m.thr / v.thr) AS ratio, count(*) AS n FROM r m JOIN r v USING (model)
        WHERE m.backend='deepspeed-mii' AND v.backend='vllm'""")
    mii_r = mii[0]["ratio"] if mii else None
    s.append(Side(mii_r, "A100-SXM4-40GB", f"DeepSpeed-MII over vLLM, batch 64, io 2048, median of "
                  f"{mii[0]['n'] if mii else 0} models"))
    multi = [r for r in own.rows if (r.get("hardware_count") or 1) >= 4]
    return Finding("parallelism-and-mii", "TP vs TP2xPP2 vs PP on 4 GPUs; DeepSpeed-MII vs vLLM",
                   "TP 1.30x hybrid TP2xPP2 and 1.94x PP on 4 A100s; DS-MII 1.04x vLLM at batch 64, "
                   "in/out 2048", s, [], "cannot run here" if not multi else "not measured",
                   "TP/PP on 4 GPUs: this machine pool lends one H200 (two at times; 4- and 8-GPU kinds are "
                   "withheld), so no 4-way split can run; DeepSpeed-MII: its release is stale (2023 "
                   "kernels) and untested on CUDA 13, and it is not one of llmbench's engines. "
                   f"The data: TP4 over TP2xPP2 {_x(s[0].value)}, over PP4 {_x(s[1].value)} "
                   f"(LLaMA-3-8B, one row each); DS-MII over vLLM {_x(mii_r)}.")


def f_models(st: Study, own: Own) -> Finding:
    o = []
    for m in ("qwen2-7b", "mixtral-8x7b"):
        for b in (1, 64):
            r = own.find(backend="vllm", model=m, batch_size=b, input_len=128, output_len=128,
                         weights="16-bit", kv="16-bit")
            if r:
                o.append(Side(r[THR], own.hardware(), f"vLLM {m} bf16, batch {b}, in/out 128",
                              [_part(r, f"{m} b{b}")], unit="tok/s"))
    q = ("backend='vllm' AND model='{m}' AND batch_size={b} AND input_len=128 AND output_len=128 AND "
         "hardware IN ('H100-SXM', 'A100-SXM4-40GB') AND in_files LIKE '%" + MAIN + "%' "
         "ORDER BY hardware, hardware_count")
    s = []
    for m in ("qwen2-7b", "mixtral-8x7b"):
        for b in (1, 64):
            seen = set()
            for r in st.rows(q.format(m=m, b=b)):
                if r["hardware"] in seen:   # the fewest devices that held it, per hardware
                    continue
                seen.add(r["hardware"])
                s.append(Side(r[THR], f"{r['hardware']} x{r['hardware_count']}",
                              f"vLLM {m}, batch {b}, in/out 128", [_part(r, f"{m} b{b}")], unit="tok/s"))
    return Finding("more-models", "The study's other single-GPU models: Qwen2-7B, Mixtral-8x7B",
                   "(no single headline figure; listed beside the study's own rows)", s, o,
                   "holds" if o else "not measured",
                   "own throughput and efficiency listed for comparison" if o else
                   "needs vLLM Qwen2-7B and Mixtral-8x7B (campaign part findings-models; Mixtral ~94 GB bf16)")


FINDINGS: list[Callable[[Study, Own], Finding]] = [f_batch, f_io, f_block, f_quant, f_gqa, f_70b,
                                                   f_parallel, f_models]


def findings(reference_table, own_records: list[dict[str, Any]], hardware: str | None = None) -> list[Finding]:
    """Every finding: the study's side from the imported reference table (an Arrow table of flat
    rows, kind 'reference'), the user's from their flat rows (of `hardware`, default the one
    with the most records)."""
    st, own = Study(reference_table), Own(own_rows(own_records), hardware)
    out = []
    for f in FINDINGS:
        x = f(st, own)
        x.counters = counter_checks(p for side in x.own for p in side.parts if "refused" not in p)
        out.append(x)
    return out


def load(results, reference=None, hardware: str | None = None) -> list[Finding]:
    """From stores: `reference` (default `results`) holds the imported study (llmbench import
    llm-inference-bench), `results` the user's records."""
    from llmbench.store.store import Store

    from llmbench.errors import SpecError

    ref = reference_table(reference or results)
    if ref.num_rows == 0:
        raise SpecError([("--reference", f"no study records in {reference or results}: run `llmbench "
                          "import llm-inference-bench DIR` or pass the published data directory")])
    return findings(ref, record_rows(d for _, d in Store(results).raw()), hardware)


# -- text -------------------------------------------------------------------------------------
def _side_text(s: Side) -> str:
    val = "-" if s.value is None else _x(s.value) if s.unit == "x" else f"{s.value:,.0f} {s.unit}"
    effs = ", ".join(f"{p['label']} {_pct(p.get('efficiency'))}" for p in s.parts
                     if p.get("efficiency") is not None)
    dram = ", ".join(f"{p['label']} DRAM {p['dram_bw_util_pct']:.0f}%" for p in s.parts
                     if p.get("dram_bw_util_pct") is not None)
    refused = "; ".join(f"{p['label']} refused" for p in s.parts if "refused" in p)
    extra = "; ".join(x for x in (f"of roofline: {effs}" if effs else "", dram, refused) if x)
    return f"{val}  [{s.hardware}] {s.what}" + (f"  ({extra})" if extra else "")


def text(fs: list[Finding]) -> str:
    lines = []
    for f in fs:
        lines.append(f"== {f.title}  [{f.verdict.upper()}]")
        lines.append(f"   published: {f.published}")
        for s in f.study:
            lines.append(f"   study data: {_side_text(s)}")
        for s in f.own:
            lines.append(f"   own:        {_side_text(s)}")
        lines.append(f"   verdict: {f.verdict}: {f.reason}")
        for c in f.counters:
            lines.append(f"   counters: {c}")
        lines.append("")
    return "\n".join(lines)


def markdown(fs: list[Finding]) -> str:
    out = ["| finding | published | study data | own | verdict |", "|---|---|---|---|---|"]
    for f in fs:
        sd = "<br>".join(_side_text(s) for s in f.study) or "-"
        od = "<br>".join(_side_text(s) for s in f.own) or "-"
        out.append(f"| {f.title} | {f.published} | {sd} | {od} | **{f.verdict}**: {f.reason} |")
    return "\n".join(out) + "\n"


def summary_rows(fs: list[Finding]) -> list[dict[str, str]]:
    """One row per finding for the report and dashboard tables."""
    return [{"finding": f.title, "published": f.published,
             "study data": "; ".join(_side_text(s) for s in f.study[:2]) or "-",
             "own": "; ".join(_side_text(s) for s in f.own[:3]) or "-",
             "verdict": f.verdict, "why": f.reason,
             "counters vs roofline": "; ".join(f.counters) or "-"} for f in fs]



def reference_table(reference):
    """The study's flat rows as an Arrow table, from an imported store (`llmbench import
    llm-inference-bench`) or straight from the published data directory (parsed and bounded in
    memory, about 5 s; nothing is written)."""
    from pathlib import Path

    from llmbench.store.store import Store

    root = Path(reference)
    if (root / "Plots").is_dir() or (root / "gh-pages").is_dir():
        import pyarrow as pa

        from llmbench.importers.llm_inference_bench import parse
        from llmbench.roofline import annotate
        from llmbench.store.store import flatten

        records = parse(root).records
        rows = []
        for rec in records:
            annotate(rec)
            rows.append(flatten(rec.model_dump(mode="json")))
        cols = sorted({k for r in rows for k in r})
        return pa.Table.from_pylist([{c: r.get(c) for c in cols} for r in rows])
    return Store(root).query("kind = 'reference'").to_arrow_table()
