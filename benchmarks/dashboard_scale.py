"""Dashboard at scale: 100,000 records, time to first render and to apply a filter in Chromium.

    .venv/bin/python benchmarks/dashboard_scale.py [--records 100000] [--dir DIR]
        [--no-sidecars | --index-command] [--cold-opens N]

Generates records in the Record schema (a sweep of hardware x engine x model x lengths x
batch x parallelism x repeats, own and reference kinds; values from a simple made-up formula:
they exercise the code path, they are not results), builds the columnar index, starts
`llmbench dashboard` on a free loopback port, and drives Debian's Chromium through Playwright:
- first render: page.goto -> the graph drawn with its points (includes loading Dash's JS)
- filter: ticking a value in a filter dropdown -> the graph and status updated (5 filters;
  median and max)
- cold open: `llmbench dashboard` started on the store with no index (deleted) until its page
  is served: the index build and the dashboard's start, as a user opening a large store for the
  first time waits for them (`--cold-opens N`: N of them, the median against the goal)
Each run directory ends with the index rows llmbench's writer leaves when a run ends
(`index.write_sidecar`, store/sidecar.py); `--no-sidecars` measures a store without them (records
copied in by hand, or written by an llmbench before 2026-12-03); `--index-command` removes them and
gives them back with `llmbench index`, timed (such a store, indexed once).
Goals (the issues): first render < 2 s, filter < 300 ms, cold open < 3 s. Prints measured/goal
ratios.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import numpy as np

from llmbench.store.record import Record

HW = {"A100-SXM4-40GB": 1.6e12, "A100-SXM-80GB": 2.0e12, "H100-SXM": 3.35e12, "H200": 4.8e12,
      "GH200": 4.0e12, "MI250-GCD": 1.6e12, "MI300X": 5.3e12, "Gaudi2": 2.45e12}
ENGINES = {"vllm": 0.55, "tensorrt-llm": 0.65, "llamacpp": 0.15, "deepspeed-mii": 0.45,
           "sglang": 0.6, "transformers": 0.1}
MODELS = {f"model-{i:02d}-{p}b": p * 1e9 for i, p in enumerate([7, 7, 8, 8, 13, 13, 34, 70, 70, 72,
                                                                  7, 8, 9, 14, 32])}
IO = [128, 256, 512, 1024, 2048, 4096]
BATCH = [1, 8, 16, 32, 64, 128]
TP = [1, 2]


def _stats(values: np.ndarray, unit: str, samples: bool = False) -> dict:
    """MetricStats fields (no bootstrap CI: 100k of them would dominate the generation)."""
    v = np.sort(values)
    p50, p90, p95, p99 = (v[round(q * (len(v) - 1))] for q in (0.5, 0.9, 0.95, 0.99))
    return {"unit": unit, "n": int(len(values)), "mean": float(values.mean()), "median": float(p50),
            "p50": float(p50), "p90": float(p90), "p95": float(p95), "p99": float(p99),
            "min": float(values.min()), "max": float(values.max()),
            "std": float(values.std(ddof=1)) if len(values) > 1 else 0.0,
            "ci95_low": None, "ci95_high": None,
            "samples": [float(v) for v in values] if samples else None}


def _doc(rng, i, hw, eng, model, io, bs, tp) -> dict:
    bw, eff, params = HW[hw], ENGINES[eng], MODELS[model]
    bound = bs * 2 * io / (io / (bw * tp / (2 * params)) + 1e-4 * io * bs)
    thr = bound * eff * (1 - 0.03 * np.log2(bs)) * (1 + 0.03 * rng.standard_normal())
    lat = bs * 2 * io / thr
    kind = "reference" if i % 3 else "inference"
    n = 1 if kind == "reference" else 3
    return {
        "schema_version": "1.0", "run_id": f"bench-{i // 100:05d}", "point_key": f"p{i}",
        "created_at": "2026-11-30T00:00:00+00:00", "kind": kind, "status": "ok", "error": None,
        "backend": {"name": eng, "version": None, "options": {}},
        "model": {"name": model, "source": None, "params": int(params), "synthetic_weights": False},
        "hardware": {"name": hw, "count": tp, "driver": None},
        "workload": {"batch_size": bs, "input_len": io, "output_len": io, "tensor_parallel": tp,
                     "pipeline_parallel": 1, "weight_dtype": "fp16", "kv_cache_dtype": "auto",
                     "repeats": n},
        "metrics": {"batch_latency_s": _stats(lat * (1 + 0.02 * rng.standard_normal(n)), "s"),
                    "total_throughput_tok_s": _stats(thr * (1 + 0.02 * rng.standard_normal(n)), "tok/s"),
                    "ttft_s": _stats(rng.gamma(4, lat / 200, size=8), "s", samples=kind != "reference")},
        "roofline": {"bound": {"total_throughput_tok_s": bound}, "binding_resource": "hbm",
                     "efficiency": {"total_throughput_tok_s": thr / bound}},
        "power": {}, "notes": [], "env": {}, "spec": None,
    }


def generate(root: Path, n: int) -> None:
    """The records, 100 a run, written as plain files."""
    rng = np.random.default_rng(0)
    grid = list(itertools.product(HW, ENGINES, MODELS, IO, BATCH, TP))
    order = rng.permutation(len(grid))  # any prefix covers every hardware and engine
    for i in range(n):
        hw, eng, model, io, bs, tp = grid[order[i % len(grid)]]
        d = root / f"bench-{i // 100:05d}"
        if i % 100 == 0:
            d.mkdir(parents=True, exist_ok=True)
        doc = _doc(rng, i, hw, eng, model, io, bs, tp)
        if i < 20:  # the documents are Records (validated here, not 100k times)
            Record.model_validate(doc)
        # Plain writes: the store's fsync per record is not what is measured here.
        (d / f"rec-{i:06d}.json").write_text(json.dumps(doc))


def set_sidecars(root: Path, on: bool) -> int:
    """Give every run directory the sidecar the writer leaves at a run's end (the same call),
    or remove them; the number of run directories that have one."""
    from llmbench.store.index import write_sidecar
    from llmbench.store.sidecar import SIDECAR

    have = 0
    for d in sorted(p for p in root.iterdir() if p.is_dir()):
        if not on:
            (d / SIDECAR).unlink(missing_ok=True)
            continue
        if not (d / SIDECAR).is_file():
            write_sidecar(d)
        have += (d / SIDECAR).is_file()
    return have


def server_side_cpu(d, n_filters: int) -> tuple[float, list[float]]:
    """CPU seconds of the dashboard's own work (what the filter callback computes), measured
    in-process: independent of how loaded the machine is, unlike the browser timings."""
    from llmbench.report import views

    view = views.VIEWS["batch"]
    rows = views.view_rows(d, view)
    x, y = views.default_x(d, view, rows), views.default_y(d, view, rows)
    t = time.process_time()
    color, pins = views.default_choice(d, view, x, y, df=rows)
    fig, _ = views.build(d, views.Choice(view="batch", x=x, y=y, color=color, filters=pins))
    first = time.process_time() - t
    out = []
    chosen: list[str] = []
    for h in list(HW)[:n_filters]:
        chosen.append(h)
        t = time.process_time()
        fig, _ = views.build(d, views.Choice(view="batch", x=x, y=y, color=color,
                                             filters={**pins, "hardware": list(chosen)}))
        json.dumps(fig.to_dict())
        out.append(time.process_time() - t)
    return first, out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_dashboard(root: Path) -> tuple[subprocess.Popen, str, float]:
    """`llmbench dashboard` on a free port; seconds from the start until its page is served."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    t = time.perf_counter()
    server = subprocess.Popen([sys.executable, "-m", "llmbench", "dashboard", "--results", str(root),
                               "--port", str(port)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    while True:
        try:
            urllib.request.urlopen(url, timeout=1).read()
            return server, url, time.perf_counter() - t
        except OSError:
            if server.poll() is not None or time.perf_counter() - t > 300:
                sys.exit("the dashboard did not start")
            time.sleep(0.05)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--dir", type=Path, default=None, help="reuse/keep records here")
    ap.add_argument("--filters", type=int, default=5)
    ap.add_argument("--cold-opens", type=int, default=1, metavar="N",
                    help="cold opens to time (the index deleted before each); the median is "
                         "compared with the goal")
    sidecars = ap.add_mutually_exclusive_group()
    sidecars.add_argument("--no-sidecars", action="store_true",
                          help="remove the run directories' sidecars (store/sidecar.py) before "
                               "measuring")
    sidecars.add_argument("--index-command", action="store_true",
                    help="remove the sidecars, then time `llmbench index` writing them again")
    ap.add_argument("--compare-python", action="store_true",
                    help="also parse every record in Python (the index's small-update path) and "
                         "print the cold build's ratio against it")
    args = ap.parse_args()
    if args.cold_opens < 1:
        ap.error("--cold-opens must be at least 1")
    root = args.dir or Path(tempfile.mkdtemp(prefix="llmbench-scale-"))
    existing = sum(1 for _ in root.rglob("rec-*.json")) if root.exists() else 0
    if existing != args.records:
        shutil.rmtree(root, ignore_errors=True)
        t = time.perf_counter()
        generate(root, args.records)
        print(f"generated {args.records:,} records in {time.perf_counter() - t:.1f} s under {root}")
    t = time.perf_counter()
    runs = set_sidecars(root, not (args.no_sidecars or args.index_command))
    print(f"sidecars: {runs:,} run directories have one (index.write_sidecar, as the writer leaves "
          f"it at a run's end; {time.perf_counter() - t:.1f} s)")
    if args.index_command:
        t = time.perf_counter()
        said = subprocess.run([sys.executable, "-m", "llmbench", "index", "--results", str(root)],
                              check=True, capture_output=True, text=True).stdout.strip()
        print(f"index command: {time.perf_counter() - t:.1f} s ({said})")
    from llmbench.report.data import load
    from llmbench.store.index import index_path

    index_path(root).unlink(missing_ok=True)
    t = time.perf_counter()
    d = load(root)
    cold = time.perf_counter() - t
    t = time.perf_counter()
    d = load(root)
    warm = time.perf_counter() - t
    print(f"index: cold build {cold:.2f} s ({len(d.df):,} rows), warm load {warm:.3f} s")
    if args.compare_python:
        from llmbench.store.index import _list_names, read_table

        paths = [p for sub in sorted(root.iterdir()) for p in _list_names(str(sub))]
        t = time.perf_counter()
        read_table(paths, set(), set(), bulk=True)
        duck = time.perf_counter() - t
        t = time.perf_counter()
        read_table(paths, set(), set(), bulk=False)
        py = time.perf_counter() - t
        print(f"index rows of {len(paths):,} files: DuckDB {duck:.2f} s, Python {py:.2f} s, "
              f"ratio DuckDB/Python {duck / py:.2f}")
    first_cpu, filt_cpu = server_side_cpu(d, args.filters)
    print(f"server-side CPU: first figure {first_cpu * 1000:.0f} ms, filter "
          + ", ".join(f"{x * 1000:.0f}" for x in filt_cpu) + " ms")

    chromium = shutil.which("chromium")
    if chromium is None:
        sys.exit("chromium not found: apt-get install chromium")
    # A first open of the store: no index yet, `llmbench dashboard` builds it and serves.
    colds = []
    for _ in range(args.cold_opens):
        index_path(root).unlink(missing_ok=True)
        server, url, took = start_dashboard(root)
        t = time.perf_counter()  # the dashboard saves the index it built once it serves
        while not index_path(root).exists() and time.perf_counter() - t < 60:
            time.sleep(0.05)
        server.terminate()
        server.wait(timeout=10)
        colds.append(took)
    cold_open = statistics.median(colds)
    print(f"cold open (no index; index build + dashboard ready) in {cold_open:.2f} s"
          + (f" (median of {len(colds)}: {', '.join(f'{x:.2f}' for x in colds)})"
             if len(colds) > 1 else ""))
    server, url, ready = start_dashboard(root)
    print(f"dashboard process ready in {ready:.2f} s (index cached)")
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as pw:
            b = pw.chromium.launch(executable_path=chromium, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                "--disable-component-update", "--no-first-run"])
            page = b.new_page(viewport={"width": 1440, "height": 950})
            firsts = []
            for _ in range(3):  # first one also warms the OS file cache for Dash's bundles
                t = time.perf_counter()
                page.goto(url)
                page.wait_for_function("(document.querySelector('#status')||{}).innerText"
                                       "&& document.querySelector('#status').innerText.includes('points')"
                                       "&& document.querySelector('#graph .main-svg .scatterlayer .trace')",
                                       polling="raf")
                firsts.append(time.perf_counter() - t)
            status = page.locator("#status").inner_text()
            print(f"first render: {', '.join(f'{x:.2f}' for x in firsts)} s ({status})")
            hw_id = json.dumps({"field": "hardware", "type": "filter"}, separators=(",", ":"))
            times, split = [], []
            hook = """() => { window.__plotted = 0;
                const gd = document.querySelector('#graph .js-plotly-plot');
                if (!gd.__hooked) { gd.on('plotly_afterplot', () => { window.__plotted = 1; });
                                    gd.__hooked = true; } }"""
            for h in list(HW)[: args.filters]:  # ticks one more hardware each time
                page.locator(f"[id='{hw_id}']").click()
                opt = page.locator("[role=listbox] [role=option]", has_text=h).first
                opt.wait_for()
                page.wait_for_timeout(200)
                page.evaluate(hook)
                t = time.perf_counter()
                with page.expect_response(lambda r: "_dash-update-component" in r.url) as resp:
                    opt.click()
                resp.value.finished()
                t_resp = time.perf_counter()
                page.wait_for_function("window.__plotted === 1", polling="raf")
                times.append(time.perf_counter() - t)
                split.append((t_resp - t, time.perf_counter() - t_resp))
                page.keyboard.press("Escape")
                page.wait_for_timeout(300)
            print("filter: " + ", ".join(f"{x * 1000:.0f}" for x in times) + " ms "
                  f"({page.locator('#status').inner_text()})")
            print("  of which click -> response: " + ", ".join(f"{a * 1000:.0f}" for a, _ in split)
                  + " ms; response -> drawn: " + ", ".join(f"{b * 1000:.0f}" for _, b in split) + " ms")
            b.close()
    finally:
        server.terminate()
        server.wait(timeout=10)
    med_first, med_filter = statistics.median(firsts[1:]), statistics.median(times)
    print(f"first render  {med_first:.2f} s   goal 2 s     ratio {med_first / 2:.2f}")
    print(f"apply filter  {med_filter * 1000:.0f} ms  goal 300 ms  ratio {med_filter / 0.3:.2f} "
          f"(max {max(times) * 1000:.0f} ms)")
    print(f"cold open     {cold_open:.2f} s   goal 3 s     ratio {cold_open / 3:.2f}")
    print(f"cpu: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
          "(other processes share these cores: browser timings include waiting for them)")
    if args.dir is None:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
