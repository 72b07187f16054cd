"""Recompute LLM-Inference-Bench's headline claims from imported reference records.

Each claim is one SQL query over the store's flat rows (DuckDB, table `records`), so a reader
can re-run, change or extend it:

    python -m llmbench.analysis.claims [--results DIR] [CLAIM ...] [--sql]

Rows come from one source file per claim (the data set keeps several copies of each file; the
importer merged exact copies into one record) and exclude rows the importer or the roofline
found impossible (context overflow, faster than the bound) unless a claim is about them.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

MAIN = "Plots/All_results.csv"
# Impossible rows (the importer's context-overflow flag; faster than the roofline bound) are
# left out of every claim but the one listing them.
SANE = ("COALESCE(context_overflow, false) = false "
        "AND COALESCE(roofline_efficiency_batch_latency_s, 0) <= 1.0")
# One row per configuration: where a configuration repeats with different numbers, the first
# occurrence in file order (Plots/All_results.csv first, lower line first), which is the row
# the upstream notebooks pick ("first match").
BASE = """WITH base AS (
    SELECT * FROM records WHERE {sane}
    QUALIFY row_number() OVER (
        PARTITION BY hardware, hardware_count, backend, model, batch_size, n_batch, input_len,
                     output_len, tensor_parallel, pipeline_parallel, expert_parallel,
                     weight_dtype, kv_cache_dtype, kv_block_size, kv_cache, speculative_model,
                     ttft_definition
        ORDER BY source, source_row) = 1)
""".replace("{sane}", SANE)


@dataclass(frozen=True)
class Claim:
    name: str
    title: str
    sql: str


def _ratio(col: str, num: str, den: str) -> str:
    return (f"round(max(CASE WHEN {col}={num} THEN total_throughput_tok_s_mean END) / "
            f"max(CASE WHEN {col}={den} THEN total_throughput_tok_s_mean END), 2)")


CLAIMS = [
    Claim("batch-scaling-a100", "Batch scaling on one A100 (main sweep): total throughput at "
          "batch B over batch 1, and 64 over 32", BASE + f"""
        SELECT backend, model, input_len AS io,
               {_ratio('batch_size', 16, 1)} AS x16, {_ratio('batch_size', 32, 1)} AS x32,
               {_ratio('batch_size', 64, 1)} AS x64, {_ratio('batch_size', 64, 32)} AS x64_over_x32
        FROM base
        WHERE in_files LIKE '%{MAIN}%' AND hardware='A100-SXM4-40GB' AND hardware_count=1
              AND backend IN ('vllm', 'tensorrt-llm', 'deepspeed-mii')
        GROUP BY ALL ORDER BY backend, model, io"""),
    Claim("io-asymmetry", "Input vs output length (Fig. 1b heatmap: LLaMA-3-8B, TRT-LLM, one "
          "A100, batch 1): latency of (in, out) and of its mirror (out, in)", """
        SELECT a.input_len AS in_len, a.output_len AS out_len,
               round(a.batch_latency_s_mean, 3) AS latency_s,
               round(b.batch_latency_s_mean, 3) AS mirror_latency_s,
               round(b.batch_latency_s_mean / a.batch_latency_s_mean, 2) AS mirror_over_this
        FROM records a JOIN records b
          ON a.source = b.source AND a.input_len = b.output_len AND a.output_len = b.input_len
        WHERE a.source LIKE '%Heatmap_input_vs_output.csv' AND a.input_len > a.output_len
        ORDER BY in_len, out_len"""),
    Claim("kv-block-size", "KV-cache block size (Fig. 2b: vLLM on A100, io 1024): total "
          "throughput per block size, and the spread across block sizes", BASE + """
        SELECT model, hardware_count AS gpus, batch_size AS b,
               round(max(CASE WHEN kv_block_size=8 THEN total_throughput_tok_s_mean END), 1) AS b8,
               round(max(CASE WHEN kv_block_size=16 THEN total_throughput_tok_s_mean END), 1) AS b16,
               round(max(CASE WHEN kv_block_size=32 THEN total_throughput_tok_s_mean END), 1) AS b32,
               round(max(CASE WHEN kv_block_size=64 THEN total_throughput_tok_s_mean END), 1) AS b64,
               round(max(CASE WHEN kv_block_size=128 THEN total_throughput_tok_s_mean END), 1) AS b128,
               round(100 * (max(total_throughput_tok_s_mean) / min(total_throughput_tok_s_mean) - 1), 1)
                   AS spread_pct,
               arg_max(kv_block_size, total_throughput_tok_s_mean) AS best_block
        FROM base WHERE in_files LIKE '%Fig_2_b%'
        GROUP BY ALL ORDER BY model, b"""),
    Claim("tp-pp-hybrid", "Parallelism (Fig. 5: TRT-LLM on A100s): total throughput of each "
          "scheme relative to TP on as many GPUs, same model, batch and length", BASE + """,
        p AS (SELECT model, hardware_count AS gpus, batch_size, input_len AS io,
                     total_throughput_tok_s_mean AS thr,
                     CASE WHEN tensor_parallel=hardware_count THEN 'TP'
                          WHEN pipeline_parallel=hardware_count THEN 'PP'
                          WHEN expert_parallel=hardware_count THEN 'EP'
                          WHEN pipeline_parallel > 1 THEN 'TPxPP' ELSE 'TPxEP' END AS scheme
              FROM base WHERE in_files LIKE '%Fig_5_a%' AND hardware_count > 1)
        SELECT t.model, t.gpus, o.scheme, count(*) AS points,
               round(median(o.thr / t.thr), 2) AS median_vs_tp,
               round(min(o.thr / t.thr), 2) AS min_vs_tp, round(max(o.thr / t.thr), 2) AS max_vs_tp
        FROM p t JOIN p o USING (model, gpus, batch_size, io)
        WHERE t.scheme='TP' AND o.scheme <> 'TP'
        GROUP BY ALL ORDER BY t.model, t.gpus, o.scheme"""),
    Claim("gqa-vs-mha", "GQA (LLaMA-3-8B and Mistral-7B: 8 KV heads; Qwen2-7B: 4) vs MHA "
          "(LLaMA-2-7B: 32): total throughput over LLaMA-2-7B's, 1 device, main sweep, "
          "same engine, batch and length", BASE + f""",
        r AS (SELECT hardware, backend, batch_size, input_len AS io, model,
                     total_throughput_tok_s_mean AS thr, roofline_bound_total_throughput_tok_s AS rb
              FROM base WHERE in_files LIKE '%{MAIN}%' AND hardware_count=1 AND backend <> 'llamacpp')
        SELECT g.model AS gqa_model, m.batch_size AS b, count(*) AS points,
               round(median(g.thr / m.thr), 2) AS median_ratio,
               round(min(g.thr / m.thr), 2) AS min_ratio, round(max(g.thr / m.thr), 2) AS max_ratio,
               round(median(CASE WHEN m.io >= 1024 THEN g.thr / m.thr END), 2) AS median_io_ge_1024,
               round(median(CASE WHEN m.io >= 1024 THEN g.rb / m.rb END), 2) AS roofline_io_ge_1024
        FROM r m JOIN r g USING (hardware, backend, batch_size, io)
        WHERE m.model='llama-2-7b' AND g.model IN ('llama-3-8b', 'mistral-7b', 'qwen2-7b')
        GROUP BY ALL ORDER BY gqa_model, b"""),
    Claim("h100-vs-a100", "H100 vs A100 (1 device, main sweep, same engine, model, batch and "
          "length): total throughput ratio", BASE + f""",
        r AS (SELECT hardware, backend, model, batch_size, COALESCE(n_batch, 0) AS nb,
                     input_len AS io, total_throughput_tok_s_mean AS thr,
                     roofline_bound_total_throughput_tok_s AS rb
              FROM base WHERE in_files LIKE '%{MAIN}%' AND hardware_count=1)
        SELECT h.backend, count(*) AS points, round(median(h.thr / a.thr), 2) AS median_ratio,
               round(median(h.rb / a.rb), 2) AS roofline_ratio,
               round(min(h.thr / a.thr), 2) AS min_ratio, round(max(h.thr / a.thr), 2) AS max_ratio,
               round(median(CASE WHEN h.batch_size=1 THEN h.thr / a.thr END), 2) AS median_b1,
               round(median(CASE WHEN h.batch_size=64 THEN h.thr / a.thr END), 2) AS median_b64
        FROM r h JOIN r a USING (backend, model, batch_size, nb, io)
        WHERE h.hardware='H100-SXM' AND a.hardware='A100-SXM4-40GB'
        GROUP BY ALL ORDER BY h.backend"""),
    Claim("quantization", "FP8 / INT8 vs FP16 (KV_Cache_Dtype and Fig. 3 data, 1 device): total "
          "throughput over the fp16-weights, fp16-KV row of the same engine, model, batch and "
          "length (that row may come from the main sweep)", BASE + """,
        r AS (SELECT hardware, backend, model, batch_size, input_len AS io,
                     weight_dtype || ' + KV ' || kv_cache_dtype AS dtypes,
                     total_throughput_tok_s_mean AS thr
              FROM base WHERE hardware_count=1 AND (in_files LIKE '%KV_Cache_Dtype%'
                    OR in_files LIKE '%Fig_3%' OR (weight_dtype='fp16' AND kv_cache_dtype='fp16')))
        SELECT q.hardware, q.backend, q.dtypes, count(*) AS points,
               round(median(q.thr / f.thr), 2) AS median_vs_fp16,
               round(median(CASE WHEN q.batch_size=1 THEN q.thr / f.thr END), 2) AS median_b1,
               round(median(CASE WHEN q.batch_size=64 THEN q.thr / f.thr END), 2) AS median_b64
        FROM r q JOIN r f USING (hardware, backend, model, batch_size, io)
        WHERE f.dtypes='fp16 + KV fp16' AND q.dtypes <> 'fp16 + KV fp16'
        GROUP BY ALL ORDER BY q.hardware, q.backend, q.dtypes"""),
    Claim("efficiency-batch1", "Roofline efficiency at batch 1 (main sweep, 1 device; "
          "llama.cpp per n_batch): total throughput over its bound, percent", BASE + f"""
        SELECT hardware, backend,
               CASE WHEN backend='llamacpp' THEN 'n_batch=' || CAST(n_batch AS VARCHAR) ELSE '' END AS note,
               count(*) AS points,
               round(100 * median(roofline_efficiency_total_throughput_tok_s), 1) AS median_pct,
               round(100 * min(roofline_efficiency_total_throughput_tok_s), 1) AS min_pct,
               round(100 * max(roofline_efficiency_total_throughput_tok_s), 1) AS max_pct
        FROM base
        WHERE in_files LIKE '%{MAIN}%' AND batch_size=1 AND hardware_count=1
          AND roofline_efficiency_total_throughput_tok_s IS NOT NULL
        GROUP BY ALL ORDER BY hardware, backend, note"""),
    Claim("efficiency-all", "Roofline efficiency over the main sweep, per device, engine and "
          "device count: median and best, percent", BASE + f"""
        SELECT hardware, hardware_count AS n, backend, count(*) AS points,
               round(100 * median(roofline_efficiency_total_throughput_tok_s), 1) AS median_pct,
               round(100 * max(roofline_efficiency_total_throughput_tok_s), 1) AS max_pct,
               arg_max(model || ' b' || batch_size || ' io' || input_len,
                       roofline_efficiency_total_throughput_tok_s) AS best_point,
               mode(roofline_binding_resource) AS usually_bound_by
        FROM base
        WHERE in_files LIKE '%{MAIN}%' AND roofline_efficiency_total_throughput_tok_s IS NOT NULL
        GROUP BY ALL ORDER BY hardware, n, backend"""),
    Claim("above-roofline", "Every imported record faster than its roofline bound", """
        SELECT hardware, hardware_count AS n, backend, model, batch_size AS b, input_len AS io,
               weight_dtype AS w, round(roofline_efficiency_batch_latency_s, 2) AS efficiency,
               COALESCE(context_overflow, false) AS context_overflow,
               source || ':' || CAST(source_row AS VARCHAR) AS first_row
        FROM records WHERE roofline_efficiency_batch_latency_s > 1.0
        ORDER BY context_overflow, hardware, backend, model, io, b"""),
]


def run(results: Path, names: list[str] | None = None, show_sql: bool = False) -> str:
    import duckdb

    from llmbench.store.store import Store

    rows = Store(results).query("kind = 'reference'").to_arrow_table()
    con = duckdb.connect()
    con.register("records", rows)
    out = []
    known = {c.name: c for c in CLAIMS}
    for name in names or list(known):
        if name not in known:
            raise SystemExit(f"unknown claim {name!r}; known: {', '.join(known)}")
        c = known[name]
        rel = con.sql(c.sql)
        cols, data = rel.columns, rel.fetchall()
        out.append(f"### {c.name}: {c.title}\n")
        if show_sql:
            out.append("```sql\n" + "\n".join(x.strip() for x in c.sql.strip().splitlines()) + "\n```\n")
        out.append("| " + " | ".join(cols) + " |")
        out.append("|" + "---|" * len(cols))
        for r in data:
            out.append("| " + " | ".join("" if v is None else str(v) for v in r) + " |")
        out.append(f"\n({len(data)} rows)\n")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m llmbench.analysis.claims", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("claims", nargs="*", help=f"claims to compute (default all): "
                    f"{', '.join(c.name for c in CLAIMS)}")
    ap.add_argument("--results", type=Path, default=Path("llmbench-results"))
    ap.add_argument("--sql", action="store_true", help="print each claim's SQL too")
    a = ap.parse_args(argv)
    sys.stdout.write(run(a.results, a.claims, a.sql) + "\n")


if __name__ == "__main__":
    main()
