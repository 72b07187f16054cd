"""The SGLang carry (issue 50 item 1): read benchmarks/h200/carry-sglang.txt, check a folder of
downloaded wheels against it, and pack them into the parts that travel.

    python3 benchmarks/h200/carry_sglang.py pins               # name==version lines, for pip download
    python3 benchmarks/h200/carry_sglang.py check DIR          # DIR's wheels are the list, sizes match,
                                                               # every Requires-Dist is carried or on the image
    python3 benchmarks/h200/carry_sglang.py store DIR OUT      # each wheel rewritten uncompressed into OUT
                                                               # (xz then packs the whole set far tighter)

The list's format: one `name==version  # SIZE MiB  reason` line per wheel carried (SIZE is the
wheel as the registry serves it), `# home: NAME  reason` for each of SGLang's needs left home on
purpose, and header lines `# key: value` that the tests check (wheels, total-mib, xz-mib,
part-mib, parts).
benchmarks/h200/gpu-image.txt lists what the GPU machine's image already holds.
"""

from __future__ import annotations

import math
import re
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIST = HERE / "carry-sglang.txt"
IMAGE = HERE / "gpu-image.txt"
LINE = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s#]+)\s+#\s*"
                  r"(?P<mib>\d+\.\d+) MiB\b(?P<why>.*)$")
HEADER = re.compile(r"^#\s*(?P<key>[a-z-]+):\s*(?P<value>\S+)")
HOME = re.compile(r"^#\s*home:\s*(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)(?P<pin>==\S+)?\s+(?P<why>.+)$")
MAX_CALL_MIB = 64          # what one call of the device tool carries, working tree included
MAX_PARTS = 8              # issue 50: the SGLang bundle in at most 8 calls


def canon(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    mib: float
    why: str


@dataclass
class CarryList:
    pins: list[Pin]
    header: dict[str, str]
    bad_lines: list[str]
    home: dict[str, str]        # packages left home on purpose: name -> why

    def total_mib(self) -> float:
        return round(sum(p.mib for p in self.pins), 2)

    def parts_needed(self) -> int:
        return math.ceil(float(self.header["xz-mib"]) / float(self.header["part-mib"]))


def read_list(path: Path = LIST) -> CarryList:
    pins, header, bad, home = [], {}, [], {}
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = HOME.match(line)
            if m:
                home[canon(m["name"])] = m["why"].strip()
                continue
            m = HEADER.match(line)
            if m:
                header[m["key"]] = m["value"]
            continue
        m = LINE.match(line)
        if m:
            pins.append(Pin(canon(m["name"]), m["version"], float(m["mib"]), m["why"].strip()))
        else:
            bad.append(line)
    return CarryList(pins, header, bad, home)


def read_image(path: Path = IMAGE) -> dict[str, str | None]:
    """{canonical name: version or None where the image's version was never read}."""
    out: dict[str, str | None] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, _, version = line.partition("==")
        out[canon(name)] = version or None
    return out


def wheel_name_version(path: Path) -> tuple[str, str]:
    name, version = path.name.split("-")[:2]
    return canon(name), version


def requires(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode()
    return [line.split(":", 1)[1].strip() for line in text.splitlines()
            if line.startswith("Requires-Dist:")]


def check(folder: Path, carry: CarryList | None = None) -> list[str]:
    """Problems between the list and a folder of the wheels it names (empty: none)."""
    from packaging.requirements import Requirement

    carry = carry or read_list()
    image = read_image()
    env = dict(python_version="3.12", python_full_version="3.12.3", sys_platform="linux",
               platform_machine="x86_64", platform_system="Linux", os_name="posix",
               implementation_name="cpython", platform_python_implementation="CPython", extra="")
    wheels = {wheel_name_version(w): w for w in sorted(folder.glob("*.whl"))}
    have = {n: v for n, v in wheels}
    problems = []
    pinned = {p.name: p for p in carry.pins}
    for p in carry.pins:
        w = wheels.get((p.name, p.version))
        if w is None:
            problems.append(f"{p.name}=={p.version}: no wheel in {folder}")
            continue
        mib = round(w.stat().st_size / 2**20, 2)
        if abs(mib - p.mib) > 0.01:
            problems.append(f"{p.name}=={p.version}: {mib} MiB in {folder}, {p.mib} in the list")
        for spec in requires(w):
            r = Requirement(spec)
            if r.marker and not r.marker.evaluate(env):
                continue
            dep = canon(r.name)
            if dep in pinned:
                if not r.specifier.contains(pinned[dep].version, prereleases=True):
                    problems.append(f"{p.name} needs {spec}; the list carries {dep}=={pinned[dep].version}")
            elif dep in carry.home:
                continue                    # left home on purpose, with the list's reason
            elif dep not in image:
                problems.append(f"{p.name} needs {spec}: neither carried nor on the image")
            elif image[dep] and not r.specifier.contains(image[dep], prereleases=True):
                problems.append(f"{p.name} needs {spec}; the image has {dep}=={image[dep]}")
    for (n, v) in wheels:
        if n not in pinned:
            problems.append(f"{n}=={v} is in {folder} but not in the list")
    return problems


def store(folder: Path, out: Path) -> None:
    """Rewrite every wheel uncompressed (same files, same RECORD): pip installs it as before."""
    out.mkdir(parents=True, exist_ok=True)
    for w in sorted(folder.glob("*.whl")):
        with zipfile.ZipFile(w) as zin, zipfile.ZipFile(out / w.name, "w", zipfile.ZIP_STORED) as zo:
            for info in zin.infolist():
                data = zin.read(info.filename)
                new = zipfile.ZipInfo(info.filename, info.date_time)
                new.external_attr, new.compress_type = info.external_attr, zipfile.ZIP_STORED
                zo.writestr(new, data)


def main(argv: list[str]) -> int:
    if argv[:1] == ["pins"]:
        print("\n".join(f"{p.name}=={p.version}" for p in read_list().pins))
        return 0
    if argv[:1] == ["check"] and len(argv) == 2:
        problems = check(Path(argv[1]))
        print("\n".join(problems) or "the folder is the list; every need is carried or on the image")
        return 1 if problems else 0
    if argv[:1] == ["store"] and len(argv) == 3:
        store(Path(argv[1]), Path(argv[2]))
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
