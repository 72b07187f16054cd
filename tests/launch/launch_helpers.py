"""Shared helpers for the launch tests: tiny real llama.cpp sweeps run through the CLI."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import yaml

from llmbench.kinds.inference.spec import load_spec

LLMBENCH = [sys.executable, "-m", "llmbench"]


def sigint_default() -> None:
    """Popen preexec_fn: a suite started in the background of a non-interactive shell inherits
    SIGINT ignored, and Python then never turns Ctrl-C into KeyboardInterrupt in the child."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def tiny_spec(tmp_path: Path, batch_sizes=(1, 2, 3), timeout_s: float = 60, **extra) -> Path:
    """A real llama.cpp sweep on the bundled SmolLM2, small enough for 2 busy cores."""
    doc = {"backends": ["llamacpp"], "models": ["smollm2-135m"], "batch_size": list(batch_sizes),
           "input_len": [8], "output_len": [4], "repeats": 1, "warmups": 0,
           "timeout_s": timeout_s, "backend_options": {"llamacpp": {"n_threads": 1}}, **extra}
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def keys(spec_path: Path) -> list[str]:
    return [p.key for p in load_spec(spec_path).points()]


def run_cli(*args, env_extra: dict | None = None, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "LLMBENCH_FAULT_INJECT"}
    env.update(COLUMNS="200", **(env_extra or {}))
    return subprocess.run([*LLMBENCH, *map(str, args)], capture_output=True, text=True,
                          env=env, timeout=timeout)


def stored(results: Path) -> list[dict]:
    """Every record file under results, parsed (a file that does not parse fails the test)."""
    docs = []
    for p in sorted(results.rglob("*.json")):
        if p.name.startswith(".tmp-"):
            continue
        docs.append(json.loads(p.read_text()))
    return docs


def fault_env(plan: dict[str, str]) -> dict:
    """{point_key: kind} -> the environment of the worker's test hook (launch/faults.py)."""
    return {"LLMBENCH_FAULT_INJECT": "|".join(f"{kind}@{key}" for key, kind in plan.items())}
