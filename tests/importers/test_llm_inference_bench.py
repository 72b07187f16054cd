"""The LLM-Inference-Bench importer on small CSVs written here in the data set's schemas,
quirks included (blank lines, CRLF, trailing tabs, an unquoted comma, a short row, mW power,
empty throughput, llama.cpp's n_batch, duplicates, a context overflow)."""

from pathlib import Path

import pytest

from llmbench.importers.llm_inference_bench import parse, parse_dtypes, parse_parallelism

FIX = Path(__file__).parent / "fixtures" / "lib"


@pytest.fixture(scope="module")
def parsed():
    res = parse(FIX)
    return res.records, res


def find(records, **kw):
    out = []
    for r in records:
        w = r.workload
        if all((getattr(r.hardware, "name") if k == "hw" else r.backend.name if k == "backend"
                else r.model.name if k == "model" else w.get(k)) == v for k, v in kw.items()):
            out.append(r)
    return out


def test_counts(parsed):
    records, rep = parsed
    c = rep.counts
    assert c["files read"] == 12
    assert c["rows read"] == 32          # blank lines are not rows
    assert c["recovered"] == 1           # the unquoted "Weight = fp8, KV Cache = fp8"
    assert len(rep.problems) == 1 and "quant_all_results.csv:4: 11 fields for 9 columns" in rep.problems[0]
    merged = next(v for k, v in c.items() if k.startswith("merged"))
    assert merged == 1                   # gh-pages/Best row 2 repeats Plots/All_results row 3
    assert len(records) == 32 - 1 - 1
    flagged = sum(bool(r.notes) for r in records)
    assert flagged > 0
    text = "\n".join(rep.lines())
    assert "rows read: 32" in text and "imported: 30" in text and "not read: 1" in text
    assert f"flagged: {flagged} records" in text


def test_records_are_ordinary_reference_records(parsed):
    records, _ = parsed
    for r in records:
        assert r.kind == "reference" and r.status == "ok" and r.run_id == "llm-inference-bench"
        for k in ("batch_size", "input_len", "output_len", "tensor_parallel", "pipeline_parallel",
                  "expert_parallel", "kv_block_size", "kv_cache_dtype", "weight_dtype",
                  "kv_cache", "speculative_model", "source", "source_row"):
            assert k in r.workload, k
        assert r.sources[0] == f"{r.workload['source']}:{r.workload['source_row']}"


def test_exact_copy_is_merged_with_both_sources(parsed):
    records, _ = parsed
    (r,) = find(records, hw="A100-SXM4-40GB", backend="vllm", model="llama-2-7b", batch_size=1,
                input_len=128)
    assert r.sources == ["Plots/All_results.csv:3", "gh-pages/Best/All_results.csv:2"]
    assert r.workload["source_row"] == 3  # CRLF and the blank line counted as lines


def test_duplicate_configurations_kept_and_flagged(parsed):
    records, _ = parsed
    dup = find(records, hw="A100-SXM4-40GB", backend="vllm", model="llama-2-7b", batch_size=16,
               input_len=128)
    assert len(dup) == 2 and all(r.workload["duplicate_config"] for r in dup)
    assert all(any("duplicate configuration" in n for n in r.notes) for r in dup)
    sn = find(records, hw="SN40L")
    assert len(sn) == 2 and {r.metric("batch_latency_s") for r in sn} == {0.5, 0.6}
    assert all(r.backend.name == "sambaflow" and r.model.name == "llama-3-8b" for r in sn)


def test_canonical_names(parsed):
    records, _ = parsed
    intel = find(records, hw="Max1550")
    assert {r.workload["hardware_label"] for r in intel} == {"Intel PVC GPU", "Intel Max 1550"}
    assert {r.backend.name for r in records} == {"vllm", "tensorrt-llm", "llamacpp", "deepspeed",
                                                 "sambaflow"}
    (mi,) = find(records, hw="MI250")
    assert mi.hardware.count == 4 and mi.workload["tensor_parallel"] == 4
    assert mi.model.name == "qwen2-72b" and mi.model.params > 7e10
    (unk,) = find(records, hw="Gaudi2", model="foo/unknown-7b")
    assert unk.workload["kv_cache"] == "with"  # unstated: every engine here decodes with a cache
    assert unk.model.name == "foo/unknown-7b" and any("not in the catalog" in n for n in unk.notes)


def test_llamacpp_batch_is_n_batch(parsed):
    records, _ = parsed
    (r,) = find(records, backend="llamacpp")
    assert r.workload["batch_size"] == 1 and r.workload["n_batch"] == 64
    assert r.workload["pipeline_parallel"] == 2 and r.workload["tensor_parallel"] == 1
    # one sequence: (in + out) / latency, which is what the file holds
    assert r.metric("total_throughput_tok_s") == pytest.approx(512 / 8.0)
    assert r.metric("output_throughput_tok_s") == pytest.approx(256 / 8.0)
    assert any("n_batch" in n for n in r.notes)


def test_dtype_strings_and_recovered_row(parsed):
    records, _ = parsed
    assert parse_dtypes("Weight = int8_sq, KV Cache = fp8") == ("int8", "int8_sq", "fp8")
    assert parse_dtypes("Weight = full_prec, KV Cache = int8") == ("fp16", None, "int8")
    (fp8,) = find(records, hw="H100-SXM", model="llama-3-8b", weight_dtype="fp8")
    assert fp8.workload["kv_cache_dtype"] == "fp8" and any("recovered" in n for n in fp8.notes)
    (sq,) = find(records, weight_quant="int8_sq")
    assert sq.workload["weight_dtype"] == "int8" and sq.workload["kv_cache_dtype"] == "int8"
    (gh,) = find(records, hw="GH200", model="llama-3-8b")
    assert gh.workload["weight_dtype"] == "fp8" and gh.backend.name == "vllm"
    assert any("file name" in n for n in gh.notes)


def test_power_units_and_empty_throughput(parsed):
    records, _ = parsed
    (trt,) = find(records, hw="H100-SXM", backend="tensorrt-llm", input_len=1024, batch_size=16)
    assert trt.metric("avg_power_w") == pytest.approx(350.0)
    assert trt.metric("total_throughput_tok_s") == pytest.approx(16 * 2048 / 10.0)
    assert trt.metric("energy_j") == pytest.approx(3500.0)
    assert any("Throughput empty" in n for n in trt.notes) and any("mW" in n for n in trt.notes)
    deci = find(records, model="decilm-7b")
    assert sorted(r.metric("avg_power_w") for r in deci) == [300.0, 400.0]
    assert all(r.metric("perplexity") == 3.1 for r in deci)
    for r in deci:  # the file's Throughput_per_watt agrees once power is in W
        assert not any("Throughput_per_watt" in n for n in r.notes)


def test_parallelism_labels(parsed):
    records, _ = parsed
    assert parse_parallelism("Hybird Tensor (2) and Pipeline (2) Parallelism", 4) == (2, 2, 1)
    assert parse_parallelism("Hybrid TP = 2 and EP = 2", 4) == (2, 1, 2)
    assert parse_parallelism("Tensor Parallelism", 4) == (4, 1, 1)
    assert parse_parallelism("PP", 2) == (1, 2, 1)
    assert parse_parallelism("EP", 1) == (1, 1, 1)
    with pytest.raises(ValueError):
        parse_parallelism("Data Parallelism", 4)
    (ep,) = find(records, model="mixtral-8x7b", parallelism_label="EP")
    assert (ep.workload["tensor_parallel"], ep.workload["expert_parallel"]) == (1, 4)


def test_ttft_itl_file(parsed):
    records, _ = parsed
    (h,) = find(records, hw="H100-SXM", input_len=1024, ttft_definition="batch")
    assert h.workload["output_len"] == 1024
    assert h.metric("itl_s") == pytest.approx((10.63 - 0.4) / 1023)
    assert h.metric("paper_itl_s") == pytest.approx((10.63 - 0.4) / (16 * 1023))
    (g,) = find(records, hw="GH200", ttft_definition="batch")
    assert g.metric("ttft_s") == 0.33 and "batch_latency_s" not in g.metrics
    assert any("short row" in n for n in g.notes)


def test_other_workload_fields(parsed):
    records, _ = parsed
    kv = {r.workload["kv_cache"] for r in find(records, hw="Gaudi2", model="llama-2-7b")}
    assert kv == {"with", "without"}
    (blk,) = find(records, kv_block_size=16)
    assert blk.workload["input_len"] == 1024
    spec = find(records, batch_size=64, input_len=128)
    assert {r.workload["speculative_model"] for r in spec} == {"JackFram/llama-68m", None}
    (heat,) = find(records, output_len=4096)
    assert heat.workload["input_len"] == 128 and heat.hardware.name == "A100-SXM4-40GB"
    assert heat.backend.name == "tensorrt-llm" and heat.workload["kv_cache_dtype"] == "fp16"
    (over,) = find(records, hw="GH200", model="llama-7b")
    assert over.workload["context_overflow"] is True


def test_every_known_model_row_gets_a_roofline(parsed):
    from llmbench.roofline import annotate

    records, _ = parsed
    done = {id(r) for r in records if annotate(r)}
    for r in records:
        if r.model.name == "foo/unknown-7b":
            assert id(r) not in done
        else:
            assert id(r) in done, r.workload["source"]
    (over,) = find(records, hw="GH200", model="llama-7b")
    assert over.roofline.efficiency["batch_latency_s"] > 1
    assert any("above 1" in n for n in over.roofline.notes)
