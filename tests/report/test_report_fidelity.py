"""Speed-up against fidelity (report/fidelity.py) in the static report and the dashboard's tab,
over records whose throughputs and fidelity metrics the test chose: each speed-up is computed
here by hand."""

import pytest

from llmbench.measure.stats import summarize
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record
from llmbench.store.store import Store

# (engine, weights, gguf type, out tok/s, match, KL); transformers fp32 is the basis
CONFIGS = [("transformers", "fp32", None, 16.0, 1.0, 0.0),
           ("transformers", "bf16", None, 24.0, 0.7, 8e-4),
           ("llamacpp", "auto", "q4_0", 120.0, 0.4, 6e-3),
           ("llamacpp", "auto", "f16", 80.0, 0.9, 1e-4)]


def _rec(engine, wd, gguf, thr, match, kl, bs=1, fidelity=True, run="r"):
    metrics = {"output_throughput_tok_s": summarize([thr], "tok/s")}
    if fidelity:
        metrics.update(fidelity_match_frac=summarize([match], "ratio"),
                       fidelity_kl_nats=summarize([kl], "nats"),
                       fidelity_first_divergence_tok=summarize([32 * match], "tokens"),
                       perplexity=summarize([30.0], "", keep_samples=False))
    workload = {"batch_size": bs, "input_len": 32, "output_len": 32, "weight_dtype": wd,
                "fidelity_prompts": 8 if fidelity else None}
    if gguf:
        workload["gguf_type"] = gguf
    return Record(run_id=run, kind="inference", point_key=f"{engine}-{wd}-{gguf}-{bs}-{fidelity}",
                  backend=BackendInfo(name=engine, version="1"),
                  model=ModelInfo(name="smollm2-135m", params=134_515_008),
                  hardware=HardwareInfo(name="cpu-2core", count=1), workload=workload,
                  metrics=metrics)


@pytest.fixture
def store(tmp_path):
    st = Store(tmp_path)
    for c in CONFIGS:
        st.write(_rec(*c))
    # batch 4: no transformers fp32 record there, so the fastest is the basis
    st.write(_rec("llamacpp", "auto", "q8_0", 300.0, 0.8, 2e-4, bs=4))
    st.write(_rec("llamacpp", "auto", "q4_0", 400.0, 0.5, 5e-3, bs=4))
    st.write(_rec("llamacpp", "auto", "q4_1", 999.0, 0, 0, bs=4, fidelity=False))  # no fidelity
    return tmp_path


def test_rows_speedups_and_basis(store):
    from llmbench.report import data, fidelity as fid

    rows = fid.fidelity_rows(data.load(store).df)
    got = {(r["config"], int(r["batch_size"])): (round(r["speedup"], 9), r["speedup_basis"])
           for _, r in rows.iterrows()}
    assert got == {("transformers · fp32", 1): (1.0, "transformers fp32"),
                   ("transformers · bf16", 1): (1.5, "transformers fp32"),
                   ("llamacpp · q4_0", 1): (7.5, "transformers fp32"),
                   ("llamacpp · f16", 1): (5.0, "transformers fp32"),
                   ("llamacpp · q8_0", 4): (0.75, "the fastest"),
                   ("llamacpp · q4_0", 4): (1.0, "the fastest")}


def test_figure_puts_each_configuration_at_its_speedup_and_fidelity(store):
    from llmbench.report import data, fidelity as fid

    rows = fid.fidelity_rows(data.load(store).df)
    fig = fid.speedup_fidelity_figure(rows)
    assert fig.title == "Speed-up vs fidelity"
    pts = sorted((round(x, 9), y) for t in fig.data for x, y in zip(t["x"], t["y"]))
    assert pts == sorted([(1.0, 1.0), (1.5, 0.7), (7.5, 0.4), (5.0, 0.9), (0.75, 0.8), (1.0, 0.5)])
    kl = fid.speedup_fidelity_figure(rows, y="kl")
    assert sorted(y for t in kl.data for y in t["y"]) == pytest.approx(
        sorted([0.0, 8e-4, 6e-3, 1e-4, 2e-4, 5e-3]))
    assert "no record carries fidelity" in str(fid.speedup_fidelity_figure(rows.iloc[0:0]).layout)


def test_report_section_and_dashboard_tab(store, tmp_path_factory):
    from llmbench.dashboard import fidelity as tab
    from llmbench.report import data
    from llmbench.report.html import write_report

    out = tmp_path_factory.mktemp("rep")
    rep = write_report(store, out, png=False)
    page = rep.html.read_text()
    assert "Fidelity beside speed" in page and "7.50 × transformers fp32" in page
    assert "fidelity-fig" in rep.figures
    fig, table = tab.content(data.load(store).df, "match")
    assert len([y for t in fig["data"] for y in t["y"]]) == 6
    assert "llamacpp · q4_0" in str(table)


def test_no_fidelity_records_no_section(tmp_path):
    from llmbench.report.html import write_report

    Store(tmp_path / "s").write(_rec("llamacpp", "auto", "q4_1", 100.0, 0, 0, fidelity=False))
    rep = write_report(tmp_path / "s", tmp_path / "out", png=False)
    assert "Fidelity beside speed" not in rep.html.read_text()
