"""Links between chips and what a collective costs on them: the α-β model (Lab 6).

Units: bytes, seconds, one-way bandwidth in GB/s (1e9 B/s), latency α in seconds (links store
µs). Sharded-matmul, serving and training costs built on this are in
:mod:`labs.core.physics.sharding`.

**One-way bandwidth.** Vendors quote NVLink and PCIe as the *sum of both directions*; a ring
step sends one way while it receives the other, so it sees half. Every :class:`Link` stores
the one-way figure, the figure as quoted and where the one comes from the other.

**Message size.** ``nbytes`` follows nccl-tests: all-reduce, the buffer each participant holds
(input = output); all-gather, the *output* each participant ends with (n shards); reduce-scatter,
the *input* each participant starts with (it ends with nbytes / n).

**Cost model** (Thakur, Rabenseifner, Gropp, "Optimization of Collective Communication
Operations in MPICH", IJHPCA 2005; nccl-tests doc/PERFORMANCE.md), n participants, one-way
link bandwidth B, per-step latency α:

=================  =========================================  ==============================
op                 ring                                       tree (all-reduce only)
=================  =========================================  ==============================
all-reduce         2(n-1)·α + 2(n-1)/n · S/B                   2⌈log2 n⌉·α + 2·S/B
all-gather         (n-1)·α + (n-1)/n · S/B                     (not modelled)
reduce-scatter     (n-1)·α + (n-1)/n · S/B                     (not modelled)
=================  =========================================  ==============================

The tree row is a pipelined reduce-then-broadcast over a binary tree (what NCCL's double
binary tree approaches: Sanders, Speck, Träff, "Two-tree algorithms for full bandwidth
broadcast, reduction and scan", Parallel Computing 2009): fewer latency steps (log n instead of
n) for about the ring's bandwidth term, so trees win for small messages on many chips.

**Bus bandwidth** (nccl-tests): algbw = S / t; busbw = algbw × 2(n-1)/n for all-reduce and
× (n-1)/n for all-gather and reduce-scatter, so that a perfect ring's busbw equals the link's
one-way bandwidth, whatever n.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from labs.core.physics import hardware as _hw
from labs.core.physics._validate import (close_matches, non_negative, positive,
                                          positive_int, shown, text)

OPS = ("all-reduce", "all-gather", "reduce-scatter")
ALGORITHMS = ("ring", "tree")


class UnknownLinkError(KeyError, ValueError):
    """An unknown link key: a KeyError like the other registries, and a ValueError (bad input)."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


@dataclass(frozen=True)
class Link:
    """A chip-to-chip (or node-to-node) link as a collective sees it."""

    key: str
    name: str
    one_way_gbs: float  # GB/s one way, per chip: what a ring step sees
    quoted: str  # the figure as the vendor quotes it
    source: str  # where the quoted figure comes from
    derivation: str  # how the one-way figure follows from the quoted one
    latency_us: float  # per-step latency α (µs): a STATED ASSUMPTION, see LATENCY_NOTE
    domain: int | None = None  # most chips one such link joins (a node, a pod); None: no limit
    kind: str = "scale-up"  # "scale-up" (inside a node or pod) or "scale-out" (between nodes)
    notes: dict = field(default_factory=dict)

    @property
    def latency_s(self) -> float:
        return self.latency_us * 1e-6

    @property
    def bytes_per_s(self) -> float:
        return self.one_way_gbs * 1e9


#: Why the per-step latencies are what they are (no vendor states α per ring step).
LATENCY_NOTE = (
    "α per ring step is a STATED, editable teaching figure, not a datasheet number: a few bytes "
    "all-reduced over an 8-GPU NVLink node take ~10-20 µs in published nccl-tests runs, i.e. "
    "~1 µs per step of a 14-step ring; PCIe peer-to-peer through host bridges and NICs with "
    "their proxies add a few µs per hop; a TCP/Ethernet hop costs ~10 µs or more. Part 1 of "
    "Lab 6 measures α on the student's own machine.")

_PCIE_SPEC = "PCI-SIG specification arithmetic (lanes x transfer rate x 128b/130b encoding)"

_LINKS = [
    Link("nvlink3", "NVLink 3 (A100 SXM)", 300, "600 GB/s total per GPU (12 links)",
         "NVIDIA A100 Tensor Core GPU datasheet", "600 GB/s counts both directions: 300 one way",
         1.0, domain=8),
    Link("nvlink4", "NVLink 4 (H100/H200 SXM)", 450, "900 GB/s total per GPU (18 links x 50 GB/s)",
         "NVIDIA H100 and H200 datasheets", "900 GB/s counts both directions: 450 one way",
         1.0, domain=8),
    Link("nvlink5", "NVLink 5 (B200)", 900, "1.8 TB/s total per GPU (18 links x 100 GB/s)",
         "NVIDIA HGX B200 specifications; Blackwell datasheet",
         "1.8 TB/s counts both directions: 900 one way", 1.0, domain=8),
    Link("pcie4-x16", "PCIe Gen4 x16", 31.5, "64 GB/s total (16 GT/s x 16 lanes)", _PCIE_SPEC,
         "16 GT/s x 16 lanes x 128/130 / 8 bits = 31.5 GB/s one way", 3.0, domain=8),
    Link("pcie5-x16", "PCIe Gen5 x16", 63.0, "128 GB/s total (32 GT/s x 16 lanes)",
         f"{_PCIE_SPEC}; NVIDIA H100 datasheet quotes 128 GB/s",
         "32 GT/s x 16 lanes x 128/130 / 8 bits = 63.0 GB/s one way", 3.0, domain=8),
    Link("infinity-fabric", "AMD Infinity Fabric (MI300X)", 448,
         "7 links x 128 GB/s = 896 GB/s aggregate peer-to-peer per GPU",
         "AMD Instinct MI300X datasheet",
         "~ derived, unverified: 128 GB/s per link counts both directions (64 one way); the "
         "8-GPU platform is fully connected, so a collective spread over all 7 links sees "
         "~7 x 64 = 448 one way (a single ring over one link would see 64)", 1.5, domain=8),
    Link("ib-hdr", "InfiniBand HDR (200 Gb/s per GPU)", 25, "200 Gb/s per port",
         "NVIDIA ConnectX-6 specifications", "200 Gb/s / 8 = 25 GB/s each way (full duplex)",
         5.0, kind="scale-out"),
    Link("ib-ndr", "InfiniBand NDR (400 Gb/s per GPU)", 50, "400 Gb/s per port",
         "NVIDIA ConnectX-7 / Quantum-2 specifications",
         "400 Gb/s / 8 = 50 GB/s each way (full duplex); one port per GPU as in HGX H100 nodes",
         5.0, kind="scale-out"),
    Link("ethernet-10g", "10 Gb Ethernet", 1.25, "10 Gb/s per port", "IEEE 802.3 (10GBASE-T)",
         "10 Gb/s / 8 = 1.25 GB/s each way (full duplex); e.g. Jetson AGX Orin's 10GbE port",
         15.0, kind="scale-out"),
    Link("tpu-v5e-ici", "TPU v5e ICI", 45, "1,600 Gb/s per chip, 2D torus (4 links)",
         "Google Cloud TPU v5e documentation; jax-ml/scaling-book hardware table",
         "~45 GB/s one way per link (scaling-book); a ring along one torus axis uses one link "
         "each way (a bidirectional ring could use both directions: twice this)", 1.0,
         domain=256),
    Link("tpu-v5p-ici", "TPU v5p ICI", 90, "4,800 Gb/s per chip, 3D torus (6 links)",
         "Google Cloud TPU v5p documentation; jax-ml/scaling-book",
         "~90 GB/s one way per link (scaling-book)", 1.0, domain=8960),
    Link("tpu-v6e-ici", "TPU v6e ICI", 90, "3,200 Gb/s per chip, 2D torus",
         "Google Cloud TPU v6e documentation; jax-ml/scaling-book",
         "~90 GB/s one way per link (scaling-book; verify before relying on it)", 1.0,
         domain=256),
]
LINKS: dict[str, Link] = {lk.key: lk for lk in _LINKS}

#: The link that joins two chips of each registry device (hardware.keys()), when one is sourced.
#: Edge boards and laptops have no chip-to-chip link: a second one is another machine on the
#: network. TPU7x has no sourced ICI figure in the reference data, so it has none here.
DEVICE_LINKS: dict[str, str] = {
    "a100-sxm-80gb": "nvlink3", "h100-sxm": "nvlink4", "h200-sxm": "nvlink4", "b200": "nvlink5",
    "h100-pcie": "pcie5-x16", "l4": "pcie4-x16", "rtx-4090": "pcie4-x16",
    "rtx-5090": "pcie5-x16", "rtx-5060": "pcie5-x16",
    "gb10": "ethernet-10g",  # its 10 GbE port (its faster ConnectX-7 NIC: no sourced figure)
    "rtx-5060-laptop": "ethernet-10g", "jetson-orin-nx-16gb": "ethernet-10g",
    "jetson-agx-orin-64gb": "ethernet-10g", "tpu-v5e": "tpu-v5e-ici", "tpu-v5p": "tpu-v5p-ici",
    "tpu-v6e": "tpu-v6e-ici", "mi300x": "infinity-fabric",
}
#: A ring larger than a link's domain crosses nodes: it is then as fast as this link.
SCALE_OUT_LINK = "ib-ndr"


def get_link(link: str | Link) -> Link:
    """A link by key (case-insensitive) or a :class:`Link` passed through. Something that is
    not a key raises ValueError; an unknown key :class:`UnknownLinkError` (a KeyError and a
    ValueError), both naming ``link``, the latter with the close matches."""
    if isinstance(link, Link):
        return link
    k = text("link", link).lower()
    if k in LINKS:
        return LINKS[k]
    raise UnknownLinkError(f"unknown link={shown(link)}." + close_matches(k, LINKS,
                                                                         always_list=True))


def link_options() -> dict[str, str]:
    """``{label: key}`` for a dropdown: the links' names (Lab 6 shows their figures once the
    student has predicted how a datasheet figure turns into a collective's time)."""
    return {lk.name: lk.key for lk in LINKS.values()}


def device_link(device) -> Link | None:
    """The link between two chips of this device (None when no sourced one exists)."""
    key = DEVICE_LINKS.get(_hw.get(device, arg="device").key)
    return LINKS[key] if key else None


def custom_link(name: str, one_way_gbs: float, latency_us: float, *,
                source: str = "measured on this machine") -> Link:
    """A link from two numbers, e.g. the α and β fitted to this machine's measurements."""
    name, source = text("name", name), text("source", source)
    gbs = positive("one_way_gbs", one_way_gbs)
    lat = non_negative("latency_us", latency_us)
    key = name.lower().replace(" ", "-")
    return Link(key, name, gbs, f"{gbs:.3g} GB/s", source, "as given", lat,
                kind="measured")


def ring_link(link, n: int) -> Link:
    """The link a ring of ``n`` chips actually runs at: a ring larger than the link's domain
    (8 GPUs per NVLink or PCIe node) crosses nodes, and a ring is only as fast as its slowest
    hop, so it runs at the scale-out link (:data:`SCALE_OUT_LINK`) when that is slower."""
    lk = get_link(link)
    n = positive_int("n", n)
    if lk.domain is None or n <= lk.domain:
        return lk
    out = LINKS[SCALE_OUT_LINK]
    slow_bw = min(lk.one_way_gbs, out.one_way_gbs)
    return Link(f"{lk.key}+{out.key}", f"{lk.name} within {lk.domain}, {out.name} between",
                slow_bw, lk.quoted, f"{lk.source}; {out.source}",
                f"a ring of {n} spans {math.ceil(n / lk.domain)} groups of {lk.domain}: its "
                f"slowest hop ({slow_bw:g} GB/s) sets the pace", max(lk.latency_us,
                                                                     out.latency_us),
                kind="scale-out")


# --- the α-β model -----------------------------------------------------------------------------

def _op(op, arg: str = "op") -> str:
    o = text(arg, op).lower().replace("_", "-").replace(" ", "-")
    o = {"allreduce": "all-reduce", "allgather": "all-gather",
         "reducescatter": "reduce-scatter"}.get(o, o)
    if o not in OPS:
        raise ValueError(f"{arg} must be one of {', '.join(OPS)}, got {shown(op)}")
    return o


def _n(n, arg: str = "n") -> int:
    v = positive_int(arg, n)
    if v < 2:
        raise ValueError(f"{arg} must be >= 2 participants for a collective, got {shown(n)}")
    return v


def _algorithm(op: str, algorithm) -> str:
    a = text("algorithm", algorithm).lower()
    if a not in ALGORITHMS:
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, "
                         f"got {shown(algorithm)}")
    if a == "tree" and op != "all-reduce":
        raise ValueError(f"algorithm='tree' is modelled for all-reduce only, not {op}")
    return a


def bus_factor(op, n) -> float:
    """nccl-tests' busbw / algbw: 2(n-1)/n for all-reduce, (n-1)/n for all-gather and
    reduce-scatter. Also the bytes each participant sends per byte of ``nbytes`` in a ring."""
    o, k = _op(op), _n(n)
    return (2 if o == "all-reduce" else 1) * (k - 1) / k


def latency_steps(op, n, algorithm: str = "ring") -> int:
    """How many α a collective pays: ring 2(n-1) (all-reduce) or n-1; tree 2⌈log2 n⌉."""
    o, k = _op(op), _n(n)
    if _algorithm(o, algorithm) == "tree":
        return 2 * math.ceil(math.log2(k))
    return (2 if o == "all-reduce" else 1) * (k - 1)


def bandwidth_factor(op, n, algorithm: str = "ring") -> float:
    """The multiple of S / B a collective pays: the ring's bus factor, or 2 for the tree."""
    o, k = _op(op), _n(n)
    return 2.0 if _algorithm(o, algorithm) == "tree" else bus_factor(o, k)


def collective_time(op, nbytes, n, link_gbs, latency_s, algorithm: str = "ring") -> float:
    """Seconds for one collective of ``nbytes`` (nccl-tests convention, module docstring)
    across ``n`` participants on a link of ``link_gbs`` GB/s one way and per-step latency
    ``latency_s``: steps × α + factor × S / B."""
    o, k = _op(op), _n(n)
    s = positive("nbytes", nbytes)
    b = positive("link_gbs", link_gbs) * 1e9
    a = non_negative("latency_s", latency_s)
    return latency_steps(o, k, algorithm) * a + bandwidth_factor(o, k, algorithm) * s / b


def link_time(op, nbytes, n, link, algorithm: str = "ring") -> float:
    """:func:`collective_time` on a registry link (or a :class:`Link`), with its α, on the
    link a ring of ``n`` really uses (:func:`ring_link`)."""
    lk = ring_link(link, n)
    return collective_time(op, nbytes, n, lk.one_way_gbs, lk.latency_s, algorithm)


def latency_bandwidth_split(op, nbytes, n, link_gbs, latency_s,
                            algorithm: str = "ring") -> tuple[float, float]:
    """(latency term, bandwidth term) of :func:`collective_time`, in seconds."""
    t = collective_time(op, nbytes, n, link_gbs, latency_s, algorithm)
    lat = latency_steps(op, n, algorithm) * float(latency_s)
    return lat, t - lat


def crossover_bytes(op, n, link_gbs, latency_s, algorithm: str = "ring") -> float:
    """Message size where the bandwidth term equals the latency term: below it latency
    dominates, above it bandwidth does. S* = steps × α × B / factor."""
    o, k = _op(op), _n(n)
    a = non_negative("latency_s", latency_s)
    b = positive("link_gbs", link_gbs) * 1e9
    return latency_steps(o, k, algorithm) * a * b / bandwidth_factor(o, k, algorithm)


def algbw_gbs(nbytes, seconds) -> float:
    """nccl-tests' algorithm bandwidth S / t, GB/s."""
    return positive("nbytes", nbytes) / positive("seconds", seconds) / 1e9


def busbw_gbs(op, nbytes, n, seconds) -> float:
    """nccl-tests' bus bandwidth, GB/s: algbw × :func:`bus_factor`; comparable with a
    link's one-way bandwidth whatever n."""
    return algbw_gbs(nbytes, seconds) * bus_factor(op, n)
