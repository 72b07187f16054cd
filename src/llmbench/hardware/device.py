"""Which device a point runs on when the user says `auto` (the default).

`auto` means the first visible accelerator, else the CPU. Accelerators are found through NVML
(nvidia-ml-py, a core dependency that imports without a GPU), so resolving never imports torch.
CUDA_VISIBLE_DEVICES is honoured: an empty value hides every GPU, as it does for the engines.
"""

from __future__ import annotations

import ipaddress
import os
from urllib.parse import urlsplit

DEVICE_HELP = "auto (first visible accelerator, else cpu) | cpu | cuda | cuda:N"


def cuda_device_count() -> int:
    """NVIDIA GPUs this process may use (0 without a driver)."""
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is not None and visible.strip() in ("", "-1"):
        return 0
    n = _nvml_device_count()
    if visible is not None:
        n = min(n, len([v for v in visible.split(",") if v.strip()]))
    return n


def _nvml_device_count() -> int:
    """NVIDIA GPUs on this machine, whoever may use them (0 without a driver)."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return pynvml.nvmlDeviceGetCount()
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no driver, no library: no GPU for us
        return 0


def server_device(url: str) -> str:
    """Where the server at `url` computes, for its hardware and energy: a server on this machine
    on the GPUs NVML sees (its own process, so CUDA_VISIBLE_DEVICES here says nothing), else
    the CPU; a server elsewhere is 'unknown'."""
    host = urlsplit(url).hostname or ""
    try:
        local = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        local = False
    if not local:
        return "unknown"
    return "cuda" if _nvml_device_count() > 0 else "cpu"


def resolve_device(spec: str) -> str:
    """`auto` -> "cuda" when a GPU is visible, else "cpu"; any other spelling is returned as is."""
    if spec != "auto":
        return spec
    return "cuda" if cuda_device_count() > 0 else "cpu"
