"""Make a Hopper-only copy of the sglang-kernel 0.4.5 wheel that fits the SGLang carry (issue 50).

The registry's wheel is 365 MiB, more than the whole carry can hold. Almost all of it is
`sgl_kernel/flash_ops.abi3.so` (1,071 MiB unpacked, 326 MiB deflated): FlashAttention 3, whose
`.nv_fatbin` section holds one cubin per kernel for each of sm_80, sm_86 and sm_90 (372 each;
256.5 + 256.5 + 473.9 MiB). An H100 or H200 (compute capability 9.0) can only load the sm_90
ones: a cubin runs only on its own major architecture. This script, run on a machine with the
registry:

* zeroes the payload of every fatbin cubin (ELF entry) whose architecture is not in --keep-arch
  (90); PTX entries, if any, are kept (the driver may JIT them); this leaves
  every header, size and offset as it was, so the section's layout, the wrappers that point into
  it and the host code are byte-for-byte unchanged; runs of zeros deflate to almost nothing;
* drops the shared objects that a Hopper run of a Llama model never loads (read in sglang-kernel
  0.4.5's sources): `sm100/common_ops.abi3.so` (load_utils.py loads `sm90/` when the capability
  is exactly 90), `flashmla_ops.abi3.so` (only `sgl_kernel/flash_mla.py`, DeepSeek MLA) and
  `infllm_ops.*.so` (only `sgl_kernel/infllm_v2/_loader.py`, loaded on first use);
* rewrites RECORD with the new hashes and sizes and keeps the wheel's name, so
  `pip install --no-index` takes it as sglang-kernel 0.4.5.

NOT YET VERIFIED ON A GPU: that the CUDA driver loads an sm_90 cubin from a fatbin whose other
entries are zeroed is what the first SGLang call must show (docs/gpu-campaign.md). If it does not,
`--attention-backend triton` needs no flash_ops at all.

    python3 benchmarks/h200/slim_sgl_kernel.py IN.whl OUT_DIR [--stored]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import struct
import sys
import zipfile
from collections import Counter
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
ELF_KIND = 2
# Paths inside the wheel that a Hopper run of a Llama model never loads.
DROP = ("sgl_kernel/sm100/common_ops.abi3.so", "sgl_kernel/flashmla_ops.abi3.so",
        "sgl_kernel/infllm_ops.")


def sections(elf: bytes):
    """(name, file offset, size) of every section of a 64-bit little-endian ELF file."""
    if elf[:4] != b"\x7fELF" or elf[4] != 2 or elf[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    hdrs = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    stroff = hdrs[shstrndx][4]
    for h in hdrs:
        name = elf[stroff + h[0]: elf.index(b"\0", stroff + h[0])].decode()
        yield name, h[4], h[5]


def fatbin_entries(elf: bytes | bytearray, off: int, size: int):
    """(kind, arch, payload offset, payload size) of every entry of the fatbins in a section.

    A fatbin is a 16-byte header (magic, version, header size, size of what follows) and entries,
    each with a header (kind u16, u16, header size u32, payload size u64, ..., arch u32 at 28)."""
    p, end = off, off + size
    while p + 16 <= end:
        magic, _ver, hsize, fsize = struct.unpack_from("<IHHQ", elf, p)
        if magic != FATBIN_MAGIC:
            p += 8          # fatbins are 8-byte aligned; padding between them
            continue
        q, stop = p + hsize, p + hsize + fsize
        while q < stop:
            kind, _u, ehsize, psize = struct.unpack_from("<HHIQ", elf, q)
            arch, = struct.unpack_from("<I", elf, q + 28)
            yield kind, arch, q + ehsize, psize
            q += ehsize + psize
        p = stop


def zero_other_archs(elf: bytes, keep: set[int]) -> tuple[bytes, Counter]:
    """A copy of the ELF file with the payload of every fatbin cubin whose arch is not in `keep`
    zeroed (PTX entries are left alone)."""
    out = bytearray(elf)
    zeroed: Counter = Counter()
    for name, off, size in sections(elf):
        if name != ".nv_fatbin":
            continue
        for kind, arch, poff, psize in fatbin_entries(elf, off, size):
            if kind == ELF_KIND and arch not in keep:
                out[poff: poff + psize] = bytes(psize)
                zeroed[(kind, arch)] += psize
    return bytes(out), zeroed


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def slim(src: Path, out_dir: Path, keep: set[int], stored: bool = False) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    dst = out_dir / src.name
    if dst.resolve() == src.resolve():
        raise SystemExit("OUT_DIR must not be the wheel's own folder")
    records: list[str] = []
    method = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", method) as zout:
        record_name = next(n for n in zin.namelist() if n.endswith(".dist-info/RECORD"))
        for info in zin.infolist():
            n = info.filename
            if n == record_name or any(n.startswith(d) for d in DROP):
                if n != record_name:
                    print(f"dropped {n} ({info.file_size / 2**20:.1f} MiB)")
                continue
            data = zin.read(n)
            if n.endswith(".so") and data[:4] == b"\x7fELF":
                data, zeroed = zero_other_archs(data, keep)
                for (kind, arch), nbytes in sorted(zeroed.items()):
                    print(f"{n}: zeroed sm_{arch} {'ELF' if kind == ELF_KIND else 'PTX'} "
                          f"{nbytes / 2**20:.1f} MiB")
            out = zipfile.ZipInfo(info.filename, info.date_time)
            out.external_attr, out.compress_type = info.external_attr, method
            zout.writestr(out, data)
            records.append(record_line(n, data))
        records.append(f"{record_name},,")
        zout.writestr(record_name, "\n".join(records) + "\n", compress_type=method)
    return dst


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("wheel", type=Path)
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--keep-arch", type=int, action="append", default=None,
                    help="fatbin architecture to keep (repeatable; default 90)")
    ap.add_argument("--stored", action="store_true",
                    help="write the wheel uncompressed (the carry compresses it with xz)")
    a = ap.parse_args(argv)
    dst = slim(a.wheel, a.out_dir, set(a.keep_arch or [90]), a.stored)
    print(f"{dst}: {dst.stat().st_size / 2**20:.1f} MiB (from {a.wheel.stat().st_size / 2**20:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
