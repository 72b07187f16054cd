"""The derived columns (report/data.py enrich), computed once per distinct combination of the
values they derive from: known answers for missing values, counts and parallelism read as
floats, imported and reference rows, and the column types."""

import numpy as np
import pandas as pd

from llmbench.report.data import enrich


def _frame():
    nan = np.nan
    return pd.DataFrame({
        "kind": pd.Series(["inference", "reference", "inference", "inference", None, "inference"],
                          dtype="str"),
        "source_tool": pd.Series([None, None, "vllm-bench", None, None, "genai-perf"], dtype=object),
        "hardware": pd.Series(["H200", "A100", None, "H200", "MI300X", "H200"], dtype="str"),
        "hardware_count": [1.0, 4.0, nan, 2.0, 1.0, 1.0],
        "backend": pd.Series(["vllm", "vllm", "sglang", None, "vllm", "vllm"], dtype="str"),
        "tensor_parallel": [1.0, 2.0, nan, 4.0, 1.0, 1.0],
        "pipeline_parallel": [1.0, 2.0, nan, nan, 1.0, 1.0],
        "expert_parallel": [nan, 1.0, nan, 8.0, nan, nan],
        "weight_dtype": pd.Series(["bf16", "fp16", None, "bf16", None, "bf16"], dtype="str"),
        "weight_quant": pd.Series([None, "awq", None, "", None, None], dtype=object),
        "kv_cache_dtype": pd.Series(["auto", None, "fp8", "fp8", None, "auto"], dtype="str"),
        "model_params": [7e9, 70e9, nan, 8e9, 7e9, 7e9],
    })


def test_derived_columns_known_answers():
    df = enrich(_frame())
    assert df["source"].tolist() == ["own", "reference", "imported: vllm-bench", "own", "own",
                                     "imported: genai-perf"]
    assert df["system"].tolist() == ["H200 · vllm", "A100 ×4 · vllm", "? · sglang", "H200 ×2 · ?",
                                     "MI300X · vllm", "H200 · vllm"]
    assert df["engine"].tolist() == ["vllm (own)", "vllm", "sglang (vllm-bench)", "? (own)",
                                     "vllm (own)", "vllm (genai-perf)"]
    assert df["parallelism"].tolist() == ["TP1·PP1", "TP2·PP2", "TP1·PP1", "TP4·PP1·EP8",
                                          "TP1·PP1", "TP1·PP1"]
    assert df["dtype"].tolist() == ["w=bf16 · kv=auto", "w=awq · kv=auto", "w=auto · kv=fp8",
                                    "w=bf16 · kv=fp8", "w=auto · kv=auto", "w=bf16 · kv=auto"]
    assert df["model_params_b"].tolist()[:2] == [7.0, 70.0] and np.isnan(df["model_params_b"][2])
    # text columns as pandas' string arithmetic made them; parallelism stays object
    assert {c: str(df[c].dtype) for c in ("source", "system", "engine", "dtype")} == \
        dict.fromkeys(("source", "system", "engine", "dtype"), "str")
    assert df["parallelism"].dtype == object


def test_missing_fields_and_many_rows():
    """Fields a store lacks read as missing; a long frame of repeated rows labels every row
    as its combination (one call per distinct combination, the same answer per row)."""
    small = pd.DataFrame({"kind": ["inference", "reference"], "hardware": ["H200", "H200"],
                          "backend": ["vllm", "vllm"]})
    df = enrich(small)
    assert df["system"].tolist() == ["H200 · vllm"] * 2
    assert df["parallelism"].tolist() == ["TP1·PP1"] * 2
    assert df["dtype"].tolist() == ["w=auto · kv=auto"] * 2
    assert df["engine"].tolist() == ["vllm (own)", "vllm"]
    big = pd.concat([_frame()] * 500, ignore_index=True)
    got = enrich(big)
    one = enrich(_frame())
    for c in ("source", "system", "engine", "parallelism", "dtype"):
        assert got[c].tolist() == one[c].tolist() * 500, c
