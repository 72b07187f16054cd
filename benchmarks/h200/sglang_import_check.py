"""Import SGLang's entry modules on a machine without a GPU and say which carried packages they load
(issue 50: how benchmarks/h200/carry-sglang.txt was checked on a CPU, 2026-12-07).

    PYTHONPATH=SITE python3 benchmarks/h200/sglang_import_check.py SITE [--sm90]

SITE is a folder the carry's wheels were installed into (`pip install --no-deps --target SITE`),
under a Python 3.12 with torch 2.11.0 and the image's other packages. With --sm90, torch is told it
has one compute-capability-9.0 device, so SGLang takes its CUDA branches (`if _is_cuda:` imports of
sgl_kernel, flashinfer, ...); the sgl-kernel objects then need a libcuda.so.1 on LD_LIBRARY_PATH,
for which a stub whose every function returns CUDA_ERROR_NO_DEVICE does (nothing is launched).
A module that fails for a missing package names it; one that fails inside CUDA is expected here.
"""

from __future__ import annotations

import importlib
import json
import sys
import traceback
import types

ENTRIES = [
    "sglang.srt.entrypoints.engine", "sglang.srt.entrypoints.http_server", "sglang.launch_server",
    "sglang.srt.managers.scheduler", "sglang.srt.managers.tokenizer_manager",
    "sglang.srt.managers.detokenizer_manager", "sglang.srt.model_executor.model_runner",
    "sglang.srt.models.llama", "sglang.srt.layers.attention.flashattention_backend",
    "sglang.kernels.ops.attention.flash_attention_v3", "sgl_kernel.flash_attn",
    "sglang.srt.constrained.xgrammar_backend", "sglang.srt.layers.quantization.fp8",
    "sglang.srt.model_loader.loader", "sglang.bench_serving", "sglang.bench_one_batch",
    "sglang.bench_offline_throughput", "sglang.srt.models.registry",
]


def pretend_sm90() -> None:
    import torch
    props = types.SimpleNamespace(major=9, minor=0, name="NVIDIA H100 80GB HBM3",
                                  total_memory=80 << 30, multi_processor_count=132,
                                  gcnArchName="", L2_cache_size=50 << 20)
    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.current_device = lambda: 0
    torch.cuda.get_device_capability = lambda d=None: (9, 0)
    torch.cuda.get_device_name = lambda d=None: props.name
    torch.cuda.get_device_properties = lambda d=None: props


def main(argv: list[str]) -> int:
    site = argv[0].rstrip("/")
    if "--sm90" in argv:
        pretend_sm90()
    result = {}
    for name in ENTRIES:
        try:
            importlib.import_module(name)
            result[name] = "OK"
        except BaseException as e:  # noqa: BLE001 - report every failure, go on with the next
            last = traceback.extract_tb(e.__traceback__)[-1]
            result[name] = f"{type(e).__name__}: {str(e)[:200]} at {last.filename}:{last.lineno}"
    loaded = sorted({getattr(m, "__file__", "")[len(site) + 1:].split("/")[0]
                     for m in list(sys.modules.values())
                     if (getattr(m, "__file__", None) or "").startswith(site + "/")})
    print(json.dumps({"imports": result, "loaded_from_site": loaded}, indent=1))
    return 0 if all(v == "OK" for v in result.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
