"""Capacity under SLOs on a real server, beside vLLM's own client: ONE vLLM server, then
1. `llmbench serve URL --find-max-rate --slo S` (Poisson arrivals, -n requests a rate): the
   highest rate that met (low) and the lowest that missed (high), each point's early-stop
   verdict with its side and evidence (client: sends behind schedule; server: completions behind
   arrivals beyond Poisson noise), and the server's own queue (num_requests_waiting);
2. at each bracketing rate R: `vllm bench serve --request-rate R` (Poisson, same lengths and
   count, --ignore-eos, per-request details saved) and `llmbench serve URL --rate R` (a fixed
   point, no search, no early stop): the fraction of requests meeting every SLO by each client,
   computed from vLLM's per-request TTFT and ITLs here, and read from llmbench's record.

Definitions: vLLM's TTFT starts at its own send, llmbench's at the scheduled arrival (equal
unless the client lags: llmbench records that lag as send_lag_s). TPOT here = the sum of a
request's ITLs / (output tokens - 1), as vLLM defines it. The verdicts must agree: a rate
llmbench's search calls missed must show the SLO missed by vLLM's client too, or the search
misjudged it.

    python3 benchmarks/capacity_crosscheck.py --model llama-3-8b --device cuda \
        --slo ttft_s=0.25,tpot_s=0.03 --input-len 512 --output-len 128 -n 200 --results DIR
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

from vllm_serve_crosscheck import VLLM_BENCH_SERVE


def run(cmd: list[str], timeout_s: float) -> int:
    print("$", " ".join(cmd), flush=True)
    try:
        return subprocess.run(cmd, check=False, timeout=timeout_s).returncode
    except subprocess.TimeoutExpired:
        print(f"== timed out after {timeout_s:.0f} s", flush=True)
        return -1


def records(d: Path) -> list[dict]:
    out = []
    for p in sorted(d.rglob("serving-*.json")):
        try:
            out.append(json.loads(p.read_text()))
        except ValueError:
            pass
    return out


def slo_ms(slo: str) -> dict[str, float]:
    return {k.strip(): float(v) * 1e3 for k, v in (x.split("=") for x in slo.split(","))}


def vllm_fraction(path: Path, slo: dict[str, float]) -> dict:
    """The fraction of vLLM's requests meeting every SLO, from its per-request details (a
    failed request misses); TPOT = (latency - TTFT) / (output tokens - 1), vLLM's definition."""
    r = json.loads(path.read_text())
    ttfts, outs = r.get("ttfts") or [], r.get("output_lens") or []
    lats = r.get("latencies") or [None] * len(ttfts)
    itls, errs = r.get("itls") or [[]] * len(ttfts), r.get("errors") or [""] * len(ttfts)
    inf = float("inf")
    met = 0
    for ttft, lat, gaps, n, err in zip(ttfts, lats, itls, outs, errs):
        if err or not n or not ttft:
            continue
        lat = lat if lat is not None else ttft + sum(gaps)
        tpot_ms = 1e3 * (lat - ttft) / (n - 1) if n > 1 else 0.0
        met += (ttft * 1e3 <= slo.get("ttft_s", inf) and tpot_ms <= slo.get("tpot_s", inf)
                and lat * 1e3 <= slo.get("e2e_s", inf))
    return {"fraction_met": met / len(ttfts) if ttfts else None, "completed": r.get("completed"),
            "request_throughput": r.get("request_throughput"),
            "request_goodput": r.get("request_goodput"), "ttft_p99_ms": r.get("p99_ttft_ms"),
            "tpot_p99_ms": r.get("p99_tpot_ms"), "mean_ttft_ms": r.get("mean_ttft_ms")}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--slo", default="ttft_s=0.25,tpot_s=0.03")
    ap.add_argument("--slo-fraction", type=float, default=0.9)
    ap.add_argument("--start-rate", type=float, default=8.0)
    ap.add_argument("--input-len", type=int, default=512)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("-n", "--num-prompts", type=int, default=200)
    ap.add_argument("--max-points", type=int, default=10)
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--server-arg", action="append", default=[])
    a = ap.parse_args()

    from llmbench.launch.servers import launched
    from llmbench.models.sources import model_path, resolve

    results = a.results or Path(tempfile.mkdtemp(prefix="capacity-crosscheck-"))
    results.mkdir(parents=True, exist_ok=True)
    tokenizer = str(model_path(a.model, "hf"))
    served = resolve(a.model).name
    slo = slo_ms(a.slo)
    goodput = [f"{ {'ttft_s': 'ttft', 'tpot_s': 'tpot', 'e2e_s': 'e2el'}[k]}:{v:g}" for k, v in slo.items()]
    lens = ["--input-len", str(a.input_len), "--output-len", str(a.output_len), "-n", str(a.num_prompts)]
    summary: dict = {"model": a.model, "slo": a.slo, "slo_fraction": a.slo_fraction,
                     "num_prompts": a.num_prompts, "input_len": a.input_len, "output_len": a.output_len}
    with launched("vllm", a.model, device=a.device, extra_args=a.server_arg, ready_timeout_s=420,
                  log_dir=results) as srv:
        print(f"vLLM {srv.version} server at {srv.url} healthy after {srv.startup_s:.0f} s", flush=True)
        summary["vllm"] = srv.version
        common = [sys.executable, "-m", "llmbench", "serve", srv.url, "--model", a.model,
                  "--device", a.device]
        search_dir = results / "search"
        run([*common, "--results", str(search_dir), "--find-max-rate", "--slo", a.slo,
             "--slo-fraction", str(a.slo_fraction), "--rate", str(a.start_rate),
             "--max-points", str(a.max_points), *lens], 330)
        recs = sorted(records(search_dir), key=lambda r: r["workload"].get("search_point", 0))
        if not recs:
            print("no search record: nothing to compare", flush=True)
            (results / "capacity-crosscheck.json").write_text(json.dumps(summary, indent=1))
            return
        res = recs[-1]["serving"]["capacity_search"]
        summary["search"] = res
        summary["points"] = [{"rate": r["workload"]["request_rate"],
                              "slo_met_fraction": r["serving"].get("slo_met_fraction"),
                              "point_watch": r["serving"].get("point_watch"),
                              "requests": r["serving"].get("requests")} for r in recs]
        lo, hi = res["low_req_s"], res["high_req_s"]
        rates = [r for r in (lo, hi) if r]
        summary["at_rate"] = []
        for k, rate in enumerate(rates):
            name = f"vllm-bench-r{rate:.4g}.json"
            run([sys.executable, "-c", VLLM_BENCH_SERVE, "--backend", "vllm", "--base-url", srv.url,
                 "--model", served, "--tokenizer", tokenizer, "--dataset-name", "random",
                 "--random-input-len", str(a.input_len), "--random-output-len", str(a.output_len),
                 "--random-range-ratio", "0", "--num-prompts", str(a.num_prompts),
                 "--request-rate", f"{rate:.6g}", "--burstiness", "1", "--seed", str(100 + k),
                 "--ignore-eos", "--temperature", "0", "--num-warmups", "2", "--disable-tqdm", "--save-result",
                 "--save-detailed", "--goodput", *goodput, "--result-dir", str(results),
                 "--result-filename", name], 150)
            theirs = vllm_fraction(results / name, slo) if (results / name).exists() else {}
            fixed_dir = results / f"fixed-r{rate:.4g}"
            run([*common, "--results", str(fixed_dir), "--rate", f"{rate:.6g}", "--slo", a.slo,
                 "--seed", str(100 + k), *lens], 150)
            ours = {}
            for r in records(fixed_dir):
                s, m = r["serving"], r["metrics"]
                ours = {"fraction_met": s.get("slo_met_fraction"), "requests": s.get("requests"),
                        "ttft_p99_ms": 1e3 * ((m.get("ttft_s") or {}).get("p99") or 0),
                        "tpot_p99_ms": 1e3 * ((m.get("tpot_s") or {}).get("p99") or 0),
                        "request_throughput": (m.get("request_throughput_req_s") or {}).get("mean"),
                        "server_waiting_max": ((s.get("server_metrics") or {}).get("gauges", {})
                                               .get("requests_waiting") or {}).get("max")}
            summary["at_rate"].append({"rate": rate, "search_says": "met" if rate == lo else "missed",
                                       "llmbench_fixed": ours, "vllm_bench_serve": theirs})
    (results / "capacity-crosscheck.json").write_text(json.dumps(summary, indent=1, default=str))
    print(f"\ncapacity search ({a.slo}, {a.slo_fraction:.0%} of requests): met at {lo}, missed at {hi} "
          f"req/s ({res['reason']})")
    for p in summary["points"]:
        w = p["point_watch"] or {}
        print(f"  rate {p['rate']:8.3f}: fraction met {p['slo_met_fraction']}, stop {w.get('stop')} "
              f"side {w.get('side')} cancelled {w.get('cancelled')} (late {w.get('cancelled_late')}) "
              f"server queue {w.get('server_queue')}")
    for row in summary["at_rate"]:
        o, t = row["llmbench_fixed"], row["vllm_bench_serve"]
        print(f"  at {row['rate']:.4g} req/s (search: {row['search_says']}): fraction met "
              f"llmbench {o.get('fraction_met')} | vllm bench serve {t.get('fraction_met')}; "
              f"TTFT p99 ms {o.get('ttft_p99_ms')} | {t.get('ttft_p99_ms')}; "
              f"req/s {o.get('request_throughput')} | {t.get('request_throughput')}")


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
