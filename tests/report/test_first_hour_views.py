"""Issue 54 items 8 and 10: what the report and the dashboard show a new user. Known answers:
tick labels and table values worked out by hand, series made of records chosen here, the
Findings tab over the published data given by --reference."""

import pandas as pd
import pytest

from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store


# -- item 10: axes and labels as people write them ------------------------------------------------
@pytest.mark.parametrize("values,labels", [
    ([69.7925, 76.1093, 90.5097], ["69.8", "76.1", "90.5"]),   # the serving figure's rates
    ([1, 16, 64], ["1", "16", "64"]),
    ([1.0011, 1.0012], ["1.0011", "1.0012"]),                 # 3 digits would read the same
    ([1234.5, 5678.9], ["1.23k", "5.68k"]),
])
def test_tick_labels_are_the_fewest_digits_that_keep_ticks_apart(values, labels):
    from llmbench.report.figures import tick_labels

    assert tick_labels(values) == labels


@pytest.mark.parametrize("v,text", [(8.757144950901363, "8.757"), (16.0, "16"), (None, "–"),
                                    ("/work/other-machine/traces/mooncake.jsonl", "mooncake.jsonl"),
                                    ("auto", "auto")])
def test_table_values_read_as_people_write_them(v, text):
    from llmbench.report.tables import value_text

    assert value_text(v) == text


def test_runs_of_different_workloads_are_two_series_not_one_zig_zag():
    from llmbench.report.aggregate import aggregate

    # one engine; a search at input 512 (8-16 req/s) and a fixed-rate run at input 128
    df = pd.DataFrame({"request_rate": [8.0, 11.3, 16.0, 69.79, 76.11],
                       "input_len": [512, 512, 512, 128, 128],
                       "load_level": ["r=8", "r=11.3", "r=16", "r=69.79", "r=76.11"],
                       "backend": ["vllm"] * 5, "source": ["own"] * 5,
                       "output_throughput_tok_s_mean": [900.0, 1200.0, 1500.0, 8000.0, 8500.0]})
    agg = aggregate(df, "request_rate", "output_throughput_tok_s", "mean", ["backend"],
                    ["backend", "input_len", "load_level"])
    assert agg.split_by == ["input_len"]      # the label follows its rate one to one: no split
    series = agg.points.groupby("series")["x"].apply(list).to_dict()
    assert series == {"vllm | input_len=128": [69.79, 76.11], "vllm | input_len=512": [8.0, 11.3, 16.0]}


def _offline(backend, bs, opts):
    return Record(run_id="r", kind="inference", point_key=f"{backend}-{bs}",
                  backend=BackendInfo(name=backend, options=opts), model=ModelInfo(name="smollm2-135m"),
                  hardware=HardwareInfo(name="cpu", count=1),
                  workload={"batch_size": bs, "input_len": 32, "output_len": 32},
                  metrics={"output_throughput_tok_s": summarize([10.0 * bs], "tok/s")})


def test_the_offline_table_says_only_the_usual_settings_a_row_departs_from(tmp_path):
    from llmbench.report import data as data_mod
    from llmbench.report.tables import kind_table

    s = Store(tmp_path)
    # three engines run together, each with its own options, batch 1 twice and 4 once
    for backend, opts in (("llamacpp", {"n_threads": 2}), ("transformers", {"loop": "step"}),
                          ("vllm", {"enforce_eager": True})):
        for bs in (1, 1, 4):
            s.write(_offline(backend, bs, opts).model_copy(update={"point_key": f"{backend}-{bs}-{id(opts)}"}))
    rows, note = kind_table(data_mod.load(tmp_path).df, "inference")
    assert len(rows) == 6
    # every engine's batch-4 row departs from its usual batch 1: said; its own option never departs
    assert note == ("every row: model smollm2-135m · "
                    + " · ".join(f"usual on cpu · {e} (rows say where they differ): batch size 1"
                                 for e in ("llamacpp", "transformers", "vllm"))), note
    assert [r["settings"] for r in rows] == ["as usual", "batch size 4"] * 3


# -- item 8: the dashboard's Findings and Predictions tabs ----------------------------------------
def test_an_empty_predictions_tab_gives_the_command_that_fills_this_store():
    pytest.importorskip("dash")
    from llmbench.dashboard.predictions import content

    _, table, _ = content(pd.DataFrame(), None, "output_throughput_tok_s", results="runs/h200")
    code = next(c for c in table.children if getattr(c, "id", None) == "pred-fill")
    assert code.children.startswith("llmbench predict --study ")
    assert code.children.endswith("--save --results runs/h200")


def test_the_dashboard_takes_the_study_by_reference_and_refuses_a_missing_one(tmp_path, capsys):
    from tests.conftest import cli

    Store(tmp_path / "res").write(_offline("llamacpp", 1, {}))
    code, text = cli(["dashboard", "--results", str(tmp_path / "res"), "--reference",
                      str(tmp_path / "nowhere")], capsys)
    assert code == 2 and "--reference" in text and "is not a directory" in text, text


def test_the_findings_tab_reads_the_study_from_reference_and_scrolls_its_counter_table(tmp_path):
    pytest.importorskip("dash")
    from tests.analysis.test_findings import REF, rec

    if not REF.is_dir():
        pytest.skip(f"the published data is not at {REF}")
    from llmbench.dashboard.findings import content

    st = Store(tmp_path / "own")
    st.write(rec(b=64, i=2048, o=2048, thr=9828.0, eff=0.73, dram=80.0))
    st.write(rec(b=1, i=2048, o=2048, thr=395.0, eff=0.64, dram=30.0))
    parts = content(tmp_path / "own", REF)
    ids = [getattr(p, "id", None) for p in parts]
    assert "findings-table" in ids                  # not "no study records": the study was read
    box = parts[ids.index("counters-table")]
    assert box.className == "tablewrap" and box.children.className == "ranked counters"
