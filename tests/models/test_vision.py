"""Qwen2-VL's image-token formula (models/vision.py) against transformers' own image processor:
the processor is run on a generated image of each size and its `image_grid_thw` counted; the
tokens one image becomes are grid.prod() / merge_size**2 (processing_qwen2_vl.py). The sizes
cover rounding (half to even), the max_pixels shrink and the min_pixels growth."""

import numpy as np
import pytest
from tests.conftest import has

from llmbench.models.vision import Qwen2VLImages, smart_resize

SIZES = [(448, 448), (224, 224), (1344, 1344), (640, 480), (1000, 30), (30, 30), (42, 70), (98, 14),
         (2000, 1000), (700, 700)]


def test_known_values_by_hand():
    # 448/28 = 16 -> 256 tokens; 1344^2 > 28*28*1280 so it shrinks: beta = 1344/sqrt(1003520),
    # 1344/beta/28 = 35.78 -> 35 -> 980 px a side -> 35*35 = 1225 tokens
    assert Qwen2VLImages().pad_tokens(448, 448) == 256
    assert Qwen2VLImages().pad_tokens(1344, 1344) == 35 * 35
    assert Qwen2VLImages(max_pixels=12845056).pad_tokens(1344, 1344) == 48 * 48
    assert Qwen2VLImages().prompt_tokens(448, 448) == 258         # + vision_start/end
    assert smart_resize(30, 30) == (56, 56)                        # grown to min_pixels
    with pytest.raises(ValueError, match="aspect ratio"):
        smart_resize(1, 300)


@pytest.mark.skipif(not has("transformers") or not has("PIL"), reason="transformers or pillow not installed")
@pytest.mark.parametrize("max_pixels", [28 * 28 * 1280, 256 * 28 * 28])
def test_the_formula_counts_the_grid_the_processor_makes(max_pixels):
    from PIL import Image
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    proc = Qwen2VLImageProcessorPil(min_pixels=56 * 56, max_pixels=max_pixels)
    mine = Qwen2VLImages(max_pixels=max_pixels)
    rng = np.random.default_rng(0)
    for w, h in SIZES:
        img = Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8))
        t, gh, gw = proc(images=[img], return_tensors="np")["image_grid_thw"][0]
        assert t == 1
        assert mine.pad_tokens(w, h) == gh * gw // proc.merge_size ** 2, (w, h)
        assert mine.grid(w, h) == (gh // 2, gw // 2), (w, h)


def test_settings_from_a_model_directory(tmp_path):
    import json

    (tmp_path / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Qwen2VLImageProcessor", "size": {"shortest_edge": 100,
                                                                   "longest_edge": 5000},
         "max_pixels": 4000}))
    assert Qwen2VLImages.from_dir(tmp_path) == Qwen2VLImages(min_pixels=100, max_pixels=4000)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"image_processor_type": "CLIPImageProcessor"}))
    assert Qwen2VLImages.from_dir(tmp_path) is None
