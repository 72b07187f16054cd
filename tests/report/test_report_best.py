import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")

import numpy as np  # noqa: E402

from llmbench.report import data as data_mod  # noqa: E402
from llmbench.report.best import BestQuery, find_best, pareto_mask, table_rows


@pytest.fixture(scope="module")
def data(fixture_store):
    return data_mod.load(fixture_store)


def test_pareto_mask():
    lat = np.array([1.0, 2.0, 3.0, 2.5, np.nan, 1.0])
    thr = np.array([10.0, 30.0, 25.0, 40.0, 100.0, 5.0])
    assert pareto_mask(lat, thr).tolist() == [True, True, False, True, False, False]


def test_ranked_by_throughput_with_frontier(data):
    ranked, notes = find_best(data, BestQuery(model="Meta-Llama-3-8B", input_len=1024, output_len=1024))
    assert len(ranked) > 10 and not notes
    thr = ranked["throughput_tok_s"].to_numpy()
    assert (np.diff(thr) <= 0).all() and ranked["rank"].tolist() == list(range(1, len(ranked) + 1))
    assert set(ranked["model"]) == {"meta-llama/Meta-Llama-3-8B"}
    front = ranked[ranked["pareto"]]
    for _, r in ranked.iterrows():  # nothing on the frontier is dominated
        if r["pareto"]:
            dom = ranked[(ranked["latency_s"] <= r["latency_s"]) & (ranked["throughput_tok_s"] >= r["throughput_tok_s"])
                         & ((ranked["latency_s"] < r["latency_s"]) | (ranked["throughput_tok_s"] > r["throughput_tok_s"]))]
            assert dom.empty
    assert ranked.iloc[0]["pareto"] and len(front) >= 2
    rows = table_rows(ranked, top=5)
    assert len(rows) == 5 and rows[0]["#"] == "1" and rows[0]["Pareto"] == "★"


def test_slo_uses_measured_or_conservative_bound(data):
    q = BestQuery(model="Meta-Llama-3-8B", input_len=1024, output_len=1024, ttft_slo_s=0.1)
    ranked, _ = find_best(data, q)
    # Only the three rows that measured TTFT can meet 0.1 s (a batch latency is seconds long).
    assert len(ranked) >= 2 and not ranked["ttft_bounded"].any() and (ranked["ttft_s"] <= 0.1).all()
    loose, _ = find_best(data, q.model_copy(update={"ttft_slo_s": 1e4}))
    assert loose["ttft_bounded"].any()
    assert "≤ " in " ".join(r["TTFT s"] for r in table_rows(loose, top=100))


def test_budgets_and_nearest_lengths(data):
    q = BestQuery(model="Mistral-7B", input_len=1000, output_len=1000)
    everything, notes = find_best(data, q)
    assert any("nearest, 1024" in n for n in notes)
    r, _ = find_best(data, q.model_copy(update={"max_power_w": 400}))
    assert (everything["power_w"] > 400).any() and len(r) and (r["power_w"] <= 400).all()
    assert r["power_w"].notna().all() and len(r) < len(everything)
    r, _ = find_best(data, BestQuery(model="Meta-Llama-3-8B", input_len=1024, output_len=1024, max_devices=1))
    assert (r["devices"] == 1).all()
    r, _ = find_best(data, BestQuery(model="Meta-Llama-3-8B", input_len=1024, output_len=1024,
                                     rank_by="throughput_per_device"))
    assert (np.diff(r["throughput_per_device"].to_numpy()) <= 0).all()


def test_params_range_and_own_source(data):
    r, _ = find_best(data, BestQuery(max_params_b=1.0, input_len=32, output_len=32))
    assert set(r["source"]) == {"own"} and set(r["model"]) == {"smollm2-135m"}
    assert r.iloc[0]["system"] == "cpu-2core · llamacpp"


def test_nothing_matches(data):
    r, notes = find_best(data, BestQuery(model="no-such-model"))
    assert r.empty and notes
