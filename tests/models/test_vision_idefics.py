"""Idefics3's (SmolVLM's) image-token formula (models/vision.py) against transformers' own
Idefics3Processor: a chat turn with generated images of each size is run through the processor
(its image processor splitting the images, its `replace_image_token` expanding each `<image>`)
and tokenized; what the images add over the same turn without them must equal the formula. Both
the tiny model's settings (64-px tiles, image_seq_len 4, a word-level tokenizer where newlines
are no tokens) and Idefics3's defaults (364-px tiles, edge 1456, image_seq_len 169) on SmolLM2's
BPE tokenizer (one token for "\\n", one for "\\n\\n") are checked, at sizes that split into
different grids, stay whole, and are wider or taller than square. Also: the formula a model
directory gets is the one its image processor names, and the tiny model's files agree."""

import json
from pathlib import Path

import numpy as np
import pytest
from tests.conftest import has

from llmbench.models.vision import Idefics3Images, Qwen2VLImages, image_formula

needs_hf = pytest.mark.skipif(not has("transformers") or not has("PIL") or not has("tokenizers"),
                              reason="transformers, pillow or tokenizers not installed")
SMOLLM2_HF = Path.home() / ".cache/llmbench/models/smollm2-135m-hf-f32"
SIZES = [(64, 64), (448, 448), (448, 224), (224, 448), (640, 480), (30, 1000), (1000, 30),
         (1344, 1344), (97, 61)]


@pytest.fixture
def tiny(tmp_path, monkeypatch):
    monkeypatch.setenv("LLMBENCH_CACHE", str(tmp_path))
    from llmbench.models.sources import tiny_vlm

    return tiny_vlm("idefics3-tiny")


def test_known_values_by_hand():
    tiny = Idefics3Images(longest_edge=192, tile_px=64, image_seq_len=4, newline_tokens=0,
                          double_newline_tokens=0)
    # any square goes to 192x192 = 3x3 tiles: 9 x (fake, row_col, 4) + (fake, global, 4, fake)
    assert tiny.grid(64, 64) == tiny.grid(1344, 1344) == (3, 3)
    assert tiny.prompt_tokens(64, 64) == 9 * 6 + 7 == 61
    assert tiny.image_tokens(64, 64) == 10 * 4
    # 448x224 (w x h) -> 192 wide, 96 high -> ceil to 192 x 128 -> 2 rows x 3 cols
    assert tiny.grid(448, 224) == (2, 3) and tiny.prompt_tokens(448, 224) == 6 * 6 + 7 == 43
    # defaults: 448x448 -> 1456x1456 -> 4x4 tiles of 364; 16 x 171 + newlines (3 x "\n" + "\n\n")
    # + 172 for the global image
    assert Idefics3Images().prompt_tokens(448, 448) == 16 * 171 + 4 + 172 == 2912
    # unsplit: resized to one tile, the global image alone
    assert Idefics3Images(split=False).prompt_tokens(448, 448) == 169 + 3


def _added_tokens(processor, turn_without: str, turn_with: str, images) -> int:
    """What the images add to the processor's token count of the turn."""
    with_images = processor(text=turn_with, images=[images])["input_ids"][0]
    plain = processor.tokenizer(turn_without, add_special_tokens=True)["input_ids"]
    return len(with_images) - len(plain)


def _images(sizes, seed):
    from PIL import Image

    rng = np.random.default_rng(seed)
    return [Image.fromarray(rng.integers(0, 256, (h, w, 3), dtype=np.uint8)) for w, h in sizes]


@needs_hf
def test_the_tiny_models_formula_counts_what_the_processor_makes(tiny):
    from transformers import AutoProcessor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    processor = AutoProcessor.from_pretrained(tiny)
    assert isinstance(processor.image_processor, Idefics3ImageProcessorPil)
    mine = image_formula(tiny)
    assert mine == Idefics3Images(longest_edge=192, tile_px=64, image_seq_len=4, newline_tokens=0,
                                  double_newline_tokens=0)
    for i, (w, h) in enumerate(SIZES):
        for count in (1, 2):
            turn = [{"role": "user", "content": [*[{"type": "image"}] * count,
                                                 {"type": "text", "text": "w5 w6 w7"}]}]
            plain = [{"role": "user", "content": [{"type": "text", "text": "w5 w6 w7"}]}]
            with_text = processor.apply_chat_template(turn, add_generation_prompt=True)
            plain_text = processor.apply_chat_template(plain, add_generation_prompt=True)
            added = _added_tokens(processor, plain_text, with_text, _images([(w, h)] * count, i))
            assert added == count * mine.prompt_tokens(w, h), (w, h, count)


@needs_hf
@pytest.mark.skipif(not (SMOLLM2_HF / "tokenizer.json").is_file(), reason="SmolLM2's HF files not cached")
def test_idefics3_defaults_on_a_bpe_tokenizer_count_what_the_processor_makes():
    """Newlines are tokens here: "\\n" one, "\\n\\n" one (merged), as SmolVLM's tokenizer has them."""
    from transformers import AutoTokenizer, Idefics3Processor
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    tok = AutoTokenizer.from_pretrained(SMOLLM2_HF)
    tok.add_special_tokens({"additional_special_tokens": [
        "<fake_token_around_image>", "<image>", "<end_of_utterance>", "<global-img>",
        *[f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7)]]})
    processor = Idefics3Processor(image_processor=Idefics3ImageProcessorPil(), tokenizer=tok)
    nl, nlnl = (len(tok("\n", add_special_tokens=False)["input_ids"]),
                len(tok("\n\n", add_special_tokens=False)["input_ids"]))
    assert (nl, nlnl) == (1, 1)
    mine = Idefics3Images(newline_tokens=nl, double_newline_tokens=nlnl)
    for i, (w, h) in enumerate([(448, 448), (448, 224), (30, 1000), (97, 61)]):
        added = _added_tokens(processor, "User: describe", "User:<image> describe", _images([(w, h)], i))
        assert added == mine.prompt_tokens(w, h), (w, h)


@needs_hf
def test_the_grid_is_the_one_vllm_asks_the_image_processor_for():
    """vLLM 0.32 builds its replacement from `get_number_of_image_patches`; same grid."""
    from transformers.models.idefics3.image_processing_pil_idefics3 import Idefics3ImageProcessorPil

    for settings in ({}, {"size": {"longest_edge": 192}, "max_image_size": {"longest_edge": 64}}):
        proc = Idefics3ImageProcessorPil(**settings)
        mine = Idefics3Images(longest_edge=proc.size["longest_edge"],
                              tile_px=proc.max_image_size["longest_edge"])
        for w, h in SIZES:
            _, rows, cols = proc.get_number_of_image_patches(h, w)
            assert mine.grid(w, h) == (rows, cols), (settings, w, h)


def test_a_directory_gets_the_formula_its_image_processor_names(tmp_path):
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Qwen2VLImageProcessor", "min_pixels": 100, "max_pixels": 4000}))
    assert image_formula(tmp_path) == Qwen2VLImages(min_pixels=100, max_pixels=4000)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps(
        {"image_processor_type": "Idefics3ImageProcessor", "size": {"longest_edge": 2048},
         "max_image_size": {"longest_edge": 512}, "do_image_splitting": False}))
    assert image_formula(tmp_path) is None          # no tokenizer to count newlines with
    from llmbench.models.synthetic_tokenizer import write_wordlevel_tokenizer

    write_wordlevel_tokenizer(10, tmp_path)
    (tmp_path / "processor_config.json").write_text(json.dumps({"image_seq_len": 64}))
    assert image_formula(tmp_path) == Idefics3Images(longest_edge=2048, tile_px=512, image_seq_len=64,
                                                     split=False, newline_tokens=0,
                                                     double_newline_tokens=0)
    (tmp_path / "preprocessor_config.json").write_text(json.dumps({"image_processor_type": "CLIPImageProcessor"}))
    assert image_formula(tmp_path) is None
    assert image_formula(tmp_path / "absent") is None


@needs_hf
def test_the_tiny_models_config_names_its_tokenizers_ids(tiny):
    from tokenizers import Tokenizer
    from transformers import AutoConfig

    cfg = json.loads((tiny / "config.json").read_text())
    tok = Tokenizer.from_file(str(tiny / "tokenizer.json"))
    assert cfg["image_token_id"] == tok.token_to_id("<image>")
    assert tok.get_vocab_size() <= cfg["vocab_size"] == cfg["text_config"]["vocab_size"]
    hf = AutoConfig.from_pretrained(tiny)
    assert type(hf).__name__ == "Idefics3Config"
    assert hf.vision_config.num_hidden_layers == 2 and hf.text_config.num_hidden_layers == 2
    assert hf.vision_config.hidden_size == 64 and hf.text_config.hidden_size == 128
    # image_seq_len = (image_size / patch_size)^2 / scale_factor^2, as the processor's doc says
    seq = json.loads((tiny / "processor_config.json").read_text())["image_seq_len"]
    assert seq == (hf.vision_config.image_size // hf.vision_config.patch_size) ** 2 // hf.scale_factor ** 2
