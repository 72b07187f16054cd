"""`llmbench predict`: expected throughput and latency on hardware you may not have, the
roofline bound times an efficiency learned from the study's measurements, with an interval
from held-out validation (analysis/predict.py); `--validate` prints that validation and
`--check DIR` predicts your own records and prints the error. `--save` also stores the
prediction as a record of kind `estimate` (kinds/estimate), which every view marks and never
ranks beside measurements unless asked."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from llmbench.errors import SpecError, did_you_mean
from llmbench.store.store import DEFAULT_RESULTS


def register(app: typer.Typer) -> None:
    app.command("predict")(predict)


def predict(
    study: Optional[Path] = typer.Option(None, "--study", help="the published LLM-Inference-Bench "
                                         "data directory (read through llmbench's importer; nothing "
                                         "is stored); needed by everything but --score"),
    model: Optional[str] = typer.Option(None, "--model", help="catalog model id (llmbench models)"),
    engine: Optional[str] = typer.Option(None, "--engine", help="vllm, tensorrt-llm, llamacpp, ..."),
    hardware: Optional[str] = typer.Option(None, "--hardware", help="catalog id, e.g. H200, MI300X"),
    dtype: str = typer.Option("bf16", "--dtype", help="weight dtype: bf16|fp16|fp8|int8"),
    batch_size: str = typer.Option("1", "--batch-size", help="list, e.g. 1,16,64"),
    input_len: str = typer.Option("128", "--input-len", help="list, e.g. 128,2048"),
    output_len: str = typer.Option("128", "--output-len", help="list, e.g. 128,2048"),
    tp: int = typer.Option(1, "--tp", min=1, help="devices (tensor parallel)"),
    validate: bool = typer.Option(False, "--validate", help="hold out each model, batch size and "
                                  "accelerator in turn and print the error beside two baselines"),
    check: Optional[Path] = typer.Option(None, "--check", help="a results directory: predict its "
                                         "inference records from the study alone, print the error"),
    save: bool = typer.Option(False, "--save", help="also store the prediction as a record of "
                              "kind `estimate` in --results"),
    results: Path = typer.Option(DEFAULT_RESULTS, "--results", help="where --save writes; the "
                                 "records --score reads"),
    anchor: Optional[Path] = typer.Option(None, "--anchor", help="a results directory: your own "
                                          "records of --engine (the release you run, on hardware "
                                          "you have) anchor the prediction; the target hardware "
                                          "gets their efficiencies through its bandwidth, compute, "
                                          "link and memory"),
    preregister: Optional[Path] = typer.Option(None, "--preregister", help="with --anchor: also "
                                               "write the predictions to this JSON file with the "
                                               "date and the code's commit (commit it before "
                                               "measuring)"),
    score: Optional[Path] = typer.Option(None, "--score", help="a --preregister file: its "
                                         "predictions beside the matching records in --results"),
    anchor_run: Optional[str] = typer.Option(None, "--anchor-run", help="with --anchor: only "
                                             "these runs' records (comma-separated run ids), e.g. "
                                             "one engine setup where a directory mixes several"),
    genz_python: Optional[str] = typer.Option(None, "--genz-python", help="with --validate: a "
                                              "python that has genz-llm 0.0.16, for the GenZ "
                                              "baseline (default LLMBENCH_GENZ_PYTHON, else this "
                                              "one if GenZ imports)"),
) -> None:
    """Expected throughput and batch latency with a 90% interval, and the records it rests on
    (one prediction per combination of the listed batch sizes and lengths)."""
    from llmbench.analysis import predict_anchored as anc
    from llmbench.analysis import predict_report as rep
    from llmbench.importers.common import Unreadable

    if score is not None:
        import json

        try:
            doc = json.loads(score.read_text())
        except (OSError, ValueError) as e:
            raise SpecError([("--score", f"{score}: {e}")]) from None
        print(anc.score_markdown(doc, anc.own_frame(results)))
        return
    if study is None:
        raise SpecError([("--study", "required (the study's data directory), except with --score")])
    try:
        train = rep.study_frame(study)
    except Unreadable as e:  # a usage mistake: a message and exit 2, never a traceback
        raise SpecError([("--study", str(e))]) from None
    if validate:
        print(rep.validation_markdown(train))
        print()
        print(rep.physics_validation_markdown(train, genz_python))
        return
    if check is not None:
        print(rep.check_markdown(train, check))
        print()
        print(anc.check_markdown(train, anc.own_frame(check)))
        return
    missing = [f"--{n}" for n, v in (("model", model), ("engine", engine), ("hardware", hardware)) if not v]
    if missing:
        raise SpecError([(m, "required for a prediction (or give --validate or --check)") for m in missing])
    sizes = {flag: _sizes(text, flag) for flag, text in (("--batch-size", batch_size),
                                                           ("--input-len", input_len),
                                                           ("--output-len", output_len))}
    points = _points(model, engine, hardware, dtype, *sizes.values(), tp, train)
    if preregister is not None and anchor is None:
        raise SpecError([("--preregister", "needs --anchor (a pre-registration names its anchors)")])
    if anchor is not None:
        _anchored(train, points, anchor, engine, preregister, study, results if save else None,
                  [r for r in (anchor_run or "").split(",") if r.strip()])
        return
    print(rep.prediction_text(train, points))
    if save:
        from llmbench.store.record import new_run_id

        run_id = new_run_id()    # one run for the whole list, as a sweep's points
        for _, q in points.iterrows():
            print(f"estimate record: {_save(study, q, train, results, run_id)}")


def _anchored(train, points, anchor: Path, engine: str, preregister: Optional[Path], study: Path,
              save_to: Optional[Path], runs: list[str]) -> None:
    import shlex
    import sys

    from llmbench.analysis import predict_anchored as anc
    from llmbench.analysis import predict_physics as Q
    from llmbench.analysis import predict_report as rep

    own = anc.own_frame(anchor)
    if runs:
        missing = sorted(set(r.strip() for r in runs) - set(own.get("run_id", [])))
        if missing:
            raise SpecError([("--anchor-run", f"not in {anchor}: {', '.join(missing)}")])
        own = own[own["run_id"].isin([r.strip() for r in runs])]
    try:
        anchors = anc.anchors_for(own, engine)
    except ValueError as e:
        raise SpecError([("--anchor", f"{anchor}: {e}")]) from None
    fit = Q.fit_stacks(train)
    held = rep.cached("anchored", train, lambda: Q.validate_anchored(train))
    vendors = set(points["vendor"])
    q, n, whose = anc.half_width(held, vendors.pop() if len(vendors) == 1 else "")
    print(anc.anchored_text(fit, anchors, points, q, n, whose))
    if preregister is not None:
        command = "llmbench " + " ".join(shlex.quote(a) for a in sys.argv[1:])
        anc.preregister(fit, anchors, points, q, n, whose, preregister, command, str(study))
        print(f"pre-registered: {preregister}")
    if save_to is not None:
        from llmbench.store.record import new_run_id
        from llmbench.store.store import Store

        run_id = new_run_id()    # one run for the whole list, as a sweep's points
        from llmbench.kinds.estimate.kind import anchored_records

        for rec in anchored_records(fit, anchors, points, q, n, whose, str(study), run_id):
            print(f"estimate record: {Store(save_to).write(rec)}")


def _sizes(text: str, flag: str) -> list[int]:
    from llmbench.cli.flags import int_list

    vals = int_list(text, flag, at_least_one=True)
    if min(vals) < 1:
        raise SpecError([(flag, f"{text!r}: every value must be at least 1")])
    return vals


def _save(study: Path, q, train, results: Path, run_id: str) -> Path:
    from llmbench.kinds.estimate.kind import EstimatePoint, estimate_record
    from llmbench.kinds.registry import get_kind
    from llmbench.store.store import Store

    p = EstimatePoint(study=str(study), model=q["model"], engine=q["engine"], hardware=q["hardware"],
                      dtype=q["dtype"], batch_size=int(q["batch"]), input_len=int(q["input_len"]),
                      output_len=int(q["output_len"]), tp=int(q["devices"]))
    rec = estimate_record(get_kind("estimate").base_record(p, run_id, None), train, p)
    return Store(results).write(rec)


def _points(model, engine, hardware, dtype, batches, inputs, outputs, tp, train):
    import itertools

    import pandas as pd

    from llmbench.analysis.predict_points import query
    from llmbench.backends import REGISTRY
    from llmbench.hardware import catalog, find
    from llmbench.models.catalog import CATALOG, canonical_name
    from llmbench.models.dtypes import dtype_bytes

    problems = []
    if canonical_name(model) is None:
        problems.append(("--model", f"unknown model {model!r}{did_you_mean(model, list(CATALOG))}"))
    engines = sorted(set(REGISTRY) | set(train["engine"]))
    if engine not in engines:
        problems.append(("--engine", f"unknown engine {engine!r}{did_you_mean(engine, engines)}; "
                                     f"known: {', '.join(engines)}"))
    hw = find(hardware)
    if hw is None:
        ids = [h.id for h in catalog()]
        problems.append(("--hardware", f"unknown hardware {hardware!r}{did_you_mean(hardware, ids)}"))
    try:
        dtype_bytes(dtype)
    except ValueError as e:
        problems.append(("--dtype", str(e)))
    if problems:
        raise SpecError(problems)
    return pd.concat([query(canonical_name(model), engine, hw.id, dtype, b, i, o, tp)
                      for b, i, o in itertools.product(batches, inputs, outputs)], ignore_index=True)
