"""analysis/study.py: own records paired with the study's records of the same point, each with
its own hardware's efficiency; nothing paired that differs in engine, batch, lengths or devices."""

from llmbench.analysis.study import markdown, side_by_side


def row(kind, hw, engine="vllm", batch=1, io=128, thr=1000.0, eff=0.5, **kw):
    if kind == "reference":
        kw = {"weight_dtype": "fp16", "kv_cache": "with", **kw}
    return {"kind": kind, "status": "ok", "model": "llama-3-8b", "backend": engine, "hardware": hw,
            "hardware_count": 1, "tensor_parallel": 1, "batch_size": batch, "input_len": io,
            "output_len": io, "total_throughput_tok_s_mean": thr,
            "roofline_efficiency_total_throughput_tok_s": eff, "created_at": "2026-12-01", **kw}


def test_pairs_own_points_with_the_studys_and_keeps_each_hardwares_efficiency():
    rows = [row("reference", "NVIDIA H100 SXM", eff=0.6), row("reference", "NVIDIA A100 SXM 80GB", eff=0.55),
            row("reference", "NVIDIA H100 SXM", batch=64, thr=9000, eff=0.4),
            row("inference", "NVIDIA H200", eff=0.62, weight_dtype="bf16"),
            row("inference", "NVIDIA H200", batch=16),            # the study has no b16 vLLM row here
            row("reference", "NVIDIA H100 SXM", engine="llamacpp"),  # other engine, no own row
            row("reference", "NVIDIA H100 SXM", hardware_count=2, tensor_parallel=2)]
    (only,) = side_by_side(rows)
    assert (only["engine"], only["batch_size"], only["input_len"]) == ("vllm", 1, 128)
    systems = {(s["hardware"], s["source"]): s["efficiency"] for s in only["systems"]}
    assert systems == {("NVIDIA A100 SXM 80GB", "study"): 0.55, ("NVIDIA H100 SXM", "study"): 0.6,
                       ("NVIDIA H200", "llmbench"): 0.62}
    text = markdown([only])
    assert "| vllm | 1 | 128/128 | NVIDIA H200 (llmbench, bf16) | 1,000 | 62.0% |" in text


def test_llamacpp_variants_stay_apart():
    rows = [row("reference", "NVIDIA H100 SXM", engine="llamacpp"),
            row("inference", "NVIDIA H200", engine="llamacpp", gguf_type="f16", eff=0.7),
            row("inference", "NVIDIA H200", engine="llamacpp", gguf_type="q4_0", eff=0.5)]
    (only,) = side_by_side(rows)
    assert sorted(s["variant"] for s in only["systems"] if s["source"] == "llmbench") == ["f16", "q4_0"]


def test_the_studys_factor_experiments_stay_out_and_repeated_rows_give_their_median():
    rows = [row("reference", "H100-SXM", thr=900, eff=0.5), row("reference", "H100-SXM", thr=1100, eff=0.7),
            row("reference", "H100-SXM", thr=5000, eff=0.9, weight_dtype="fp8", weight_quant="fp8"),
            row("reference", "H100-SXM", thr=10, eff=0.01, kv_cache="without"),
            row("reference", "H100-SXM", thr=10, eff=0.01, kv_block_size=64),
            row("inference", "NVIDIA H200")]
    (only,) = side_by_side(rows)
    (study,) = [s for s in only["systems"] if s["source"] == "study"]
    assert (study["throughput_tok_s"], study["efficiency"], study["rows"]) == (1000, 0.6, 2)
    assert "median of 2 rows" in markdown([only])
