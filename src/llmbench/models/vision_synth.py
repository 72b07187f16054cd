"""A random-weight tiny Qwen2-VL, made locally for serving image requests (issue 41 item 3):
config.json (Qwen2VLForConditionalGeneration: 2 text layers of hidden 128, a 2-block vision
tower), the word-level tokenizer of the synthetic models (models/synthetic_tokenizer.py) with
Qwen2-VL's special tokens added after its words (their ids written into the config, so the
model and the tokenizer agree), a chat template that puts `<|vision_start|><|image_pad|>
<|vision_end|>` per image as Qwen2-VL's does, and the image processor's preprocessor_config.json.
No weights: engines make random ones (vLLM `--load-format dummy`). Cached like the other
random-weight models, under the cache's models/ directory, built aside then renamed.
"""

from __future__ import annotations

import json
from pathlib import Path


NAME = "qwen2-vl-tiny"
WORDS = 1000            # the word-level vocabulary w0..w999; the special tokens follow
SPECIALS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>",
            "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>")
VOCAB = 1024            # the embedding's rows: the words and specials, padded
MIN_PIXELS = 56 * 56    # the Qwen2-VL image processor's defaults (transformers' `size`)
MAX_PIXELS = 28 * 28 * 1280

# Qwen2-VL's template in structure (a default system turn, one placeholder triple per image,
# then the text), written here; the real checkpoint's is not copied.
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and message['role'] != 'system' %}<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'text' %}{{ content['text'] }}{% endif %}"
    "{% endfor %}{% endif %}<|im_end|>\n"
    "{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")


def special_id(token: str) -> int:
    return WORDS + SPECIALS.index(token)


def config_dict() -> dict:
    text = {"vocab_size": VOCAB, "hidden_size": 128, "intermediate_size": 256,
            "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
            "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "hidden_act": "silu",
            # head_dim 32: the rotary half (16) split over (time, height, width)
            "rope_scaling": {"type": "mrope", "mrope_section": [4, 6, 6]}, "rope_theta": 1e6,
            "bos_token_id": special_id("<|endoftext|>"), "eos_token_id": special_id("<|im_end|>"),
            "tie_word_embeddings": False}
    return {"model_type": "qwen2_vl", "architectures": ["Qwen2VLForConditionalGeneration"],
            **text, "text_config": {"model_type": "qwen2_vl_text", **text},
            "vision_config": {"depth": 2, "embed_dim": 64, "hidden_size": 128, "num_heads": 4,
                              "mlp_ratio": 2, "in_channels": 3, "patch_size": 14,
                              "spatial_merge_size": 2, "temporal_patch_size": 2,
                              "hidden_act": "quick_gelu"},
            "image_token_id": special_id("<|image_pad|>"),
            "video_token_id": special_id("<|video_pad|>"),
            "vision_start_token_id": special_id("<|vision_start|>"),
            "vision_end_token_id": special_id("<|vision_end|>"),
            "torch_dtype": "bfloat16"}


def preprocessor_dict() -> dict:
    return {"image_processor_type": "Qwen2VLImageProcessor", "processor_class": "Qwen2VLProcessor",
            "size": {"shortest_edge": MIN_PIXELS, "longest_edge": MAX_PIXELS},
            "min_pixels": MIN_PIXELS, "max_pixels": MAX_PIXELS, "patch_size": 14,
            "temporal_patch_size": 2, "merge_size": 2, "do_resize": True, "do_rescale": True,
            "do_normalize": True, "do_convert_rgb": True, "resample": 3,
            "image_mean": [0.48145466, 0.4578275, 0.40821073],
            "image_std": [0.26862954, 0.26130258, 0.27577711]}


def write_model(out: Path) -> None:
    from tokenizers import AddedToken, Tokenizer

    from llmbench.models.synthetic_tokenizer import write_wordlevel_tokenizer

    write_wordlevel_tokenizer(WORDS, out)
    tok = Tokenizer.from_file(str(out / "tokenizer.json"))
    tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIALS])
    assert all(tok.token_to_id(t) == special_id(t) for t in SPECIALS)
    tok.save(str(out / "tokenizer.json"))
    tcfg = json.loads((out / "tokenizer_config.json").read_text())
    tcfg.update(eos_token="<|im_end|>", pad_token="<|endoftext|>", chat_template=CHAT_TEMPLATE,
                processor_class="Qwen2VLProcessor")
    (out / "tokenizer_config.json").write_text(json.dumps(tcfg, indent=1))
    (out / "config.json").write_text(json.dumps(config_dict(), indent=1))
    (out / "preprocessor_config.json").write_text(json.dumps(preprocessor_dict(), indent=1))
    (out / "chat_template.json").write_text(json.dumps({"chat_template": CHAT_TEMPLATE}))
    (out / "LLMBENCH_SYNTHETIC").write_text("random weights; a tiny Qwen2-VL (models/vision_synth.py)\n")
