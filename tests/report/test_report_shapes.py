"""Each request shape's serving points under its own headline metrics (issue 41 item 4): the
report's tables and figures and the dashboard's Tables tab read the catalog's headline of the
shape (metrics.headline), so an embeddings point shows inputs/s and its latency, never a blank
TTFT, and a structured point its valid fraction. Records made by hand with known values; the
expected numbers are worked out here from the samples."""

import pytest

from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store


def rec(run_id, concurrency, shape=None, **metrics):
    wl = {"concurrency": concurrency, "input_len": 16, "output_len": 8, "api": "completions"}
    if shape:
        wl["request_shape"] = shape
    return Record(run_id=run_id, point_key=f"{shape}-{concurrency}", kind="serving",
                  backend=BackendInfo(name="llamacpp", version="0.3.36"),
                  model=ModelInfo(name="smollm2-135m"), hardware=HardwareInfo(name="cpu"),
                  workload=wl, metrics={k: summarize(v, u) for k, (v, u) in metrics.items()})


def records():
    return [
        # plain text: TTFT p50 of [0.1, 0.3] is 0.2, of [0.2, 0.6] 0.4
        rec("t1", 1, ttft_s=([0.1, 0.3], "s"), e2e_s=([0.5, 0.7], "s"),
            output_throughput_tok_s=([10.0], "tok/s"), request_throughput_req_s=([1.0], "req/s")),
        rec("t4", 4, ttft_s=([0.2, 0.6], "s"), e2e_s=([0.9, 1.1], "s"),
            output_throughput_tok_s=([30.0], "tok/s"), request_throughput_req_s=([3.0], "req/s")),
        # embeddings at concurrency 1, twice (merged by their mean: 30 and 50 inputs/s -> 40,
        # 480 and 800 input tok/s -> 640, 7.5 and 12.5 req/s -> 10); E2E p50 of
        # [0.1, 0.2, 0.3, 0.4] is 0.25 in both
        rec("e1a", 1, "embeddings", e2e_s=([0.1, 0.2, 0.3, 0.4], "s"),
            input_throughput_inputs_per_s=([30.0], "inputs/s"), input_throughput_tok_s=([480.0], "tok/s"),
            request_throughput_req_s=([7.5], "req/s")),
        rec("e1b", 1, "embeddings", e2e_s=([0.1, 0.2, 0.3, 0.4], "s"),
            input_throughput_inputs_per_s=([50.0], "inputs/s"), input_throughput_tok_s=([800.0], "tok/s"),
            request_throughput_req_s=([12.5], "req/s")),
        rec("e4", 4, "embeddings", e2e_s=([0.2, 0.4], "s"),
            input_throughput_inputs_per_s=([120.0], "inputs/s"), input_throughput_tok_s=([1920.0], "tok/s"),
            request_throughput_req_s=([30.0], "req/s")),
        # structured: 3 valid answers of 4 -> 75.0%
        rec("s1", 1, "structured", valid_fraction=([1.0, 1.0, 0.0, 1.0], "fraction"),
            ttft_s=([0.4, 0.6], "s"), output_throughput_tok_s=([8.0], "tok/s")),
    ]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("shapes-store")
    st = Store(root)
    for r in records():
        st.write(r)
    return root


def by_title(found):
    return {title: rows for title, rows, *_ in found}


def check_tables(tables_by_title):
    text = tables_by_title["Serving: latency and throughput per load"]
    emb = tables_by_title["Serving: latency and throughput per load — embeddings requests"]
    struct = tables_by_title["Serving: latency and throughput per load — structured requests"]
    # text: its TTFT, no pooling column
    assert [(r["load"], r["TTFT p50 s"]) for r in text] == [("concurrency 1", "0.2"), ("concurrency 4", "0.4")]
    assert "inputs/s" not in text[0]
    # embeddings: inputs/s, input tok/s, req/s, E2E p50 first; no TTFT/TPOT at all
    assert list(emb[0])[2:6] == ["req/s", "inputs/s", "in tok/s", "E2E p50 s"]
    assert [(r["load"], r["inputs/s"], r["in tok/s"], r["req/s"], r["E2E p50 s"], r["records"])
            for r in emb] == [("concurrency 1", "40", "640", "10", "0.25", "2"),
                              ("concurrency 4", "120", "1,920", "30", "0.3", "1")]
    assert not any("TTFT" in c or "TPOT" in c for c in emb[0])
    # structured: the valid fraction first, then the text headline
    assert list(struct[0])[2] == "valid" and struct[0]["valid"] == "75.0%"
    assert struct[0]["TTFT p50 s"] == "0.5"


def test_report_tables_show_each_shape_under_its_headline(store):
    from llmbench.report import data, tables

    df = data.load(store).df
    found = tables.kind_tables(df, "serving")
    assert [s for s, *_ in found] == ["text", "embeddings", "structured"]
    check_tables(by_title([(t, r) for _, t, r, _ in found]))


def test_report_draws_the_embeddings_points_under_their_own_metrics(store, tmp_path):
    from llmbench.report.html import write_report

    rep = write_report(store, tmp_path / "rep", png=False)
    figs = rep.figures
    # text: the serving view's TTFT figure, embeddings: its own (req/s first, then inputs/s ...)
    ttft = figs["own-serving"]
    assert sorted(y for t in ttft.data if t.get("mode", "").startswith("lines") for y in t["y"]) == \
        pytest.approx([0.2, 0.4])
    emb = figs["own-serving-embeddings-input_throughput_inputs_per_s"]
    ys = sorted(y for t in emb.data if t.get("mode", "").startswith("lines") for y in t["y"])
    assert ys == pytest.approx([40.0, 120.0])
    assert figs["own-serving-embeddings"].layout["yaxis"]["title"]["text"] == "Request throughput (req/s)"
    # the single structured point has no trend: its table says it, under its valid fraction
    page = rep.html.read_text()
    assert "own-table-serving-structured" in page and "<td>75.0%</td>" in page
    assert "own-table-serving-embeddings" not in page   # drawn, so not tabled


def test_dashboard_tables_tab(store):
    from llmbench.dashboard.tables import content, sections
    from llmbench.report import data

    df = data.load(store).df
    check_tables(by_title(sections(df, "own")))
    assert content(df, "reference")[0].children.startswith("No reference record")


def test_dashboard_explore_opens_one_shape_on_its_own_headline(tmp_path):
    """A store whose serving points are all embeddings: the serving view opens on that shape's
    headline (req/s first), not on the view's first latency the records happen to carry (E2E).
    Points: 7.5 and 12.5 req/s merged -> 10 at concurrency 1, 30 at 4."""
    from llmbench.dashboard.app import figure_state, view_state
    from llmbench.report import data

    st = Store(tmp_path)
    for r in records()[2:5]:
        st.write(r)
    d = data.load(tmp_path)
    fields = d.filter_fields()
    state = view_state(d, "serving", fields, "own")
    assert state["y"] == "request_throughput_req_s"
    filters = {f: v for f, v in zip(fields, state["filters"]) if v}
    fig, _, _ = figure_state(d, "serving", state["x"], state["y"], "mean", state["color"],
                             state["log"], filters)
    lines = [t for t in fig["data"] if t.get("mode") == "lines+markers"]
    assert [(t["x"], t["y"]) for t in lines] == [([1, 4], [10.0, 30.0])]
