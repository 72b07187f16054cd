"""The random-weight tiny Qwen2-VL (models/vision_synth.py): its config names the ids its
tokenizer gives Qwen2-VL's special tokens, transformers reads it as a Qwen2-VL, and a chat turn
with images expanded as Qwen2VLProcessor expands it (each <|image_pad|> repeated
image_grid_thw.prod() / merge_size**2 times, the grid from transformers' own image processor
loaded from the model's preprocessor_config.json) tokenizes to the text-only turn's count plus
models/vision.py's formula per image: the known answer a server counts."""

import json

import numpy as np
import pytest
from tests.conftest import has

pytestmark = pytest.mark.skipif(not has("transformers") or not has("PIL") or not has("tokenizers"),
                                reason="transformers, pillow or tokenizers not installed")


@pytest.fixture
def model_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    from llmbench.models.sources import tiny_vlm

    return tiny_vlm("qwen2-vl-tiny")


def test_the_config_names_the_tokenizers_ids(model_dir):
    from tokenizers import Tokenizer
    from transformers import AutoConfig

    cfg = json.loads((model_dir / "config.json").read_text())
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    for key, token in (("image_token_id", "<|image_pad|>"), ("video_token_id", "<|video_pad|>"),
                       ("vision_start_token_id", "<|vision_start|>"),
                       ("vision_end_token_id", "<|vision_end|>")):
        assert cfg[key] == tok.token_to_id(token), key
    assert tok.get_vocab_size() <= cfg["vocab_size"]
    hf = AutoConfig.from_pretrained(model_dir)
    assert type(hf).__name__ == "Qwen2VLConfig"
    assert hf.vision_config.depth == 2 and hf.text_config.num_hidden_layers == 2
    assert hf.text_config.hidden_size == 128


def test_a_turn_with_images_counts_text_plus_the_formula(model_dir):
    from PIL import Image
    from transformers import AutoTokenizer
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    from llmbench.loadgen.shapes.images import chat_counter
    from llmbench.models.vision import Qwen2VLImages

    tok = AutoTokenizer.from_pretrained(model_dir)
    proc = Qwen2VLImageProcessorPil.from_pretrained(model_dir)
    formula = Qwen2VLImages.from_dir(model_dir)
    text = "w5 w6 w7 w8"
    assert chat_counter(model_dir)(text) == 4 + 13      # 13: the template's tokens, by hand
    for sizes in ([(448, 448)], [(224, 224), (640, 480)], [(1344, 1344)] * 2):
        images = [Image.fromarray(np.zeros((h, w, 3), np.uint8)) for w, h in sizes]
        turn = [{"role": "user", "content": [*({"type": "image"} for _ in sizes),
                                             {"type": "text", "text": text}]}]
        rendered = tok.apply_chat_template(turn, add_generation_prompt=True, tokenize=False)
        grids = proc(images=images, return_tensors="np")["image_grid_thw"]
        for g in grids:    # Qwen2VLProcessor.replace_image_token, one image at a time
            rendered = rendered.replace("<|image_pad|>", "<|placeholder|>" * int(g.prod() // 4), 1)
        ids = tok(rendered.replace("<|placeholder|>", "<|image_pad|>"))["input_ids"]
        assert len(ids) == chat_counter(model_dir)(text) + sum(formula.prompt_tokens(w, h) for w, h in sizes)
