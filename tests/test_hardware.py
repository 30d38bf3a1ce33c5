"""Hardware registry: every entry, every number sourced, dense peaks, clear errors."""

import math
import re

import pytest

from labs.core import hardware, roofline

# Hand-derived: dense FP16/BF16 peak / bandwidth x 1000 (B200 at the 7.7 TB/s of NVIDIA's
# current Blackwell datasheet: 2250 / 7.7 = 292).
REFERENCE_RIDGES_BF16 = {
    "h100-sxm": 295, "h100-pcie": 378, "h200-sxm": 206, "b200": 292, "a100-sxm-80gb": 153,
    "l4": 403, "tpu-v5e": 240, "tpu-v5p": 166, "tpu-v6e": 560, "tpu-v7x": 313, "mi300x": 247,
}

# (memory as the vendor prints it (GiB: DRAM is binary), bandwidth GB/s, {precision: dense
# peak}) from the reference table; B200 from NVIDIA's current Blackwell datasheet.
REFERENCE = {
    "h100-sxm": (80, 3350, {"fp32": 67, "tf32": 494.7, "fp16": 989.5, "fp8": 1979, "int8": 1979}),
    "h100-pcie": (80, 2000, {"fp32": 51, "tf32": 378, "fp16": 756, "fp8": 1513, "int8": 1513}),
    "h200-sxm": (141, 4800, {"fp32": 67, "tf32": 494.7, "bf16": 989.5, "fp8": 1979}),
    "b200": (180, 7700, {"fp32": 75, "tf32": 1100, "fp16": 2250, "fp8": 4500, "fp4": 9000}),
    "gb10": (128, 273, {"fp32": 31, "fp16": 62, "fp4": 500}),
    "rtx-5090": (32, 1792, {"fp32": 104.8, "tf32": 104.8, "fp16": 209.5, "fp8": 419,
                            "int8": 838, "fp4": 1676}),
    "rtx-5060": (8, 448, {"fp32": 19, "fp16": 38, "fp8": 77, "int8": 154, "fp4": 307}),
    "rtx-5060-laptop": (8, 384, {}),
    "rtx-4090": (24, 1008, {"fp32": 82.6, "tf32": 82.6, "fp16": 165.2, "int8": 660.6}),
    "a100-sxm-80gb": (80, 2039, {"fp32": 19.5, "tf32": 156, "fp16": 312, "int8": 624}),
    "l4": (24, 300, {"fp32": 30.3, "tf32": 60, "fp16": 121, "fp8": 242.5, "int8": 242.5}),
    "jetson-orin-nx-16gb": (16, 102.4, {"fp16": 15, "int8": 30}),
    "jetson-agx-orin-64gb": (64, 204.8, {"fp32": 5.3, "fp16": 42.5, "int8": 85}),
    "tpu-v5e": (16, 819, {"bf16": 197, "int8": 394}),
    "tpu-v5p": (95, 2765, {"bf16": 459, "int8": 918}),
    "tpu-v6e": (32, 1638, {"bf16": 918, "int8": 1836}),
    "tpu-v7x": (192, 7380, {"bf16": 2307, "fp8": 4614}),
    "mi300x": (192, 5300, {"fp32": 163.4, "tf32": 653.7, "fp16": 1307.4, "fp8": 2614.9}),
}


def test_registry_covers_the_reference_table():
    assert set(REFERENCE) <= set(hardware.keys())


@pytest.mark.parametrize("key", sorted(REFERENCE))
def test_entry_matches_reference(key):
    mem, bw, peaks = REFERENCE[key]
    d = hardware.get(key)
    assert d.memory_nominal == pytest.approx(mem, rel=1e-3) and d.memory_unit == "GiB"
    assert d.memory_bytes == pytest.approx(mem * 2**30, rel=1e-3)
    assert d.memory_gb == pytest.approx(mem * 2**30 / 1e9, rel=1e-3)
    assert d.bandwidth_gbs == pytest.approx(bw)
    for p, v in peaks.items():
        assert d.peak_tflops(p) == pytest.approx(v), (key, p)


#: A source says who published the figure and in what document (any text over 10
#: characters passed). The publisher is the vendor named first in the device's name, or the
#: conference where the vendor presented it (Hot Chips); the document is one a reader can find.
DOCUMENT_KINDS = re.compile(r"datasheet|product page|whitepaper|documentation|\bspec\b|"
                            r"technical brief|presentation", re.IGNORECASE)


@pytest.mark.parametrize("key", sorted(REFERENCE))
def test_every_number_has_a_source(key):
    d = hardware.get(key)
    vendor = d.name.split()[0]  # NVIDIA, AMD, Google
    assert vendor in ("NVIDIA", "AMD", "Google"), d.name
    for field in ("memory_bytes", "bandwidth_gbs", *d.peaks):
        src = d.source(field)
        assert vendor in src or "Hot Chips" in src, (key, field, src)
        assert DOCUMENT_KINDS.search(src), (key, field, src)
    for p, v in d.peaks.items():
        assert math.isfinite(v) and v > 0


@pytest.mark.parametrize("key,ridge", sorted(REFERENCE_RIDGES_BF16.items()))
def test_ridge_points_match_reference(key, ridge):
    assert roofline.ridge_point(key, "bf16") == pytest.approx(ridge, abs=1.0)


def test_sparse_headline_is_separate_from_dense_peak():
    h100 = hardware.get("h100-sxm")
    assert h100.peak_tflops("fp16") == 989.5
    assert h100.sparse_peaks["fp16"] == 1979  # the headline, never used for a roof
    assert "sparse" in h100.note("fp16")


def test_hbm_generations_are_not_mixed_up():
    assert hardware.get("h100-sxm").memory_type == "HBM3"
    assert hardware.get("h200-sxm").memory_type == "HBM3e"


def test_laptop_bus_width_is_bits_not_bandwidth():
    assert hardware.get("rtx-5060-laptop").bandwidth_gbs == 384  # 128 bit x 24 Gbps / 8


def test_derived_numbers_say_why():
    for key, p in [("gb10", "fp16"), ("rtx-5060", "fp16"), ("jetson-orin-nx-16gb", "fp16")]:
        assert "derived" in hardware.get(key).note(p)


def test_lookup_is_case_insensitive_and_errors_list_matches():
    assert hardware.get(" H100-SXM ").key == "h100-sxm"
    with pytest.raises(KeyError, match="h100-sxm"):
        hardware.get("h100")
    with pytest.raises(KeyError, match="Known"):
        hardware.get("zzzz-not-a-device")


def test_missing_precision_is_an_error_not_a_fallback():
    with pytest.raises(KeyError, match="no hardware rate for precision='fp32'.*bf16"):
        hardware.get("tpu-v5e").peak_tflops("fp32")
    with pytest.raises(KeyError, match="unknown compute precision"):
        hardware.get("h100-sxm").peak_tflops("fp7")


def test_every_device_class_is_known_and_picker_lists_all():
    opts = hardware.picker_options()
    assert set(opts.values()) == set(hardware.keys())
    classes = {d.device_class for d in hardware.all_devices()}
    assert {"datacenter", "edge", "laptop", "tpu"} <= classes
    assert classes <= set(hardware.DEVICE_CLASSES)


def test_custom_device_from_a_few_numbers():
    laptop = hardware.custom("My Laptop", bandwidth_gbs=100, peaks={"FP32": 2}, memory_gb=16)
    assert laptop.key == "my-laptop" and laptop.peak_tflops("fp32") == 2
    assert roofline.ridge_point(laptop, "fp32") == pytest.approx(20)
    assert laptop.source("bandwidth_gbs") == "entered by the student"
    hardware.register(laptop)
    try:
        assert hardware.get("my-laptop") is laptop
        with pytest.raises(ValueError, match="already registered"):
            hardware.register(laptop)
    finally:
        hardware.unregister("my-laptop")
    with pytest.raises(ValueError, match="built-in"):
        hardware.register(hardware.custom("x", key="h100-sxm", bandwidth_gbs=1, peaks={"fp32": 1},
                                          memory_gb=1))


@pytest.mark.parametrize("kwargs,msg", [
    (dict(bandwidth_gbs=0, peaks={"fp32": 1}, memory_gb=1), "bandwidth_gbs"),
    (dict(bandwidth_gbs=-5, peaks={"fp32": 1}, memory_gb=1), "bandwidth_gbs"),
    (dict(bandwidth_gbs=float("nan"), peaks={"fp32": 1}, memory_gb=1), "bandwidth_gbs"),
    (dict(bandwidth_gbs=10, peaks={"fp32": float("inf")}, memory_gb=1), "peaks"),
    (dict(bandwidth_gbs=10, peaks={}, memory_gb=1), "peaks"),
    (dict(bandwidth_gbs=10, peaks={"fp32": 1}, memory_gb=0), "memory_gb"),
])
def test_custom_device_rejects_bad_numbers(kwargs, msg):
    with pytest.raises(ValueError, match=msg):
        hardware.custom("bad", **kwargs)


# --- moved from tests/test_physics_review.py (filed by the module they test) ---------
from labs.core import models  # noqa: E402
from labs.core import roofline  # noqa: E402


def test_capacities_are_bytes_with_their_unit():
    """(The physics review: memory capacity in bytes, with its unit; detect and
    the registry agree.)"""
    h = hardware.get("h100-sxm")
    assert h.memory_bytes == 80 * 2**30 and h.memory_gb == pytest.approx(85.899, abs=1e-3)
    assert h.memory_text == "80 GiB (85.9 GB)"
    laptop = hardware.custom("mine", bandwidth_gbs=100, peaks={"fp32": 2}, memory_gb=16)
    assert laptop.memory_bytes == 16e9 and laptop.memory_unit == "GB"
    # Lab 2's out-of-memory batch follows from the bytes: 0.9 x 80 GiB usable
    b = models.memory_budget("llama-3-8b", "h100-sxm", batch=1, seq_len=8192)
    assert b.capacity_bytes == pytest.approx(0.9 * 80 * 2**30)
    assert models.oom_batch("llama-3-8b", "h100-sxm", seq_len=8192) == 57


def test_b200_matches_the_current_blackwell_datasheet():
    """(The physics review: B200 from NVIDIA's current Blackwell datasheet.)"""
    b = hardware.get("b200")
    assert b.peak_tflops("fp32") == 75 and b.bandwidth_gbs == 7700
    for field in ("fp32", "bandwidth_gbs", "bf16"):
        src = b.source(field)
        assert "Blackwell datasheet" in src and "2025" in src, field
    assert roofline.ridge_point(b, "bf16") == pytest.approx(2250 / 7.7)
