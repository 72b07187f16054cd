"""GenZ (arXiv 2406.01698, PyPI `genz-llm` 0.0.16) on the study's points, as a baseline for
`llmbench predict --validate` (issue 51). Optional: GenZ is never a dependency of llmbench's
core; it runs in this interpreter when importable, else in the one `--genz-python` (or
LLMBENCH_GENZ_PYTHON) names, with this file as the worker script (it imports only GenZ and the
standard library when run as a script).

How GenZ is called, on purpose:
- `decode_moddeling(..., Bb=1)`: its default Bb=4 models four beams (about 20% more time a step);
  the study decoded one sequence per request.
- `system_eff=1` (GenZ as shipped, a per-operator roofline); `ceff`/`meff` are NOT passed:
  decode_moddeling ignores them and applies system_eff to compute and memory alike.
- A batch's time = prefill_moddeling's latency + (output - 1) decode steps at the mean
  context (decode_moddeling with output_tokens = output / 2: its KV length is input +
  output_tokens).
- Points GenZ can describe: vLLM, one device, 16-bit weights, models and systems it ships
  (GENZ_MODELS, GENZ_SYSTEMS; its GH200 entry carries the sparse 1979 TFLOP/s, kept as shipped).
  It refuses batches whose whole KV cache does not fit (vLLM preempts): those are left out and
  counted.
- Fitted the same way as llmbench's stacks: per held-out fold, two multipliers (prefill time,
  decode time) per vendor, fitted in log space on the training fold's GenZ points (fall back to
  all vendors pooled where a vendor has none).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

GENZ_MODELS = {"llama-3-8b": "meta-llama/meta-llama-3.1-8b", "llama-3-70b": "meta-llama/meta-llama-3.1-70b",
               "llama-2-7b": "meta-llama/llama-2-7b", "llama-2-13b": "meta-llama/llama-2-13b",
               "llama-2-70b": "meta-llama/llama-2-70b", "mistral-7b": "mistralai/mistral-7b",
               "mixtral-8x7b": "mistralai/mixtral-8x7b"}
GENZ_SYSTEMS = {"A100-SXM4-40GB": "A100_40GB_GPU", "A100-SXM4-80GB": "A100_80GB_GPU",
                "H100-SXM": "H100_GPU", "GH200": "GH200_GPU", "MI300X": "MI300X"}


def _genz_times(points: list[dict]) -> list[list[float] | None]:
    """[prefill s, decode s a step] per point, None where GenZ refuses it (GenZ only)."""
    import warnings

    warnings.filterwarnings("ignore")
    from GenZ.LLM_inference import decode_moddeling, prefill_moddeling

    out = []
    for p in points:
        try:
            # GenZ returns a dict subclass: its values are keys, not attributes
            pre = prefill_moddeling(model=p["model"], batch_size=p["batch"], input_tokens=p["input_len"],
                                    system_name=p["system"], bits="bf16")["Latency"]
            dec = decode_moddeling(model=p["model"], batch_size=p["batch"], input_tokens=p["input_len"],
                                   output_tokens=p["output_len"] // 2, Bb=1, system_name=p["system"],
                                   bits="bf16")["Latency"]
            out.append([pre / 1000.0, dec / 1000.0])   # GenZ's latencies are in ms
        except (ValueError, ZeroDivisionError, KeyError, AssertionError):
            out.append(None)
    return out


def available(python: str | None) -> bool:
    if python:
        return Path(python).is_file()
    try:
        import GenZ  # noqa: F401
    except ImportError:
        return False
    return True


def genz_points(frame):
    """The rows GenZ can describe (see the module's docstring)."""
    return frame[(frame["engine"] == "vllm") & (frame["devices"] == 1)
                 & frame["dtype"].isin(["fp16", "bf16"]) & frame["model"].isin(list(GENZ_MODELS))
                 & frame["hardware"].isin(list(GENZ_SYSTEMS))]


def genz_frame(frame, python: str | None = None):
    """Per GenZ-able row of `frame`: genz_prefill_s and genz_decode_step_s (NaN: refused), and
    genz_s, the batch's time (prefill + (output - 1) steps)."""
    import numpy as np
    import pandas as pd

    rows = genz_points(frame)
    pts = [{"model": GENZ_MODELS[r.model], "system": GENZ_SYSTEMS[r.hardware], "batch": int(r.batch),
            "input_len": int(r.input_len), "output_len": int(r.output_len)} for r in rows.itertuples()]
    uniq = {json.dumps(p, sort_keys=True): p for p in pts}
    keys = list(uniq)
    if python:
        got = subprocess.run([python, __file__], input=json.dumps([uniq[k] for k in keys]),
                             capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONWARNINGS": "ignore"})
        times = json.loads(got.stdout.strip().splitlines()[-1])
    else:
        times = _genz_times([uniq[k] for k in keys])
    by_key = dict(zip(keys, times))
    t = np.array([by_key[json.dumps(p, sort_keys=True)] or [np.nan, np.nan] for p in pts], float).reshape(-1, 2)
    out = pd.DataFrame({"genz_prefill_s": t[:, 0], "genz_decode_step_s": t[:, 1]}, index=rows.index)
    out["genz_s"] = out["genz_prefill_s"] + (rows["output_len"] - 1).clip(lower=0) * out["genz_decode_step_s"]
    return out


def fit_multipliers(train, genz) -> dict[str, tuple[float, float]]:
    """Per vendor (and 'all'): (prefill, decode) multipliers of GenZ's times minimising the
    squared log error against the measured batch times of `train`'s GenZ points."""
    import numpy as np
    from scipy.optimize import least_squares

    from llmbench.analysis.predict_physics import measured_seconds

    j = genz.index.intersection(train.index)
    g = genz.loc[j].dropna()
    t = train.loc[g.index]
    y = np.log(measured_seconds(t))
    steps = (t["output_len"] - 1).clip(lower=0).to_numpy(float)

    def one(mask) -> tuple[float, float]:
        pre, dec, yy, st = (g["genz_prefill_s"].to_numpy()[mask], g["genz_decode_step_s"].to_numpy()[mask],
                            y[mask], steps[mask])
        res = least_squares(lambda a: np.log(np.exp(a[0]) * pre + np.exp(a[1]) * st * dec) - yy, [0.0, 0.0])
        return float(np.exp(res.x[0])), float(np.exp(res.x[1]))

    out = {}
    if len(g):
        out["all"] = one(np.ones(len(g), bool))
        for vendor in t["vendor"].unique():
            m = (t["vendor"] == vendor).to_numpy()
            if m.sum() >= 12:
                out[vendor] = one(m)
    return out


def validate(frame, genz, split: str):
    """Per held-out fold of the split (predict.SPLITS): GenZ as shipped and GenZ fitted on the
    other folds, on the fold's GenZ points; rows: fold, measured_s, genz_s, genz_fitted_s."""
    import numpy as np
    import pandas as pd

    from llmbench.analysis.predict import SPLITS
    from llmbench.analysis.predict_physics import measured_seconds

    col = SPLITS[split]
    g = genz.dropna()
    pts = frame.loc[g.index]
    parts = []
    for value, test in pts.groupby(col):
        train = frame[frame[col] != value]
        mult = fit_multipliers(train, genz)
        if not mult:
            continue
        gt = g.loc[test.index]
        m = np.array([mult.get(v, mult["all"]) for v in test["vendor"]])
        fitted = m[:, 0] * gt["genz_prefill_s"] + m[:, 1] * (test["output_len"] - 1).clip(lower=0) * gt["genz_decode_step_s"]
        parts.append(pd.DataFrame({"fold": value, "measured_s": measured_seconds(test),
                                   "genz_s": gt["genz_s"], "genz_fitted_s": fitted}, index=test.index))
    return pd.concat(parts) if parts else pd.DataFrame()


if __name__ == "__main__":   # the worker, in an interpreter that has GenZ
    print(json.dumps(_genz_times(json.loads(sys.stdin.read()))))
