"""The images request shape (issue 41 item 3): its options and their errors, PNG data URLs a
real decoder opens, an even seeded split over (resolution, count) groups, and a point against a
server of known behaviour (tests/loadgen/vision_server.py: transformers' smart_resize per image,
the prompt's words + 13 template tokens, a first-token delay proportional to the image tokens):
the server's image tokens equal the formula, TTFT splits by group as the server delayed it."""

import base64
import io
import sys
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import cli, has

from llmbench.errors import SpecError
from llmbench.kinds.serving.config import ServeConfig
from llmbench.loadgen.client import RequestSpec, request_body
from llmbench.loadgen.png import png_bytes, ramp_pixels

sys.path.insert(0, str(Path(__file__).resolve().parent))
from vision_server import TEMPLATE_TOKENS, VisionServer, image_tokens  # noqa: E402


@pytest.fixture
def tiny_vl(tmp_path_factory, monkeypatch):
    """The tiny Qwen2-VL's directory (config, tokenizer with chat template, preprocessor), in a
    cache of this test session."""
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    from llmbench.models.sources import tiny_vlm

    return tiny_vlm("qwen2-vl-tiny")


def _cfg(**opts):
    return ServeConfig(shape="images", api="chat", shape_options=opts)


@pytest.mark.parametrize("opts, message", [
    ({"resolution": "448"}, "'448' is not WIDTHxHEIGHT"),
    ({"resolution": "0x10"}, "each side from 1 to 16384"),
    ({"resolution": "448x448,448x448"}, "resolution repeats a value"),
    ({"count": 0}, "from 1 to 64 images"),
    ({"count": "one"}, "'one' is not a whole number"),
    ({"counts": 2}, "counts"),
])
def test_bad_options_are_usage_errors_naming_the_flag(opts, message):
    with pytest.raises(SpecError, match="--shape-opt") as e:
        _cfg(**opts)
    assert message in str(e.value)


def test_images_are_sent_on_chat_only():
    with pytest.raises(SpecError, match="sent on chat, not completions"):
        ServeConfig(shape="images")


def test_options_read_lists_and_comma_text_alike():
    assert _cfg(resolution="448x448,224X224", count="1,2").request_shape().options.groups() == \
        [(448, 448, 1), (448, 448, 2), (224, 224, 1), (224, 224, 2)]
    assert _cfg(resolution=["640x480"], count=[3]).request_shape().options.groups() == [(640, 480, 3)]
    assert _cfg().request_shape().options.groups() == [(448, 448, 1)]


@pytest.mark.skipif(not has("PIL"), reason="pillow not installed")
@pytest.mark.parametrize("size", [(640, 480), (1, 1), (3, 700), (1344, 1344)])
def test_png_files_decode_to_their_pixels(size):
    from PIL import Image

    pixels = ramp_pixels(*size, (7, 1))
    img = Image.open(io.BytesIO(png_bytes(pixels)))
    assert img.size == size and img.mode == "RGB"
    assert np.array_equal(np.asarray(img), pixels)
    # the ramp's definition, recomputed: (a*x + b*y + d) mod 256 per channel
    rng = np.random.default_rng([7, 1, 0x1A6E])
    a, b, d = (rng.integers(1, 256, 3) for _ in range(3))
    y, x = np.mgrid[0:size[1], 0:size[0]]
    assert np.array_equal(pixels, (a * x[..., None] + b * y[..., None] + d) % 256)


def test_the_plan_splits_requests_evenly_and_every_image_is_its_own():
    shape = _cfg(resolution="224x224,448x448", count="1,2").request_shape()
    specs = shape.plan([RequestSpec(f"w{i}", 1, 4) for i in range(40)], seed=3)
    tags = [s.tag for s in specs]
    assert sorted(set(tags)) == ["1@224x224", "1@448x448", "2@224x224", "2@448x448"]
    assert all(tags.count(t) == 10 for t in set(tags))
    again = shape.plan([RequestSpec(f"w{i}", 1, 4) for i in range(40)], seed=3)
    other = shape.plan([RequestSpec(f"w{i}", 1, 4) for i in range(40)], seed=4)
    assert [s.tag for s in again] == tags != [s.tag for s in other]
    # the body: the images (as many as the group says) before the text, each a different PNG
    urls = []
    for s in specs[:8]:
        body = shape.body(request_body(s, "m", "chat"), s)
        (msg,) = body["messages"]
        *images, text = msg["content"]
        assert text == {"type": "text", "text": s.prompt} and len(images) == s.count
        urls += [i["image_url"]["url"] for i in images]
    assert all(u.startswith("data:image/png;base64,") for u in urls) and len(set(urls)) == len(urls)


def test_a_plain_model_has_no_formula_and_nothing_judged():
    shape = _cfg().request_shape()     # the bundled SmolLM2: no image processor
    assert shape.formula is None and not shape.judged


@pytest.mark.skipif(not has("transformers") or not has("PIL"), reason="transformers or pillow not installed")
def test_a_point_against_a_server_of_known_behaviour(tiny_vl, tmp_path, capsys):
    """Known answers: the server's prompt count is the words + 13 + per image transformers'
    smart_resize grid/4 + 2, so image tokens per request are count x that; TTFT waits
    0.05 s + 2 ms per image token (closed loop, one at a time: no queueing), so no group's TTFT
    is below its delay, the fastest of each is near it, and the groups order by image tokens."""
    from llmbench.store.store import Store

    with VisionServer(base_s=0.05, s_per_image_token=0.002) as srv:
        code, out = cli(["serve", srv.url, "--model", str(tiny_vl), "--api", "chat", "--shape", "images",
                         "--shape-opt", "resolution=224x224,448x448", "--shape-opt", "count=1,2",
                         "--concurrency", "1", "-n", "8", "--input-len", "12", "--output-len", "4",
                         "--warmup-requests", "0", "--no-server-metrics", "--results", str(tmp_path)], capsys)
    assert code == 0, out
    assert sorted(srv.sizes) == sorted([[(224, 224)]] * 2 + [[(224, 224)] * 2] * 2
                                       + [[(448, 448)]] * 2 + [[(448, 448)] * 2] * 2)
    assert len(set(srv.pixels)) == len(srv.pixels) == 12     # every image decoded, each its own
    (rec,) = Store(tmp_path).records()
    assert rec.workload["request_shape"] == "images"
    by = rec.serving["by_images"]
    assert list(by) == ["1@224x224", "2@224x224", "1@448x448", "2@448x448"]
    per_image = {224: image_tokens(224, 224), 448: image_tokens(448, 448)}
    assert per_image == {224: 8 * 8 + 2, 448: 16 * 16 + 2}
    for label, g in by.items():
        n, side = int(label[0]), int(label.split("x")[-1])
        want = n * per_image[side]
        assert g["requests"] == g["answered"] == 2
        assert g["image_tokens_per_request"]["min"] == g["image_tokens_per_request"]["max"] == want
        assert g["expected_image_tokens_per_request"] == want
        delay = 0.05 + 0.002 * want
        assert delay <= g["ttft_s"]["min"] < delay + 0.3, (label, g["ttft_s"])
    medians = [g["ttft_s"]["median"] for g in by.values()]
    assert medians == sorted(medians)
    assert rec.serving["validity"]["valid_fraction"] == 1.0
    # token parity: text (words + template) plus the expected image tokens is what the server counted
    p = rec.serving["token_parity"]
    assert p["prompt_tokens_usage"] == p["prompt_tokens_asked"] == \
        8 * (12 + TEMPLATE_TOKENS) + 2 * sum(n * per_image[s] for n in (1, 2) for s in (224, 448))
    m = rec.metrics
    assert m["image_tokens_per_request"].min == per_image[224] and m["image_tokens_per_request"].max == 2 * per_image[448]
    # 12 images (2 requests of each count 1, 2, 1, 2), all answered inside the steady window
    w = rec.serving["window_s"]
    assert m["image_throughput_img_per_s"].mean == pytest.approx(12 / (w["steady_end"] - w["steady_start"]))


@pytest.mark.skipif(not has("transformers") or not has("PIL"), reason="transformers or pillow not installed")
def test_a_server_counting_otherwise_is_judged_a_mismatch(tiny_vl, tmp_path, capsys, monkeypatch):
    """The same server counting one token more per image: every answer is image_tokens_mismatch."""
    import vision_server

    from llmbench.store.store import Store

    monkeypatch.setattr(vision_server, "image_tokens", lambda w, h, f=vision_server.image_tokens: f(w, h) + 1)
    with VisionServer() as srv:
        code, out = cli(["serve", srv.url, "--model", str(tiny_vl), "--api", "chat", "--shape", "images",
                         "--concurrency", "1", "-n", "2", "--input-len", "8", "--output-len", "2",
                         "--warmup-requests", "0", "--no-server-metrics", "--results", str(tmp_path)], capsys)
    assert code == 0, out
    (rec,) = Store(tmp_path).records()
    assert rec.serving["validity"]["invalid_by_cause"] == {"image_tokens_mismatch": 2}
    assert rec.serving["by_images"]["1@448x448"]["image_tokens_per_request"]["mean"] == 16 * 16 + 3


@pytest.mark.skipif(not has("tokenizers") or not has("transformers"), reason="tokenizers or transformers not installed")
def test_an_idefics3_model_is_judged_by_idefics3s_formula(tmp_path, monkeypatch):
    """The formula is the one the served model's image processor names: the tiny Idefics3's
    64x64 image is 3x3 tiles of 6 tokens + a global image of 7 = 61 (by hand, its
    preprocessor_config: edge 192, 64-px tiles, image_seq_len 4), not Qwen2-VL's 8 + 2."""
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    from llmbench.models.vision import Idefics3Images
    from llmbench.models.sources import tiny_vlm

    shape = ServeConfig(shape="images", api="chat", model=str(tiny_vlm("idefics3-tiny")),
                        shape_options={"resolution": "64x64", "count": "1,2"}).request_shape()
    assert isinstance(shape.formula, Idefics3Images) and shape.judged
    specs = shape.plan([RequestSpec("w1 w2 w3", 3, 4) for _ in range(4)], seed=1)
    assert sorted(s.expected_image_tokens for s in specs) == [61, 61, 122, 122]
    # the text's count is the chat turn's ("User:", 3 words, <end_of_utterance>, "Assistant:"),
    # images left out
    assert {s.prompt_len - s.expected_image_tokens for s in specs} == {6}
