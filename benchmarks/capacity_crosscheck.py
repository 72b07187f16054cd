"""Capacity under SLOs on a real server, beside vLLM's own client: ONE vLLM server, then
1. `llmbench serve URL --find-max-rate --slo S` (Poisson arrivals, each rate judged on its
   steady window: docs/serving.md): the highest rate that met (low) and the lowest that missed
   (high) -- or the bracketing rates given by --rates;
2. at each bracketing rate, --repeats (>= 3) runs of each client, their order alternating
   (llmbench first in even repeats, vLLM first in odd ones): `llmbench serve URL --rate R` (a
   fixed point, no search, no early stop) and `vllm bench serve --request-rate R` (Poisson),
   both with the same warm-up (--warmup-requests; vLLM's --num-warmups) and prompts of the same
   token counts: every run reads its own prompt file (a prefix cache must not serve one run's
   prompts to the next), all built by llmbench in the served model's tokenizer with exactly
   --input-len tokens, the output forced to --output-len (llmbench --force-output, vLLM
   --ignore-eos); the tokens the server counted are printed beside them.
3. each run judged by the same steady-window rule (llmbench.loadgen.steady.judge: the window's
   SLO-met fraction, its Wilson interval, in flight vs Little's law and its growth): llmbench's
   from its record, vLLM's recomputed here from its per-request details (its TTFT starts at its
   own send, llmbench's at the scheduled arrival; TPOT = (latency - TTFT) / (output tokens - 1)
   on both sides).

The criterion, printed with its outcome: at each rate, the two clients' pooled fractions (over
the repeats) give the same verdict, or differ by less than 1.96 x their combined binomial
standard error ("agree within sampling error"); otherwise they DISAGREE and the report says what
differs (fractions, TTFT/TPOT p99, the server's prompt tokens, throughput, a growing queue).

    python3 benchmarks/capacity_crosscheck.py --model llama-3-8b --device cuda \
        --slo ttft_s=0.25,tpot_s=0.03 --input-len 512 --output-len 128 --results DIR
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

CLIENTS = ("llmbench", "vllm")
Z95 = 1.959963984540054


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--slo", default="ttft_s=0.25,tpot_s=0.03")
    ap.add_argument("--slo-fraction", type=float, default=0.9)
    ap.add_argument("--start-rate", type=float, default=8.0)
    ap.add_argument("--rates", default=None,
                    help="the bracketing rates, e.g. 70,76 (skips the search)")
    ap.add_argument("--input-len", type=int, default=512)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("-n", "--num-prompts", type=int, default=None,
                    help="requests a run (default: llmbench's steady-window sizing)")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each client at each rate (>= 3)")
    ap.add_argument("--warmup-requests", type=int, default=2, help="both clients' warm-up requests")
    ap.add_argument("--max-points", type=int, default=10)
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--server-arg", action="append", default=[])
    a = ap.parse_args(argv)
    if a.repeats < 3:
        ap.error("--repeats must be >= 3 (a verdict from fewer says nothing about its spread)")
    if not 0 < a.slo_fraction <= 1:
        ap.error("--slo-fraction must be in (0, 1]")
    try:
        a.slo_ms = slo_ms(a.slo)
        a.rate_list = [float(r) for r in a.rates.split(",")] if a.rates else None
    except ValueError as e:
        ap.error(f"--slo / --rates: {e}")
    return a


def slo_ms(slo: str) -> dict[str, float]:
    out = {}
    for item in slo.split(","):
        k, eq, v = item.partition("=")
        if not eq or k.strip() not in ("ttft_s", "tpot_s", "e2e_s"):
            raise ValueError(f"{item!r} is not ttft_s|tpot_s|e2e_s=SECONDS")
        out[k.strip()] = float(v) * 1e3
    return out


def plan(rates: list[float], repeats: int) -> list[tuple[float, int, str]]:
    """(rate, repeat, client) in run order: at each rate, repeat by repeat, the clients'
    order alternating so that neither always runs on a server the other just warmed."""
    out = []
    for rate in rates:
        for k in range(repeats):
            for client in (CLIENTS if k % 2 == 0 else CLIENTS[::-1]):
                out.append((rate, k, client))
    return out


def vllm_judged(result: dict, slo: dict[str, float], n_planned: int, target: float) -> dict:
    """vLLM's per-request details judged by llmbench's steady-window rule: requests in send
    order (start_times), each from its send to its end; a failed one misses."""
    from llmbench.loadgen.steady import Judged, judge

    ttfts = result.get("ttfts") or []
    n = len(ttfts)
    starts = result.get("start_times") or list(range(n))
    lats = result.get("latencies") or [None] * n
    outs = result.get("output_lens") or [0] * n
    errs = result.get("errors") or [""] * n
    order = sorted(range(n), key=lambda i: starts[i])
    inf = math.inf
    judged = []
    for rank, i in enumerate(order):
        ttft, lat, k = ttfts[i], lats[i], outs[i]
        if errs[i] or not k or not ttft or lat is None:
            judged.append(Judged(rank, starts[i], None, False))
            continue
        tpot_ms = 1e3 * (lat - ttft) / (k - 1) if k > 1 else 0.0
        met = (ttft * 1e3 <= slo.get("ttft_s", inf) and tpot_ms <= slo.get("tpot_s", inf)
               and lat * 1e3 <= slo.get("e2e_s", inf))
        judged.append(Judged(rank, starts[i], starts[i] + lat, met))
    v = judge(judged, n_planned, target)
    return {**v, "ttft_p99_ms": result.get("p99_ttft_ms"), "tpot_p99_ms": result.get("p99_tpot_ms"),
            "request_throughput": result.get("request_throughput"),
            "server_prompt_tokens": result.get("total_input_tokens")}


def llmbench_judged(record: dict) -> dict:
    """A fixed point's record: its steady verdict and what to set beside vLLM's."""
    s, m = record["serving"], record["metrics"]
    p99 = lambda k: 1e3 * ((m.get(k) or {}).get("p99") or 0)   # noqa: E731
    return {**s["steady"], "ttft_p99_ms": p99("ttft_s"), "tpot_p99_ms": p99("tpot_s"),
            "request_throughput": (m.get("request_throughput_req_s") or {}).get("mean"),
            "server_prompt_tokens": s.get("prompt_tokens")}


def pool(runs: list[dict], target: float) -> dict:
    """One client's repeats at one rate: the window's met and judged requests summed, the
    pooled fraction with its binomial error and Wilson interval, each repeat's verdict."""
    from llmbench.loadgen.steady import sampling_error

    met = sum(r.get("met") or 0 for r in runs)
    n = sum(r.get("judged") or 0 for r in runs)
    growing = any(r.get("growing") for r in runs)
    out = {"repeats": len(runs), "met": met, "judged": n, "growing": growing,
           "verdicts": [r.get("meets") for r in runs]}
    if not n:
        return {**out, "fraction": None, "meets": None}
    p = met / n
    return {**out, "fraction": p, **sampling_error(met, n), "meets": p >= target and not growing}


def compare(ours: dict, theirs: dict) -> dict:
    """The criterion: same verdict, or fractions within 1.96 combined standard errors."""
    if ours["fraction"] is None or theirs["fraction"] is None:
        return {"agree": False, "how": "no verdict on one side (no judged requests)"}
    diff = ours["fraction"] - theirs["fraction"]
    bound = Z95 * math.hypot(ours["stderr"], theirs["stderr"])
    if ours["meets"] == theirs["meets"]:
        return {"agree": True, "how": "same verdict", "diff": diff, "bound": bound}
    if abs(diff) <= bound and not (ours["growing"] or theirs["growing"]):
        return {"agree": True, "how": "agree within sampling error (verdicts differ, the fractions "
                f"by {diff:+.3f}, within 1.96 combined standard errors {bound:.3f})",
                "diff": diff, "bound": bound}
    return {"agree": False, "how": f"DISAGREE: fractions differ by {diff:+.3f}, beyond 1.96 combined "
            f"standard errors {bound:.3f}" if abs(diff) > bound else
            "DISAGREE: one side's queue grew through its window", "diff": diff, "bound": bound}


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def differences(ours: list[dict], theirs: list[dict]) -> list[str]:
    """What the two clients' runs at one rate measured differently (means over repeats)."""
    out = []
    for key, what, fmt in (("ttft_p99_ms", "TTFT p99 ms", ".1f"), ("tpot_p99_ms", "TPOT p99 ms", ".2f"),
                           ("server_prompt_tokens", "prompt tokens the server counted", ".0f"),
                           ("request_throughput", "req/s", ".2f"),
                           ("in_flight_mean", "mean in flight", ".1f"),
                           ("littles_law_ratio", "in flight / Little's law", ".2f")):
        a, b = mean(r.get(key) for r in ours), mean(r.get(key) for r in theirs)
        if a is not None and b is not None:
            out.append(f"{what}: llmbench {a:{fmt}} | vllm {b:{fmt}}")
    return out


def summarize(runs: list[dict], target: float) -> list[dict]:
    """Per rate: both clients pooled, the criterion, and what differs."""
    rows = []
    for rate in sorted({r["rate"] for r in runs}):
        by = {c: [r["judged"] for r in runs if r["rate"] == rate and r["client"] == c] for c in CLIENTS}
        pooled = {c: pool(by[c], target) for c in CLIENTS}
        rows.append({"rate": rate, **pooled, "criterion": compare(pooled["llmbench"], pooled["vllm"]),
                     "differences": differences(by["llmbench"], by["vllm"])})
    return rows


def report(rows: list[dict], target: float, search: dict | None = None) -> str:
    lines = []
    if search:
        lines.append(f"capacity search: met at {search.get('low_req_s')}, missed at "
                     f"{search.get('high_req_s')} req/s ({search.get('reason')})")
    lines.append(f"criterion: at each rate the pooled steady-window SLO fractions (target {target:g}) "
                 "give the same verdict, or differ by < 1.96 combined standard errors")
    for row in rows:
        lines.append(f"rate {row['rate']:.4g} req/s:")
        for c in CLIENTS:
            p = row[c]
            if p["fraction"] is None:
                lines.append(f"  {c:8s}: no judged requests")
                continue
            lo, hi = p["wilson"]
            verdict = "meets" if p["meets"] else "misses"
            lines.append(f"  {c:8s}: {verdict} -- fraction {p['fraction']:.3f} +- {p['stderr']:.3f} "
                         f"(Wilson 95% [{lo:.3f}, {hi:.3f}], {p['met']}/{p['judged']} over "
                         f"{p['repeats']} repeats; per repeat "
                         f"{['meets' if v else 'misses' if v is not None else '-' for v in p['verdicts']]})"
                         + ("; queue grew" if p["growing"] else ""))
        lines.append(f"  -> {row['criterion']['how']}")
        for d in row["differences"]:
            lines.append(f"     {d}")
    agree = all(r["criterion"]["agree"] for r in rows)
    lines.append("OVERALL: " + ("the verdicts agree within the stated sampling error" if agree and rows
                                else "the verdicts DISAGREE (see above)" if rows else "nothing compared"))
    return "\n".join(lines)


# -- the H200 run (needs vLLM and a GPU) -------------------------------------------------------
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


def write_prompts(tok, n: int, input_len: int, output_len: int, seed: int, d: Path) -> tuple[Path, Path]:
    """n prompts of exactly input_len tokens in `tok`: a ShareGPT file for llmbench, a JSONL
    (vLLM's custom dataset) of the same texts for vLLM."""
    from llmbench.kinds.serving.config import LengthDist
    from llmbench.kinds.serving.prompts import synthetic_prompts

    specs = synthetic_prompts(tok, n, LengthDist(a=input_len), LengthDist(a=output_len), 0.0, seed)
    d.mkdir(parents=True, exist_ok=True)
    share, jsonl = d / f"prompts-{seed}.json", d / f"prompts-{seed}.jsonl"
    share.write_text(json.dumps([{"conversations": [{"from": "human", "value": s.prompt},
                                                    {"from": "gpt", "value": "-"}]} for s in specs]))
    jsonl.write_text("".join(json.dumps({"prompt": s.prompt}) + "\n" for s in specs))
    return share, jsonl


def main(argv: list[str] | None = None) -> None:
    a = parse_args(argv)
    from vllm_serve_crosscheck import VLLM_BENCH_SERVE, vllm_warmup_args

    from llmbench.kinds.serving.tokenizer import load_tokenizer
    from llmbench.launch.servers import launched
    from llmbench.loadgen.steady import requests_for
    from llmbench.models.sources import model_path, resolve

    results = a.results or Path(tempfile.mkdtemp(prefix="capacity-crosscheck-"))
    results.mkdir(parents=True, exist_ok=True)
    tokenizer = str(model_path(a.model, "hf"))
    tok = load_tokenizer(tokenizer)
    served = resolve(a.model).name
    n = a.num_prompts or requests_for(a.slo_fraction)
    goodput = [f"{ {'ttft_s': 'ttft', 'tpot_s': 'tpot', 'e2e_s': 'e2el'}[k]}:{v:g}" for k, v in a.slo_ms.items()]
    summary: dict = {"model": a.model, "slo": a.slo, "slo_fraction": a.slo_fraction, "num_prompts": n,
                     "input_len": a.input_len, "output_len": a.output_len, "repeats": a.repeats,
                     "warmup_requests": a.warmup_requests, "runs": []}
    with launched("vllm", a.model, device=a.device, extra_args=a.server_arg, ready_timeout_s=420,
                  log_dir=results) as srv:
        print(f"vLLM {srv.version} server at {srv.url} healthy after {srv.startup_s:.0f} s", flush=True)
        summary["vllm"] = srv.version
        common = [sys.executable, "-m", "llmbench", "serve", srv.url, "--model", a.model,
                  "--device", a.device, "--tokenizer", tokenizer, "--slo", a.slo,
                  "--slo-fraction", str(a.slo_fraction), "--output-len", str(a.output_len),
                  "--warmup-requests", str(a.warmup_requests)]
        rates = a.rate_list
        if rates is None:
            search_dir = results / "search"
            run([*common, "--results", str(search_dir), "--find-max-rate", "--rate", str(a.start_rate),
                 "--max-points", str(a.max_points), "--input-len", str(a.input_len), "-n", str(n)], 3600)
            recs = sorted(records(search_dir), key=lambda r: r["workload"].get("search_point", 0))
            if not recs:
                print("no search record: nothing to compare", flush=True)
                (results / "capacity-crosscheck.json").write_text(json.dumps(summary, indent=1))
                return
            summary["search"] = recs[-1]["serving"]["capacity_search"]
            rates = [r for r in (summary["search"]["low_req_s"], summary["search"]["high_req_s"]) if r]
        for j, (rate, k, client) in enumerate(plan(rates, a.repeats)):
            seed = 1000 + j
            share, jsonl = write_prompts(tok, n, a.input_len, a.output_len, seed, results / "prompts")
            tag = f"r{rate:.4g}-k{k}-{client}"
            if client == "llmbench":
                d = results / tag
                run([*common, "--results", str(d), "--rate", f"{rate:.6g}", "--dataset", str(share),
                     "-n", str(n), "--seed", str(seed)], 1800)
                recs = records(d)
                judged = llmbench_judged(recs[0]) if recs and recs[0].get("serving") else {}
            else:
                name = f"{tag}.json"
                run([sys.executable, "-c", VLLM_BENCH_SERVE, "--backend", "vllm", "--base-url", srv.url,
                     "--model", served, "--tokenizer", tokenizer, "--dataset-name", "custom",
                     "--dataset-path", str(jsonl), "--custom-output-len", str(a.output_len),
                     "--skip-chat-template", "--disable-shuffle", "--num-prompts", str(n),
                     "--request-rate", f"{rate:.6g}", "--burstiness", "1", "--seed", str(seed),
                     "--ignore-eos", "--temperature", "0", *vllm_warmup_args(a.warmup_requests),
                     "--disable-tqdm", "--save-result", "--save-detailed", "--goodput", *goodput,
                     "--result-dir", str(results), "--result-filename", name], 1800)
                p = results / name
                judged = vllm_judged(json.loads(p.read_text()), a.slo_ms, n, a.slo_fraction) \
                    if p.exists() else {}
            summary["runs"].append({"rate": rate, "repeat": k, "client": client, "judged": judged})
    summary["rows"] = summarize(summary["runs"], a.slo_fraction)
    (results / "capacity-crosscheck.json").write_text(json.dumps(summary, indent=1, default=str))
    print("\n" + report(summary["rows"], a.slo_fraction, summary.get("search")), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    main()
