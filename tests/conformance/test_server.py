"""The known-answer server, read by a bare client written here (http.client and a hand SSE
split: nothing of llmbench's loadgen), so that its script is checked apart from the client
under test."""

import http.client
import json
import time
import urllib.request

import pytest

from llmbench.conformance.scenarios import SCENARIOS, token_times
from llmbench.conformance.server import TOKEN, Running


def ask(url: str, sc, body_extra=None, prompt="one two three four"):
    host, port = url.rsplit("/", 1)[1].split(":")
    c = http.client.HTTPConnection(host, int(port), timeout=10)
    body = {"model": "m", "max_tokens": sc.workload.output_tokens, "stream": True,
            "stream_options": {"include_usage": True}, **(body_extra or {})}
    chat = sc.workload.api == "chat"
    if chat:
        body["messages"] = [{"role": "user", "content": prompt}]
    else:
        body["prompt"] = prompt
    c.request("POST", "/v1/chat/completions" if chat else "/v1/completions", json.dumps(body))
    r = c.getresponse()
    assert r.status == 200
    raw = r.read().decode()
    c.close()
    blocks = [b for b in raw.split("\n\n") if b.strip()]
    comments = [b for b in blocks if b.startswith(":")]
    events = [json.loads(b[len("data: "):]) for b in blocks if b.startswith("data: ") and "[DONE]" not in b]
    assert blocks[-1] == "data: [DONE]"
    return events, comments


def deltas(events, key):
    return [e["choices"][0]["delta"].get(key) for e in events if e["choices"]]


def test_steady_stream_and_its_timing():
    sc = SCENARIOS["steady"]
    with Running(sc) as srv:
        events, comments = ask(srv.url, sc)
        log = srv.log()
    tokens = [e for e in events if e["choices"]]
    assert [e["choices"][0]["text"] for e in tokens] == [TOKEN] * 16
    assert tokens[-1]["choices"][0]["finish_reason"] == "length"
    assert events[-1]["usage"] == {"prompt_tokens": 4, "completion_tokens": 16, "total_tokens": 20}
    assert not comments
    (req,) = log
    due = [req["t_start"] + t for t in token_times(sc)]
    late = sorted(w - d for w, d in zip(req["writes"], due))
    assert all(x >= 0 for x in late)            # never early
    assert late[len(late) // 2] < 0.003         # the median write on time (a busy CI: 3 ms)


def test_usage_modes():
    want = {"usage-every": (16, True), "usage-end": (0, True), "usage-none": (0, False)}
    for name, (per_chunk, final) in want.items():
        sc = SCENARIOS[name]
        with Running(sc) as srv:
            events, _ = ask(srv.url, sc, {"stream_options": {}})   # not asked: forced anyway
        with_usage = [e for e in events if e["choices"] and "usage" in e]
        assert len(with_usage) == per_chunk, name
        if per_chunk:
            assert [e["usage"]["completion_tokens"] for e in with_usage] == list(range(1, 17))
        assert any(not e["choices"] and "usage" in e for e in events) is final, name
    sc = SCENARIOS["steady"]   # "asked": vLLM's rule
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc, {"stream_options": {"include_usage": True,
                                                          "continuous_usage_stats": True}})
    assert sum(1 for e in events if e["choices"] and "usage" in e) == 16


def test_chunks_and_merged_writes():
    sc = SCENARIOS["chunks"]
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc)
        log = srv.log()
    assert [e["choices"][0]["text"] for e in events if e["choices"]] == [TOKEN * 4] * 4
    assert len(log[0]["writes"]) == 4
    sc = SCENARIOS["merged"]
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc)
        log = srv.log()
    assert [e["choices"][0]["text"] for e in events if e["choices"]] == [TOKEN] * 16
    assert len(log[0]["writes"]) == 4     # 16 one-token events in 4 writes


def test_chat_scenarios():
    sc = SCENARIOS["reasoning"]
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc)
    assert deltas(events, "reasoning_content") == [TOKEN] * 8 + [None] * 8
    assert deltas(events, "content") == [None] * 8 + [TOKEN] * 8
    sc = SCENARIOS["tool-call"]
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc)
    calls = deltas(events, "tool_calls")
    assert calls[0][0]["function"]["name"] == "get_weather" and calls[0][0]["id"] == "call-0"
    assert "".join(c[0]["function"]["arguments"] for c in calls) == TOKEN * 16
    assert deltas(events, "content") == [None] * 16
    sc = SCENARIOS["empty-first"]
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc)
        log = srv.log()
    assert events[0]["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert deltas(events, "content")[1:] == [TOKEN] * 16
    assert log[0]["empty_first"] - log[0]["t_start"] < log[0]["writes"][0] - log[0]["t_start"] - 0.02


def test_keepalive_comments_and_split_events():
    sc = SCENARIOS["keepalive"]
    with Running(sc) as srv:
        events, comments = ask(srv.url, sc)
    # one comment every 5 ms over the ~190 ms answer: about 38 (the last token ends them)
    assert 25 <= len(comments) <= 40 and set(comments) == {": keep-alive"}
    assert sum(1 for e in events if e["choices"]) == 16
    sc = SCENARIOS["split"]
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc)    # the pieces join into whole events
    assert [e["choices"][0]["text"] for e in events if e["choices"]] == [TOKEN] * 16


def test_parity_prefix_cache_warm_up_and_metrics():
    sc = SCENARIOS["parity"]
    with Running(sc) as srv:   # no tokenizer: words, plus the scenario's 5
        events, _ = ask(srv.url, sc, prompt="one two three four")
    assert events[-1]["usage"]["prompt_tokens"] == 9
    sc = SCENARIOS["prefix-cache"]
    with Running(sc) as srv:
        ask(srv.url, sc, prompt="same prompt")
        ask(srv.url, sc, prompt="same prompt")
        ask(srv.url, sc, prompt="another prompt")
        log = srv.log()
        metrics = urllib.request.urlopen(srv.url + "/metrics").read().decode()
    assert [r["hit"] for r in log] == [False, True, False]
    first = [r["writes"][0] - r["t_start"] for r in log]
    assert first[1] < 0.02 < first[0] and first[2] > 0.035
    assert 'vllm:prefix_cache_hits_total{model_name="known-answer"} 2.0' in metrics
    assert 'vllm:prefix_cache_queries_total{model_name="known-answer"} 6.0' in metrics
    sc = SCENARIOS["warm-up"]
    with Running(sc) as srv:
        t0 = time.perf_counter()
        ask(srv.url, sc)
        slow = time.perf_counter() - t0
        t0 = time.perf_counter()
        ask(srv.url, sc)
        fast = time.perf_counter() - t0
    assert slow > 1.0 + 0.19 and fast < 0.5


def test_capacity_queues_first_come_first_served():
    import threading

    sc = SCENARIOS["capacity"]
    with Running(sc) as srv:
        threads = [threading.Thread(target=ask, args=(srv.url, sc)) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        log = srv.log()
    waits = sorted(r["t_start"] - r["t_recv"] for r in log)
    assert waits[1] < 0.02 and waits[2] > 0.15    # two answered at once, two waited one answer


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_every_scenario_answers_its_token_count(name):
    sc = SCENARIOS[name]
    with Running(sc) as srv:
        events, _ = ask(srv.url, sc)
    usage = [e["usage"] for e in events if "usage" in e]
    if usage:
        assert usage[-1]["completion_tokens"] == sc.workload.output_tokens
    text = ""
    for e in events:
        for ch in e["choices"]:
            d = ch.get("delta") or {}
            text += ch.get("text") or d.get("content") or d.get("reasoning_content") or ""
            text += "".join(c["function"].get("arguments", "") for c in d.get("tool_calls") or [])
    assert text == TOKEN * sc.workload.output_tokens


def test_chat_content_parts_count_as_their_text():
    sc = SCENARIOS["reasoning"]
    with Running(sc) as srv:   # no tokenizer: words
        host, port = srv.url.rsplit("/", 1)[1].split(":")
        c = http.client.HTTPConnection(host, int(port), timeout=10)
        body = {"model": "m", "max_tokens": 16, "stream": True, "stream_options": {"include_usage": True},
                "messages": [{"role": "user", "content": [{"type": "text", "text": "one two"},
                                                          {"type": "text", "text": " three"}]}]}
        c.request("POST", "/v1/chat/completions", json.dumps(body))
        c.getresponse().read()
        log = srv.log()
    assert log[0]["prompt_tokens"] == 3
