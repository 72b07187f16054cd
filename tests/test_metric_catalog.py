"""The one metric catalog (metrics.py): every metric a record can carry has an entry whose
unit is the unit its producer writes, and every reader (the report's labels and tables, the
dashboard, `llmbench results`, `llmbench compare`, the store's columns) takes its facts from
it."""

import re
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from llmbench import metrics as catalog
from llmbench.analysis.compare import metric_change
from llmbench.cli import results as results_cli
from llmbench.dashboard import app as dash_app
from llmbench.importers.registry import parse
from llmbench.measure.stats import summarize
from llmbench.measure.timeline import BatchTiming, RequestTimeline
from llmbench.metrics import (CATALOG, column_header, energy_metrics, metric, offline_metrics,
                              serving_metrics)
from llmbench.report import figures, tables
from llmbench.columns import is_metric
from llmbench.store.record import Record

SRC = Path(catalog.__file__).parent
TOOLS = Path(__file__).parent / "fixtures" / "tools"
LIB = Path(__file__).parent / "importers" / "fixtures" / "lib"


# -- the records' metrics ------------------------------------------------------------------------
def _tl(ref, times, prompt=4):
    r = RequestTimeline(t_ref=ref, prompt_tokens=prompt)
    for t in times:
        r.add(t, 1)
    r.t_send = ref + 0.01
    return r


def _assert_catalogued(found: dict[str, str], where: str) -> None:
    """Every name has an entry and the producer's unit is the catalog's."""
    missing = sorted(n for n in found if metric(n) is None)
    assert not missing, f"{where}: no catalog entry for {missing}"
    wrong = {n: (u, metric(n).unit) for n, u in found.items() if u is not None and u != metric(n).unit}
    assert not wrong, f"{where}: unit written != catalog's (written, catalog): {wrong}"


def test_offline_and_serving_metrics_are_catalogued():
    reqs = [_tl(0.0, [0.5, 0.6, 0.8]), _tl(0.0, [0.4, 0.7, 0.9])]
    b = BatchTiming(0.0, 0.9, reqs, energy_j=9.0, avg_power_w=10.0, t_return=1.0,
                    energy_window_s=0.9)
    off = offline_metrics([b, b], input_len=4) | energy_metrics([b, b])
    assert len(off) == 14  # every metric the two compute
    _assert_catalogued({k: v.unit for k, v in off.items()}, "offline_metrics")
    srv = serving_metrics(reqs, (0.0, 1.0), slo={"ttft_s": 1.0}, energy_j=5.0)
    assert {"goodput_req_s", "energy_j", "tokens_per_joule", "inflight_mean", "send_lag_s"} <= set(srv)
    _assert_catalogued({k: v.unit for k, v in srv.items()}, "serving_metrics")


def test_a_real_serve_record_is_catalogued():
    rec = Record.model_validate_json((TOOLS / "llmbench-serve.json").read_text())
    assert "all_ttft_s" in rec.metrics and "client_cpu_s_per_token" in rec.metrics
    _assert_catalogued({k: v.unit for k, v in rec.metrics.items()}, "llmbench serve")


@pytest.mark.parametrize("tool,path", [
    ("vllm-bench", "vllm-bench-serve.json"), ("vllm-bench", "vllm-bench-latency.json"),
    ("vllm-bench", "vllm-bench-throughput.json"), ("guidellm", "guidellm-benchmarks.json"),
    ("aiperf", "aiperf/profile_export.jsonl"), ("aiperf", "aiperf/profile_export_aiperf.json"),
    ("inference-perf", "inference-perf/per_request_lifecycle_metrics.json"),
    ("optimum-benchmark", "optimum-benchmark/benchmark.json"),
    ("llama-bench", "llama-bench/llama-bench.json")])
def test_imported_records_are_catalogued(tool, path):
    recs = parse(tool, TOOLS / path).records
    found = {k: v.unit for r in recs for k, v in r.metrics.items()}
    assert found
    _assert_catalogued(found, f"{tool} {path}")


def test_published_study_records_are_catalogued():
    from llmbench.importers.llm_inference_bench import parse as parse_study

    recs = parse_study(LIB).records
    found = {k: v.unit for r in recs for k, v in r.metrics.items()}
    assert {"perplexity", "avg_power_w", "total_tokens_per_joule"} <= set(found)
    _assert_catalogued(found, "llm-inference-bench")


def test_engine_timings_of_each_backend_are_catalogued():
    from llmbench.backends import vllm as vllm_backend

    s = SimpleNamespace(first_token_ts=2.0, last_token_ts=3.0, num_preemptions=0, is_corrupted=False)
    vkeys = vllm_backend.engine_view([s], t_ref=1.0, offset=0.0)
    assert len(vkeys) == 5
    # llama.cpp's perf read-out needs llama.cpp to run; its keys are the dict it builds
    src = (SRC / "backends" / "llamacpp.py").read_text()
    block = src[src.index("self._last_perf = {\"prefill_s\""):]
    lkeys = re.findall(r'"(\w+)": ', block[:block.index("}")])
    assert lkeys == ["prefill_s", "decode_s", "prefill_tokens", "decode_steps"]
    _assert_catalogued({f"engine_{k}": None for k in [*vkeys, *lkeys]}, "engine_timings")


def test_family_names_resolve_to_their_base_metric():
    from llmbench.loadgen.server_metrics import HISTOGRAMS

    for k in HISTOGRAMS:  # serving_summary.server_view writes server_<histogram>
        m = metric(f"server_{k}")
        assert m is not None and m.unit == "s" and m.direction == "lower"
    t = metric("ttft_s_turn3")  # serving_summary.by_turn
    assert (t.unit, t.direction, t.label) == ("s", "lower", "Time to first token, turn 3 (s)")
    a = metric("all_output_throughput_tok_s")
    assert (a.unit, a.direction, a.short) == ("tok/s", "higher", "all out tok/s")
    assert metric("all_nonsense_s") is None and metric("server_nonsense") is None


# Where a producer names a metric in the source: `metrics["x"] =`, `m["x"] =`, `"x": summarize(`,
# `_put(rec, "x"`, `add_ratio(rec, "x"` (with the unit when the call says it on the line).
_LITERAL = re.compile(
    r'(?:\b(?:metrics|m)\["(?P<a>[a-z0-9_]+)"\]\s*=\s*'
    r'|"(?P<b>[a-z0-9_]+)":\s*|_put\(rec,\s*"(?P<c>[a-z0-9_]+)",\s*|add_ratio\(rec,\s*"(?P<d>[a-z0-9_]+)")'
    r'(?P<call>(?:summarize|one|_one|from_samples|from_summary)\(.*)?')
_UNIT = re.compile(r'(?:summarize|one|_one|from_samples)\(.*, "(?P<u>[^"]*)"(?:, keep_samples=\w+)?\)+\s*,?$')
# f-string names, each a family that metric() resolves (tested above); a new one must be added
# here, after its names got catalog entries.
FAMILIES = {'all_{k}', 'engine_{k}', 'engine_{part}_s', 'engine_{part}_tok_s', 'server_{name}',
            'ttft_s_turn{k + 1}'}
PRODUCERS = ("metrics.py", "runner.py", "workloads", "train", "importers", "loadgen", "kinds")


def _producer_files():
    for name in PRODUCERS:
        p = SRC / name
        yield from sorted(p.rglob("*.py")) if p.is_dir() else ([p] if p.exists() else [])


def test_every_metric_named_in_the_source_is_catalogued():
    found: dict[str, str | None] = {}
    fstrings = set()
    for f in _producer_files():
        for line in f.read_text().splitlines():
            fstrings.update(re.findall(r'(?:metrics|m)\[f"([^"]+)"\]\s*=', line))
            for hit in _LITERAL.finditer(line):
                name = hit["a"] or hit["b"] or hit["c"] or hit["d"]
                if hit["b"] and not hit["call"]:
                    continue  # a plain dict entry, not a metric
                u = _UNIT.search(hit["call"] or "")
                found[f"{f.relative_to(SRC)}: {name}"] = u["u"] if u else None
    assert fstrings == FAMILIES
    names = {k.split(": ")[1]: u for k, u in found.items()}
    assert {"mem_peak_gib", "load_time_s", "perplexity", "mfu", "scaling_efficiency",
            "speedup_vs_dense", "energy_per_token_j", "prefix_cache_hit_rate"} <= set(names)
    for where, u in found.items():
        _assert_catalogued({where.split(": ")[1]: u}, where.split(": ")[0])


# -- the catalog itself -------------------------------------------------------------------------
def test_directions_are_right():
    lower = ("perplexity", "mem_peak_gib", "ttft_s", "tpot_s", "itl_s", "e2e_s", "batch_latency_s",
             "step_time_s", "energy_j", "avg_power_w", "energy_per_token_j", "error_rate",
             "nll_per_token")
    higher = ("output_throughput_tok_s", "total_throughput_tok_s", "request_throughput_req_s",
              "goodput_req_s", "tokens_per_joule", "tokens_per_s", "tokens_per_s_per_device",
              "samples_per_s", "tflops", "tflops_per_device", "mfu", "scaling_efficiency")
    none = ("scored_tokens", "duration_s", "requests_completed", "inflight_mean")
    for names, way in ((lower, "lower"), (higher, "higher"), (none, "none")):
        assert {n: CATALOG[n].direction for n in names} == {n: way for n in names}


# The project's rule: a name carries its unit.
SUFFIX_UNIT = (("_tok_s", "tok/s"), ("_req_s", "req/s"), ("_gib", "GiB"), ("_w", "W"),
               ("_j", "J"), ("_s", "s"))


def test_every_entry_is_whole_and_its_name_says_its_unit():
    for name, m in CATALOG.items():
        assert m.name == name and m.label and m.short and m.description, name
        assert m.direction in ("higher", "lower", "none"), name
        suffix = next((u for s, u in SUFFIX_UNIT if name.endswith(s)), None)
        if suffix is not None and not name.endswith("_per_s"):
            assert m.unit.startswith(suffix), (name, m.unit)
    shorts = [m.short for m in CATALOG.values()]
    assert len(shorts) == len(set(shorts))  # a header names one metric
    assert len({m.label for m in CATALOG.values()}) == len(CATALOG)


def test_column_headers():
    assert column_header("ttft_s_p50") == "TTFT p50 s"
    assert column_header("output_throughput_tok_s_mean") == "out tok/s"
    assert column_header("request_throughput_req_s_p99") == "req/s p99"
    assert column_header("mfu_mean") == "MFU"
    assert column_header("roofline_efficiency_tokens_per_s") == "efficiency (train)"
    assert column_header("all_ttft_s_ci95_low") == "all TTFT ci95_low s"
    assert column_header("batch_size") is None and column_header("engine_x_mean") is None


def test_the_definitions_page_agrees_with_the_catalog():
    rows = [line.split(" | ") for line in (SRC.parents[1] / "docs" / "metrics.md").read_text().splitlines()
            if line.startswith("| `")]
    assert len(rows) >= 20
    for row in rows:
        names = re.findall(r"`([a-z0-9_*]+)`", row[0])
        units = [u.strip() for u in row[1].split(",")]
        for i, n in enumerate(names):
            if n == "engine_*":
                continue
            assert n in CATALOG, n
            u = units[i] if len(units) == len(names) else units[0]
            assert CATALOG[n].unit == u or u == "—" and CATALOG[n].unit in ("", "ratio"), (n, u)


# -- the readers read it ------------------------------------------------------------------------
def test_compare_verdicts_follow_the_catalog_direction():
    def change(name, a, b):
        return metric_change(name, summarize(a, ""), summarize(b, ""))

    up, down = ([1.0, 1.1, 0.9], [2.0, 2.1, 1.9]), ([2.0, 2.1, 1.9], [1.0, 1.1, 0.9])
    assert change("perplexity", *down).verdict == "better"       # lower is better
    assert change("mem_peak_gib", *up).verdict == "worse"        # lower is better
    assert change("tokens_per_s_per_device", *up).verdict == "better"
    assert change("ttft_s", *up).verdict == "worse"
    assert change("scored_tokens", *up).verdict == "changed"     # no direction
    assert change("scored_tokens", *up).worse_pct == 0.0
    assert change("some_tool_metric", *up).verdict == "changed"  # not in the catalog


def test_every_reader_takes_its_facts_from_the_catalog(monkeypatch):
    name = "output_throughput_tok_s"
    # the readers' view of the real entry
    assert figures.label(name) == CATALOG[name].label == "Output throughput (generated tok/s)"
    assert results_cli._header(f"{name}_mean") == CATALOG[name].short == "out tok/s"
    for m in CATALOG:
        assert figures.label(m) == CATALOG[m].label
        assert results_cli._header(f"{m}_mean") == CATALOG[m].short
    for cols in catalog.SHOWN_FIRST.values():  # what every table shows first: the catalog's
        for col in cols:
            assert column_header(col) is not None, col
    # a changed entry changes every reader: none keeps a copy
    fake = catalog.Metric(name, "tok/s", "Fake label (tok/s)", "fake tok/s", "lower", "test")
    monkeypatch.setitem(CATALOG, name, fake)
    assert figures.label(name) == "Fake label (tok/s)"
    assert figures.label(f"all_{name}") == "Fake label, whole run (tok/s)"
    assert dash_app._field_options([name]) == [{"label": "Fake label (tok/s)", "value": name}]
    assert results_cli._header(f"{name}_mean") == "fake tok/s"
    assert results_cli._header(f"{name}_p50") == "fake p50 tok/s"
    assert results_cli._header(f"roofline_efficiency_{name}") == "efficiency (fake)"
    faster = metric_change(name, summarize([1.0, 1.1, 0.9], "tok/s"), summarize([2.0, 2.1, 1.9], "tok/s"))
    assert faster.verdict == "worse"  # the fake says lower is better
    df = pd.DataFrame({"kind": ["serving"] * 2, "status": ["ok"] * 2, "model": ["a", "b"],
                       "system": ["cpu · llamacpp"] * 2,
                       f"{name}_mean": [1.0, 2.0]})
    rows, _ = tables.kind_table(df, "serving")
    assert "fake tok/s" in rows[0] and "out tok/s" not in rows[0]
    # the store's columns: a catalogued metric's column is an outcome even without its _mean
    assert is_metric("tpot_s_p99", ["tpot_s_p99"]) and not is_metric("batch_size", ["batch_size"])
