"""Every record kind the store holds gets its view in the report, and the best-configuration
table never mixes serving with offline rows."""

import re

import pytest

pytest.importorskip("plotly", reason="the dashboard extra (plotly, pandas) is not installed")
pytest.importorskip("pandas", reason="the dashboard extra (plotly, pandas) is not installed")

from report_records import own_records  # noqa: E402

from llmbench.measure.stats import summarize  # noqa: E402
from llmbench.report import data as data_mod  # noqa: E402
from llmbench.report.best import BestQuery, find_best  # noqa: E402
from llmbench.report.html import write_report  # noqa: E402
from llmbench.report.tables import kind_table  # noqa: E402
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record  # noqa: E402
from llmbench.store.store import Store  # noqa: E402


def perplexity_record(ppl: float, context_len: int = 512) -> Record:
    return Record(
        run_id="own-ppl", kind="perplexity", point_key=f"ppl-{context_len}",
        backend=BackendInfo(name="llamacpp"), model=ModelInfo(name="smollm2-135m"),
        hardware=HardwareInfo(name="cpu-2core"),
        workload={"batch_size": 1, "input_len": 1, "output_len": 1, "context_len": context_len,
                  "stride": context_len // 2, "text": "bundled"},
        metrics={"perplexity": summarize([ppl], ""), "nll_per_token": summarize([2.5], "nats"),
                 "scored_tokens": summarize([4095], "tokens"),
                 "eval_throughput_tok_s": summarize([812.5], "tok/s")})


def training_record() -> Record:
    return Record(
        run_id="own-train", kind="training", point_key="gpt2-xl",
        backend=BackendInfo(name="pytorch"), model=ModelInfo(name="gpt2-xl", params=1_555_972_800),
        hardware=HardwareInfo(name="NVIDIA H200", count=1),
        workload={"seq_len": 1024, "micro_batch": 16, "precision": "bf16", "compile": True},
        metrics={"tokens_per_s": summarize([41234.0], "tok/s"), "tflops": summarize([423.9], "TFLOP/s"),
                 "mfu": summarize([0.4286], ""), "step_time_s": summarize([0.397], "s")})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """Perplexity and training records only, one configuration each: nothing to draw a trend of."""
    root = tmp_path_factory.mktemp("kinds")
    s = Store(root)
    s.write(perplexity_record(11.73))
    s.write(training_record())
    return root


def _section(html: str, anchor: str) -> str:
    start = html.index(f"<h2 id='{anchor}'>")
    nxt = html.find("<h2 id=", start + 1)
    return html[start:nxt]


def test_perplexity_and_training_records_get_their_tables(store, tmp_path):
    html = write_report(store, tmp_path / "rep", png=False).html.read_text()
    own = _section(html, "own")
    assert "No records of this kind" not in own
    assert "Perplexity" in own and "11.7" in own and "812" in own
    assert "Training throughput and MFU" in own and "42.9%" in own and "424" in own
    assert "41,234" in own and "NVIDIA H200 · pytorch" in own


def test_perplexity_table_tells_configurations_apart(tmp_path):
    s = Store(tmp_path)
    for ctx, ppl in ((512, 11.7), (1024, 10.2), (1024, 10.4)):
        s.write(perplexity_record(ppl, ctx))
    rows, note = kind_table(data_mod.load(tmp_path).df, "perplexity")
    # numeric order, duplicates merged; the one setting said in every row
    assert [r["settings"] for r in rows] == ["context len 512 · stride 256",
                                             "context len 1024 · stride 512"]
    assert rows[1]["perplexity"] == "10.3" and rows[1]["records"] == "2"
    assert note == "every row: model smollm2-135m"


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """Offline and serving records of one model and input length."""
    root = tmp_path_factory.mktemp("mixed")
    s = Store(root)
    for r in own_records():
        if r.kind == "serving":
            r.workload["input_len"] = 32
            r.workload.update(num_prompts=int(20 * r.workload["request_rate"]), duration_s=None,
                              input_len_dist="32", output_len_dist="32", warmup=0.0, cooldown=0.0)
        s.write(r)
    return data_mod.load(root)


def test_best_table_never_mixes_serving_and_offline(mixed):
    offline, notes = find_best(mixed, BestQuery(model="smollm2-135m", input_len=32, output_len=32))
    assert len(offline) == 8 and not offline["system"].str.contains("server").any()
    assert any("4 serving record(s) left out" in n for n in notes)
    serving, _ = find_best(mixed, BestQuery(model="smollm2-135m", input_len=32, mode="serving"))
    assert len(serving) == 4 and serving["system"].str.contains("llamacpp-server").all()
    # A serving row reads as its load, not as every option that differs.
    assert sorted(serving["config"]) == [f"rate {r} req/s" for r in (1, 2, 4, 8)]


def test_report_ranks_serving_in_its_own_table(mixed, tmp_path):
    html = write_report(mixed.root, tmp_path / "rep", png=False).html.read_text()
    best = _section(html, "best")
    assert "id='best-own'" in best and "id='best-own-serving'" in best
    offline = best[best.index("id='best-own'"):best.index("id='best-own-serving'")]
    assert "llamacpp-server" not in offline
    serving = best[best.index("id='best-own-serving'"):]
    assert "rate 8 req/s" in serving and not re.search(r"num_prompts|input_len_dist", serving)


def test_no_empty_figure_for_a_metric_the_shown_slice_lacks(tmp_path):
    """Training records of two kinds: scaling efficiency only where the pins do not look (the
    view pins the slice with the most device counts); no empty 'no records' frame for it."""
    s = Store(tmp_path / "s")
    for r in own_records():
        if r.kind == "training":
            s.write(r)  # 1, 2, 4, 8 devices, no scaling_efficiency
    small = training_record()  # the same model with input_len set: input_len gets pinned
    small.model.name, small.workload["input_len"] = "gpt2-small", 1024
    s.write(small)
    for n in (1, 2):  # scaling efficiency only outside the pinned slice (input_len = none)
        rec = training_record()
        rec.hardware.count = n
        rec.point_key = f"xl-{n}"
        rec.workload["input_len"] = 1024
        rec.metrics["scaling_efficiency"] = summarize([0.9], "")
        s.write(rec)
    rep = write_report(tmp_path / "s", tmp_path / "rep", png=False)
    assert "own-training" in rep.figures
    assert "own-training-scaling_efficiency" not in rep.figures
