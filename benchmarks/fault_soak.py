"""Fault soak: a 100-point sweep of tiny real llama.cpp points (bundled SmolLM2) with injected
crashes (SIGSEGV, SIGABRT, SIGKILL before a point, SIGKILL mid-generate, SIGKILL mid-record-
write, exit), hangs and CUDA out-of-memory errors, run through `llmbench run` (isolated
workers). Prints completed / failed / lost; lost must be 0: every point ends with exactly one
record, every failed record names the injected cause, and the exit status is 3 (partial success).

Then, on the same results: one stored record is corrupted (cut mid-document) and `llmbench
results` must name it on stderr, list every other record and exit 0; and a second sweep writes
into a small tmpfs that is filled up while it runs: the sweep must stop with an error naming
the record it could not write, every record completed before stays intact, no partial file is
left, and after space is freed `--resume` completes the rest. (The tmpfs needs root and
`mount`; without them that part is skipped and says so.)

    .venv/bin/python benchmarks/fault_soak.py [--points 100] [--faults 28] [--timeout 10] [--seed 0]

Faults are injected by the worker's test hook LLMBENCH_FAULT_INJECT (launch/faults.py); the
engine itself is real and loaded when the fault strikes.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import yaml

from llmbench.kinds.inference.spec import load_spec

# what each injected kind must be recorded as
EXPECT = {"segv": "worker killed by signal 11 (SIGSEGV)", "abort": "worker killed by signal 6 (SIGABRT)",
          "kill": "worker killed by signal 9 (SIGKILL)", "exit": "worker exited with status 1",
          "hang": "timed out after", "oom": "out of memory: OutOfMemoryError",
          "raise": "RuntimeError: fault injected",
          "killgen": "worker killed by signal 9 (SIGKILL)", "killwrite": "worker killed by signal 9 (SIGKILL)"}
# how many of each kind a full soak injects; interleaved so that a short soak (--faults 9)
# still injects one of every kind
COUNTS = {"segv": 6, "abort": 3, "kill": 3, "exit": 2, "hang": 4, "oom": 4, "raise": 2,
          "killgen": 2, "killwrite": 2}
MIX = [k for i in range(max(COUNTS.values())) for k, n in COUNTS.items() if i < n]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--faults", type=int, default=len(MIX))
    ap.add_argument("--timeout", type=float, default=10.0, help="per-point timeout_s (ends each hang)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--results", type=Path, default=None, help="default: a temporary directory")
    args = ap.parse_args()

    if args.points % 20:
        raise SystemExit("--points must be a multiple of 20 (2 batch sizes x 10 input lengths x k)")
    tmp = Path(tempfile.mkdtemp(prefix="llmbench-soak-"))
    spec_path = tmp / "soak.yaml"
    spec_path.write_text(yaml.safe_dump({
        "backends": ["llamacpp"], "models": ["smollm2-135m"], "batch_size": [1, 2],
        "input_len": list(range(8, 18)), "output_len": list(range(2, 2 + args.points // 20)),
        "repeats": 1, "warmups": 0, "timeout_s": args.timeout,
        "backend_options": {"llamacpp": {"n_threads": 1}}}))
    points = load_spec(spec_path).points()
    assert len(points) == args.points
    rng = random.Random(args.seed)
    kinds = (MIX * (args.faults // len(MIX) + 1))[:args.faults]
    victims = rng.sample(range(len(points)), len(kinds))
    plan = {points[i].key: k for i, k in zip(victims, kinds)}
    results = args.results or tmp / "results"

    env = {**os.environ, "LLMBENCH_FAULT_INJECT": "|".join(f"{k}@{key}" for key, k in plan.items()),
           "COLUMNS": "200"}
    cmd = [sys.executable, "-m", "llmbench", "run", str(spec_path), "--results", str(results)]
    t0 = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0

    docs, unreadable = [], 0
    for p in sorted(Path(results).rglob("*.json")):
        if p.name.startswith(".tmp-"):
            continue
        try:
            docs.append(json.loads(p.read_text()))
        except ValueError:
            unreadable += 1
    by_key: dict[str, list[dict]] = {}
    for d in docs:
        by_key.setdefault(d.get("point_key"), []).append(d)
    keys = [p.key for p in points]
    completed = sum(1 for k in keys if [d["status"] for d in by_key.get(k, [])] == ["ok"])
    failed = sum(1 for k in keys if [d["status"] for d in by_key.get(k, [])] == ["failed"])
    lost = len(keys) - completed - failed + unreadable  # none, several, or unreadable records
    wrong_cause = [(k, plan[k], by_key[k][0].get("error", "")[:80]) for k in plan
                   if len(by_key.get(k, [])) == 1 and not by_key[k][0].get("error", "").startswith(EXPECT[plan[k]])]
    unplanned = [k for k in keys if k not in plan and by_key.get(k) and by_key[k][0]["status"] != "ok"]

    print(f"fault soak: {len(points)} points, {len(plan)} injected faults "
          f"({', '.join(f'{n} {k}' for k, n in sorted(Counter(plan.values()).items()))}), "
          f"timeout_s={args.timeout:g}, seed={args.seed}")
    print(f"exit status {r.returncode} (3 = partial success expected); wall {wall:.1f} s "
          f"({wall / len(points):.2f} s per point, engine loads and worker restarts included)")
    print(f"completed {completed}  failed {failed}  lost {lost}")
    causes = Counter((d["error"] or "").splitlines()[0].split(";")[0].split(" after ")[0][:70]
                     for d in docs if d["status"] == "failed")
    for c, n in causes.most_common():
        print(f"  {n:3d}  {c}")
    if wrong_cause:
        print(f"failed with an unexpected cause: {wrong_cause}")
    if unplanned:
        print(f"points that failed without an injected fault: {unplanned}")
    ok = (lost == 0 and r.returncode == 3 and failed == len(plan) and not wrong_cause and not unplanned)
    if not ok:
        print(r.stderr[-3000:])
    ok = corrupt_check(Path(results)) and ok
    ok = full_disk_check(tmp, args.timeout) and ok
    print(f"results: {results}")
    return 0 if ok else 1


def llmbench(*argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "llmbench", *argv], capture_output=True, text=True,
                          env={**os.environ, "COLUMNS": "200", **(env or {})})


def records_in(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.json") if not p.name.startswith(".tmp-"))


def corrupt_check(results: Path) -> bool:
    """Cut one stored record mid-document: `results` names it, lists the rest, exits 0."""
    paths = records_in(results)
    victim = paths[len(paths) // 2]
    victim.write_bytes(victim.read_bytes()[:200])
    r = llmbench("results", "--results", str(results), "--format", "csv")
    rows = max(0, len(list(csv.reader(io.StringIO(r.stdout)))) - 1)  # error cells span lines
    ok = r.returncode == 0 and str(victim) in r.stderr and rows == len(paths) - 1
    print(f"corrupt record: results exit {r.returncode}, {rows}/{len(paths) - 1} other records listed, "
          f"warning names the file: {str(victim) in r.stderr} -> {'ok' if ok else 'FAILED'}")
    return ok


def full_disk_check(tmp: Path, timeout_s: float) -> bool:
    """A 20-point sweep into a 1 MiB tmpfs, filled to the last byte once 3 records are in."""
    mnt = tmp / "tmpfs"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mnt)],
                      capture_output=True).returncode != 0:
        print("full disk: SKIPPED (mount -t tmpfs failed: needs root); not emulated")
        return True
    try:
        spec = tmp / "disk.yaml"
        spec.write_text(yaml.safe_dump({
            "backends": ["llamacpp"], "models": ["smollm2-135m"], "batch_size": [1, 2],
            "input_len": list(range(8, 18)), "output_len": [2], "repeats": 1, "warmups": 0,
            "timeout_s": timeout_s, "backend_options": {"llamacpp": {"n_threads": 1}}}))
        results = mnt / "results"
        proc = subprocess.Popen([sys.executable, "-m", "llmbench", "run", str(spec), "--results", str(results)],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        while proc.poll() is None and len(records_in(results)) < 3:
            time.sleep(0.05)
        before = {p: p.read_bytes() for p in records_in(results)}
        with open(mnt / "filler", "wb", buffering=0) as f:  # the disk is full from here on
            try:
                while True:
                    f.write(b"\0" * 4096)
            except OSError:
                pass
        _, err = proc.communicate()
        kept = all(p.exists() and p.read_bytes() == b for p, b in before.items())
        parts = [p for p in results.rglob(".tmp-*")]
        named = "No space left on device" in err and "could not write the record of point" in err
        n_full = len(records_in(results))
        (mnt / "filler").unlink()
        resumed = llmbench("run", str(spec), "--results", str(results), "--resume")
        done = len(records_in(results))
        ok = proc.returncode == 1 and named and kept and not parts and done == 20 and resumed.returncode == 0
        print(f"full disk: sweep exit {proc.returncode}, {n_full} records when the disk filled "
              f"({len(before)} complete before it: intact {kept}), partial files {len(parts)}, "
              f"error names the record: {named}; after freeing space --resume exit "
              f"{resumed.returncode}, {done}/20 records -> {'ok' if ok else 'FAILED'}")
        if not ok:
            print(err[-2000:], resumed.stderr[-1000:])
        return ok
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


if __name__ == "__main__":
    sys.exit(main())
