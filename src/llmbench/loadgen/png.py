"""Images made here for image requests (loadgen/shapes/images.py), as PNG data URLs: numpy
pixels and zlib, no imaging library and nothing downloaded.

Each image is a seeded colour ramp: channel c at (y, x) = (a_c*x + b_c*y + d_c) mod 256 with
a, b, d drawn from the seed. Two seeds give different pixels (so a server's image or prefix
cache never answers for another request), and a ramp's rows differ from the row above by a
constant, which PNG's Up filter turns into runs zlib squeezes: a 1344x1344 image is a few kB
where noise would be 5 MB per request.
"""

from __future__ import annotations

import base64
import struct
import zlib

import numpy as np


def ramp_pixels(width: int, height: int, seed: tuple[int, ...]) -> np.ndarray:
    """(height, width, 3) uint8 pixels of the ramp `seed` draws (module doc)."""
    rng = np.random.default_rng([*seed, 0x1A6E])
    a, b, d = (rng.integers(1, 256, 3).astype(np.uint8) for _ in range(3))
    x = (np.arange(width) % 256).astype(np.uint8)[None, :, None]   # uint8 arithmetic wraps: mod 256
    y = (np.arange(height) % 256).astype(np.uint8)[:, None, None]
    return a * x + b * y + d


def png_bytes(pixels: np.ndarray) -> bytes:
    """A PNG file of (height, width, 3) uint8 pixels: 8-bit RGB, no interlace, every row
    filtered Up (type 2: minus the row above, mod 256; the first row's "above" is zeros), as
    the PNG specification (ISO/IEC 15948) lays the chunks out."""
    h, w, _ = pixels.shape
    rows = pixels.reshape(h, w * 3)
    up = np.diff(rows, axis=0, prepend=np.zeros((1, w * 3), np.uint8))   # uint8: wraps mod 256
    raw = np.concatenate([np.full((h, 1), 2, np.uint8), up], axis=1).tobytes()

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b""))


def png_data_url(width: int, height: int, seed: tuple[int, ...]) -> str:
    return "data:image/png;base64," + base64.b64encode(png_bytes(ramp_pixels(width, height, seed))).decode()
