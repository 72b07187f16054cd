"""How many prompt tokens an image costs a vision-language model: Qwen2-VL's and Idefics3's
(SmolVLM's) formulas, and `image_formula(model_dir)`, the one a served model's
preprocessor_config.json names.

Qwen2-VL
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

Idefics3, read from transformers 5.19 (`transformers/models/idefics3/`):
- `image_processing_pil_idefics3.py` `_preprocess`: `resize` scales the longest edge to
  `size.longest_edge` (up or down; `_resize_output_size_rescale_to_max_len`: the other side is
  int(edge / aspect ratio), made even), then to at most MAX_IMAGE_SIZE = 4096
  (`_resize_output_size_scale_below_upper_bound`); `resize_for_vision_encoder` ceils the longest
  side to a multiple of the tile `max_image_size.longest_edge`, the other to the multiple above
  int(longest / aspect ratio); `split_images` cuts that into rows x cols tiles plus one global
  image when it is larger than one tile, else keeps it whole (rows = cols = 0).
- `processing_idefics3.py` `replace_image_token`: each `<image>` becomes, unsplit,
  `<fake_token_around_image><global-img>` + image_seq_len x `<image>` + `<fake_token_around_image>`;
  split, per tile `<fake_token_around_image><row_r_col_c>` + image_seq_len x `<image>`, a "\n"
  after each row, then "\n" and the unsplit form: so the newlines tokenize as (rows - 1) x "\n"
  and one "\n\n" (the last row's and the global image's, adjacent).
vLLM 0.32 counts the same (`vllm/model_executor/models/idefics3.py` `get_image_repl` builds the
same string from the image processor's `get_number_of_image_patches` and tokenizes it).
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


IDEFICS3_MAX_IMAGE_PX = 4096     # transformers' MAX_IMAGE_SIZE for Idefics3 images


def idefics3_resize(height: int, width: int, longest_edge: int) -> tuple[int, int]:
    """(height, width) after Idefics3's `resize` to `size.longest_edge` (module doc)."""
    aspect = width / height
    if width >= height:
        width, height = longest_edge, int(longest_edge / aspect)
        height += height % 2
    else:
        height, width = longest_edge, int(longest_edge * aspect)
        width += width % 2
    height, width = max(height, 1), max(width, 1)
    aspect = width / height
    if width >= height and width > IDEFICS3_MAX_IMAGE_PX:
        width, height = IDEFICS3_MAX_IMAGE_PX, int(IDEFICS3_MAX_IMAGE_PX / aspect)
    elif height > width and height > IDEFICS3_MAX_IMAGE_PX:
        height, width = IDEFICS3_MAX_IMAGE_PX, int(IDEFICS3_MAX_IMAGE_PX * aspect)
    return max(height, 1), max(width, 1)


def idefics3_tiles(height: int, width: int, tile_px: int) -> tuple[int, int]:
    """(rows, cols) of tiles `resize_for_vision_encoder` and `split_images` cut a resized image
    into; (0, 0) when it fits one tile (no split, no global image)."""
    aspect = width / height
    if width >= height:
        width = math.ceil(width / tile_px) * tile_px
        height = math.ceil(int(width / aspect) / tile_px) * tile_px
    else:
        height = math.ceil(height / tile_px) * tile_px
        width = math.ceil(int(height * aspect) / tile_px) * tile_px
    if height > tile_px or width > tile_px:
        return height // tile_px, width // tile_px
    return 0, 0


@dataclass(frozen=True)
class Idefics3Images:
    """One Idefics3 / SmolVLM model's settings: its preprocessor_config.json (`size`,
    `max_image_size`, `do_image_splitting`), processor_config.json (`image_seq_len`) and how its
    tokenizer counts "\n" and "\n\n"."""

    longest_edge: int = 4 * 364          # transformers' Idefics3 image processor defaults
    tile_px: int = 364
    image_seq_len: int = 169             # Idefics3Processor's default
    split: bool = True
    newline_tokens: int = 1
    double_newline_tokens: int = 1

    def grid(self, width: int, height: int) -> tuple[int, int]:
        """(rows, cols) of tiles; (0, 0) for an image kept whole."""
        if not self.split:
            return 0, 0
        h, w = idefics3_resize(height, width, self.longest_edge)
        return idefics3_tiles(h, w, self.tile_px)

    def image_tokens(self, width: int, height: int) -> int:
        """The `<image>` tokens one image becomes: image_seq_len per tile and for the global image."""
        rows, cols = self.grid(width, height)
        return (rows * cols + 1) * self.image_seq_len

    def prompt_tokens(self, width: int, height: int) -> int:
        """What one `<image>` of the chat template becomes in the server's prompt count."""
        rows, cols = self.grid(width, height)
        whole = self.image_seq_len + 3           # fake, <global-img>, the tokens, fake
        if rows == 0:
            return whole
        per_tile = self.image_seq_len + 2        # fake, <row_r_col_c>, the tokens
        newlines = (rows - 1) * self.newline_tokens + self.double_newline_tokens
        return rows * cols * per_tile + newlines + whole

    @classmethod
    def from_dir(cls, model_dir: Path) -> Idefics3Images | None:
        """The settings of a model directory whose preprocessor_config.json names an Idefics3
        image processor and that has a tokenizer.json to count newlines with; else None."""
        d = Path(model_dir)
        c = _preprocessor_config(d)
        if not str(c.get("image_processor_type", "")).startswith("Idefics3ImageProcessor"):
            return None
        if not (d / "tokenizer.json").is_file():
            return None
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(d / "tokenizer.json"))
        proc = d / "processor_config.json"
        seq_len = json.loads(proc.read_text()).get("image_seq_len") if proc.is_file() else None
        size = c.get("size") if isinstance(c.get("size"), dict) else {}
        tile = c.get("max_image_size") if isinstance(c.get("max_image_size"), dict) else {}
        return cls(longest_edge=int(size.get("longest_edge", cls.longest_edge)),
                   tile_px=int(tile.get("longest_edge", cls.tile_px)),
                   image_seq_len=int(seq_len or cls.image_seq_len),
                   split=bool(c.get("do_image_splitting", True)),
                   newline_tokens=len(tok.encode("\n", add_special_tokens=False).ids),
                   double_newline_tokens=len(tok.encode("\n\n", add_special_tokens=False).ids))


def _preprocessor_config(model_dir: Path) -> dict:
    f = Path(model_dir) / "preprocessor_config.json"
    return json.loads(f.read_text()) if f.is_file() else {}


def image_formula(model_dir: Path) -> Qwen2VLImages | Idefics3Images | None:
    """The image-token formula of the model in model_dir, chosen by the image processor its
    preprocessor_config.json names; None for a model without a known one."""
    for formula in (Qwen2VLImages, Idefics3Images):
        found = formula.from_dir(model_dir)
        if found is not None:
            return found
    return None
