"""The findings view (analysis/findings.py, `llmbench findings`). The study's side is recomputed
here from the raw published CSVs (csv module, first occurrence of a row, as the claims do); the
own side from records written with known throughputs, bounds and counters."""

import csv
import json
from pathlib import Path

import pytest

from llmbench.analysis import findings as F
from llmbench.measure.metric_stats import MetricStats
from llmbench.store.record import BackendInfo, HardwareInfo, ModelInfo, Record, Roofline
from llmbench.store.store import Store

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "llm-inference-bench"
if not REF.is_dir():
    REF = Path("/work/shared/reference/llm-inference-bench")
needs_ref = pytest.mark.skipif(not REF.is_dir(), reason=f"reference data not present at {REF}")

HF = {"llama-3-8b": "meta-llama/Meta-Llama-3-8B", "llama-2-7b": "meta-llama/Llama-2-7b-hf",
      "mistral-7b": "mistralai/Mistral-7B-v0.1", "llama-3-70b": "meta-llama/Meta-Llama-3-70B"}


def csv_rows(rel):
    with open(REF / rel, newline="", encoding="utf-8-sig") as f:
        return [r for r in csv.DictReader(f) if any((v or "").strip() for v in r.values())]


def first(rows, **want):
    for r in rows:
        if all(str(r[k]).strip() == str(v) for k, v in want.items()):
            return r
    raise AssertionError(f"no row {want}")


def main_thr(hw, n, fw, model, io, b):
    r = first(csv_rows("Plots/All_results.csv"), **{"Hardware": hw, "Num of Hardware": n, "Framework": fw,
                                                    "Model": HF[model], "Input Output Length": io,
                                                    "Batch Size": b})
    return float(r["Throughput"])


def rec(model="llama-3-8b", backend="vllm", b=1, i=128, o=128, thr=None, eff=None, bound=None, lat=None,
        dram=None, quant=None, kv=None, block=16, swept=False, gguf=None, status="ok", error=None,
        hw="NVIDIA H200"):
    """A record as llmbench writes it: a swept KV block size is in the workload; the engine's
    effective one in backend.options (absent on a point whose engine never loaded)."""
    opts = {"gguf_type": gguf} if gguf else {}   # llama.cpp: in the workload too (workload_facts)
    if status == "ok":
        opts["kv_block_size"] = block
    r = Record(run_id="own", kind="inference", status=status, error=error,
               backend=BackendInfo(name=backend, options=opts),
               model=ModelInfo(name=model), hardware=HardwareInfo(name=hw),
               workload={"batch_size": b, "input_len": i, "output_len": o, "weight_quant": quant,
                         "kv_cache_dtype": kv, "kv_block_size": block if swept else None,
                         "weight_dtype": "bf16",
                         "tensor_parallel": 1, "pipeline_parallel": 1,
                         **({"gguf_type": gguf} if gguf else {})})
    if thr is not None:
        r.metrics["total_throughput_tok_s"] = MetricStats(unit="tok/s", n=1, mean=thr)
    if lat is not None:
        r.metrics["batch_latency_s"] = MetricStats(unit="s", n=1, mean=lat)
    if eff is not None:
        r.roofline = Roofline(bound={"total_throughput_tok_s": bound or thr / eff},
                              efficiency={"total_throughput_tok_s": eff}, binding_resource="memory")
    r.hardware_counters = {"dram_bw_util_pct": dram, "throttled": False} if dram is not None else \
        {"absent": "record written by the test without counters"}
    return r


def own_rows(tmp_path, records):
    st = Store(tmp_path / "own")
    for r in records:
        st.write(r)
    return F.record_rows(d for _, d in Store(tmp_path / "own").raw())


@pytest.fixture(scope="module")
def ref_table():
    return F.reference_table(REF)


def by_key(fs):
    return {f.key: f for f in fs}


@needs_ref
def test_batch_scaling_from_the_raw_csv_and_own_records(ref_table, tmp_path):
    s2048 = main_thr("Nvidia A100 GPU", 1, "vLLM", "llama-3-8b", 2048, 64) / \
        main_thr("Nvidia A100 GPU", 1, "vLLM", "llama-3-8b", 2048, 1)
    s1024 = main_thr("Nvidia A100 GPU", 1, "vLLM", "llama-3-8b", 1024, 64) / \
        main_thr("Nvidia A100 GPU", 1, "vLLM", "llama-3-8b", 1024, 1)
    rows = own_rows(tmp_path, [rec(b=64, i=2048, o=2048, thr=9828.0, eff=0.73, dram=80.0),
                               rec(b=1, i=2048, o=2048, thr=395.0, eff=0.64, dram=40.0),
                               # another machine's batch-1 point: never paired with the H200's
                               rec(b=1, i=2048, o=2048, thr=100.0, eff=0.6, hw="NVIDIA A10")])
    f = by_key(F.findings(ref_table, rows))["batch-64-vs-1"]
    assert f.own[0].hardware == "NVIDIA H200"
    a10 = by_key(F.findings(ref_table, rows, hardware="NVIDIA A10"))["batch-64-vs-1"]
    assert a10.own[0].value is None and a10.verdict == "not measured"
    assert f.study[0].value == pytest.approx(s2048) and f.study[1].value == pytest.approx(s1024)
    own = 9828.0 / 395.0
    assert f.own[0].value == pytest.approx(own)
    assert f.verdict == "differs"            # 24.9x here against the data's 15.3x at in/out 2048
    assert f"{(own / s2048 - 1) * 100:+.0f}%" in f.reason
    assert "batch 64 73% vs batch 1 64% here" in f.reason
    # the counters beside the bound: 80% vs 73% agree; 40% vs 64% does not
    assert any("batch 64" in c and "agree" in c for c in f.counters)
    assert any("batch 1" in c and "DISAGREE" in c and "fewer bytes" in c for c in f.counters)


@needs_ref
def test_io_mirror_first_occurrence_of_the_heatmap(ref_table, tmp_path):
    hm = csv_rows("Plots/Fig_1_b/Heatmap_input_vs_output.csv")
    lat = {(i, o): float(first(hm, max_input_length=i, max_output_len=o)["latency"])
           for i, o in ((128, 1024), (1024, 128), (128, 2048), (2048, 128))}
    rows = own_rows(tmp_path, [rec(i=128, o=1024, lat=5.2, thr=1152 / 5.2, eff=0.6),
                               rec(i=1024, o=128, lat=0.70, thr=1152 / 0.7, eff=0.6)])
    f = by_key(F.findings(ref_table, rows))["io-asymmetry"]
    assert f.study[0].value == pytest.approx(lat[128, 1024] / lat[1024, 128])
    assert f.study[1].value == pytest.approx(lat[128, 2048] / lat[2048, 128])
    assert f.own[0].value == pytest.approx(5.2 / 0.7)
    assert f.verdict == "holds"   # 7.43 vs the data's 7.63


@needs_ref
def test_block_size_refusal_is_the_engines_answer(ref_table, tmp_path):
    fig = csv_rows("Plots/Fig_2_b/All_results.csv")
    t = {b: float(first(fig, Model=HF["llama-3-8b"], **{"Batch Size": 64, "KV Cache Block_size": b})["Throughput"])
         for b in (8, 16)}
    msg = ("load failed: RuntimeError: Engine core initialization failed\nengine output: ValueError: No valid "
           "attention backend found for cuda ... FLASH_ATTN: [block_size not supported]")
    # 16: vLLM's default (not swept, read from the engine's options); 8, 32, 64 swept
    rows = own_rows(tmp_path, [rec(b=64, thr=17000.0, eff=0.59, block=16),
                               rec(b=64, thr=17200.0, eff=0.6, block=32, swept=True),
                               rec(b=64, thr=16900.0, eff=0.58, block=64, swept=True),
                               rec(b=64, block=8, swept=True, status="failed", error=msg)])
    f = by_key(F.findings(ref_table, rows))["kv-block-size"]
    assert f.study[0].value == pytest.approx(t[16] / t[8])
    assert f.verdict == "holds" and "block_size not supported" in f.reason
    assert f"span {(17200 / 16900 - 1) * 100:.1f}%" in f.reason
    assert any(p.get("label") == "block 8" and "block_size not supported" in p["refused"] for p in f.own[0].parts)
    # vLLM's default block alone says nothing about block sizes
    only16 = by_key(F.findings(ref_table, own_rows(tmp_path / "one", [rec(b=64, thr=17000.0, eff=0.59)])))
    assert only16["kv-block-size"].verdict == "not measured"


@needs_ref
def test_fp8_direction_and_llamacpp_beside_it(ref_table, tmp_path):
    base = [rec(b=1, thr=397.0, eff=0.62), rec(b=64, thr=17000.0, eff=0.59)]
    faster = own_rows(tmp_path / "a", base + [rec(b=1, thr=600.0, eff=0.5, quant="fp8"),
                                              rec(b=1, backend="llamacpp", thr=600.0, eff=0.5, gguf="q8_0"),
                                              rec(b=1, backend="llamacpp", thr=400.0, eff=0.6, gguf="f16")])
    f = by_key(F.findings(ref_table, faster))["fp8-int8"]
    assert f.verdict == "holds" and f.own[0].value == pytest.approx(600 / 397)
    assert "llama.cpp Q8_0 over F16, batch 1, in/out 128: 1.50x" in f.reason
    slower = own_rows(tmp_path / "b", base + [rec(b=1, thr=250.0, eff=0.2, quant="fp8")])
    g = by_key(F.findings(ref_table, slower))["fp8-int8"]
    assert g.verdict == "differs" and "slower" in g.reason


@needs_ref
def test_gqa_and_70b_from_the_main_sweep(ref_table, tmp_path):
    h = {m: main_thr("Nvidia H100 GPU", 1, "vLLM", m, 128, 64) for m in ("llama-3-8b", "llama-2-7b")}
    a70 = {(io, b): main_thr("Nvidia A100 GPU", 4, "TensorRT-LLM", "llama-3-70b", io, b) for io, b in
           ((2048, 1), (2048, 64), (1024, 64))}
    h70 = {(io, b): main_thr("Nvidia H100 GPU", 4, "TensorRT-LLM", "llama-3-70b", io, b) for io, b in
           ((1024, 1), (1024, 64))}
    rows = own_rows(tmp_path, [rec(b=64, thr=17056.0, eff=0.59), rec(model="llama-2-7b", b=64, thr=15000.0, eff=0.6),
                               rec(model="llama-3-70b", b=1, thr=60.0, eff=0.5, quant="fp8"),
                               rec(model="llama-3-70b", b=64, thr=2400.0, eff=0.3, quant="fp8")])
    fs = by_key(F.findings(ref_table, rows))
    g = fs["gqa"]
    s = next(x for x in g.study if x.hardware == "H100-SXM" and "llama-3-8b" in x.what and "io 128" in x.what)
    assert s.value == pytest.approx(h["llama-3-8b"] / h["llama-2-7b"])
    assert g.own[0].value == pytest.approx(17056 / 15000) and g.verdict == "holds"
    k = fs["llama-3-70b"]
    assert k.study[0].value == pytest.approx(h70[1024, 64] / a70[1024, 64])
    assert k.study[2].value == pytest.approx(h70[1024, 64] / h70[1024, 1])
    assert k.study[3].value == pytest.approx(a70[2048, 64] / a70[2048, 1])
    assert k.own[0].value == pytest.approx(40.0) and k.verdict == "holds"   # 40x vs 39x


@needs_ref
def test_what_cannot_run_says_why_and_nothing_measured_says_what_would(ref_table, tmp_path):
    fs = by_key(F.findings(ref_table, own_rows(tmp_path, [])))
    p = fs["parallelism-and-mii"]
    assert p.verdict == "cannot run here" and "one H200" in p.reason and "DeepSpeed-MII" in p.reason
    assert fs["fp8-int8"].verdict == "not measured" and "findings-vllm" in fs["fp8-int8"].reason
    assert all(not s.value for f in fs.values() for s in f.own)


def test_counter_checks_both_ways_and_absent():
    cs = F.counter_checks([{"label": "a", "efficiency": 0.6, "dram_bw_util_pct": 66.0},
                           {"label": "b", "efficiency": 0.3, "dram_bw_util_pct": 80.0},
                           {"label": "c", "efficiency": 0.7, "dram_bw_util_pct": None}])
    assert "agree" in cs[0] and "DISAGREE" not in cs[0]
    assert "DISAGREE" in cs[1] and "more bytes" in cs[1]
    assert "not in the record" in cs[2] and "c 70%" in cs[2]


@needs_ref
def test_cli_json(tmp_path):
    from typer.testing import CliRunner

    from llmbench.cli import app

    own_rows(tmp_path, [rec(b=64, i=2048, o=2048, thr=9828.0, eff=0.73), rec(b=1, i=2048, o=2048, thr=395.0, eff=0.64)])
    r = CliRunner().invoke(app, ["findings", "--results", str(tmp_path / "own"), "--reference", str(REF),
                                 "--format", "json"])
    assert r.exit_code == 0, r.output
    out = {f["key"]: f for f in json.loads(r.output)}
    assert out["batch-64-vs-1"]["own"][0]["value"] == pytest.approx(9828 / 395)
    assert len(out) == len(F.FINDINGS)
    from llmbench.errors import SpecError

    with pytest.raises(SpecError, match="no study records"):
        F.load(tmp_path / "own", tmp_path / "own")
