"""One accelerator of the catalog (or this machine's measured CPU): its peaks and bandwidths.
Its own module so that cpu.py builds one without importing the catalog that imports it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Hardware(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str
    name: str
    vendor: str
    memory_gb: float | None = None
    mem_bw_gbs: float | None = None
    peak_tflops: dict[str, float | None]
    link_gbs: float | None = None
    aliases: tuple[str, ...] = ()
    source: str
    notes: str = ""
    measured: bool = False

    def peak_flops(self, dtype: str) -> float | None:
        """Peak FLOP/s for matmuls in `dtype`; a dtype the device lacks runs at the rate of
        the wider type it is computed in (fp8 -> bf16, fp32 -> tf32 when the engine allows)."""
        p = self.peak_tflops
        order = {
            "fp32": ("tf32", "fp32"), "tf32": ("tf32", "fp32"),
            "bf16": ("bf16", "fp16"), "fp16": ("fp16", "bf16"),
            "fp8": ("fp8", "bf16", "fp16"), "int8": ("int8", "bf16", "fp16"),
        }.get(dtype, ("bf16", "fp16"))
        for d in order:
            if p.get(d):
                return p[d] * 1e12
        return None

    @property
    def mem_bw(self) -> float | None:
        return None if self.mem_bw_gbs is None else self.mem_bw_gbs * 1e9

    @property
    def link_bw(self) -> float | None:
        return None if self.link_gbs is None else self.link_gbs * 1e9
