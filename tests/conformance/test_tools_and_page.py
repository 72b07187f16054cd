"""The translation tables, the page's status words, the warm-prefix-cache rule, and each peer
on one scenario where it is installed (`make conformance-peers`; CI has none: skipped)."""

import shlex
from pathlib import Path

import pytest

from llmbench.conformance.page import render
from llmbench.conformance.scenarios import SCENARIOS
from llmbench.conformance.tools import SHOWN_FLAGS, TOOLS
from llmbench.kinds.serving.summary import warm_prefix_cache


def test_every_tool_says_every_workload_field():
    sc = SCENARIOS["capacity"]   # 4 clients, 8 requests: numbers that differ from each other
    for name, tool in TOOLS.items():
        flags = SHOWN_FLAGS.get(name, tool.flags)(sc, "http://h:1", "/tok", Path("/tmp/x"))
        shown = " ".join(f.theirs for f in flags)
        for want in ("32", "16", "4", "8", "/tok"):
            assert want in shown, (name, want, shown)


def test_argv_words_are_whole():
    argv = TOOLS["vllm-bench"].flags(SCENARIOS["reasoning"], "http://h:1", "/tok dir", Path("/o"))
    words = [w for f in argv for w in shlex.split(f.theirs)]
    assert "openai-chat" in words and "/v1/chat/completions" in words
    assert words[words.index("--random-range-ratio") + 1] == "0"


def test_flag_meaning_warnings_name_the_differences():
    notes = {n: " ".join(f.meaning for f in TOOLS[n].flags(SCENARIOS["steady"], "u", "t", Path("/o")))
             for n in ("vllm-bench", "guidellm")}
    assert "range" not in notes["guidellm"] and "uniform in [N(1-r), N(1+r)]" in notes["vllm-bench"]
    assert "req/s" in notes["guidellm"]    # guidellm's old --rate meant streams or req/s


def _log(cells):
    return {"date": "2026-12-07", "versions": {c["tool"]: ("1.0" if c["status"] != "absent" else None)
                                               for c in cells},
            "tokenizer": "tok", "host": "h", "cpus": 2, "load_average": 0.5,
            "translation": {}, "scenarios": [{
                "scenario": "steady", "what": "w", "stats": {}, "server_did": {},
                "truth": {"ttft_s": 0.04, "output_tokens": 16.0}, "cells": cells}]}


def test_page_status_words():
    cells = [{"tool": "a", "status": "ok", "values": {"ttft_s": 0.0412}, "labels": {}, "notes": [], "why": ""},
             {"tool": "b", "status": "absent", "values": {}, "labels": {}, "notes": [], "why": "x"},
             {"tool": "c", "status": "cannot", "values": {}, "labels": {}, "notes": [], "why": "no chat"},
             {"tool": "d", "status": "failed", "values": {}, "labels": {}, "notes": [], "why": "exit 1: boom"}]
    text = render(_log(cells), "cmd")
    row = next(ln for ln in text.splitlines() if ln.startswith("| ttft_s"))
    assert row.split("|")[4:8] == [" 41.20 (+1.20) ", " absent ", " cannot express ", " failed "]
    assert "- c cannot: no chat" in text and "- d failed: exit 1: boom" in text
    tokens = next(ln for ln in text.splitlines() if ln.startswith("| output_tokens"))
    assert "not reported" in tokens


@pytest.mark.parametrize("rate, distinct, warned", [(0.9, True, True), (0.5, True, True),
                                                    (0.3, True, False), (0.9, False, False),
                                                    (None, True, False)])
def test_warm_prefix_cache_rule(rate, distinct, warned):
    serving = {"server_metrics": {"available": True, "prefix_cache_hit_rate": rate}}
    notes: list[str] = []
    warm_prefix_cache(serving, notes, prompts_distinct=distinct)
    assert serving["warm_prefix_cache"] is warned
    assert bool(notes) is warned


@pytest.mark.peer
@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in TOOLS if n != "llmbench"])
def test_peer_runs_and_its_output_is_read(name, tmp_path):
    from llmbench.conformance.runner import run

    if TOOLS[name].exe() is None:
        pytest.skip(f"{name} is not installed (make conformance-peers)")
    log = run(["steady"], [name], tmp_path, progress=lambda line: None)
    (c,) = log["scenarios"][0]["cells"]
    assert c["status"] == "ok", c["why"]
    assert c["values"]["output_tokens"] == 16
    assert abs(c["values"]["ttft_s"] - 0.040) < 0.040   # read, in the right unit


def test_summary_judges_against_what_the_server_did():
    # the server was 0.5 ms late: a tool 0.6 ms after the truth is right, 2 ms after is off;
    # a count off by one is off
    cells = [{"tool": "a", "status": "ok", "values": {"ttft_s": 0.0406, "output_tokens": 16.0},
              "labels": {}, "notes": [], "why": ""},
             {"tool": "b", "status": "ok", "values": {"ttft_s": 0.042, "output_tokens": 15.0},
              "labels": {}, "notes": [], "why": ""}]
    log = _log(cells)
    log["scenarios"][0]["server_did"] = {"a": {"ttft_s": 0.0405}, "b": {"ttft_s": 0.0405}}
    text = render(log, "cmd")
    assert "| a | 2 of 2 | — |" in text
    assert "| b | 0 of 2 | steady/ttft_s (+2.00), steady/output_tokens (-1.00) |" in text


def test_verdict_rules():
    from llmbench.conformance.page import verdict

    assert verdict("steady", "ttft_s", 0.040, 0.0405, 0.0414)          # 0.9 ms after the server
    assert not verdict("steady", "ttft_s", 0.040, 0.0405, 0.0416)      # 1.1 ms
    assert verdict("capacity", "request_throughput_req_s", 10.53, 10.49, 10.48)   # a rate: 2%
    assert not verdict("capacity", "request_throughput_req_s", 10.53, 10.49, 10.0)
    assert verdict("capacity", "ttft_s", 0.230, 0.2285, 0.2307)       # queued: the truth, 3 ms
    assert not verdict("prefix-cache", "ttft_s", 0.040, 0.005, 0.0053)  # the warm cache's trap
    assert not verdict("steady", "output_tokens", 16.0, 16.0, 15.0)


def test_an_absent_peer_is_marked_absent_not_failed(tmp_path, monkeypatch):
    from llmbench.conformance.runner import run

    monkeypatch.setenv("LLMBENCH_PEERS", str(tmp_path / "none"))
    log = run(["steady", "reasoning"], ["guidellm", "inference-perf"], tmp_path, tokenizer="unused",
              progress=lambda line: None)
    assert log["versions"] == {"guidellm": None, "inference-perf": None}
    cells = [c for s in log["scenarios"] for c in s["cells"]]
    assert {c["status"] for c in cells} == {"absent"}
    assert "make conformance-peers" in cells[0]["why"]


def test_the_page_names_no_path_of_the_machine_it_was_made_on():
    from llmbench.conformance.page import portable

    cmd = "llmbench conformance run --work conformance-work --log x.json"
    text = ("`--results /work/wt53/conformance-work/_flags/llmbench` and "
            "(`/root/.cache/llmbench/tokenizers/smollm2-135m`) and /home/ann/conformance-work/a.yaml")
    assert portable(text, cmd) == ("`--results conformance-work/_flags/llmbench` and "
                                   "(`~/.cache/llmbench/tokenizers/smollm2-135m`) and conformance-work/a.yaml")
