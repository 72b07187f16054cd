"""A prediction beside the measurements (issue 43 item 1): the stored estimates of one
configuration drawn against batch size with their interval, the own and the study's measured
points of the same configuration beside them, and predicted / measured where both exist. A
set made by hand: the estimates, intervals and measurements are chosen, the ratios worked out
here."""

import pytest

from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store

# batch -> (predicted output tok/s, lo, hi, predicted batch latency s, lo, hi)
PRED = {1: (100.0, 50.0, 200.0, 1.28, 0.64, 2.56),
        16: (1000.0, 500.0, 2000.0, 2.048, 1.0, 4.0),
        64: (3000.0, 1500.0, 6000.0, 2.7, 1.5, 6.0)}


def estimate(batch):
    thr, lo, hi, lat, llo, lhi = PRED[batch]
    return Record(run_id="est", kind="estimate", point_key=f"e{batch}",
                  backend=BackendInfo(name="vllm"), model=ModelInfo(name="llama-3-8b"),
                  hardware=HardwareInfo(name="H200", count=1),
                  workload={"batch_size": batch, "input_len": 128, "output_len": 128,
                            "weight_dtype": "bf16", "tensor_parallel": 1, "pipeline_parallel": 1},
                  metrics={"output_throughput_tok_s": summarize([thr], "tok/s"),
                           "batch_latency_s": summarize([lat], "s")},
                  estimate={"interval": 0.9, "metrics": {
                      "output_throughput_tok_s": {"lo": lo, "hi": hi},
                      "batch_latency_s": {"lo": llo, "hi": lhi}}})


def measured(run_id, batch, thr, lat, kind="inference", hardware="NVIDIA H200",
             model="llama-3-8b", input_len=128, dtype="bf16"):
    return Record(run_id=run_id, kind=kind, point_key=f"{run_id}",
                  backend=BackendInfo(name="vllm", version="0.26"), model=ModelInfo(name=model),
                  hardware=HardwareInfo(name=hardware, count=1),
                  workload={"batch_size": batch, "input_len": input_len, "output_len": 128,
                            "weight_dtype": dtype, "tensor_parallel": 1, "pipeline_parallel": 1},
                  metrics={"output_throughput_tok_s": summarize([thr], "tok/s"),
                           "batch_latency_s": summarize([lat], "s")})


def records():
    return [estimate(1), estimate(16), estimate(64),
            # own, batch 1 twice: mean 125 tok/s, 1.0 s -> ratios 100/125 = 0.8, 1.28/1.0 = 1.28
            measured("m1a", 1, 120.0, 0.9), measured("m1b", 1, 130.0, 1.1),
            # own, batch 64: 2500 tok/s -> 3000/2500 = 1.2; 4.0 s -> 2.7/4 = 0.675
            measured("m64", 64, 2500.0, 4.0),
            # the study at batch 16 (its spelling of the model and hardware): 800 -> 1.25
            measured("r16", 16, 800.0, 2.56, kind="reference", hardware="H200",
                     model="meta-llama/Meta-Llama-3-8B"),
            # other configurations: never beside this prediction
            measured("other-len", 1, 90.0, 20.0, input_len=2048),
            measured("other-hw", 1, 60.0, 2.0, hardware="H100-SXM"),
            measured("other-dtype", 1, 200.0, 0.6, dtype="fp8")]


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("pred-store")
    st = Store(root)
    for r in records():
        st.write(r)
    return root


@pytest.fixture(scope="module")
def df(store):
    from llmbench.report import data

    return data.load(store).df


def test_the_configuration_and_its_comparison(df):
    from llmbench.report import predictions as p

    (cfg,) = p.configurations(df)
    assert cfg["label"] == "llama-3-8b · vllm · H200 · bf16 · in 128 / out 128"
    assert cfg["measured"] and cfg["batches"] == [1, 16, 64]
    thr = p.comparison(df, cfg, "output_throughput_tok_s")
    assert thr["batch_size"].tolist() == [1, 16, 64]
    assert thr["predicted"].tolist() == [100.0, 1000.0, 3000.0]
    assert thr["lo"].tolist() == [50.0, 500.0, 1500.0] and thr["hi"].tolist() == [200.0, 2000.0, 6000.0]
    assert thr["measured"].tolist()[0] == 125.0 and thr["measured"].tolist()[2] == 2500.0
    assert thr["measured_records"].tolist()[0] == 2
    assert thr["ratio"].tolist() == pytest.approx([0.8, 1.25, 1.2])
    assert thr["ratio_against"].tolist() == ["own", "study", "own"]
    lat = p.comparison(df, cfg, "batch_latency_s")
    assert lat["ratio"].tolist() == pytest.approx([1.28, 0.8, 0.675])
    assert lat["inside"].tolist() == [True, True, True]


def test_the_figure_marks_the_estimate(df):
    from llmbench.report import predictions as p

    (cfg,) = p.configurations(df)
    fig = p.figure(p.comparison(df, cfg, "output_throughput_tok_s"), cfg, "output_throughput_tok_s")
    traces = {t["name"]: t for t in fig.data}
    assert traces["ESTIMATE: predicted"]["y"] == [100.0, 1000.0, 3000.0]
    assert traces["ESTIMATE: predicted"]["line"]["dash"] == "dash"
    # the band: hi forwards, lo backwards
    assert traces["ESTIMATE: 90% interval"]["y"] == [200.0, 2000.0, 6000.0, 1500.0, 500.0, 50.0]
    assert traces["measured (own records)"]["x"] == [1, 64]
    assert traces["measured (own records)"]["y"] == [125.0, 2500.0]
    assert traces["measured (published study)"]["y"] == [800.0]
    assert sorted(a["text"] for a in fig.layout["annotations"] if a["text"].startswith("×")) == \
        ["×0.80", "×1.20", "×1.25"]


def test_the_report_section(store, tmp_path):
    from llmbench.report.html import write_report

    rep = write_report(store, tmp_path / "rep", png=False)
    page = rep.html.read_text()
    assert "id='predictions'" in page
    assert "<td>0.80 (vs own)</td>" in page and "<td>1.25 (vs study)</td>" in page
    assert "<th>ESTIMATE tok/s</th>" in page and "<td>50 – 200</td>" in page
    assert rep.figures["predictions-0-output_throughput_tok_s"].data[1]["name"] == "ESTIMATE: predicted"


def test_the_dashboard_tab(df):
    from llmbench.dashboard import predictions as view

    opts, value = view.options(df)
    assert value == opts[0]["value"] and len(opts) == 1
    fig, table, note = view.content(df, value, "output_throughput_tok_s")
    assert [t["name"] for t in fig["data"]][:2] == ["ESTIMATE: 90% interval", "ESTIMATE: predicted"]
    cells = [[td.children for td in tr.children] for tr in table.children[1].children]
    assert cells[0][:2] == ["1", "100"] and cells[0][-2:] == ["0.80 (vs own)", "yes"]
    assert "ESTIMATE" in note
