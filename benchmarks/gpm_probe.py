"""Prove llmbench's hardware-counter path (measure/gpm.py) on a real GPU: three known loads, each
with the counters llmbench writes into its records, beside what the load itself achieved.

  idle     : nothing runs; DRAM, SM and tensor activity should read a few per cent at most
  copy     : a 4 GiB device-to-device copy, repeated; its bandwidth (read + write bytes / time)
             over the catalog's peak should be close to the DRAM utilisation counter
  matmul   : an 8192^3 bf16 matmul, repeated; its TFLOP/s over the catalog's dense peak should be
             close to the tensor activity counter, with DRAM low

    PYTHONPATH=src python3 benchmarks/gpm_probe.py [--seconds 3] [--json OUT.json]

Seen on an H200 (2026-12-02, by hand, not backed by a committed log: docs/findings.md): copy
4.28 TB/s read DRAM 85.7%; matmul 659 TFLOP/s read tensor 87.5%, DRAM 18%; idle 1-4%. --json
writes the figures to commit beside the claim. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from llmbench.measure.gpm import CounterWatch  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="length of each load's window")
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--json", type=Path, help="write the readings here")
    a = ap.parse_args()

    import torch

    from llmbench.hardware import find

    dev = torch.device(a.device)
    name = torch.cuda.get_device_name(dev)
    hw = find(name)
    peak_bw = hw.mem_bw_gbs * 1e9 if hw else None
    peak_bf16 = hw.peak_tflops.get("bf16") * 1e12 if hw and hw.peak_tflops.get("bf16") else None
    watch = CounterWatch.for_device(a.device, 1)
    print(f"{name} (catalog: {hw.id if hw else 'not in the catalog'}); counters: "
          f"{'GPM' if watch.gpm else watch.absent or watch.gpm_reason}")

    def window(work) -> tuple[dict, float, int]:
        watch.reset()
        n = 0
        torch.cuda.synchronize(dev)
        with watch.window():
            t0 = time.perf_counter()
            while time.perf_counter() - t0 < a.seconds:
                work()
                n += 1
            torch.cuda.synchronize(dev)
            dt = time.perf_counter() - t0
        return watch.result(), dt, n

    out = {"device": name, "catalog": hw.id if hw else None}
    src = torch.empty(4 * 2**30, dtype=torch.uint8, device=dev)
    dst = torch.empty_like(src)
    x = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    y = torch.randn(8192, 8192, dtype=torch.bfloat16, device=dev)
    dst.copy_(src), x @ y  # warm
    torch.cuda.synchronize(dev)

    r, dt, _ = window(lambda: time.sleep(0.01))
    out["idle"] = {"counters": r}
    r, dt, n = window(lambda: dst.copy_(src))
    bw = 2 * src.numel() * n / dt
    out["copy"] = {"counters": r, "bytes_per_s": bw, "of_peak_pct": bw / peak_bw * 100 if peak_bw else None}
    r, dt, n = window(lambda: x @ y)
    fl = 2 * 8192**3 * n / dt
    out["matmul"] = {"counters": r, "flop_per_s": fl,
                     "of_peak_pct": fl / peak_bf16 * 100 if peak_bf16 else None}

    def pct(d, k):
        v = d["counters"].get(k)
        return "absent" if v is None else f"{v:.1f}%"

    fails = []
    for load in ("idle", "copy", "matmul"):
        d = out[load]
        c = d["counters"]
        got = (f"  achieved {d['bytes_per_s'] / 1e12:.2f} TB/s = {d['of_peak_pct']:.1f}% of peak"
               if load == "copy" and d["of_peak_pct"] else
               f"  achieved {d['flop_per_s'] / 1e12:.0f} TFLOP/s = {d['of_peak_pct']:.1f}% of peak"
               if load == "matmul" and d["of_peak_pct"] else "")
        print(f"{load:7} DRAM {pct(d, 'dram_bw_util_pct'):>7}  SM {pct(d, 'sm_util_pct'):>7}  "
              f"occupancy {pct(d, 'sm_occupancy_pct'):>7}  tensor {pct(d, 'tensor_util_pct'):>7}  "
              f"throttled {c.get('throttled')} {c.get('throttle_reasons', '')}{got}")
        if "absent" in c or "absent_metrics" in c:
            fails.append(f"{load}: counters absent: {c.get('absent') or c.get('absent_metrics')}")
    if not fails:
        if out["idle"]["counters"]["dram_bw_util_pct"] > 10:
            fails.append("idle DRAM utilisation above 10%")
        if out["copy"]["counters"]["dram_bw_util_pct"] < 60:
            fails.append("copy DRAM utilisation below 60%")
        if out["matmul"]["counters"]["tensor_util_pct"] < 50:
            fails.append("matmul tensor activity below 50%")
        e = out["matmul"]["counters"]["gpus"][0]
        print(f"clocks start/end: SM {e['start'].get('sm_clock_mhz')}/{e['end'].get('sm_clock_mhz')} MHz, "
              f"memory {e['start'].get('mem_clock_mhz')}/{e['end'].get('mem_clock_mhz')} MHz, "
              f"{e['start'].get('temperature_c')}/{e['end'].get('temperature_c')} C, reasons at end "
              f"{e['end'].get('clocks_event_reasons')}")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1))
    for f in fails:
        print("CHECK FAILED:", f)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
