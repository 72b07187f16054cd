"""What making a record durable costs on this machine's disk: N files of SIZE bytes written
back to back as the store writes a record (temporary file, write, fsync, rename, fsync of the
directory), each step's median in ms (issue 24: the two fsyncs now run on the store's sync
thread, store.Store.write(sync_later=True)).

    python3 benchmarks/fsync_cost.py [--dir DIR] [--files 200] [--size 30000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default=".", help="where to write (the results directory's disk)")
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--size", type=int, default=30_000, help="bytes a file (a record is 5-300 KB)")
    a = ap.parse_args()
    if a.files < 1 or a.size < 1:
        ap.error("--files and --size must be at least 1")
    if not os.path.isdir(a.dir):
        ap.error(f"--dir {a.dir} is not a directory")
    d = tempfile.mkdtemp(dir=a.dir, prefix="llmbench-fsync-")
    data = b"x" * a.size
    steps: dict[str, list[float]] = {k: [] for k in ("create", "write", "fsync file", "rename", "fsync directory")}
    try:
        for i in range(a.files):
            t0 = time.perf_counter()
            fd = os.open(os.path.join(d, f".tmp-{i}.part"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            t1 = time.perf_counter()
            os.write(fd, data)
            t2 = time.perf_counter()
            os.fsync(fd)
            t3 = time.perf_counter()
            os.close(fd)
            os.replace(os.path.join(d, f".tmp-{i}.part"), os.path.join(d, f"r{i}.json"))
            t4 = time.perf_counter()
            dfd = os.open(d, os.O_RDONLY)
            os.fsync(dfd)
            os.close(dfd)
            t5 = time.perf_counter()
            for k, (s, e) in zip(steps, ((t0, t1), (t1, t2), (t2, t3), (t3, t4), (t4, t5))):
                steps[k].append(e - s)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    print(f"{a.files} files of {a.size} bytes in {os.path.abspath(a.dir)}, median ms: " +
          ", ".join(f"{k} {statistics.median(v) * 1e3:.3f}" for k, v in steps.items()))


if __name__ == "__main__":
    main()
