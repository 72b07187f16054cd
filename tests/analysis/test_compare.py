"""`llmbench compare`: pairing, Welch intervals, verdicts, the guard and --fail-on-regression,
on records built here (fast) and on two real llama.cpp runs (slow)."""

import math
import random

import pytest
from typer.testing import CliRunner

from llmbench.analysis.compare import compare, metric_change, t_quantile
from llmbench.cli import app
from llmbench.errors import SpecError
from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store


def rec(run_id, latencies, threads=1, version="0.3.36", hw="cpu", batch=1, **workload):
    w = {"batch_size": batch, "input_len": 8, "output_len": 8, "repeats": len(latencies), **workload}
    return Record(run_id=run_id, point_key=f"k{batch}{threads}", kind="inference",
                  backend=BackendInfo(name="llamacpp", version=version, options={"n_threads": threads}),
                  model=ModelInfo(name="smollm2-135m"), hardware=HardwareInfo(name=hw),
                  workload=w, metrics={"batch_latency_s": summarize(latencies, "s"),
                                       "output_throughput_tok_s": summarize([8 / x for x in latencies], "tok/s")})


def noisy(mean, n=5, rel=0.02, seed=0):
    rnd = random.Random(seed)
    return [mean * (1 + rnd.gauss(0, rel)) for _ in range(n)]


def test_t_quantile_matches_tables():
    # two-sided 95% critical values from any t table
    for df, want in ((1, 12.706), (2, 4.303), (3, 3.182), (4, 2.776), (8, 2.306), (30, 2.042),
                     (1e6, 1.960)):
        assert math.isclose(t_quantile(0.975, df), want, abs_tol=0.01), df


def test_welch_interval_known_case():
    # by hand: both var 0.5, n 5 -> se = sqrt(0.1 + 0.1), df = 8, t = 2.306, half width 1.031
    a = summarize([9, 10, 11, 10, 10], "s")
    c = metric_change("e2e_s", a, a)
    assert c.ci_low < 0 < c.ci_high and c.verdict == "no significant change"
    near = metric_change("e2e_s", a, summarize([x + 1 for x in [9, 10, 11, 10, 10]], "s"))
    assert near.verdict == "no significant change"       # 1.0 < 1.031: not resolved
    c = metric_change("e2e_s", a, summarize([x + 2 for x in [9, 10, 11, 10, 10]], "s"))
    assert c.diff == pytest.approx(2.0)
    assert (c.ci_low, c.ci_high) == (pytest.approx(2 - 1.031, abs=2e-3), pytest.approx(2 + 1.031, abs=2e-3))
    assert c.verdict == "worse" and c.pct == pytest.approx(20.0)
    assert metric_change("output_throughput_tok_s", a, summarize([12, 12, 13, 12, 11], "tok/s")).verdict == "better"


def test_t_quantile_at_non_integer_df_is_scipys():
    from scipy.stats import t

    for df in (1.0001, 1.3, 1.5, 1.99, 2.5, 3.7, 7.25, 41.6):
        for p in (0.975, 0.995, 0.9):
            assert t_quantile(p, df) == pytest.approx(float(t.ppf(p, df)), rel=1e-12), (p, df)


@pytest.mark.parametrize("base,new", [
    ([1.0, 1.0001], [1.5, 1.6]),                       # df 1.0000: t 12.7
    ([2.0, 2.2, 2.1], [2.5, 3.5]),                     # df ~1.1
    ([10.0, 10.4, 9.9, 10.1], [11.0, 12.5, 10.2]),     # df ~2.3
    ([5.0, 5.1, 5.2, 5.05, 4.9, 5.3], [5.5, 5.6, 5.3, 6.4, 5.2]),
])
def test_welch_interval_is_scipys_at_non_integer_df(base, new):
    from scipy.stats import ttest_ind

    want = ttest_ind(new, base, equal_var=False).confidence_interval(0.95)
    for keep in (True, False):   # from the raw samples, and from (mean, std, n) alone
        c = metric_change("batch_latency_s", summarize(base, "s", keep_samples=keep),
                          summarize(new, "s", keep_samples=keep))
        assert (c.ci_low, c.ci_high) == (pytest.approx(want.low, rel=1e-9),
                                         pytest.approx(want.high, rel=1e-9))


def test_two_repeats_of_unequal_spread_are_no_significant_change(tmp_path):
    # Welch's exact interval by hand: var 5e-9 and 5e-3, n 2 -> se 0.05, df 1.000002,
    # t.ppf(0.975, 1) = 12.706; +0.55 +- 0.635 s: [-0.085, +1.185] s = [-8.5%, +118.5%]
    _store(tmp_path, "A", [rec("A", [1.0, 1.0001])])
    _store(tmp_path, "B", [rec("B", [1.5, 1.6], threads=2)])
    res = str(tmp_path / "res")
    r = CliRunner().invoke(app, ["compare", "A", "B", "--results", res, "--fail-on-regression", "5"])
    assert r.exit_code == 0, r.output
    assert "no significant change" in r.output and "REGRESSION" not in r.output, r.output
    assert "-8.5%" in r.output and "+118.5%" in r.output, r.output
    c = metric_change("batch_latency_s", summarize([1.0, 1.0001], "s"), summarize([1.5, 1.6], "s"))
    assert c.ci_low == pytest.approx(0.55 - 12.7062 * 0.05, abs=1e-4)
    assert c.ci_high == pytest.approx(0.55 + 12.7062 * 0.05, abs=1e-4)


def test_faster_slower_and_no_change(tmp_path):
    base = [rec("A", noisy(1.0, seed=1), batch=1), rec("A", noisy(2.0, seed=2), batch=4)]
    new = [rec("B", noisy(0.5, seed=3), threads=2, batch=1),   # twice as fast
           rec("B", noisy(2.0, seed=4), threads=2, batch=4)]   # same
    cmp = compare(base, new)
    by = {p.base.workload["batch_size"]: p for p in cmp.points}
    assert by[1].verdict == "faster" and by[4].verdict == "no significant change"
    c = by[1].change("batch_latency_s")
    assert -55 < c.pct < -45 and c.pct_ci[1] < 0
    assert by[1].option_diffs == ["n_threads: 1 -> 2"]
    assert cmp.summary() == {"faster": 1, "no significant change": 1}
    assert [p.base.workload["batch_size"] for p in cmp.regressions(10)] == []
    back = compare(new, base)
    assert [p.base.workload["batch_size"] for p in back.regressions(50)] == [1]   # +100% latency
    assert back.regressions(150) == []


def test_guard_refuses_unless_allowed():
    base = [rec("A", noisy(1.0, seed=1))]
    new = [rec("B", noisy(1.0, seed=2), version="0.3.40", hw="other")]
    p = compare(base, new).points[0]
    assert p.verdict == "not comparable"
    assert any("backend.version" in d for d in p.refused) and any("hardware.name" in d for d in p.refused)
    p = compare(base, new, allow={"engine_version", "hardware.name"}).points[0]
    assert p.refused == [] and p.verdict == "no significant change"


def test_min_change_turns_a_small_significant_change_into_no_change():
    base = [rec("A", noisy(1.0, rel=0.001, seed=1))]
    new = [rec("B", noisy(1.05, rel=0.001, seed=2))]
    assert compare(base, new).points[0].verdict == "slower"          # +5%, tight interval
    assert compare(base, new, min_change_pct=10).points[0].verdict == "no significant change"


def test_load_shape_difference_pairs_but_is_refused():
    base = [rec("A", noisy(1.0), concurrency=1)]
    new = [rec("B", noisy(1.0, seed=5), concurrency=4)]
    p = compare(base, new).points[0]
    assert p.refused == ["workload.concurrency: 1 -> 4"]
    assert compare(base, new, allow={"load_shape"}).points[0].refused == []


def test_unpaired_and_ambiguous_are_reported():
    base = [rec("A", noisy(1.0), batch=1), rec("A", noisy(1.0), batch=2)]
    new = [rec("B", noisy(1.0), batch=1, threads=1), rec("B", noisy(1.0), batch=1, threads=2),
           rec("B", noisy(1.0), batch=8)]
    cmp = compare(base, new)
    assert cmp.points == [] and len(cmp.ambiguous) == 1
    assert [r.workload["batch_size"] for r in cmp.only_base] == [2]
    assert [r.workload["batch_size"] for r in cmp.only_new] == [8]


def _store(tmp_path, run, recs):
    s = Store(tmp_path / "res")
    for r in recs:
        s.write(r)
    return s


def test_cli_by_run_id_and_fail_on_regression(tmp_path):
    _store(tmp_path, "A", [rec("A", noisy(1.0, seed=1))])
    _store(tmp_path, "B", [rec("B", noisy(1.3, seed=2), threads=2)])
    res = str(tmp_path / "res")
    r = CliRunner().invoke(app, ["compare", "A", "B", "--results", res])
    assert r.exit_code == 0, r.output
    assert "slower" in r.output and "summary: 1 slower" in r.output and "n_threads: 1 -> 2" in r.output
    r = CliRunner().invoke(app, ["compare", "A", "B", "--results", res, "--fail-on-regression", "10"])
    assert r.exit_code == 1 and "REGRESSION" in r.output
    r = CliRunner().invoke(app, ["compare", "A", "B", "--results", res, "--fail-on-regression", "50"])
    assert r.exit_code == 0, r.output
    # --where selections over one store; a result directory as a selector
    r = CliRunner().invoke(app, ["compare", "--results", res, "--base-where", "run_id='A'",
                                 "--new-where", "run_id='B'", "--all-metrics"])
    assert r.exit_code == 0 and "output_throughput_tok_s" in r.output, r.output
    r = CliRunner().invoke(app, ["compare", str(tmp_path / "res" / "A"), str(tmp_path / "res" / "B")])
    assert r.exit_code == 0 and "slower" in r.output
    r = CliRunner().invoke(app, ["compare", "A", "nope", "--results", res])
    assert isinstance(r.exception, SpecError) and "nope" in str(r.exception)   # main() exits 2


# -- two real llama.cpp runs -------------------------------------------------------------------
def _run(tmp_path, run_id, threads, repeats):
    from llmbench.kinds.inference.kind import InferenceKind
    from llmbench.kinds.inference.spec import SweepSpec
    from llmbench.launch.pipeline import run_sweep

    spec = SweepSpec(backends=["llamacpp"], models=["smollm2-135m"], batch_size=[1],
                     input_len=[8], output_len=[16], repeats=repeats, warmups=1,
                     backend_options={"llamacpp": {"n_threads": threads}})
    res = run_sweep(InferenceKind(), spec.points(), tmp_path / "res", executor="in-process",
                    run_id=run_id)
    assert all(r.status == "ok" for r in res.records), [r.error for r in res.records]
    return res.records


def _half(rec, which):
    """The record with its batch latency from every other repeat (0: even, 1: odd)."""
    out = rec.model_copy(deep=True)
    out.metrics = {"batch_latency_s": summarize(rec.metrics["batch_latency_s"].samples[which::2], "s")}
    return out


@pytest.mark.slow
def test_real_llamacpp_threads_difference_and_repeat(tmp_path):
    pytest.importorskip("llama_cpp")
    one = _run(tmp_path, "t1", 1, repeats=10)
    two = _run(tmp_path, "t2", 2, repeats=5)
    # The change is found in the pooled per-token latency (10 x 15 vs 5 x 15 gaps). Batch
    # latency is not asserted: on this shared 2-core machine 2 threads were at times 14x slower
    # than 1 with second-long stalls in single repeats, which a 5-sample Welch test rightly
    # calls unresolved (seen 2026-12-01: +1290%, CI [-540%, +3120%]).
    diff = compare(one, two, metric="itl_s").points[0]
    c = diff.change("itl_s")
    assert diff.option_diffs == ["n_threads: 1 -> 2"]
    assert diff.verdict in ("faster", "slower") and c.significant, (c, diff.verdict)
    # Two repeats of one configuration: the 10 repeats split into interleaved halves, so the
    # machine's drift hits both alike. Separate runs minutes apart drifted from -20% to +60%
    # here (seen 2026-12-01, both "significant"): that is load, not the configuration.
    same = compare([_half(one[0], 0)], [_half(one[0], 1)]).points[0]
    assert same.primary == "batch_latency_s"
    assert same.verdict == "no significant change", same.change("batch_latency_s")
