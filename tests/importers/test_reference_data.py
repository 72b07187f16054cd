"""Integration: the real published data in ../shared/reference/llm-inference-bench, when present.
The expectations are the README's own statements about the files."""

import csv
from pathlib import Path

import pytest

REF = Path(__file__).resolve().parents[3] / "shared" / "reference" / "llm-inference-bench"
if not REF.is_dir():
    REF = Path("/work/shared/reference/llm-inference-bench")

pytestmark = pytest.mark.skipif(not REF.is_dir(), reason=f"reference data not present at {REF}")


@pytest.fixture(scope="module")
def parsed():
    from llmbench.importers.llm_inference_bench import parse

    res = parse(REF)
    return res.records, res


def _data_rows(path: Path) -> int:
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = [r for r in csv.reader(f) if any(x.strip() for x in r)]
    return len(rows) - 1


def test_every_row_is_read_and_accounted_for(parsed):
    records, rep = parsed
    expected = sum(_data_rows(p) for p in REF.rglob("*.csv"))
    c = rep.counts
    merged = next(v for k, v in c.items() if k.startswith("merged"))
    assert c["files read"] == len(list(REF.rglob("*.csv")))
    assert c["rows read"] == expected
    assert len(records) + merged + len(rep.problems) == c["rows read"]
    assert rep.problems == []  # every quirky row is recovered
    # README: 20 malformed rows in quant_all_results.csv + all 20 of kv_cache_...FP8.csv
    assert c["recovered"] == 40
    assert not rep.remarks  # every column mapped


def test_readme_facts(parsed):
    records, _ = parsed
    hw = {r.hardware.name for r in records}
    assert hw == {"A100-SXM4-40GB", "H100-SXM", "GH200", "MI250", "MI300X", "Max1550",
                  "Gaudi2", "SN40L"}
    assert {r.backend.name for r in records} == {"vllm", "tensorrt-llm", "llamacpp",
                                                 "deepspeed-mii", "deepspeed", "sambaflow"}
    assert all("/" not in r.model.name for r in records)  # every model label is in the catalog
    main_dups = {(r.hardware.name, r.backend.name) for r in records
                 if r.workload["source"] == "Plots/All_results.csv"
                 and any("Plots/All_results.csv:" in n and "duplicate" in n for n in r.notes)}
    # README: duplicate keys for A100/H100/MI250 vLLM; one device under two Intel labels adds
    # the Max 1550 rows that repeat a PVC configuration
    assert main_dups == {("A100-SXM4-40GB", "vllm"), ("H100-SXM", "vllm"), ("MI250", "vllm"),
                         ("Max1550", "vllm")}
    label_keys = {}
    for r in records:
        if r.workload["source"] == "Plots/All_results.csv":
            w = r.workload
            k = (w["hardware_label"], r.hardware.count, w["framework_label"], w["model_label"],
                 w["input_len"], w.get("n_batch") or w["batch_size"])
            label_keys[k] = label_keys.get(k, 0) + 1
    assert sum(n > 1 for n in label_keys.values()) == 57
    sn_best = [r for r in records if r.hardware.name == "SN40L"
               and r.workload["source"].startswith("gh-pages/docs/data/Best_Hardware")]
    assert len(sn_best) == 40 and all(r.workload.get("duplicate_config") for r in sn_best)
    power_trt = [r for r in records if r.workload["source"] == "gh-pages/docs/data/Power/All_results.csv"
                 and r.backend.name == "tensorrt-llm"]
    assert power_trt and all(any("Throughput empty" in n for n in r.notes) for r in power_trt)
    assert all(r.metric("avg_power_w") < 1500 for r in records if "avg_power_w" in r.metrics)
    deci_h100 = [r for r in records if r.model.name == "decilm-7b" and r.hardware.name == "H100-SXM"
                 and "avg_power_w" in r.metrics]
    # README: the 60 H100 DeciLM-7B rows of the perplexity file are in mW (its 61st is in W)
    in_mw = [r for r in deci_h100 if any("mW" in n for n in r.notes)]
    assert len(in_mw) == 60 and len(deci_h100) == 61


@pytest.mark.slow
def test_full_import_and_claims(tmp_path):
    from llmbench.analysis.claims import run
    from llmbench.importers.registry import import_path

    r = import_path("llm-inference-bench", REF, tmp_path)
    assert r.with_roofline == len(r.result.records)
    text = run(tmp_path, ["io-asymmetry", "above-roofline"])
    # longer outputs cost more than longer inputs: every mirror is slower
    asym = [line for line in text.splitlines() if line.startswith("| ") and line[2].isdigit()]
    assert asym and all(float(line.split("|")[5]) > 1 for line in asym[:15])
