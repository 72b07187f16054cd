"""analysis/predict.py against answers computed independently: a synthetic set whose
generating efficiency is known, baselines on a hand-made set, coverage on a known set; and
`llmbench predict`'s usage errors."""

import math

import numpy as np
import pandas as pd
import pytest
from tests.conftest import cli

from llmbench.analysis import predict as P

BATCHES = [1, 2, 4, 8, 16, 32, 64]


def _point(engine, hardware, model, batch, inp, out, eff, bound_tok_s=1000.0, mem_bw=2000.0,
           peak=500.0, memory_bound=1.0):
    bound_lat = batch * out / bound_tok_s
    return {"engine": engine, "hardware": hardware, "vendor": "V", "model": model, "dtype": "bf16",
            "batch": batch, "input_len": inp, "output_len": out, "devices": 1,
            "point": f"{model}|{engine}|b{batch}|{inp}x{out}",
            "log_batch": math.log2(batch), "log_input": math.log2(inp),
            "log_output": math.log2(out), "log_params": math.log(7e9), "log_gqa": 0.0,
            "memory_bound": memory_bound, "prefill_share": 0.1, "log_devices": 0.0,
            "log_weight_bytes": 1.0, "log_step_s": math.log2(bound_lat / out), "moe_read": 0.0,
            "kv_over": 0.0,
            "mem_bw": mem_bw, "peak": peak,
            "bound_output_throughput_tok_s": bound_tok_s,
            "measured_output_throughput_tok_s": bound_tok_s * eff,
            "bound_batch_latency_s": bound_lat, "measured_batch_latency_s": bound_lat / eff}


def _true_eff(batch):
    return 0.5 * batch ** 0.2


def synthetic(seed=0):
    """efficiency = 0.5 x batch^0.2 x lognormal(sigma 0.02), two made-up accelerators."""
    rng = np.random.default_rng(seed)
    rows = []
    for hw in ("X1", "X2"):
        for model in ("m-a", "m-b", "m-c"):
            for b in BATCHES:
                for inp, out in ((128, 128), (128, 2048), (2048, 128), (2048, 2048)):
                    eff = _true_eff(b) * math.exp(rng.normal(0, 0.02))
                    rows.append(_point("eng", hw, model, b, inp, out, eff,
                                       bound_tok_s=float(rng.uniform(500, 5000))))
    return pd.DataFrame(rows)


@pytest.mark.parametrize("metric", list(P.METRICS))
def test_fit_recovers_the_generating_efficiency_on_held_out_batches(metric):
    f = synthetic()
    for held in (2, 8, 32):  # interior batch sizes, never seen in training
        train, test = f[f["batch"] != held], f[f["batch"] == held]
        got = P.EfficiencyModel(train, metric).predict(test)
        assert set(got["level"]) == {"engine+hardware"}
        assert np.allclose(np.exp(got["log_eff"]), _true_eff(held), rtol=0.03)
        pred = P.from_efficiency(test, metric, np.exp(got["log_eff"]))
        true = P.from_efficiency(test, metric, np.full(len(test), _true_eff(held)))
        assert np.allclose(pred, true, rtol=0.03)


@pytest.mark.parametrize("vendor,level", [("V", "engine+vendor"), ("W", "engine")])
def test_unseen_hardware_falls_back_to_related_hardware_and_says_so(vendor, level):
    f = synthetic()
    train = f[f["hardware"] == "X1"]
    test = f[f["hardware"] == "X2"].assign(hardware="X9", vendor=vendor)
    got = P.EfficiencyModel(train, "output_throughput_tok_s").predict(test)
    assert set(got["level"]) == {level}
    assert got["n"].iloc[0] == len(train)
    assert got["hardware"].iloc[0] == ("X1",) and got["engines"].iloc[0] == ("eng",)
    eff = np.exp(got["log_eff"].to_numpy(float))
    assert np.allclose(eff, [_true_eff(b) for b in test["batch"]], rtol=0.03)


def test_validation_recovers_it_with_small_error():
    held = P.validate(synthetic(), "batch", "output_throughput_tok_s")
    s = P.summary(held)
    # the end batches (1, 64) are extrapolation; still within a few percent with sigma 0.02
    assert s["model"]["median"] < 0.03 and s["model"]["p90"] < 0.08


def test_constant_baseline_matches_hand_computation():
    train = pd.DataFrame([_point("e", "A", "m", 1, 128, 128, eff) for eff in (0.2, 0.4, 0.8)])
    test = pd.DataFrame([_point("e", "B", "m", 4, 128, 128, 0.9, bound_tok_s=100.0)])
    # median efficiency 0.4: throughput 100 x 0.4; latency bound 4 x 128 / 100 = 5.12 s / 0.4
    assert P.constant_baseline(train, test, "output_throughput_tok_s")[0] == pytest.approx(40.0)
    assert P.constant_baseline(train, test, "batch_latency_s")[0] == pytest.approx(12.8)


def test_nearest_accelerator_matches_hand_computation():
    a = _point("e", "A", "m", 1, 128, 128, 0.5, bound_tok_s=100.0, mem_bw=1000.0, peak=100.0)
    b = _point("e", "B", "m", 1, 128, 128, 0.6, bound_tok_s=200.0, mem_bw=3000.0, peak=1000.0)
    pool = pd.DataFrame([a, b])
    # C: 2000 GB/s, memory-bound -> ratios 2 (A) and 2/3 (B); B is nearer: 120 tok/s x 2/3
    c = pd.DataFrame([_point("e", "C", "m", 1, 128, 128, 0.7, mem_bw=2000.0, peak=150.0)])
    assert P.nearest_accelerator(c, pool, "output_throughput_tok_s")[0] == pytest.approx(80.0)
    # B's latency 128 / 200 / 0.6 s, divided by 2/3
    assert P.nearest_accelerator(c, pool, "batch_latency_s")[0] == pytest.approx(128 / 120 * 1.5)
    # compute-bound: peak 150 -> ratios 1.5 (A) and 0.15 (B); A is nearer: 50 tok/s x 1.5
    cc = c.assign(memory_bound=0.0)
    assert P.nearest_accelerator(cc, pool, "output_throughput_tok_s")[0] == pytest.approx(75.0)
    # no other accelerator measured a different point
    d = c.assign(point="other")
    assert np.isnan(P.nearest_accelerator(d, pool, "output_throughput_tok_s")[0])


def test_coverage_on_a_known_set():
    a = np.round(np.linspace(0.0, 1.0, 101), 6)
    held = pd.DataFrame({"fold": ["a"] * 101 + ["b"] * 101, "level": "engine",
                         "residual": np.concatenate([a, -2 * a])})
    # a against b's 90% |residual| 1.8: all 101 inside; b against a's 0.9: |2x| <= 0.9 for
    # x = 0..0.45, 46 points
    assert P.half_width(-2 * a) == pytest.approx(1.8)
    assert P.interval_for(held[held["fold"] == "a"], "engine") == pytest.approx((-0.9, 0.9))
    assert P.coverage(held) == pytest.approx((101 + 46) / 202)


def test_a_fall_back_level_that_measured_wider_gets_a_wider_interval():
    tight = np.round(np.arange(30) * 0.01, 6)   # engine+hardware: 0 .. 0.29
    wide = np.round(np.arange(30) * 0.1, 6)     # engine: 0 .. 2.9
    held = pd.DataFrame({"fold": "f", "level": ["engine+hardware"] * 30 + ["engine"] * 30,
                         "residual": np.concatenate([tight, wide])})
    # all 60 pooled, sorted: the 90% quantile sits at rank 0.9 x 59 = 53.1, between the
    # wide set's 2.3 (rank 53) and 2.4: 2.31; the wide level alone: rank 26.1 of 30, 2.61
    assert P.interval_for(held, "engine+hardware") == pytest.approx((-2.31, 2.31))
    assert P.interval_for(held, "engine") == pytest.approx((-2.61, 2.61))
    # a level with fewer than MIN_RESIDUALS residuals: the pooled width
    few = pd.concat([held, pd.DataFrame({"fold": "f", "level": ["hardware"], "residual": [0.0]})])
    assert P.interval_for(few, "hardware")[1] == pytest.approx(P.half_width(few["residual"]))


def test_a_group_offset_is_learnt_where_its_points_pin_it_and_shrunk_where_absent():
    f = synthetic()
    fast = f["hardware"] == "X2"  # X2 runs at twice the efficiency of X1, at every shape
    f.loc[fast, "measured_output_throughput_tok_s"] *= 2.0
    got = P.EfficiencyModel(f, "output_throughput_tok_s").predict(f[fast])
    assert set(got["level"]) == {"engine+hardware"}
    eff = np.exp(got["log_eff"].to_numpy(float))
    assert np.allclose(eff, [2 * _true_eff(b) for b in f.loc[fast, "batch"]], rtol=0.05)
    # a third accelerator nobody measured: no offset of its own, the two pooled (ratio sqrt 2
    # to X1's, their geometric mean, as the engine level's offset is shared by both)
    unseen = f[fast].assign(hardware="X9", vendor="W")
    got = P.EfficiencyModel(f, "output_throughput_tok_s").predict(unseen)
    assert set(got["level"]) == {"engine"}
    eff = np.exp(got["log_eff"].to_numpy(float))
    assert np.allclose(eff, [math.sqrt(2) * _true_eff(b) for b in unseen["batch"]], rtol=0.05)


def test_moe_read_is_the_union_of_routed_experts_over_the_bounds_k():
    from llmbench.analysis.predict_points import moe_read
    from llmbench.models.catalog import get_arch

    arch = get_arch("mixtral-8x7b")
    assert (arch.num_experts, arch.experts_per_token) == (8, 2)
    expert = arch.layers * 3 * arch.hidden * arch.ffn * 8 / arch.param_count()
    dense = 1 - expert
    assert moe_read(arch, 1) == pytest.approx(0.0)
    # batch 2: 1 - (3/4)^2 = 7/16 of the experts in expectation where the bound reads 2/8
    assert moe_read(arch, 2) == pytest.approx(math.log((dense + expert * 7 / 16) / (dense + expert / 4)))
    assert moe_read(get_arch("llama-3-8b"), 64) == 0.0
    frame = pd.DataFrame({"prefill_share": [0.25], "moe_read": [0.4]})
    assert P.physics_offset(frame)[0] == pytest.approx(0.75 * 0.4)


def test_the_fit_recovers_the_generating_efficiency_despite_gross_outliers():
    f = synthetic()
    rng = np.random.default_rng(1)
    broken = rng.random(len(f)) < 0.08  # 8% of runs broken: a tenth of the true throughput
    f.loc[broken, "measured_output_throughput_tok_s"] *= 0.1
    got = P.EfficiencyModel(f, "output_throughput_tok_s").predict(f[~broken])
    # least squares pulls every prediction toward the broken runs (12% low here); Huber's loss
    # weighs those residuals as |r| and recovers the clean points' efficiency
    assert np.allclose(np.exp(got["log_eff"]), [_true_eff(b) for b in f.loc[~broken, "batch"]],
                       rtol=0.03)


def test_a_new_accelerator_inherits_its_vendors_whole_offset():
    f = synthetic()
    rows = [f.assign(hardware=f"{hw}-{v}", vendor=v) for hw in ("X1", "X2") for v in ("V", "W")]
    f = pd.concat(rows, ignore_index=True)
    fast = (f["vendor"] == "V").to_numpy()  # vendor V's software runs twice as efficiently
    f.loc[fast, "measured_output_throughput_tok_s"] *= 2.0
    new = f[(f["hardware"] == "X1-V")].assign(hardware="X3-V")  # V's next accelerator
    got = P.EfficiencyModel(f, "output_throughput_tok_s").predict(new)
    assert set(got["level"]) == {"engine+vendor"}
    # equal penalties on the vendor's and each accelerator's offsets split V's log 2 between
    # them, 2/3 to the vendor (2^(-1/6), 11% short here); the vendor's, penalised 100x
    # less, carries all of it
    eff = np.exp(got["log_eff"].to_numpy(float))
    assert np.allclose(eff, [2 * _true_eff(b) for b in new["batch"]], rtol=0.03)


def test_kv_over_is_weights_plus_the_batchs_kv_over_the_memory():
    from llmbench.analysis.predict_points import kv_over
    from llmbench.models.catalog import get_arch

    arch = get_arch("llama-2-7b")  # 32 layers, 32 KV heads of 128: no GQA
    kv_token = 2 * 32 * 32 * 128 * 2  # K and V, 16-bit: 512 KiB a token
    w = 13.5e9
    # batch 64 at 2048 + 2048 on 40 GB: 13.5 GB + 64 x 4096 x 512 KiB = 150.9 GB, 3.77x over
    need = w + 64 * 4096 * kv_token
    assert kv_over(arch, w, "fp16", 64, 4096, 40.0) == pytest.approx(math.log2(need / 40e9))
    # an 8-bit cache halves the KV; one sequence fits: 0
    assert kv_over(arch, w, "fp8", 64, 4096, 40.0) == pytest.approx(
        math.log2((w + 64 * 4096 * kv_token / 2) / 40e9))
    assert kv_over(arch, w, None, 1, 4096, 40.0) == 0.0
    assert kv_over(arch, w, None, 64, 4096, 0.0) == 0.0  # memory unknown: nothing to say


def test_the_fit_recovers_a_batch_held_only_in_part_when_the_kv_cache_overflows():
    f = synthetic()
    ctx = f["input_len"] + f["output_len"]
    # the batch's KV overflows past 2^15 tokens in flight: the engine holds 1/2^kv_over of it
    f["kv_over"] = np.maximum(0.0, np.log2(f["batch"] * ctx) - 15.0)
    assert (f["kv_over"] > 0).mean() > 0.1
    f["measured_output_throughput_tok_s"] *= 2.0 ** -f["kv_over"]
    train, test = f[f["batch"] != 32], f[f["batch"] == 32]
    got = P.EfficiencyModel(train, "output_throughput_tok_s").predict(test)
    true = _true_eff(32) * 2.0 ** -test["kv_over"].to_numpy()
    assert np.allclose(np.exp(got["log_eff"]), true, rtol=0.04)


def test_errors_are_relative():
    assert P.errors([110, 90, 50], [100, 100, 100]).tolist() == pytest.approx([0.1, 0.1, 0.5])


@pytest.fixture
def no_study(monkeypatch):
    from llmbench.analysis import predict_report

    monkeypatch.setattr(predict_report, "study_frame", lambda d: synthetic())


@pytest.mark.parametrize("flag,bad,near", [("--model", "llama3-8b", "'llama-3-8b'"),
                                           ("--engine", "vlm", "'vllm'"),
                                           ("--hardware", "H2000", "'H200'")])
def test_bad_names_get_did_you_mean_and_exit_2(flag, bad, near, no_study, capsys):
    argv = {"--model": "llama-3-8b", "--engine": "vllm", "--hardware": "H100"}
    argv[flag] = bad
    code, text = cli(["predict", "--study", "x"] + [t for kv in argv.items() for t in kv], capsys)
    assert code == 2, text
    assert f"did you mean {near}" in text and "Traceback" not in text


def test_prediction_prints_an_estimate_with_its_interval(no_study, capsys):
    code, text = cli(["predict", "--study", "x", "--model", "llama-3-8b", "--engine", "eng",
                        "--hardware", "H100", "--batch-size", "8"], capsys)
    assert code == 0, text
    assert "ESTIMATE" in text and "90% interval" in text
    assert "leave-one-accelerator-out" in text  # H100 is not among the synthetic X1, X2


def test_a_study_directory_that_is_not_one_is_a_usage_error(tmp_path, capsys):
    code, text = cli(["predict", "--study", str(tmp_path / "missing"), "--validate"], capsys)
    assert code == 2, text
    assert "--study" in text and "not a directory" in text and "Traceback" not in text


def test_a_feature_constant_up_to_rounding_carries_nothing():
    f = synthetic()
    # one value, log(7e9), whose std comes out ~1e-15 from rounding, not 0
    assert 0 < f["log_params"].to_numpy().std() < 1e-12
    fit = P.EfficiencyModel(f, "output_throughput_tok_s")
    other = f.iloc[:3].assign(log_params=math.log(70e9))  # a model ten times larger
    same = f.iloc[:3]
    # the training data says nothing of size: the same prediction, not one blown up by 1/1e-15
    assert np.allclose(fit.predict(other)["log_eff"], fit.predict(same)["log_eff"])


def test_lists_give_one_prediction_per_combination(no_study, capsys):
    code, text = cli(["predict", "--study", "x", "--model", "llama-3-8b", "--engine", "eng",
                      "--hardware", "H100", "--batch-size", "8,16", "--output-len", "128,256"], capsys)
    assert code == 0, text
    heads = [line for line in text.splitlines() if "ESTIMATE" in line]
    assert [h.split("(eng, bf16), ")[1].split(":")[0] for h in heads] == [
        "batch 8, 128 in / 128 out", "batch 8, 128 in / 256 out",
        "batch 16, 128 in / 128 out", "batch 16, 128 in / 256 out"]


@pytest.mark.parametrize("bad", ["0", "8,x", ""])
def test_a_bad_size_list_is_a_usage_error(bad, no_study, capsys):
    code, text = cli(["predict", "--study", "x", "--model", "llama-3-8b", "--engine", "eng",
                      "--hardware", "H100", "--batch-size", bad], capsys)
    assert code == 2 and "--batch-size" in text and "Traceback" not in text, text


def test_the_held_out_residuals_are_computed_once_per_split_and_data(monkeypatch, tmp_path):
    from llmbench.analysis import predict_report as rep

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    calls = []
    real = P.validate
    monkeypatch.setattr(P, "validate", lambda *a, **k: calls.append(a[1]) or real(*a, **k))
    train = synthetic()
    first = rep.held_out(train, "batch", "output_throughput_tok_s")
    again = rep.held_out(train, "batch", "output_throughput_tok_s")
    assert calls == ["batch"]
    pd.testing.assert_frame_equal(first, again)
    rep.held_out(synthetic(seed=1), "batch", "output_throughput_tok_s")   # other data: computed
    rep.held_out(train, "model", "output_throughput_tok_s")               # another split: computed
    assert calls == ["batch", "batch", "model"]


def test_a_configuration_the_study_measured_is_shown_beside_the_estimate():
    from llmbench.analysis import predict_report as rep
    from llmbench.analysis.predict_points import query

    q = query("llama-3-8b", "eng", "H100-SXM", "bf16", 8, 128, 128)
    seen = q.assign(measured_output_throughput_tok_s=[1234.0], measured_batch_latency_s=[0.83])
    text = rep.prediction_text(pd.concat([synthetic(), seen], ignore_index=True), q)
    assert "the study measured this configuration: 1234 tok/s" in text
    assert "the study measured this configuration: 0.83 s" in text
    assert "measured this configuration" not in rep.prediction_text(synthetic(), q)
