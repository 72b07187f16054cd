import math

import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from llmbench.report import data as data_mod  # noqa: E402
from llmbench.report import views
from llmbench.report.aggregate import aggregate
from llmbench.report.figures import log_ticks


@pytest.fixture(scope="module")
def data(fixture_store):
    return data_mod.load(fixture_store)


def test_derived_columns(data):
    df = data.df
    assert set(df["source"]) == {"own", "reference"}
    row = df[(df["kind"] == "reference") & (df["tensor_parallel"] == 2) & (df["pipeline_parallel"] == 2)]
    assert set(row["parallelism"]) == {"TP2·PP2"} and set(row["system"]) == {"A100-SXM-80GB ×4 · tensorrt-llm"}
    assert "w=fp8 · kv=fp8" in set(df["dtype"])
    pw = df[df["avg_power_w_mean"].notna()]
    assert np.allclose(pw["total_tokens_per_joule_mean"],
                       pw["total_throughput_tok_s_mean"] / pw["avg_power_w_mean"])


def test_duplicates_are_one_point_with_pooled_error(data):
    df = data.df
    sel = df[(df["system"] == "A100-SXM-80GB · vllm") & (df["model"] == "meta-llama/Meta-Llama-3-8B")
             & (df["input_len"] == 128) & df["kv_block_size"].isna() & (df["weight_dtype"] == "fp16")]
    agg = aggregate(sel, "batch_size", "total_throughput_tok_s", "mean", ["system"], data.config_fields)
    pts = agg.points
    assert list(pts["x"]) == [1, 16, 32, 64]  # the duplicated batch-16 row is one point
    p16 = pts[pts["x"] == 16].iloc[0]
    vals = sel[sel["batch_size"] == 16]["total_throughput_tok_s_mean"].to_numpy()
    assert p16["n_records"] == 2 and math.isclose(p16["y"], vals.mean())
    assert math.isclose(p16["err"], vals.std(ddof=0), rel_tol=1e-9) and p16["err"] > 0
    assert pts["bound"].notna().all() and pts["efficiency"].between(0, 1).all()


def test_own_repeats_pool_within_and_between_variance(data):
    df = data.df
    sel = df[(df["backend"] == "llamacpp") & (df["kind"] == "inference") & (df["status"] == "ok")
             & (df["batch_size"] == 4)]
    assert len(sel) == 2  # two runs of the same point
    agg = aggregate(sel, "batch_size", "batch_latency_s", "mean", ["system"], data.config_fields)
    (p,) = agg.points.itertuples()
    m, s = sel["batch_latency_s_mean"].to_numpy(), sel["batch_latency_s_std"].to_numpy()
    assert math.isclose(p.err, math.sqrt((s ** 2).mean() + m.var()), rel_tol=1e-9)
    assert p.n_repeats == 6


def test_varying_config_splits_series_instead_of_averaging(data):
    df = data.df[(data.df["kind"] == "reference") & (data.df["system"] == "H100-SXM · vllm")
                 & data.df["kv_block_size"].isna()]
    agg = aggregate(df, "batch_size", "total_throughput_tok_s", "mean", ["system"], data.config_fields)
    assert {"model", "input_len"} <= set(agg.split_by)
    per_series = agg.points.groupby("series")["x"].apply(lambda s: s.is_unique)
    assert per_series.all() and len(per_series) >= 4


def test_log_axis_drops_nonpositive_and_says_so(data):
    df = data.df[data.df["kind"] == "reference"].copy()
    df.loc[df.index[:3], "total_throughput_tok_s_mean"] = 0.0
    agg = aggregate(df, "batch_size", "total_throughput_tok_s", "mean", ["system"],
                    data.config_fields, log_y=True)
    assert agg.dropped_nonpositive == 3 and (agg.points["y"] > 0).all()


def test_log_ticks_have_full_labels():
    vals, text = log_ticks([3, 40, 900, 25_000])
    mult = {"k": 1e3, "M": 1e6, "G": 1e9}
    for v, t in zip(vals, text):  # every label reads as its own value ("20", never "2")
        assert float(t[:-1]) * mult[t[-1]] == v if t[-1] in mult else float(t) == v
    assert "10k" in text and all(a < b for a, b in zip(vals, vals[1:]))
    vals, text = log_ticks([0.015, 0.07])
    assert len(vals) >= 4 and "0.05" in text


@pytest.mark.parametrize("key", list(views.VIEWS))
def test_every_view_draws_from_fixture_data(data, key):
    view = views.VIEWS[key]
    rows = views.view_rows(data, view)
    x, y = views.default_x(data, view, rows), views.default_y(data, view, rows)
    color, pins = views.default_choice(data, view, x, y, df=rows)
    fig, pts = views.build(data, views.Choice(view=key, color=color, filters=pins))
    traces = [t for t in fig.data if t.get("x")]
    assert traces, f"{key}: nothing plotted"
    if view.plot == "xy":
        assert fig.meta["points"] == len(pts) > 1
        # never the same configuration twice: one point per (series, x)
        assert not pts.duplicated(["series", "x"]).any()


def test_filter_changes_plotted_points(data):
    base = views.Choice(view="batch", color="system",
                        filters={"model": ["meta-llama/Meta-Llama-3-8B"], "input_len": [1024],
                                 "kv_block_size": [views.MISSING], "weight_dtype": ["fp16"],
                                 "kv_cache_dtype": ["auto"], "hardware_count": [1]})
    _, all_pts = views.build(data, base)
    base.filters["hardware"] = ["H100-SXM"]
    _, h100 = views.build(data, base)
    assert set(h100["series"]) == {"H100-SXM · llamacpp", "H100-SXM · tensorrt-llm", "H100-SXM · vllm"}
    assert len(all_pts) > len(h100) == 12


def test_default_pins_choose_a_readable_slice(data):
    view = views.VIEWS["batch"]
    rows = views.view_rows(data, view)
    color, pins = views.default_choice(data, view, "batch_size", "total_throughput_tok_s", df=rows)
    assert pins["input_len"] in ([128], [1024]) and pins["hardware_count"] == [1]
    _, pts = views.build(data, views.Choice(view="batch", color=color, filters=pins))
    assert pts["series"].nunique() <= views.MAX_DEFAULT_SERIES


def test_distributions_read_raw_samples(data):
    fig, info = views.build(data, views.Choice(view="distributions", y="itl_s",
                                               filters={"source": ["own"], "batch_size": [4]}))
    assert set(info["series"]) == {"cpu-2core · llamacpp", "cpu-2core · transformers"}
    assert (info["samples"] == 2 * 3 * 4 * 31).all()  # 2 runs x 3 repeats x 4 requests x 31 gaps
    assert fig.layout["xaxis"]["type"] == "log" and fig.layout["xaxis"]["title"]["text"]
    ys = fig.data[0]["y"]
    assert ys[-1] == 1.0 and all(a <= b for a, b in zip(ys, ys[1:]))


def test_efficiency_strip_puts_own_beside_reference(data):
    fig, pts = views.build(data, views.Choice(view="efficiency"))
    names = {t["name"] for t in fig.data if t["type"] == "box"}
    assert "llamacpp (own)" in names and "vllm" in names
    assert pts["y"].between(0, 1).all()
    assert len(pts) == pts.drop(columns=["y", "hover", "n_records"]).drop_duplicates().shape[0]


def test_empty_store_gives_an_empty_figure(tmp_path):
    d = data_mod.load(tmp_path)
    fig, pts = views.build(d, views.Choice(view="batch"))
    assert pts.empty and fig.layout["annotations"]
    assert isinstance(d.df, pd.DataFrame)


def test_study_view_opens_on_a_point_the_user_measured(data):
    """The study view's default slice is one that the user's own records are in, so their
    hardware stands beside the study's on the same point (each against its own bound)."""
    view = views.VIEWS["study"]
    color, pins = views.default_choice(data, view, "hardware", view.y[0])
    _, pts = views.build(data, views.Choice(view="study", color=color, filters=pins))
    assert set(pts["source"]) == {"own", "reference"}
    assert set(pins) <= {"model", "input_len", "output_len", "hardware_count", "batch_size"}
