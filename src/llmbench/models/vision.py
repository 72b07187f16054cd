"""How many prompt tokens an image costs a vision-language model: Qwen2-VL's formula.

Read from transformers 5.19 (`transformers/models/qwen2_vl/`):
- `image_processing_qwen2_vl.py` `smart_resize(height, width, factor, min_pixels, max_pixels)`:
  each side rounded to a multiple of `factor` (round half to even, Python's `round`); if the
  area is then above max_pixels both sides shrink by sqrt(h*w / max_pixels) and are floored to
  multiples (at least one factor); if below min_pixels they grow by sqrt(min_pixels / (h*w))
  and are ceiled. `Qwen2VLImageProcessor._preprocess` calls it with
  factor = patch_size * merge_size (14 * 2 = 28) and min/max pixels from its `size`
  (shortest_edge / longest_edge, defaults 56*56 and 28*28*1280), then `patchify` makes a grid
  of (h / patch_size) x (w / patch_size) patches: `image_grid_thw` = [1, h/14, w/14].
- `processing_qwen2_vl.py` `replace_image_token`: each `<|image_pad|>` becomes
  grid.prod() // merge_size**2 tokens, i.e. (h/28) * (w/28).
- The chat template wraps each image's pad in `<|vision_start|>` ... `<|vision_end|>`: two
  tokens more per image, which the server counts in the prompt too.
vLLM 0.32 counts the same (`vllm/model_executor/models/qwen2_vl.py` `_get_vision_info` calls
transformers' `smart_resize` with the same factor and size).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

PATCH_SIZE = 14
MERGE_SIZE = 2
MIN_PIXELS = 56 * 56             # transformers' Qwen2VLImageProcessor.size defaults
MAX_PIXELS = 28 * 28 * 1280
WRAP_TOKENS = 2                  # <|vision_start|> and <|vision_end|>, one pair per image


def smart_resize(height: int, width: int, factor: int = PATCH_SIZE * MERGE_SIZE,
                 min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS) -> tuple[int, int]:
    """(height, width) the processor resizes an image to (module doc); an aspect ratio over
    200 is refused as transformers refuses it."""
    if max(height, width) / min(height, width) > 200:
        raise ValueError(f"aspect ratio {max(height, width) / min(height, width):.1f} > 200: "
                         "Qwen2-VL's processor refuses it")
    h, w = round(height / factor) * factor, round(width / factor) * factor
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


@dataclass(frozen=True)
class Qwen2VLImages:
    """One model's image processor settings (its preprocessor_config.json)."""

    patch_size: int = PATCH_SIZE
    merge_size: int = MERGE_SIZE
    min_pixels: int = MIN_PIXELS
    max_pixels: int = MAX_PIXELS

    def grid(self, width: int, height: int) -> tuple[int, int]:
        """The merged grid (rows, cols) of an image of this size: one token per cell."""
        unit = self.patch_size * self.merge_size
        h, w = smart_resize(height, width, unit, self.min_pixels, self.max_pixels)
        return h // unit, w // unit

    def pad_tokens(self, width: int, height: int) -> int:
        """The tokens one `<|image_pad|>` becomes."""
        rows, cols = self.grid(width, height)
        return rows * cols

    def prompt_tokens(self, width: int, height: int) -> int:
        """What one image adds to the server's prompt count: its pad tokens and the wrap."""
        return self.pad_tokens(width, height) + WRAP_TOKENS

    @classmethod
    def from_dir(cls, model_dir: Path) -> Qwen2VLImages | None:
        """The settings of a model directory whose preprocessor_config.json names a Qwen2-VL
        image processor (min_pixels/max_pixels override `size`'s edges, as the processor's
        __init__ does); None for any other model."""
        f = Path(model_dir) / "preprocessor_config.json"
        if not f.is_file():
            return None
        c = json.loads(f.read_text())
        if not str(c.get("image_processor_type", "")).startswith("Qwen2VLImageProcessor"):
            return None
        size = c.get("size") if isinstance(c.get("size"), dict) else {}
        return cls(patch_size=int(c.get("patch_size", PATCH_SIZE)),
                   merge_size=int(c.get("merge_size", MERGE_SIZE)),
                   min_pixels=int(c.get("min_pixels") or size.get("shortest_edge") or MIN_PIXELS),
                   max_pixels=int(c.get("max_pixels") or size.get("longest_edge") or MAX_PIXELS))
