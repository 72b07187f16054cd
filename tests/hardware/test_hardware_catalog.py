import re

import pytest

from llmbench.errors import SpecError
from llmbench.hardware import DTYPES, catalog, dense_peak_flops, find, get

REQUIRED = {"A100-SXM4-40GB", "A100-SXM4-80GB", "H100-SXM", "H100-PCIe", "H200", "GH200",
            "MI250", "MI250-GCD", "MI300X", "Max1550", "Max1550-stack", "Gaudi2", "SN40L"}


def test_catalog_entries_are_complete_and_cited():
    ids = [h.id for h in catalog()]
    assert len(ids) == len(set(ids)) and REQUIRED <= set(ids)
    for h in catalog():
        assert h.source.startswith("https://"), h.id
        assert set(h.peak_tflops) == set(DTYPES), h.id
        assert h.peak_tflops["bf16"] and h.peak_tflops["bf16"] > 100, h.id
        assert h.mem_bw_gbs is None or 1000 < h.mem_bw_gbs < 10000, h.id
        for a in h.aliases:
            re.compile(a)
    # a GCD / stack is exactly half its package
    for part, whole in (("MI250-GCD", "MI250"), ("Max1550-stack", "Max1550")):
        assert get(part).mem_bw_gbs * 2 == pytest.approx(get(whole).mem_bw_gbs)
        assert get(part).peak_tflops["bf16"] * 2 == pytest.approx(get(whole).peak_tflops["bf16"])


@pytest.mark.parametrize("name,expected", [
    ("NVIDIA H200", "H200"), ("NVIDIA H100 80GB HBM3", "H100-SXM"), ("NVIDIA H100 PCIe", "H100-PCIe"),
    ("H100", "H100-SXM"), ("NVIDIA A100-SXM4-40GB", "A100-SXM4-40GB"),
    ("NVIDIA A100-SXM4-80GB", "A100-SXM4-80GB"), ("NVIDIA A100 80GB PCIe", "A100-PCIe-80GB"),
    ("A100", "A100-SXM4-40GB"), ("NVIDIA GH200 480GB", "GH200"), ("AMD Instinct MI300X", "MI300X"),
    ("AMD Instinct MI250X / MI250", "MI250-GCD"), ("mi250", "MI250"), ("AMD MI250 GPU", "MI250"),
    ("Intel(R) Data Center GPU Max 1550", "Max1550-stack"), ("Intel PVC GPU", "Max1550"),
    ("Intel Max 1550", "Max1550"),
    ("Habana Gaudi2", "Gaudi2"), ("HL-225", "Gaudi2"), ("SambaNova SN40L", "SN40L"),
    ("Nvidia A100 GPU", "A100-SXM4-40GB"), ("Nvidia H100 GPU", "H100-SXM"),
])
def test_device_names_map_to_entries(name, expected):
    assert find(name).id == expected


@pytest.mark.parametrize("name", ["NVIDIA H100 NVL", "NVIDIA GeForce RTX 4090", "", None])
def test_unknown_devices_are_none(name):
    assert find(name) is None


def test_get_lists_the_catalog():
    with pytest.raises(SpecError, match="H200"):
        get("TPU v5p")


def test_peaks_per_dtype_fall_back_to_the_wider_type():
    a100 = get("A100-SXM4-40GB")
    assert a100.peak_flops("bf16") == 312e12
    assert a100.peak_flops("fp8") == 312e12       # no fp8 units: runs at bf16
    assert a100.peak_flops("fp32") == 156e12      # TF32 tensor cores are the ceiling
    assert dense_peak_flops("NVIDIA A100-SXM4-40GB", "fp32") == 19.5e12  # MFU uses the fp32 number
    assert dense_peak_flops("NVIDIA H200", "fp8") == 1979e12
    assert dense_peak_flops("unknown", "bf16") is None
    assert get("SN40L").mem_bw is None and get("SN40L").peak_flops("bf16") == 638e12


@pytest.mark.parametrize("name,near", [("H1000", "H100-SXM"), ("A1000", "A100-SXM4-40GB"),
                                       ("MI3000X", "MI300X"), ("Gaudi20", "Gaudi2")])
def test_a_name_that_only_contains_a_known_one_is_refused_with_suggestions(name, near):
    # 'H1000' once matched the H100 alias and silently used the H100 (issue 15, item 5)
    assert find(name) is None
    with pytest.raises(SpecError, match="did you mean") as e:
        get(name)
    assert near in str(e.value)
