"""Energy per token as a third Pareto axis of the best-configuration finder, beside tokens/s
per user and tokens/s per device."""

import math

import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")

import numpy as np  # noqa: E402

from llmbench.measure.stats import summarize  # noqa: E402
from llmbench.report import data as data_mod  # noqa: E402
from llmbench.report import figures  # noqa: E402
from llmbench.report.best import BestQuery, find_best, pareto_front, table_rows  # noqa: E402
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record  # noqa: E402
from llmbench.store.store import Store  # noqa: E402

# concurrency: (TPOT s, total tok/s, J per token)
POINTS = {1: (0.010, 100.0, 1.0), 4: (0.012, 300.0, 0.2), 8: (0.020, 600.0, 0.3),
          16: (0.040, 500.0, 0.5), 32: (0.050, 650.0, 0.35)}


def serving(c: int, tpot: float, thr: float, j: float) -> Record:
    return Record(
        run_id="own-serve", kind="serving", point_key=f"c{c}",
        backend=BackendInfo(name="vllm"), model=ModelInfo(name="m"),
        hardware=HardwareInfo(name="NVIDIA H200", count=2),
        workload={"load": "closed", "concurrency": c, "input_len": 32, "output_len": 32},
        metrics={"tpot_s": summarize([tpot], "s"), "ttft_s": summarize([0.05], "s"),
                 "e2e_s": summarize([0.05 + 31 * tpot], "s"),
                 "total_throughput_tok_s": summarize([thr], "tok/s"),
                 "energy_per_token_j": summarize([j], "J/tok")})


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("energy")
    s = Store(root)
    for c, p in POINTS.items():
        s.write(serving(c, *p))
    return data_mod.load(root)


def test_pareto_front_three_axes():
    pts = np.array([[3, 1, 1], [1, 3, 1], [1, 1, 3], [1, 1, 1], [3, 1, 1], [np.nan, 9, 9]], float)
    # equal rows do not dominate each other; a row with a missing axis is never on the front
    assert pareto_front(pts).tolist() == [True, True, True, False, True, False]


def test_energy_is_an_axis_beside_speed_per_user_and_per_device(data):
    r, _ = find_best(data, BestQuery(model="m"))
    by_c = r.set_index("concurrency")
    assert by_c.loc[8, "energy_per_token_j"] == pytest.approx(0.3)      # the record's own
    assert by_c.loc[8, "tok_s_per_user"] == pytest.approx(50.0)         # 1 / TPOT
    assert by_c.loc[8, "throughput_per_device"] == pytest.approx(300.0)  # 2 GPUs
    # c=16 is beaten on all three by c=8; every other point is best at something
    assert by_c["pareto_energy"].to_dict() == {1: True, 4: True, 8: True, 16: False, 32: True}
    # the latency-throughput frontier alone would keep c=32 and drop c=4's energy advantage
    assert not by_c.loc[4, "pareto"] or by_c.loc[4, "pareto_energy"]
    rows = table_rows(r, top=10)
    assert {row["J/tok"] for row in rows} >= {"0.3", "0.2"} and "Pareto (energy)" in rows[0]


def test_rank_by_energy_per_token(data):
    r, _ = find_best(data, BestQuery(model="m", rank_by="energy_per_token"))
    assert r["energy_per_token_j"].tolist() == sorted(j for _, _, j in POINTS.values())


def test_energy_figure_rings_the_frontier(data):
    r, _ = find_best(data, BestQuery(model="m"))
    fig = figures.energy_pareto_figure(r)
    assert fig.layout["meta"] == {"points": 5, "frontier": 4, "with_energy": 5}
    (trace,) = fig.data
    assert trace["marker"]["colorbar"]["title"]["text"] == "J/token"


def test_offline_energy_from_power(fixture_store):
    d = data_mod.load(fixture_store)
    r, _ = find_best(d, BestQuery(model="Mistral-7B", input_len=1024, output_len=1024))
    has = r["power_w"].notna()
    assert has.any()
    assert np.allclose(r.loc[has, "energy_per_token_j"], 1 / r.loc[has, "tokens_per_joule"])
    assert r.loc[~has, "energy_per_token_j"].isna().all()
    assert not any(math.isinf(v) for v in r["energy_per_token_j"].dropna())
