"""Hardware registry: memory, bandwidth and *dense* peak throughput per precision, each sourced.

Units: memory capacity in bytes (``memory_bytes``), with the unit the vendor's figure is in
(``memory_unit``: vendors print "80 GB" for DRAM that is 80 GiB = 80 x 2^30 B, because DRAM
dies are binary; see ``_MEM_NOTE``); bandwidth in GB/s (1e9 B/s, decimal, as every vendor
means it); peaks in TFLOP/s or TOPS (1e12 /s). ``memory_gb`` is the capacity in decimal GB
(1e9 B), the unit the labs display and ``measure.detect`` reports.

"Dense" means without 2:4 structured sparsity. NVIDIA datacenter headline Tensor Core
figures are quoted *with sparsity* (2x dense); those live in ``sparse_peaks`` only, never in
``peaks``. Every number has an entry in ``sources``; derived or uncertain numbers also have a
``notes`` entry saying why.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from labs.core.physics.validate import (
    close_matches,
    flag,
    instance,
    mapping,
    one_of,
    positive,
    require_finite,
    sequence,
    shown,
    text,
)

__all__ = [
    "DEVICE_CLASSES", "Device", "PRECISIONS", "VECTOR", "all_devices", "by_class", "custom", "get",
    "keys", "picker_options", "precision_key", "register", "unregister"
]

#: Compute precisions a device can have a hardware rate for.
PRECISIONS = ("fp32", "tf32", "fp16", "bf16", "fp8", "int8", "fp4")

#: The compute "precision" of elementwise work (norms, softmax, activations, residual adds):
#: it runs on the general-purpose vector units (NVIDIA CUDA cores; ``exp`` on the special-
#: function units), not the tensor cores, so its ceiling is the device's vector rate.
VECTOR = "vector"

#: Bytes per unit a capacity may be stated in.
_UNITS = {"GiB": 2**30, "GB": 1e9}

#: Device classes, used for the picker and for colour (one colour per class in the style system).
DEVICE_CLASSES = ("datacenter", "desktop", "laptop", "edge", "tpu", "cpu", "custom")


@dataclass(frozen=True)
class Device:
    key: str
    name: str
    device_class: str
    memory_bytes: float  # capacity in bytes (the vendor's figure in memory_unit, converted)
    memory_type: str
    bandwidth_gbs: float
    peaks: Mapping[str, float]  # dense TFLOP/s (TOPS for int8) per compute precision
    sources: Mapping[str, str]  # field or precision -> where the number comes from
    notes: Mapping[str, str] = field(default_factory=dict)  # why a number is derived/uncertain
    sparse_peaks: Mapping[str, float] = field(default_factory=dict)  # headline figures, NOT used
    #: Non-tensor (vector) TFLOP/s that elementwise ops run at: the FP32 CUDA-core (or AMD
    #: vector) rate, because PyTorch computes elementwise ops on fp16/bf16 tensors in fp32 (its
    #: "opmath" type). None where no vector rate is sourced (TPUs): see roofline.peak_tflops.
    vector_tflops: float | None = None
    memory_unit: str = "GB"  # the unit of the vendor's figure: "GiB" (2^30 B) or "GB" (1e9 B)
    #: Last-level (L2) cache in bytes where sourced, else None: a working set smaller than this
    #: is served from the cache when a kernel repeats, not from HBM.
    l2_bytes: float | None = None

    @property
    def memory_gb(self) -> float:
        """Capacity in decimal GB (1e9 B): what software such as torch reports, over 1e9."""
        return self.memory_bytes / 1e9

    @property
    def memory_nominal(self) -> float:
        """The capacity in ``memory_unit``: 80 for an H100's 80 GiB."""
        return self.memory_bytes / _UNITS[self.memory_unit]

    @property
    def memory_text(self) -> str:
        """'80 GiB (85.9 GB)': the vendor's figure in its unit, and in decimal GB."""
        if self.memory_unit == "GB":
            return f"{self.memory_nominal:,.4g} GB"
        return f"{self.memory_nominal:,.4g} {self.memory_unit} ({self.memory_gb:,.1f} GB)"

    def peak_tflops(self, precision: str, *, arg: str = "precision") -> float:
        """Dense peak for ``precision``; KeyError (with what the device has) if it has none.
        ``arg`` names the caller's argument in messages."""
        p = precision_key(precision, text("arg", arg))
        if p not in self.peaks:
            have = ", ".join(self.precisions) or "none"
            raise KeyError(
                f"{self.name} has no hardware rate for {arg}={precision!r} in the registry "
                f"(it has: {have})."  # the caller says which picker to move: core cannot
            )
        return self.peaks[p]

    @property
    def precisions(self) -> tuple[str, ...]:
        return tuple(p for p in PRECISIONS if p in self.peaks)

    def has(self, precision: str) -> bool:
        return precision_key(precision) in self.peaks

    def _field(self, what) -> str:
        """A field or precision name the registry can hold a number for, else KeyError."""
        w = text("what", what)
        known = {*self.sources, *self.notes, *PRECISIONS, "memory_bytes", "bandwidth_gbs",
                 "vector_tflops", "l2_bytes"}
        if w not in known:
            raise KeyError(f"unknown what={what!r}; a device has numbers for: "
                           f"{', '.join(sorted(known))}")
        return w

    def source(self, what: str) -> str:
        """Source for a field (``"bandwidth_gbs"``, ``"memory_bytes"``, ``"vector_tflops"``)
        or a precision's peak. KeyError naming ``what`` when the device has no such number."""
        w = self._field(what)
        if w not in self.sources:
            raise KeyError(f"{self.name} has no number what={what!r} (it has: "
                           f"{', '.join(self.sources)})")
        return self.sources[w]

    def note(self, what: str) -> str | None:
        """Why a number is derived or uncertain, or None when it needs no note."""
        return self.notes.get(self._field(what))

    @property
    def bandwidth_bytes_per_s(self) -> float:
        return self.bandwidth_gbs * 1e9


def precision_key(precision: str, arg: str = "precision") -> str:
    """A compute precision's key in :data:`PRECISIONS` (trimmed, lower case); unknown names
    are a KeyError that lists the known ones. Messages name ``arg``."""
    arg = text("arg", arg)
    if not isinstance(precision, str) or not precision.strip():
        raise ValueError(f"{arg} must be a precision name such as 'fp16', got {shown(precision)}")
    p = precision.strip().lower()
    if p not in PRECISIONS:
        raise KeyError(
            f"unknown compute precision {arg}={precision!r}; known: {', '.join(PRECISIONS)}"
            + close_matches(p, PRECISIONS)
        )
    return p


# --- sources, named once --------------------------------------------------------------------
_S_H100 = "NVIDIA H100 Tensor Core GPU datasheet (dense = half the 'with sparsity' headline)"
_S_H200 = "NVIDIA H200 product page / datasheet (dense = half the 'with sparsity' headline)"
_S_B200 = ("NVIDIA Blackwell datasheet, HGX B200 per-GPU figures (2025 edition: FP32 75 "
           "TFLOP/s, HBM3e 7.7 TB/s, 180 GB; Tensor Core figures 'with sparsity', dense = half)")
_S_B200_BW = ("NVIDIA Blackwell datasheet, HGX B200 (2025): 7.7 TB/s per GPU; cross-check: the "
              "driver reports a 7,680-bit bus at 3,996 MHz x 2 = 7.67 TB/s (pytorch/ao PR 4002, "
              "March 2026)")
_S_A100 = "NVIDIA A100 datasheet, SXM 80GB (dense = half the 'with sparsity' headline)"
_S_L4 = "NVIDIA L4 datasheet (485 INT8 TOPS is 'with sparsity'; dense is half)"
_S_GB10 = "NVIDIA DGX Spark product page (GB10: 128 GB LPDDR5x, 273 GB/s, 1 PFLOP FP4 'with sparsity')"
_S_GB10_HC = "Hot Chips 2025 GB10 presentation (~31 TFLOP/s FP32)"
_S_BW_WP = "NVIDIA RTX Blackwell GeForce architecture whitepaper"
_S_5060 = "NVIDIA GeForce RTX 5060 product page (614 AI TOPS = FP4 with sparsity)"
_S_5060L = "NVIDIA GeForce RTX 5060 Laptop spec: 128-bit bus x 24 Gbps GDDR7 / 8 = 384 GB/s"
_S_ADA = "NVIDIA Ada Lovelace (RTX 4090) architecture whitepaper"
_S_ORIN_NX = "NVIDIA Jetson Orin NX series datasheet ('up to 100 TOPS' = sparse INT8 incl. DLAs)"
_S_AGX = "NVIDIA Jetson AGX Orin technical brief (275 TOPS = 170 GPU sparse + 105 DLA)"
_S_TPU5E = "Google Cloud TPU v5e documentation; jax-ml/scaling-book"
_S_TPU5P = "Google Cloud TPU v5p documentation"
_S_TPU6E = "Google Cloud TPU v6e (Trillium) documentation"
_S_TPU7X = "Google Cloud TPU7x (Ironwood) documentation"
_S_MI300X = "AMD Instinct MI300X datasheet (sparse figures labelled 'with structured sparsity')"
_S_MLENG = "stas00/ml-engineering compute/accelerator README"
_S_L2_H = "NVIDIA Hopper Tuning Guide (CUDA docs): 50 MB L2 on H100; stas00/ml-engineering 'Caches'"
_S_L2_A = "NVIDIA Ampere Tuning Guide (CUDA docs): 40 MB L2 on A100; stas00/ml-engineering 'Caches'"
_S_L2_B = ("NVIDIA Blackwell Tuning Guide (CUDA docs), 126 MB L2; the driver reports 126.5 MiB on "
           "a B200 (pytorch/ao PR 4002)")
_S_L2_MI = ("AMD CDNA 3 architecture whitepaper and ROCm MI300X docs: 4 MB L2 per XCD, 8 XCDs "
            "(each XCD's L2 serves its own 38 CUs); the 256 MB Infinity Cache is a separate "
            "last level in front of HBM")


_VECTOR_NOTE = ("Vector ceiling = the FP32 non-tensor rate: PyTorch runs elementwise ops on "
                "fp16/bf16 tensors in fp32 ('opmath'), on the CUDA cores (exp on the SFUs).")
_NO_VECTOR_NOTE = ("No vector (non-matrix) rate sourced for this device: elementwise ops are "
                   "bounded by its matrix peak instead, an optimistic ceiling, so their times "
                   "stay lower bounds.")


_S_GIB = ("DRAM capacity is binary: a vendor's 'GB' of HBM, GDDR or LPDDR is GiB (2^30 B) "
          "(stas00/ml-engineering, compute/accelerator README, 'Accelerator memory size and "
          "speed'); driver-reported totals agree: nvidia-smi shows 81,559 MiB on an 80 GB H100, "
          "81,920 MiB on an A100 80GB, 23,034 MiB on a 24 GB L4 (ECC reserves 1/16), 183,359 "
          "MiB on a B200 (180 GB)")


def _dev(key, name, cls, mem, mem_type, bw, peaks, src, *, notes=None, sparse=None, src_over=None,
         vector="fp32", mem_unit="GiB", l2=None):
    """Build a Device whose every number defaults to one source, with per-field overrides.
    ``mem`` is the vendor's capacity figure in ``mem_unit`` (vendors' GB of DRAM are GiB).
    ``vector``: the precision whose (non-tensor) peak is the vector ceiling, a number, or None."""
    mem_src = f"{src}; {_S_GIB}" if mem_unit == "GiB" else src
    sources = {"memory_bytes": mem_src, "bandwidth_gbs": src, **{p: src for p in peaks}}
    sources.update(src_over or {})
    notes = dict(notes or {})
    if isinstance(vector, str) and vector in peaks:
        vec = float(peaks[vector])
        sources.setdefault("vector_tflops", sources[vector])
        notes.setdefault("vector_tflops", _VECTOR_NOTE)
    elif isinstance(vector, (int, float)):
        vec = float(vector)
        sources.setdefault("vector_tflops", src)
        notes.setdefault("vector_tflops", _VECTOR_NOTE)
    else:
        vec = None
        notes.setdefault("vector_tflops", _NO_VECTOR_NOTE)
    l2_bytes = None
    if l2 is not None:  # (MiB, source)
        l2_bytes = l2[0] * 2**20
        sources["l2_bytes"] = l2[1]
    return Device(key, name, cls, float(mem) * _UNITS[mem_unit], mem_type, bw, dict(peaks),
                  sources, notes, dict(sparse or {}), vec, mem_unit, l2_bytes)


_NV_TENSOR = ("tf32", "fp16", "bf16", "fp8", "int8", "fp4")


def _sparse_2x(peaks):
    """NVIDIA datacenter headline (with 2:4 sparsity) = 2x dense, for tensor precisions only."""
    return {p: 2 * v for p, v in peaks.items() if p in _NV_TENSOR}


_H100 = {"fp32": 67, "tf32": 494.7, "fp16": 989.5, "bf16": 989.5, "fp8": 1979, "int8": 1979}
_H100P = {"fp32": 51, "tf32": 378, "fp16": 756, "bf16": 756, "fp8": 1513, "int8": 1513}
_B200 = {"fp32": 75, "tf32": 1100, "fp16": 2250, "bf16": 2250, "fp8": 4500, "int8": 4500,
         "fp4": 9000}
_A100 = {"fp32": 19.5, "tf32": 156, "fp16": 312, "bf16": 312, "int8": 624}
_L4 = {"fp32": 30.3, "tf32": 60, "fp16": 121, "bf16": 121, "fp8": 242.5, "int8": 242.5}

_DEVICES = [
    _dev("h100-sxm", "NVIDIA H100 SXM5", "datacenter", 80, "HBM3", 3350, _H100, _S_H100,
         l2=(50, _S_L2_H),
         sparse=_sparse_2x(_H100),
         notes={"fp16": "The often-quoted 1979 TFLOP/s FP16 is the 2:4-sparse figure.",
                "fp32": "FP32 on CUDA cores (non-tensor)."},
         src_over={"fp32": f"{_S_H100}; {_S_MLENG}"}),
    _dev("h100-pcie", "NVIDIA H100 PCIe", "datacenter", 80, "HBM2e", 2000, _H100P, _S_H100,
         l2=(50, _S_L2_H),
         sparse=_sparse_2x(_H100P), notes={"fp32": "FP32 on CUDA cores (non-tensor)."}),
    _dev("h200-sxm", "NVIDIA H200 SXM", "datacenter", 141, "HBM3e", 4800, _H100, _S_H200,
         l2=(50, f"{_S_L2_H} (H200 has the H100 SXM's GH100 configuration)"),
         sparse=_sparse_2x(_H100),
         notes={"fp32": "FP32 on CUDA cores; H200 compute equals H100 SXM, only memory differs."},
         src_over={"fp32": f"{_S_H200}; {_S_MLENG}"}),
    _dev("b200", "NVIDIA B200 (HGX, 1000 W)", "datacenter", 180, "HBM3e", 7700, _B200, _S_B200,
         l2=(126.5, _S_L2_B),
         sparse=_sparse_2x(_B200),
         notes={"memory_bytes": "180 GiB usable of 192 GiB physical (8 stacks x 24 GiB); "
                                "nvidia-smi reports 183,359 MiB = 179 GiB.",
                "bandwidth_gbs": "7.7 TB/s in NVIDIA's current datasheet; the older '8 TB/s' was "
                                 "an 'up to' figure.",
                "fp32": "75 TFLOP/s in NVIDIA's current datasheet (the earlier HGX B200 spec "
                        "sheet said 80)."},
         src_over={"bandwidth_gbs": _S_B200_BW}),
    _dev("gb10", "NVIDIA GB10 (DGX Spark)", "desktop", 128, "LPDDR5x", 273,
         {"fp32": 31, "fp16": 62, "bf16": 62, "fp4": 500}, _S_GB10,
         sparse={"fp4": 1000},
         notes={"fp32": "~31: from a conference talk, not a datasheet.",
                "fp16": "~62 derived: 1 PFLOP FP4 sparse / 16 (FP32 accumulate); NVIDIA states no "
                        "FP16 figure.",
                "bf16": "~62 derived as for fp16.",
                "fp4": "~500 derived: half the 1 PFLOP 'with sparsity' headline."},
         src_over={"fp32": _S_GB10_HC}),
    _dev("rtx-5090", "NVIDIA GeForce RTX 5090", "desktop", 32, "GDDR7", 1792,
         {"fp32": 104.8, "tf32": 104.8, "fp16": 209.5, "bf16": 209.5, "fp8": 419, "int8": 838,
          "fp4": 1676}, _S_BW_WP,
         notes={"fp16": "FP16 with FP32 accumulate (what torch uses); 419 with FP16 accumulate. "
                        "GeForce half-rate accumulate is reported to be exceeded in practice: "
                        "uncertain.",
                "bf16": "as fp16: FP32 accumulate."}),
    _dev("rtx-5060", "NVIDIA GeForce RTX 5060 (desktop)", "desktop", 8, "GDDR7", 448,
         {"fp32": 19, "fp16": 38, "bf16": 38, "fp8": 77, "int8": 154, "fp4": 307}, _S_5060,
         sparse={"fp4": 614},
         notes={p: "~ derived from the 614 AI TOPS FP4-sparse headline (halving per precision step); "
                   "no NVIDIA dense figure." for p in ("fp32", "fp16", "bf16", "fp8", "int8", "fp4")}),
    _dev("rtx-5060-laptop", "NVIDIA GeForce RTX 5060 Laptop", "laptop", 8, "GDDR7", 384,
         {"fp32": 11.5, "fp16": 31.5, "bf16": 31.5}, _S_5060L,
         notes={"fp32": "9.7-13.4 depending on the laptop's power limit; midpoint 11.5 used.",
                "fp16": "~27-36 derived (tensor dense, FP32 accumulate); midpoint 31.5 used.",
                "bf16": "as fp16.",
                "bandwidth_gbs": "128-bit bus: 128 bit x 24 Gbps / 8 = 384 GB/s (not 128 GB/s)."}),
    _dev("rtx-4090", "NVIDIA GeForce RTX 4090", "desktop", 24, "GDDR6X", 1008,
         {"fp32": 82.6, "tf32": 82.6, "fp16": 165.2, "bf16": 165.2, "fp8": 330, "int8": 660.6},
         _S_ADA,
         notes={"fp16": "FP32 accumulate (torch); 330 with FP16 accumulate.",
                "bf16": "as fp16.", "fp8": "uncertain: whitepaper rate depends on accumulate."}),
    _dev("a100-sxm-80gb", "NVIDIA A100 SXM 80GB", "datacenter", 80, "HBM2e", 2039, _A100, _S_A100,
         l2=(40, _S_L2_A),
         sparse=_sparse_2x(_A100), notes={"fp32": "FP32 on CUDA cores (non-tensor)."}),
    _dev("l4", "NVIDIA L4", "datacenter", 24, "GDDR6", 300, _L4, _S_L4, sparse=_sparse_2x(_L4)),
    _dev("jetson-orin-nx-16gb", "NVIDIA Jetson Orin NX 16GB", "edge", 16, "LPDDR5", 102.4,
         {"fp32": 1.9, "fp16": 15, "bf16": 15, "int8": 30}, _S_ORIN_NX,
         sparse={"int8": 100},
         notes={"fp32": "~ derived from GPU core count and clock; no NVIDIA figure.",
                "fp16": "~ derived GPU tensor dense; '12 TFLOPS FP16' seen elsewhere has no NVIDIA "
                        "source.",
                "bf16": "as fp16.",
                "int8": "~ derived: GPU-only dense INT8 (the 100 TOPS headline is sparse and "
                        "includes the DLAs)."}),
    _dev("jetson-agx-orin-64gb", "NVIDIA Jetson AGX Orin 64GB", "edge", 64, "LPDDR5", 204.8,
         {"fp32": 5.3, "fp16": 42.5, "bf16": 42.5, "int8": 85}, _S_AGX,
         sparse={"int8": 275},
         notes={"fp16": "~ derived: half the GPU dense INT8 rate.", "bf16": "as fp16.",
                "int8": "GPU dense: 170 GPU sparse TOPS / 2 (the DLAs' 105 excluded)."}),
    _dev("tpu-v5e", "Google TPU v5e", "tpu", 16, "HBM2", 819,
         {"bf16": 197, "int8": 394}, _S_TPU5E,
         notes={"bf16": "TPU figures are dense; the MXU takes bf16 inputs (fp16 not native)."}),
    _dev("tpu-v5p", "Google TPU v5p", "tpu", 95, "HBM2e", 2765, {"bf16": 459, "int8": 918},
         _S_TPU5P),
    _dev("tpu-v6e", "Google TPU v6e (Trillium)", "tpu", 32, "HBM", 1638,
         {"bf16": 918, "int8": 1836}, _S_TPU6E),
    _dev("tpu-v7x", "Google TPU7x (Ironwood)", "tpu", 192, "HBM3e", 7380,
         {"bf16": 2307, "fp8": 4614}, _S_TPU7X,
         notes={"memory_bytes": "192 GiB = 206.2 GB."}),
    _dev("mi300x", "AMD Instinct MI300X", "datacenter", 192, "HBM3", 5300,
         {"fp32": 163.4, "tf32": 653.7, "fp16": 1307.4, "bf16": 1307.4, "fp8": 2614.9,
          "int8": 2614.9}, _S_MI300X,
         sparse={"fp16": 2614.9, "bf16": 2614.9, "fp8": 5229.8, "int8": 5229.8},
         notes={"fp32": "FP32 matrix rate from the datasheet (the FP32 vector rate is the "
                        "same 163.4).",
                "l2_bytes": "L2 = 8 XCDs x 4 MB, each private to its XCD (a kernel's tiles "
                            "on one XCD share 4 MB, not 32): the total, 32 MB, is what all "
                            "XCDs together keep on chip, the test a working set 'fits in a "
                            "cache' (Lab 3) uses; a working set up to 256 MB is still served "
                            "by the Infinity Cache (MALL), a separate last level between L2 "
                            "and HBM, not counted here. No per-CU (LDS, register file) "
                            "figures: Lab 5 cannot draw its hierarchy."},
         l2=(32, _S_L2_MI)),
]

_REGISTRY: dict[str, Device] = {d.key: d for d in _DEVICES}
_BUILTIN_KEYS = frozenset(_REGISTRY)


def keys() -> list[str]:
    """All registered device keys, built-in first in reference-table order."""
    return list(_REGISTRY)


def all_devices() -> list[Device]:
    return list(_REGISTRY.values())


def by_class(device_class: str) -> list[Device]:
    """Devices of one class; KeyError naming ``device_class`` for a class that does not exist."""
    cls = one_of("device_class", device_class, DEVICE_CLASSES)
    return [d for d in _REGISTRY.values() if d.device_class == cls]


def get(key: str | Device, *, arg: str = "key") -> Device:
    """Look a device up by key, case-insensitively, or pass a Device through. ValueError for
    something that is not a key; KeyError listing close matches for an unknown one. ``arg``
    names the caller's argument in messages (``hw`` in most of the physics API)."""
    arg = text("arg", arg)
    if isinstance(key, Device):
        return key
    if not isinstance(key, str) or not key.strip():
        raise ValueError(f"{arg} must be a device key such as 'h100-sxm' or a hardware.Device, "
                         f"got {shown(key)}")
    k = key.strip().lower()
    if k in _REGISTRY:
        return _REGISTRY[k]
    raise KeyError(f"unknown device {arg}={key!r}." + close_matches(k, _REGISTRY,
                                                                    always_list=True))


def custom(name: str, *, bandwidth_gbs: float, peaks: Mapping[str, float], memory_gb: float,
           key: str | None = None, device_class: str = "custom", memory_type: str = "unknown",
           source: str = "entered by the student", vector_tflops: float | None = None) -> Device:
    """A device from a few numbers (e.g. your laptop). Validates every number; not registered.
    ``vector_tflops``: its non-tensor rate for elementwise ops (default: its fp32 peak, if any).

    >>> laptop = custom("My laptop", bandwidth_gbs=100, peaks={"fp32": 2}, memory_gb=16)
    """
    name = text("name", name)
    positive("bandwidth_gbs", bandwidth_gbs)
    positive("memory_gb", memory_gb)  # decimal GB, as a student reads it off a spec sheet
    if not isinstance(peaks, Mapping) or not peaks:
        raise ValueError("peaks must name at least one precision, e.g. {'fp32': 2.0}, got "
                         f"{shown(peaks)}")
    clean = {}
    for p, v in peaks.items():
        clean[precision_key(p, f"peaks[{p!r}]")] = positive(f"peaks[{p!r}]", v)
    device_class = one_of("device_class", device_class, DEVICE_CLASSES)
    memory_type, source = text("memory_type", memory_type), text("source", source)
    vec = "fp32" if vector_tflops is None else positive("vector_tflops", vector_tflops)
    key = (name if key is None else text("key", key)).lower().replace(" ", "-")
    # every number the roofline derives from these must be finite and non-zero: bytes, B/s,
    # FLOP/s, and each precision's ridge (peak / bandwidth)
    bw_bytes = float(bandwidth_gbs) * 1e9
    derived = {"memory bytes": float(memory_gb) * 1e9, "bandwidth (B/s)": bw_bytes}
    rates = {**clean, **({} if isinstance(vec, str) else {"vector": vec})}
    for p, v in rates.items():
        derived[f"{p} peak (FLOP/s)"] = v * 1e12
        derived[f"{p} ridge (FLOP/B)"] = v * 1e12 / bw_bytes
    args = {"memory_gb": memory_gb, "bandwidth_gbs": bandwidth_gbs, "peaks": peaks,
            "vector_tflops": vector_tflops}
    require_finite(derived, args, "the device's " + next(
        (k for k, v in derived.items() if not math.isfinite(v)), "numbers"))
    tiny = next((k for k, v in derived.items() if v == 0.0), None)
    if tiny:
        require_finite({tiny: math.inf}, args, f"the device's {tiny}")
    return _dev(key, name, device_class, float(memory_gb), memory_type,
                float(bandwidth_gbs), clean, source, vector=vec, mem_unit="GB")


def register(device: Device, *, replace: bool = False) -> Device:
    """Add a custom device to the registry so pickers list it. Built-ins cannot be replaced."""
    instance("device", device, Device, "a hardware.Device, e.g. from hardware.custom(...)")
    replace = flag("replace", replace)
    if device.key in _BUILTIN_KEYS:
        raise ValueError(f"device key {device.key!r} is a built-in; choose another key")
    if device.key in _REGISTRY and not replace:
        raise ValueError(f"device key {device.key!r} already registered; pass replace=True")
    _REGISTRY[device.key] = device
    return device


def unregister(key: str) -> None:
    """Remove a registered custom device (a key that is not registered is left alone)."""
    k = text("key", key).lower()
    if k in _BUILTIN_KEYS:
        raise ValueError(f"cannot unregister built-in device key={key!r}")
    _REGISTRY.pop(k, None)


def picker_options(device_classes: tuple[str, ...] | None = None) -> dict[str, str]:
    """``{label: key}`` for a dropdown, grouped by class, labels say the class."""
    wanted = None if device_classes is None else {
        one_of("device_classes", c, DEVICE_CLASSES)
        for c in sequence("device_classes", device_classes)}
    out = {}
    for cls in DEVICE_CLASSES:
        if wanted and cls not in wanted:
            continue
        for d in by_class(cls):
            out[f"{d.name} · {cls}"] = d.key
    return out


def _self_check() -> None:
    for d in _DEVICES:
        for f in ("memory_bytes", "bandwidth_gbs", *d.peaks):
            assert d.sources.get(f), (d.key, f)
        for v in (d.memory_bytes, d.bandwidth_gbs, *d.peaks.values()):
            assert math.isfinite(v) and v > 0, d.key


_self_check()
