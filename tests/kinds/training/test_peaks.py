"""MFU's denominator: the hardware catalog's dense datasheet peak, the one place it is kept."""

from llmbench.kinds.training.peaks import hardware_peak


def test_the_peak_is_the_datasheets_dense_number_for_the_precision():
    # NVIDIA H100/H200 SXM datasheet, dense: 989.5 TFLOP/s bf16, 67 TFLOP/s fp32 (no TF32)
    assert hardware_peak("NVIDIA H200", "bf16") == (989.5e12, "llmbench.hardware")
    assert hardware_peak("NVIDIA H100 80GB HBM3", "fp32") == (67e12, "llmbench.hardware")
    # A100 SXM4: 19.5 TFLOP/s fp32
    assert hardware_peak("NVIDIA A100-SXM4-40GB", "fp32")[0] == 19.5e12


def test_an_unknown_device_has_no_peak_and_says_so():
    peak, source = hardware_peak("Some Accelerator 9000", "bf16")
    assert peak is None and "Some Accelerator 9000" in source
