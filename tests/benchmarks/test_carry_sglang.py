"""The SGLang carry list (benchmarks/h200/carry-sglang.txt, issue 50 item 1) keeps its own
invariants, and the tools that make the carry do what they say on small made-up inputs: the
fatbin slimming (benchmarks/h200/slim_sgl_kernel.py) on a constructed ELF file, the list check
(benchmarks/h200/carry_sglang.py) on constructed wheels. No GPU, no registry, no real wheel."""

import base64
import hashlib
import math
import os
import re
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks" / "h200"))
import carry_sglang  # noqa: E402
import slim_sgl_kernel  # noqa: E402

CARRY = carry_sglang.read_list()
IMAGE = carry_sglang.read_image()


# ---- the list ------------------------------------------------------------------------------

def test_every_line_is_one_pinned_wheel_with_its_size_and_reason():
    assert CARRY.bad_lines == []
    assert CARRY.pins, "no wheel in the list"
    names = [p.name for p in CARRY.pins]
    assert len(names) == len(set(names)), "a package named twice"
    for p in CARRY.pins:
        assert re.fullmatch(r"[0-9][0-9A-Za-z.+!]*", p.version), p
        assert p.mib > 0 and p.why, p


def test_the_recorded_totals_are_the_sum_of_the_lines():
    assert int(CARRY.header["wheels"]) == len(CARRY.pins)
    assert float(CARRY.header["total-mib"]) == pytest.approx(CARRY.total_mib(), abs=0.011)


def test_it_fits_in_at_most_eight_calls_beside_the_working_tree():
    parts = int(CARRY.header["parts"])
    assert parts == CARRY.parts_needed()
    assert parts <= carry_sglang.MAX_PARTS
    part = float(CARRY.header["part-mib"])
    git = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True)
    if git.returncode != 0:
        pytest.skip("no git checkout: the tree's size is not known here")
    tree = sum(os.path.getsize(ROOT / f) for f in git.stdout.decode().split("\0")
               if f and (ROOT / f).is_file())
    assert tree / 2**20 + part <= carry_sglang.MAX_CALL_MIB, (
        f"a {part} MiB part beside the {tree / 2**20:.1f} MiB tree is over a call's 64 MiB")


def test_nothing_the_image_has_at_a_usable_version_is_carried():
    for p in CARRY.pins:
        if p.name not in IMAGE:
            continue
        have = IMAGE[p.name]
        assert have is not None, f"{p.name}: on the image at a version never read; carry it with one"
        assert have != p.version, f"{p.name}=={p.version} is the image's own"
        assert f"image has {have}" in p.why, f"{p.name}: the line must say why the image's {have} won't do"


def test_what_stays_home_says_why_and_is_not_also_carried():
    assert CARRY.home
    for name, why in CARRY.home.items():
        assert len(why) > 10, name
        assert name not in {p.name for p in CARRY.pins}, name


def test_the_recipe_points_to_the_list_and_its_numbers():
    doc = (ROOT / "docs" / "gpu-campaign.md").read_text()
    recipe = doc[doc.index("## SGLang recipe"):]
    assert "benchmarks/h200/carry-sglang.txt" in recipe
    assert "sglang-notes" not in doc
    part, parts = CARRY.header["part-mib"], int(CARRY.header["parts"])
    assert f"split -b {int(float(part))}M" in recipe
    assert f"{parts} calls of {int(float(part))} MiB" in recipe
    assert f"| 2-{parts} |" in recipe
    setup = (ROOT / "benchmarks" / "h200" / "setup.sh").read_text()
    assert "install-sglang)" in setup and "env-sglang)" in setup


# ---- slim_sgl_kernel on a constructed ELF file ---------------------------------------------

def fatbin(entries):
    """A fatbin: header, then per entry a 64-byte header (kind, arch at 28) and its payload."""
    body = b""
    for kind, arch, payload in entries:
        head = struct.pack("<HHIQ", kind, 0x101, 64, len(payload)) + bytes(12)
        head += struct.pack("<I", arch) + bytes(64 - 32)
        body += head + payload
    return struct.pack("<IHHQ", slim_sgl_kernel.FATBIN_MAGIC, 1, 16, len(body)) + body


def elf_with(section: bytes, text: bytes = b"host code") -> bytes:
    """A 64-bit little-endian ELF file: header, .text, .nv_fatbin, .shstrtab, section headers."""
    names = b"\0.text\0.nv_fatbin\0.shstrtab\0"
    off_text = 64
    off_fat = off_text + len(text)
    off_str = off_fat + len(section)
    shoff = off_str + len(names)
    hdr = bytearray(64)
    hdr[:6] = b"\x7fELF\x02\x01"
    struct.pack_into("<Q", hdr, 0x28, shoff)
    struct.pack_into("<HHH", hdr, 0x3A, 64, 4, 3)

    def sh(name_off, off, size):
        return struct.pack("<IIQQQQIIQQ", name_off, 1, 0, 0, off, size, 0, 0, 1, 0)
    shdrs = (bytes(64) + sh(1, off_text, len(text)) + sh(7, off_fat, len(section))
             + sh(18, off_str, len(names)))
    return bytes(hdr) + text + section + names + shdrs


def test_only_the_other_archs_cubins_are_zeroed_and_nothing_moves():
    sm80, sm90, ptx = b"A" * 300, b"B" * 200, b"C" * 50
    fat = fatbin([(2, 80, sm80), (2, 90, sm90), (1, 80, ptx)])
    elf = elf_with(fat + bytes(8) + fatbin([(2, 86, b"D" * 100)]))
    out, zeroed = slim_sgl_kernel.zero_other_archs(elf, {90})
    assert len(out) == len(elf)
    assert sm80 not in out and b"D" * 100 not in out
    assert sm90 in out and ptx in out and b"host code" in out       # PTX may still be JIT-compiled
    assert zeroed == {(2, 80): 300, (2, 86): 100}
    # every entry header is where it was
    before = list(slim_sgl_kernel.fatbin_entries(elf, *next((o, s) for n, o, s in
                                                           slim_sgl_kernel.sections(elf) if n == ".nv_fatbin")))
    after = list(slim_sgl_kernel.fatbin_entries(out, *next((o, s) for n, o, s in
                                                          slim_sgl_kernel.sections(out) if n == ".nv_fatbin")))
    assert before == after


def test_the_slim_wheel_drops_what_hopper_never_loads_and_keeps_record_true(tmp_path):
    so = elf_with(fatbin([(2, 80, b"x" * 64), (2, 90, b"y" * 64)]))
    src = tmp_path / "in" / "sglang_kernel-0.4.5-cp310-abi3-manylinux2014_x86_64.whl"
    src.parent.mkdir()
    with zipfile.ZipFile(src, "w") as z:
        z.writestr("sgl_kernel/flash_ops.abi3.so", so)
        z.writestr("sgl_kernel/sm90/common_ops.abi3.so", so)
        z.writestr("sgl_kernel/sm100/common_ops.abi3.so", so)
        z.writestr("sgl_kernel/flashmla_ops.abi3.so", so)
        z.writestr("sgl_kernel/infllm_ops.cpython-310-x86_64-linux-gnu.so", so)
        z.writestr("sgl_kernel/__init__.py", "x = 1\n")
        z.writestr("sglang_kernel-0.4.5.dist-info/RECORD", "stale\n")
    dst = slim_sgl_kernel.slim(src, tmp_path / "out", {90}, stored=True)
    assert dst.name == src.name
    with zipfile.ZipFile(dst) as z:
        names = set(z.namelist())
        assert names == {"sgl_kernel/flash_ops.abi3.so", "sgl_kernel/sm90/common_ops.abi3.so",
                         "sgl_kernel/__init__.py", "sglang_kernel-0.4.5.dist-info/RECORD"}
        assert all(i.compress_type == zipfile.ZIP_STORED for i in z.infolist())
        assert b"x" * 64 not in z.read("sgl_kernel/flash_ops.abi3.so")
        for line in z.read("sglang_kernel-0.4.5.dist-info/RECORD").decode().splitlines():
            path, digest, size = line.split(",")
            if not digest:
                continue
            data = z.read(path)
            want = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert digest == f"sha256={want}" and int(size) == len(data)


# ---- carry_sglang.check on constructed wheels ----------------------------------------------

def wheel(folder: Path, name: str, version: str, requires=(), pad=0) -> Path:
    path = folder / f"{name}-{version}-py3-none-any.whl"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(
        f"Requires-Dist: {r}\n" for r in requires)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{name}-{version}.dist-info/METADATA", meta)
        z.writestr(f"{name}/pad.bin", bytes(pad))
    return path


def test_check_finds_a_need_that_is_neither_carried_nor_on_the_image(tmp_path):
    a = wheel(tmp_path, "alpha", "1.0", ["torch==2.11.0", "beta>=2", "gamma", "delta; extra == 'x'",
                                         "epsilon", "transformers==5.12.1"], pad=2**20)
    b = wheel(tmp_path, "beta", "1.5")
    mib = lambda p: round(p.stat().st_size / 2**20, 2)  # noqa: E731
    listing = tmp_path / "list.txt"
    listing.write_text(f"alpha==1.0  # {mib(a):.2f} MiB  a\nbeta==1.5  # {mib(b) + 1:.2f} MiB  b\n"
                       "# home: epsilon  left home on purpose\n")
    problems = carry_sglang.check(tmp_path, carry_sglang.read_list(listing))
    assert any("beta>=2; the list carries beta==1.5" in p for p in problems)
    assert any("gamma: neither carried nor on the image" in p for p in problems)
    assert any("transformers==5.12.1; the image has transformers==5.17.0" in p for p in problems)
    assert any(p.startswith("beta==1.5:") and "MiB" in p for p in problems)      # size differs
    assert not any("torch" in p or "delta" in p or "epsilon" in p for p in problems)
    assert math.isclose(carry_sglang.read_list(listing).total_mib(), round(mib(a) + mib(b) + 1, 2))
