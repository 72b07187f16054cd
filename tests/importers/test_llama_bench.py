"""llama-bench's real JSON and JSONL output (tests/fixtures/tools/README.md) as records."""

import json
from pathlib import Path

import pytest

from llmbench.analysis.compare import compare
from llmbench.importers import llama_bench
from llmbench.importers.registry import detect

DIR = Path(__file__).parents[1] / "fixtures" / "tools" / "llama-bench"


def test_json_tests_become_engine_metrics():
    doc = json.loads((DIR / "llama-bench.json").read_text())
    res = llama_bench.parse(DIR / "llama-bench.json")
    assert res.problems == [] and detect(DIR / "llama-bench.json") == "llama-bench"
    assert len(res.records) == len(doc) == 4
    for rec, t in zip(res.records, doc):
        assert rec.backend.name == "llamacpp" and rec.backend.options["n_threads"] == t["n_threads"]
        # llama.cpp's n_batch is the prompt chunk, not concurrent sequences
        assert rec.workload["batch_size"] == 1 and rec.workload["n_batch"] == t["n_batch"]
        part = "prefill" if t["n_gen"] == 0 else "decode"
        assert rec.workload["test"] == ("pp" if part == "prefill" else "tg")
        st = rec.metrics[f"engine_{part}_s"]
        assert st.samples == pytest.approx([x / 1e9 for x in t["samples_ns"]])
        assert st.mean == pytest.approx(t["avg_ns"] / 1e9, rel=1e-6)
        assert rec.metric(f"engine_{part}_tok_s") == pytest.approx(t["avg_ts"], rel=1e-4)
        assert not {"ttft_s", "tpot_s", "e2e_s"} & set(rec.metrics)   # llama-bench has none
        assert rec.source["line"] > 1 and json.loads((DIR / "llama-bench.json").read_text())


def test_jsonl_and_thread_comparison():
    """llama-bench itself, like llmbench (tests/analysis), found 2 threads slower than 1 on
    the oversubscribed 2-core machine: compare pairs pp with pp and tg with tg."""
    rows = llama_bench.parse(DIR / "llama-bench.jsonl")
    assert detect(DIR / "llama-bench.jsonl") == "llama-bench" and len(rows.records) == 2
    one = [r for r in llama_bench.parse(DIR / "llama-bench.json").records
           if r.backend.options["n_threads"] == 1]
    cmp = compare(one, rows.records)
    assert sorted(p.base.workload["test"] for p in cmp.points) == ["pp", "tg"]
    by = {p.base.workload["test"]: p for p in cmp.points}
    assert by["tg"].option_diffs == ["n_threads: 1 -> 2"]
    assert by["pp"].change("engine_prefill_s").verdict == "worse"
    # every 2-thread decode repeat was > 4x every 1-thread one, but with stalls of 1.2-7.2 s
    # five repeats leave the Welch interval just wide enough to include 0: direction only
    assert by["tg"].change("engine_decode_s").diff > 0


def test_broken_lines_are_reported(tmp_path):
    lines = (DIR / "llama-bench.jsonl").read_text().splitlines()
    p = tmp_path / "x.jsonl"
    p.write_text(lines[0] + "\n{broken\n")
    res = llama_bench.parse(p)
    assert len(res.records) == 1 and res.problems == [f"{p}:2: not a llama-bench test object"]
