"""Every tool importer fed truncated and mutated copies of its real fixtures: it reports what
it could not read (Unreadable, or `problems`), never crashes, never invents a value."""

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llmbench.importers.common import Unreadable
from llmbench.importers.registry import TOOLS, module

FIX = Path(__file__).parents[1] / "fixtures" / "tools"
FIXTURES = {"vllm-bench": ["vllm-bench-serve.json", "vllm-bench-latency.json",
                           "vllm-bench-throughput.json"], "guidellm": ["guidellm-benchmarks.json"],
            "aiperf": ["aiperf/profile_export_aiperf.json", "aiperf/profile_export.jsonl"],
            "inference-perf": ["inference-perf/per_request_lifecycle_metrics.json",
                               "inference-perf/summary_lifecycle_metrics.json"],
            "optimum-benchmark": ["optimum-benchmark/benchmark.json"],
            "llama-bench": ["llama-bench/llama-bench.json", "llama-bench/llama-bench.jsonl"]}
CASES = [(tool, name) for tool, names in FIXTURES.items() for name in names]
SETTINGS = settings(max_examples=15, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])

JUNK = st.one_of(st.none(), st.text(max_size=5), st.booleans(), st.just(float("nan")),
                 st.just("inf"), st.integers(-10**12, 10**12), st.floats(allow_nan=False),
                 st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.none(), max_size=2))


def test_every_tool_has_a_fuzzed_fixture():
    # the study's CSV directory is fuzzed by tests/test_properties.py; llmbench's own Parquet
    # export (binary) by tests/exporters/test_parquet.py (cut files, foreign Parquet)
    assert set(FIXTURES) == set(TOOLS) - {"llm-inference-bench", "parquet"}


def _parse(tool, path):
    try:
        return module(tool).parse(path)
    except Unreadable:
        return None


def _check(res):
    if res is None:
        return
    for r in res.records:
        for name, m in (*r.metrics.items(), *r.tool_figures.items()):
            for s in ("mean", "median", "p50", "p90", "p95", "p99", "min", "max", "std"):
                v = getattr(m, s)
                assert v is None or math.isfinite(v), (name, s, v)
            assert m.n >= 1


def _leaves(doc, path=()):
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _leaves(v, path + (k,))
    elif isinstance(doc, list) and doc:
        for i, v in enumerate(doc[:50]):
            yield from _leaves(v, path + (i,))
    else:
        yield path


def _load(name):
    text = (FIX / name).read_text()
    if name.endswith(".jsonl"):
        return [json.loads(x) for x in text.splitlines() if x.strip()]
    return json.loads(text)


def _write(tmp_path, name, doc):
    p = tmp_path / Path(name).name
    if name.endswith(".jsonl"):
        p.write_text("".join(json.dumps(r) + "\n" for r in doc))
    else:
        p.write_text(json.dumps(doc))
    return p


def _set(doc, path, value):
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


@pytest.mark.parametrize("tool,name", CASES)
@SETTINGS
@given(cut=st.floats(0, 1, exclude_max=True))
def test_truncated_file_never_crashes(tmp_path, tool, name, cut):
    text = (FIX / name).read_text()
    p = tmp_path / Path(name).name
    p.write_text(text[:int(len(text) * cut)])
    _check(_parse(tool, p))


def _mutable(name):
    doc = _load(name)
    return doc, [lp for lp in _leaves(doc) if lp]


@pytest.mark.parametrize("tool,name", CASES)
@SETTINGS
@given(data=st.data())
def test_mutated_values_never_crash_or_turn_into_non_numbers(tmp_path, tool, name, data):
    doc, leaves = _mutable(name)
    for _ in range(data.draw(st.integers(1, 6))):
        _set(doc, data.draw(st.sampled_from(leaves)), data.draw(JUNK))
    p = _write(tmp_path, name, doc)
    _check(_parse(tool, p))


@pytest.mark.parametrize("tool,name", CASES)
@SETTINGS
@given(data=st.data())
def test_dropped_keys_are_reported_or_absent(tmp_path, tool, name, data):
    doc = _load(name)
    for d in doc if isinstance(doc, list) else [doc]:
        if isinstance(d, dict) and d:
            for k in data.draw(st.lists(st.sampled_from(sorted(d)), max_size=len(d), unique=True)):
                d.pop(k)
    p = _write(tmp_path, name, doc)
    _check(_parse(tool, p))


@pytest.mark.parametrize("tool,name", CASES)
def test_no_numbers_no_metrics(tmp_path, tool, name):
    """Every number turned into text: nothing to measure, so no metric may appear."""
    doc, leaves = _mutable(name)
    for lp in leaves:
        v = doc
        for k in lp:
            v = v[k]
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            _set(doc, lp, f"n{v}")
    p = _write(tmp_path, name, doc)
    res = _parse(tool, p)
    assert res is None or all(not r.metrics for r in res.records)
    assert res is None or res.records or res.problems
