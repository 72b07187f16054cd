"""The study's findings, one by one, re-tested on the user's own hardware.

For each finding of LLM-Inference-Bench (its text's figure and hardware): the same quantity
recomputed from the imported reference data (the queries of docs/reproducing-llm-inference-bench.md:
one row per configuration, first occurrence, impossible rows left out: analysis/claims.BASE),
the same quantity from the user's own records, each configuration also as a fraction of its
own hardware's roofline, the hardware's own DRAM-utilisation counter beside the model's
efficiency where the record has it (measure/gpm.py), and a verdict.

The verdict (analysis/verdict.py): the claim is taken apart into the parts a measurement can
test; each part holds, is contradicted or is untested (why) from the two numbers it shows, and
the finding's verdict follows from its parts: holds, partly holds (which parts), contradicted,
untested. Where a part is contradicted, the reason takes the difference apart into the bound's
own ratio on each hardware and the efficiencies (a ratio of throughputs = ratio of bounds x
ratio of efficiencies).

Every own comparison reads its records from one campaign (analysis/pairing.py: one run, else
one machine and day, else none), and shows which.

    llmbench findings --results DIR [--reference DIR] [--format text|markdown|json]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from llmbench.analysis import pairing
from llmbench.analysis.verdict import (CONTRADICTED, HOLDS, UNTESTED, Part, faster, magnitude, overall, summary,
                                       untested, within)

THR = "total_throughput_tok_s_mean"           # the study's throughput definition
EFF = "roofline_efficiency_total_throughput_tok_s"
BOUND = "roofline_bound_total_throughput_tok_s"
LAT = "batch_latency_s_mean"
DRAM = "gpu_dram_bw_util_pct"
COUNTER_GAP = 0.15      # DRAM utilisation vs the model's efficiency: disagree beyond 15 points
MAIN = "Plots/All_results.csv"
# vLLM records compared on another factor keep the study's plain KV block size (its default), so
# a block-size sweep of the same day is never a baseline
PLAIN_BLOCK = 16


@dataclass
class Side:
    """One side's figure: the value, on which hardware, from which configurations."""
    value: float | None
    hardware: str
    what: str                                   # the configuration(s), in words
    parts: list[dict[str, Any]] = field(default_factory=list)   # each configuration measured
    unit: str = "x"                             # "x": a ratio; "tok/s": a throughput
    pairing: str = ""                           # own sides: which run(s) the records come from


@dataclass
class Finding:
    key: str
    title: str
    published: str                  # the study's text: figure and hardware
    study: list[Side]               # recomputed from the imported data
    own: list[Side]                 # from the user's records
    parts: list[Part]               # the claim's testable parts, each with its outcome
    note: str = ""                  # context: what the data says beside the parts
    counters: list[str] = field(default_factory=list)   # DRAM counter vs the roofline, per record

    @property
    def verdict(self) -> str:
        """Never set by hand: the rule of analysis/verdict.overall over the parts."""
        return overall(self.parts)

    @property
    def reason(self) -> str:
        return summary(self.parts) + (f". {self.note}" if self.note else "")

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "verdict": self.verdict, "reason": self.reason}


# -- rows -------------------------------------------------------------------------------------
def _part(r: dict[str, Any], label: str) -> dict[str, Any]:
    return {"label": label, "throughput_tok_s": r.get(THR), "efficiency": r.get(EFF),
            "bound_tok_s": r.get(BOUND), "batch_latency_s": r.get(LAT),
            "dram_bw_util_pct": r.get(DRAM), "hardware": r.get("hardware"),
            "point_key": r.get("point_key"), "source": r.get("source"),
            "run_id": r.get("run_id"), "created_at": r.get("created_at")}


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
    KV block size and cache dtype are in backend.options), and the machine's host name (records
    are paired by run, else by machine and day: analysis/pairing.py)."""
    from llmbench.store.store import flatten

    out = []
    for d in docs:
        row = flatten(d)
        env = d.get("env") if isinstance(d.get("env"), dict) else {}
        row["host"] = env.get("host")
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
    """Lookup over the user's records of one hardware (a ratio never mixes two kinds of
    hardware, nor two campaigns: `pick`). Default hardware: the one with the most ok records."""

    def __init__(self, rows: list[dict[str, Any]], hardware: str | None = None):
        from collections import Counter

        if hardware is None:
            n = Counter(r.get("hardware") for r in rows if r.get("status") == "ok" and r.get("hardware"))
            hardware = n.most_common(1)[0][0] if n else None
        self.name = hardware
        self.rows = [r for r in rows if hardware is None or r.get("hardware") == hardware]

    def matches(self, *, failed: bool = False, **want) -> list[dict[str, Any]]:
        """Every single-device record of a configuration (ok ones with a throughput, or the
        failed ones), oldest first."""
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
        return sorted(hits, key=lambda r: r.get("created_at") or "")

    def newest(self, *, failed: bool = False, **want) -> dict[str, Any] | None:
        """One configuration alone (a listed throughput, an engine's refusal): its newest record."""
        hits = self.matches(failed=failed, **want)
        return hits[-1] if hits else None

    def pick(self, wants: dict[str, dict[str, Any]], need: int | None = None):
        """Records of several configurations (label -> what to match) from one campaign
        (analysis/pairing.py): ({label: record}, Pairing)."""
        return pairing.choose({label: self.matches(**w) for label, w in wants.items()}, need)

    def ratio(self, num: dict[str, Any], den: dict[str, Any], what: str, ln: str, ld: str,
              key: str = THR) -> Side:
        """num / den from one campaign; the side names the run(s), or why there is no pair."""
        got, how = self.pick({ln: num, ld: den})
        side = _ratio_side(got.get(ln), got.get(ld), self.hardware(), what, ln, ld, key)
        side.pairing = how.text()
        return side

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


def _missing(side: Side, needs: str) -> str:
    """Why an own ratio is absent: its records are not from one campaign (where each was
    found), or are not there (the campaign part that makes them)."""
    if side.pairing.startswith("not paired"):
        return side.pairing
    return needs + (f" ({side.pairing})" if side.pairing else "")


def f_batch(st: Study, own: Own) -> Finding:
    q = "backend='vllm' AND model='llama-3-8b' AND hardware='A100-SXM4-40GB' AND input_len={io} AND output_len={io} AND batch_size={b} AND " + _plain()
    ios = (2048, 1024)
    s = [_ratio_side(st.one(q.format(io=io, b=64)), st.one(q.format(io=io, b=1)), "A100-SXM4-40GB",
                     f"vLLM LLaMA-3-8B, in/out {io}", "batch 64", "batch 1") for io in ios]

    def want(b: int, io: int) -> dict[str, Any]:
        return dict(backend="vllm", model="llama-3-8b", batch_size=b, input_len=io, output_len=io,
                    weights="16-bit", kv="16-bit", block=PLAIN_BLOCK)

    o = [own.ratio(want(64, io), want(1, io), f"vLLM LLaMA-3-8B, in/out {io}", "batch 64", "batch 1") for io in ios]
    parts = [magnitude("26.6x at in/out 2048, as the data has it there", o[0].value, s[0].value,
                       _missing(o[0], "needs vLLM LLaMA-3-8B bf16 at batch 1 and 64, in/out 2048 (campaign part vllm)"),
                       explain(s[0], o[0])),
             magnitude("26.6x where the data has it, at in/out 1024", o[1].value, s[1].value,
                       _missing(o[1], "needs vLLM LLaMA-3-8B bf16 at batch 1 and 64, in/out 1024 (campaign part "
                                "findings-vllm)"), explain(s[1], o[1]))]
    note = (f"The data gives {_x(s[0].value)} at in/out 2048 and {_x(s[1].value)} at 1024: the published 26.6x "
            "matches in/out 1024, not 2048 (at 2048 the A100's 40 GB forces queueing).")
    return Finding("batch-64-vs-1", "Batch 64 vs batch 1 at in/out 2048", "26.6x throughput (A100)", s, o, parts, note)


def f_io(st: Study, own: Own) -> Finding:
    sql = ("SELECT * FROM records WHERE source LIKE '%Heatmap_input_vs_output.csv' AND input_len={i} "
           "AND output_len={o} ORDER BY source_row LIMIT 1")  # the file repeats rows: the first

    def lat(i, o):
        rs = st.raw(sql.format(i=i, o=o))
        return rs[0] if rs else None

    def want(i: int, o: int) -> dict[str, Any]:
        return dict(backend="vllm", model="llama-3-8b", batch_size=1, input_len=i, output_len=o,
                    weights="16-bit", kv="16-bit", block=PLAIN_BLOCK)

    pairs = ((1024, 128), (2048, 128))
    s = [_ratio_side(lat(o, i), lat(i, o), "A100-SXM4-40GB", "TRT-LLM LLaMA-3-8B, batch 1",
                     f"in {o} / out {i}", f"in {i} / out {o}", key=LAT) for i, o in pairs]
    o = [own.ratio(want(o, i), want(i, o), "vLLM LLaMA-3-8B, batch 1", f"in {o} / out {i}", f"in {i} / out {o}",
                   key=LAT) for i, o in pairs]
    made_by = {1024: "campaign part findings-vllm", 2048: "no campaign part runs it yet"}
    why = ("the mirror costs out/in x the decode-step time over the prefill time; a faster prefill (compute) "
           "relative to decode (bandwidth) on this hardware and engine makes output tokens relatively dearer")
    parts = [magnitude(f"latency of (128, {i}) over ({i}, 128), as the data has it", od.value, sd.value,
                       _missing(od, f"needs vLLM LLaMA-3-8B at batch 1, in/out {i}/128 and 128/{i} ({made_by[i]})"),
                       why) for (i, _), sd, od in zip(pairs, s, o)]
    return Finding("io-asymmetry", "Input/output {1024, 128} vs {128, 1024} (latency of the mirror)",
                   "14.6x (A100, TRT-LLM)", s, o, parts,
                   f"The study's 14.6x is the data's (2048, 128) pair ({_x(s[1].value)}); its (1024, 128) pair "
                   f"is {_x(s[0].value)}.")


def _spread(rows: Iterable[dict[str, Any]]) -> float | None:
    """Largest over smallest throughput; None under two configurations."""
    thr = [r[THR] for r in rows if r and r.get(THR)]
    return max(thr) / min(thr) if len(thr) >= 2 else None


def f_block(st: Study, own: Own) -> Finding:
    rows = {r["kv_block_size"]: r for r in st.rows(
        "in_files LIKE '%Fig_2_b%' AND model='llama-3-8b' AND batch_size=64 AND hardware_count=1")}
    what = "vLLM LLaMA-3-8B, batch 64, io 1024"
    s = [_ratio_side(rows.get(16), rows.get(8), "A100-SXM4-40GB", what, "block 16", "block 8"),
         Side(_spread(r for b, r in rows.items() if b >= 16), "A100-SXM4-40GB",
              f"{what}: largest over smallest of blocks 16 and above",
              [_part(rows[b], f"block {b}") for b in sorted(rows) if b >= 16])]

    def want(io: int, b: int) -> dict[str, Any]:
        return dict(backend="vllm", model="llama-3-8b", batch_size=64, input_len=io, output_len=io,
                    weights="16-bit", kv="16-bit", block=b)

    found, how, io = {}, None, 128
    for n in (128, 1024):
        found, how = own.pick({f"block {b}": want(n, b) for b in (16, 32, 64, 128)}, need=2)
        if found:
            io = n
            break
    own_what = f"vLLM LLaMA-3-8B, batch 64, io {io}"
    big = Side(_spread(found.values()), own.hardware(), f"{own_what}: largest over smallest of blocks "
               + (", ".join(lab.split()[1] for lab in found) or "16 and above"),
               [_part(r, lab) for lab, r in found.items()], pairing=how.text())
    r16 = own.ratio(want(io, 16), want(io, 8), own_what, "block 16", "block 8")
    refused = own.newest(failed=True, backend="vllm", model="llama-3-8b", kv_block_size=8)
    why8 = _missing(r16, "needs vLLM LLaMA-3-8B at batch 64 with block sizes 8 and 16 (campaign part "
                    "findings-models)")
    if refused and r16.value is None:
        err = (refused.get("error") or "").replace("\n", " ")
        r16.parts.append({"label": "block 8", "refused": err[:400], "run_id": refused.get("run_id"),
                          "created_at": refused.get("created_at")})
        why8 = ("block 8 cannot run here: the engine refused it ("
                + (refused.get("error") or "").splitlines()[-1][:200] + f"; run {refused.get('run_id')})")
    parts = [magnitude("at batch 64 block 16 is 1.27x block 8", r16.value, s[0].value, why8, explain(s[0], r16)),
             within("16 and above alike", big.value, s[1].value,
                    _missing(big, "needs vLLM LLaMA-3-8B at batch 64 over two or more block sizes of 16 and "
                             "above (campaign part findings-models)"))]
    return Finding("kv-block-size", "KV-cache block size",
                   "16 and above best on A100; at batch 64 block 16 is 1.27x block 8", s, [r16, big], parts,
                   f"The data's 16/8 ratio is {_x(s[0].value)} (io 1024).")


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
    v = dict(backend="vllm", model="llama-3-8b", input_len=128, output_len=128)

    def vllm(b: int, weights: str, kv: str) -> dict[str, Any]:
        return {**v, "batch_size": b, "weights": weights, "kv": kv, "block": PLAIN_BLOCK}

    def gguf(b: int, q: str) -> dict[str, Any]:
        return dict(backend="llamacpp", model="llama-3-8b", input_len=128, output_len=128, batch_size=b, weights=q)

    fp8w, fp8kv, q8, q4 = {}, {}, {}, {}
    for b in (1, 64):
        fp8w[b] = own.ratio(vllm(b, "fp8", "16-bit"), vllm(b, "16-bit", "16-bit"),
                            f"vLLM FP8 weights over bf16, batch {b}, in/out 128", "fp8 weights", "bf16")
        fp8kv[b] = own.ratio(vllm(b, "16-bit", "fp8"), vllm(b, "16-bit", "16-bit"),
                             f"vLLM FP8 KV cache over bf16, batch {b}, in/out 128", "fp8 KV", "bf16 KV")
    for b in (1, 64):
        q8[b] = own.ratio(gguf(b, "q8_0"), gguf(b, "f16"), f"llama.cpp Q8_0 over F16, batch {b}, in/out 128",
                          "Q8_0", "F16")
        q4[b] = own.ratio(gguf(b, "q4_0"), gguf(b, "f16"), f"llama.cpp Q4_0 over F16, batch {b}, in/out 128",
                          "Q4_0", "F16")
    o = [fp8w[1], fp8kv[1], fp8w[64], fp8kv[64], q8[1], q4[1], q8[64], q4[64]]
    parts = [faster(f"FP8 weights faster than 16-bit at batch {b} (vLLM)", fp8w[b].value, s[i].value,
                    _missing(fp8w[b], "needs vLLM LLaMA-3-8B with weight_quant=fp8 and bf16 (campaign part "
                             "findings-vllm)"), explain(s[i], fp8w[b])) for i, b in enumerate((1, 64))]
    parts += [faster(f"INT8 faster than 16-bit at batch {b} (llama.cpp Q8_0 over F16)", q8[b].value, s[2].value,
                     _missing(q8[b], "needs llama.cpp LLaMA-3-8B Q8_0 and F16 (campaign part findings-llamacpp)"),
                     explain(s[2], q8[b])) for b in (1, 64)]
    beside = [f"{x.what}: {_x(x.value)}" for x in (fp8kv[1], fp8kv[64], q4[1], q4[64]) if x.value is not None]
    note = ("INT8 here is llama.cpp's Q8_0 (8-bit integer weights); the study's is TensorRT-LLM's int8 weights "
            "and KV cache on an A100, an engine llmbench does not run."
            + (" Beside the claim (FP8 KV cache, 4-bit weights; not parts of it): " + "; ".join(beside) + "."
               if beside else ""))
    return Finding("fp8-int8", "FP8 (H100) and INT8 (A100) vs FP16", "FP8 on H100 and INT8 on A100 faster than FP16",
                   s, o, parts, note)


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

    def h100(m: str, io: int) -> Side:
        return next(x for x in s if x.hardware == "H100-SXM" and m in x.what and x.what.endswith(f"io {io}"))

    def want(m: str, io: int) -> dict[str, Any]:
        return dict(backend="vllm", model=m, batch_size=64, input_len=io, output_len=io, weights="16-bit", kv="16-bit",
                    block=PLAIN_BLOCK)

    o = [own.ratio(want(m, 128), want("llama-2-7b", 128), f"vLLM {m} over LLaMA-2-7B, batch 64, io 128", m,
                   "llama-2-7b") for m in ("llama-3-8b", "mistral-7b", "qwen2-7b")]
    o.append(own.ratio(want("llama-3-8b", 2048), want("llama-2-7b", 2048),
                       "vLLM llama-3-8b over LLaMA-2-7B, batch 64, io 2048", "llama-3-8b", "llama-2-7b"))
    needs = ("needs vLLM LLaMA-2-7B and {m} at batch 64, in/out {io} (campaign part findings-models"
             "{extra})")
    parts = [magnitude(f"{m} over LLaMA-2-7B at io 128, as the H100 data has it", x.value, h100(m, 128).value,
                       _missing(x, needs.format(m=m, io=128, extra="")), explain(h100(m, 128), x))
             for m, x in (("llama-3-8b", o[0]), ("mistral-7b", o[1]))]
    parts.append(magnitude("the ~1.9x gain, which the H100 data has at io 2048 (llama-3-8b)", o[3].value,
                           h100("llama-3-8b", 2048).value,
                           _missing(o[3], needs.format(m="LLaMA-3-8B", io=2048, extra=" runs io 128 only")),
                           explain(h100("llama-3-8b", 2048), o[3])))
    beside = [f"{x.what}: {_x(x.value)}" for x in o[2:3] if x.value is not None]
    return Finding("gqa", "GQA (Mistral-7B, LLaMA-3-8B) vs MHA (LLaMA-2-7B) at batch 64",
                   "~1.9x (H100) and ~2.79x (A100) faster; on one A100 LLaMA-2-7B 1.18x faster than "
                   "LLaMA-3-8B at batch 64, in/out 128", s, o, parts, f"The data's A100 LLaMA-2-7B over LLaMA-3-8B at io 128 is {_x(s[-1].value)}; the large "
                   "GQA gains are at io 2048, where MHA's KV cache fills the memory."
                   + (" Beside the claim: " + "; ".join(beside) + "." if beside else ""))


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
    o = [own.ratio({**b, "batch_size": 64}, {**b, "batch_size": 1},
                   "vLLM LLaMA-3-70B FP8 weights on ONE GPU, in/out 128", "batch 64", "batch 1")]
    parts = [untested("H100 7.8x A100 at batch 64", f"a ratio of two GPUs needs records of both; the own records "
                      f"are of {own.hardware()} (the data: {_x(s[0].value)} at io 1024, {_x(s[1].value)} at io "
                      "2048, where the A100s' 160 GB queue the batch; the published 7.8x is not in the main sweep's "
                      "rows)"),
             magnitude("batch 1 -> 64: 39x on H100 (here one GPU with FP8 weights, there 4 GPUs in fp16 with "
                       "tensor parallelism: not like for like)", o[0].value, s[2].value,
                       _missing(o[0], "needs vLLM LLaMA-3-70B FP8 at batch 1 and 64 (campaign part findings-models); "
                                "bf16 (141 GB of weights) does not fit one H200"), explain(s[2], o[0])),
             untested("batch 1 -> 64: 3x on A100", f"an A100's figure (the data: {_x(s[3].value)}), whose 4x 40 GB "
                      f"queue the batch; the own records are of {own.hardware()}")]
    return Finding("llama-3-70b", "LLaMA-3-70B: H100 vs A100, batch 1 -> 64",
                   "H100 7.8x A100 at batch 64; batch 1 -> 64: 39x on H100, 3x on A100", s, o, parts)


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
    gpus = ("needs 4 GPUs: this machine pool lends one H200 (two at times; 4- and 8-GPU kinds are withheld), so "
            "no 4-way split can run" if not multi else
            f"{len(multi)} own record(s) on 4 or more GPUs, which this finding does not compare yet")
    parts = [untested("TP 1.30x hybrid TP2xPP2 on 4 GPUs", gpus), untested("TP 1.94x PP on 4 GPUs", gpus),
             untested("DeepSpeed-MII 1.04x vLLM at batch 64, in/out 2048",
                      "its release is stale (2023 kernels) and untested on CUDA 13, and it is not one of "
                      "llmbench's engines")]
    return Finding("parallelism-and-mii", "TP vs TP2xPP2 vs PP on 4 GPUs; DeepSpeed-MII vs vLLM",
                   "TP 1.30x hybrid TP2xPP2 and 1.94x PP on 4 A100s; DS-MII 1.04x vLLM at batch 64, "
                   "in/out 2048", s, [], parts,
                   f"The data: TP4 over TP2xPP2 {_x(s[0].value)}, over PP4 {_x(s[1].value)} (LLaMA-3-8B, one row "
                   f"each); DS-MII over vLLM {_x(mii_r)}.")


def f_models(st: Study, own: Own) -> Finding:
    o = []
    for m in ("qwen2-7b", "mixtral-8x7b"):
        for b in (1, 64):
            r = own.newest(backend="vllm", model=m, batch_size=b, input_len=128, output_len=128,
                           weights="16-bit", kv="16-bit", block=PLAIN_BLOCK)
            if r:
                o.append(Side(r[THR], own.hardware(), f"vLLM {m} bf16, batch {b}, in/out 128",
                              [_part(r, f"{m} b{b}")], unit="tok/s",
                              pairing=f"one record: run {r.get('run_id')} ({pairing.day(r)})"))
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
    parts = [untested("no claim: the study publishes no figure for these models",
                      "nothing to test; " + ("own throughput and efficiency listed beside the study's rows" if o else
                                             "own records (campaign part findings-models; Mixtral ~94 GB bf16) "
                                             "would be listed beside the study's rows"))]
    return Finding("more-models", "The study's other single-GPU models: Qwen2-7B, Mixtral-8x7B",
                   "(no single headline figure; listed beside the study's own rows)", s, o, parts)


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
                          "import llm-inference-bench DIR` into it, or give the published data directory as "
                          "--reference DIR (llmbench findings, report and dashboard take it)")])
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


def _part_text(p: Part) -> str:
    return f"{p.claim}: {p.outcome.upper()}: {p.why}"


def text(fs: list[Finding]) -> str:
    lines = []
    for f in fs:
        lines.append(f"== {f.title}  [{f.verdict.upper()}]")
        lines.append(f"   published: {f.published}")
        for s in f.study:
            lines.append(f"   study data: {_side_text(s)}")
        for s in f.own:
            lines.append(f"   own:        {_side_text(s)}")
            lines.append(f"      pairing: {s.pairing or '-'}")
        for p in f.parts:
            lines.append(f"   part: {_part_text(p)}")
        lines.append(f"   verdict: {f.verdict} ({verdict_rule(f)})" + (f". {f.note}" if f.note else ""))
        for c in f.counters:
            lines.append(f"   counters: {c}")
        lines.append("")
    return "\n".join(lines)


def verdict_rule(f: Finding) -> str:
    """The verdict's rule applied, in words: how many parts hold, are contradicted, untested."""
    n = {o: sum(p.outcome == o for p in f.parts) for o in (HOLDS, CONTRADICTED, UNTESTED)}
    return ", ".join(f"{k} {o}" for o, k in n.items() if k) + f" of {len(f.parts)} part(s)"


def pairing_text(f: Finding) -> str:
    """Where each own figure's records come from (one run, one machine and day, or why none)."""
    return "; ".join(f"{s.what}: {s.pairing}" for s in f.own if s.pairing) or "-"


def markdown(fs: list[Finding]) -> str:
    out = ["| finding | published | study data | own | verdict | parts | own records from |",
           "|---|---|---|---|---|---|---|"]
    for f in fs:
        sd = "<br>".join(_side_text(s) for s in f.study) or "-"
        od = "<br>".join(_side_text(s) for s in f.own) or "-"
        parts = "<br>".join(_part_text(p) for p in f.parts) + (f"<br>{f.note}" if f.note else "")
        pr = "<br>".join(f"{s.what}: {s.pairing}" for s in f.own if s.pairing) or "-"
        out.append(f"| {f.title} | {f.published} | {sd} | {od} | **{f.verdict}** ({verdict_rule(f)}) | {parts} "
                   f"| {pr} |")
    return "\n".join(out) + "\n"


def summary_rows(fs: list[Finding]) -> list[dict[str, str]]:
    """One row per finding for the report and dashboard tables: every number the verdict reads
    is in the row (all sides, every part's outcome), and where the own records come from."""
    return [{"finding": f.title, "published": f.published,
             "study data": "; ".join(_side_text(s) for s in f.study) or "-",
             "own": "; ".join(_side_text(s) for s in f.own) or "-",
             "verdict": f.verdict,
             "why": f"{verdict_rule(f)}: " + " | ".join(_part_text(p) for p in f.parts)
                    + (f". {f.note}" if f.note else ""),
             "own records from": pairing_text(f),
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
