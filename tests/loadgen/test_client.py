"""The streaming client against the fault-injecting server: every fault is counted by kind,
the run completes, and token counts survive merged, split and multi-token events."""

import pytest
from fault_server import FaultServer

from llmbench.loadgen.client import RequestSpec, encode_request, interpret, request_body
from llmbench.loadgen.http import Endpoint
from llmbench.loadgen.run import run_load, run_sync
from llmbench.loadgen.schedule import Schedule

SPEC = RequestSpec("hello", 5, 8)


def run(plan, api="completions", concurrency=1, timeout_s=2.0, **server):
    with FaultServer(plan, **server) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, SPEC, "m", api) for _ in plan]
        res = run_sync(run_load(ep, reqs, Schedule(concurrency=concurrency, num_prompts=len(plan)),
                                timeout_s=timeout_s))
        outs = {plan[x.index]: interpret(x.resp, x.t_sched, SPEC, len) for x in res.sent}
        return outs, res, s


@pytest.mark.parametrize("api", ["completions", "chat"])
def test_every_fault_is_counted_by_kind_and_the_run_completes(api):
    plan = ["ok", "429", "500", "malformed", "drop", "stall", "ok"]
    plan[-1] = "usage"
    outs, res, _ = run(plan, api=api, timeout_s=1.0)
    assert len(res.sent) == len(plan)
    assert {k: o.error_kind for k, o in outs.items()} == {
        "ok": None, "usage": None, "429": "http_429", "500": "http_500",
        "malformed": "malformed_sse", "drop": "connection_dropped", "stall": "timeout"}
    assert outs["ok"].timeline.output_tokens == 8
    assert outs["ok"].text == "é" * 8


@pytest.mark.parametrize("mode", ["merged", "split", "crlf", "usage"])
def test_event_framing_does_not_change_the_tokens(mode):
    outs, _, _ = run([mode])
    o = outs[mode]
    assert o.ok, o.detail
    assert o.timeline.output_tokens == 8 and o.text == "é" * 8
    assert len(o.timeline.itl_s()) == 7


def test_merged_events_share_one_arrival_time():
    outs, _, _ = run(["merged"])
    times = {t for t, _ in outs["merged"].timeline.events}
    assert len(times) == 1      # one read: honest zero gaps, not invented spacing


def test_multi_token_chunks_count_k_tokens():
    outs, _, _ = run(["multi"], k=3, itl_s=0.01)
    tl = outs["multi"].timeline
    assert [k for _, k in tl.events] == [3, 3, 2]
    assert outs["multi"].token_split == "continuous_usage"
    assert len(tl.itl_s()) == 7
    assert sum(tl.itl_s()) == pytest.approx(tl.t_last - tl.t_first)


def test_tokenizer_split_when_usage_disagrees_with_events(monkeypatch):
    # Events carry 2 characters each; the server says 16 tokens in total (no per-chunk usage).
    from llmbench.loadgen import client
    from llmbench.loadgen.http import Response

    pieces = [(1.0 + i, b'data: {"choices":[{"text":"ab"}]}\n\n') for i in range(4)]
    pieces.append((5.0, b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}\n\ndata: [DONE]\n\n'))
    r = Response(status=200, t_send=0.0, t_headers=0.1, pieces=pieces, complete=True)
    o = client.interpret(r, 0.0, SPEC, count_tokens=len)
    assert o.token_split == "tokenizer"
    assert [k for _, k in o.timeline.events] == [2, 2, 2, 3]   # the last absorbs the difference
    assert o.timeline.output_tokens == 9


def test_short_output_is_reported_not_an_error():
    outs, _, _ = run(["short"])
    assert outs["short"].ok and outs["short"].timeline.output_tokens == 4


def test_server_timing_is_a_lower_bound_of_measured_latency():
    outs, _, _ = run(["ok", "ok", "ok"], ttft_s=0.05, itl_s=0.01)
    o = outs["ok"]
    assert o.timeline.ttft_s() >= 0.05
    # The last token cannot arrive before the server sent it (sleeps never end early, timer
    # granularity aside); TPOT has no such bound: a late first token shortens it.
    assert o.timeline.e2e_s() >= 0.05 + 7 * 0.01 * 0.95


def test_keepalive_reuses_connections():
    _, res, _ = run(["ok"] * 6, concurrency=2)
    assert res.connections_opened == 2


def test_request_body_forces_output_and_asks_usage():
    b = request_body(SPEC, "m", "chat")
    assert b["ignore_eos"] is True and b["min_tokens"] == 8 and b["max_tokens"] == 8
    assert b["messages"][0]["content"] == "hello" and b["stream"] is True
    assert b["stream_options"] == {"include_usage": True, "continuous_usage_stats": True}
    assert "ignore_eos" not in request_body(SPEC, "m", "completions", force_output=False)


def test_api_key_only_in_the_authorization_header():
    with FaultServer(["ok"]) as s:
        ep = Endpoint.parse(s.url)
        req = encode_request(ep, SPEC, "m", "completions", api_key="canary-123")
        res = run_sync(run_load(ep, [req], Schedule(concurrency=1, num_prompts=1)))
        assert s.seen_headers[-1]["Authorization"] == "Bearer canary-123"
        assert b"canary-123" not in res.sent[0].resp.body
        assert "canary" not in repr(res.sent[0].resp)


def test_events_in_one_read_are_one_chunk_whose_gap_is_split():
    from llmbench.loadgen.http import Response

    ev = b'data: {"choices":[{"text":"a"}]}\n\n'
    r = Response(status=200, t_send=0.0, t_headers=0.0, complete=True,
                 pieces=[(1.0, ev), (1.3, ev + ev + ev), (1.4, ev)])
    tl = interpret(r, 0.0, SPEC).timeline
    assert tl.events == [(1.0, 1), (1.3, 3), (1.4, 1)]
    assert tl.itl_s() == pytest.approx([0.1, 0.1, 0.1, 0.1])


def test_without_usage_the_tokenizer_counts():
    from llmbench.loadgen.http import Response

    pieces = [(1.0 + i, b'data: {"choices":[{"text":"ab"}]}\n\n') for i in range(4)]
    r = Response(status=200, t_send=0.0, t_headers=0.0, pieces=pieces, complete=True)
    o = interpret(r, 0.0, SPEC, count_tokens=len)          # 2 "tokens" per chunk
    assert o.token_source == "tokenizer" and o.n_events == 4
    assert [k for _, k in o.timeline.events] == [2, 2, 2, 2]
    o = interpret(r, 0.0, SPEC, count_tokens=lambda t: len(t) // 2)   # agrees: one per event
    assert o.token_split == "one_per_event" and o.timeline.output_tokens == 4


def test_reasoning_streamed_apart_gets_its_own_first_token_time():
    outs, _, _ = run(["reasoning"], api="chat", itl_s=0.01)
    o = outs["reasoning"]
    assert o.ok and o.timeline.output_tokens == 8
    assert o.reasoning_text == "é" * 4 and o.text.count("é") == 8
    assert o.t_first_reasoning == o.timeline.t_first                 # reasoning came first
    assert o.t_first_answer - o.t_first_reasoning >= 4 * 0.01 * 0.9   # 4 reasoning tokens later
    plain, _, _ = run(["ok"], api="chat")
    assert plain["ok"].t_first_reasoning is None and plain["ok"].t_first_answer is not None
