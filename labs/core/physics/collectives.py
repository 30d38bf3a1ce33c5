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

**Beyond one node** (more chips than a link's ``domain``), with the NICs per node (rails) as a
parameter, every number names its algorithm (:data:`ACROSS_NODES_NOTE`, :func:`collective_path`):

- ``"ring"`` (the default): NCCL's Ring, flat. One ring per NIC runs through all n chips, so
  each NIC carries 2(n-1)/n of its ring's share and the bus bandwidth is the slower of the
  node's link and the node's NICs together (8 x 50 GB/s NDR = 400 GB/s), whatever the node
  count. Its latency is NCCL's own ring model: 2(n-1) steps, the 2(M-1) that cross between
  the M nodes at the NIC's α, the others at the link's (NVIDIA/nccl src/graph/tuning.cc).
  NCCL's usual choice for large messages across nodes, and what nccl-tests measures with
  NCCL_ALGO=Ring (2 DGX-A100: 192 GB/s bus, NVIDIA/nccl issue 812; 3 A100 nodes with 4 HDR
  NICs: 96 GB/s, nccl-tests issue 119; 2 HGX-H100 with 8 NDR NICs: 368-400 GB/s).
- ``"hierarchical"``: two levels, pipelined: a reduce-scatter inside each node, an all-reduce
  of each chip's 1/g share across nodes over its own rail, an all-gather inside the node.
  The NICs carry 2(M-1)/M of a 1/g share, so at a few nodes it beats the flat ring's NIC
  bound (this is what tree-like algorithms, NCCL's Tree, NVLS-Tree and CollNet, approach);
  the chunks flow through both levels at once, so the slower level sets the bandwidth time;
  the latencies add.
- ``"hierarchical-sequential"``: the same three phases run one after the other (the textbook
  version, without pipelining): the levels' bandwidth times add. With the NICs close to the
  node's link it is slower than the flat Ring.
- ``"tree"`` (all-reduce only): a tree inside each level (module table above), two levels
  beyond a node like ``"hierarchical"``.

**Achievable bandwidth**: the model runs at the spec by default; ``achievable=True`` scales every
link to what nccl-tests reaches (:func:`link_efficiency`: ~370 of 450 GB/s with the RING
algorithm on 8xH100 NVLink; 46-48 of 50 GB/s per NDR NIC), as ``roofline.achievable`` derates
compute.

**NVLink SHARP** (NVLS): on NVSwitch H100 nodes NCCL's *default* all-reduce is not a ring: the
switch reduces the data, and nccl-tests reports ~480 GB/s bus bandwidth (algbw ~275 GB/s) on 8
GPUs, faster than the ring at its datasheet bandwidth. The ring model does not describe it;
:data:`NVLS_H100` states the measurement (:meth:`SwitchAllReduce.time`). Other collectives, and
``NCCL_ALGO=Ring``, run at the ring figure.

**Bus bandwidth** (nccl-tests): algbw = S / t; busbw = algbw × 2(n-1)/n for all-reduce and
× (n-1)/n for all-gather and reduce-scatter, so that a perfect ring's busbw equals the link's
one-way bandwidth, whatever n.

The module is kept as one piece (past 500 lines): the links, their achievable fractions, the
path a collective takes on them and its α-β cost are one model read together (a link's domain
decides the path, the path the cost), and Lab 6 cites them side by side.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from labs.core.physics import hardware
from labs.core.physics.validate import (close_matches, non_negative, positive,
                                          positive_int, shown, text)

__all__ = [
    "ACROSS_NODES_NOTE", "ALGORITHMS", "ALGORITHM_NAMES", "DEVICE_LINKS", "LATENCY_NOTE", "LINKS",
    "Link", "LinkEfficiency", "NIC_ACHIEVABLE", "NVLINK_ACHIEVABLE", "NVLS_H100", "OPS", "Path",
    "SCALE_OUT_LINK", "SEQUENTIAL", "SwitchAllReduce", "UnknownLinkError", "algbw_gbs",
    "algorithm_name", "bandwidth_factor", "bus_factor", "bus_factor_derivation", "busbw_gbs",
    "check_pair", "collective_path", "collective_time", "crossover_bytes", "custom_link",
    "device_link", "get_link", "latency_bandwidth_split", "latency_steps", "link_efficiency",
    "link_options", "link_time", "op_name", "pair_problem", "participant_count", "ring_link"
]

OPS = ("all-reduce", "all-gather", "reduce-scatter")
#: The hierarchical all-reduce run one level after the other (module docstring).
SEQUENTIAL = "hierarchical-sequential"
ALGORITHMS = ("ring", "hierarchical", "hierarchical-sequential", "tree")


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

    @property
    def short_name(self) -> str:
        """The name without its parenthesis: "NVLink 4", "InfiniBand NDR"."""
        return self.name.split(" (")[0]

    @property
    def approximate(self) -> bool:
        """The one-way figure is derived and unverified, an upper bound (shown with "~")."""
        return bool(self.notes.get("approximate"))

    @property
    def one_way_text(self) -> str:
        """"450 GB/s", or "~448 GB/s" for an unverified derived figure."""
        return f"{'~' if self.approximate else ''}{self.one_way_gbs:g} GB/s"


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
         "~ derived, unverified, an UPPER BOUND: 128 GB/s per link counts both directions (64 "
         "one way); the 8-GPU platform is fully connected, so a collective spread over all 7 "
         "links at full rate would see ~7 x 64 = 448 one way (a single ring over one link sees "
         "64). RCCL does not drive all 7 links at full rate: measured bus bandwidth is well "
         "below this, and no RCCL measurement is in the project's references",
         1.5, domain=8, notes={"approximate": True}),
    Link("ib-hdr", "InfiniBand HDR (200 Gb/s per port)", 25, "200 Gb/s per port",
         "NVIDIA ConnectX-6 specifications", "200 Gb/s / 8 = 25 GB/s each way (full duplex)",
         5.0, kind="scale-out"),
    Link("ib-ndr", "InfiniBand NDR (400 Gb/s per port)", 50, "400 Gb/s per port",
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
#: The link between nodes when a collective outgrows a link's domain (8 GPUs per NVLink or PCIe
#: node): InfiniBand NDR, one ConnectX-7 port per GPU as in HGX/DGX H100 nodes.
SCALE_OUT_LINK = "ib-ndr"

def get_link(link: str | Link) -> Link:
    """A link by key (case-insensitive) or a :class:`Link` passed through. Something that is
    not a key raises ValueError; an unknown key :class:`UnknownLinkError` (a KeyError and a
    ValueError), both naming ``link``, the latter with the close matches."""
    return _get_link(link, "link")


def _get_link(link, arg: str) -> Link:
    if isinstance(link, Link):
        return link
    k = text(arg, link).lower()
    if k in LINKS:
        return LINKS[k]
    raise UnknownLinkError(f"unknown {arg}={shown(link)}." + close_matches(k, LINKS,
                                                                          always_list=True))


def link_options() -> dict[str, str]:
    """``{label: key}`` for a dropdown: the links' names (Lab 6 shows their figures once the
    student has predicted how a datasheet figure turns into a collective's time)."""
    return {lk.name: lk.key for lk in LINKS.values()}


def device_link(device) -> Link | None:
    """The link between two chips of this device (None when no sourced one exists)."""
    key = DEVICE_LINKS.get(hardware.get(device, arg="device").key)
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


#: How a collective wider than a node runs, by algorithm (never one ring at one NIC's speed).
ACROSS_NODES_NOTE = (
    "An HGX/DGX node has 8 GPUs and 8 compute NICs (DGX A100: ConnectX-6 HDR, 200 Gb/s; HGX "
    "H100: ConnectX-7 NDR, 400 Gb/s): one NIC per GPU. NCCL's Ring is flat: it builds one "
    "ring per NIC (rail), each through all n GPUs and carrying its share of the data, so each "
    "NIC carries 2(n-1)/n of its ring's share and the ring's bus bandwidth is the slower of "
    "the node's link and the node's NICs together (8 x 50 GB/s = 400 GB/s on NDR), whatever "
    "the node count (nccl-tests with NCCL_ALGO=Ring: 192 GB/s on 2 DGX-A100, NVIDIA/nccl "
    "issue 812; 96 GB/s on 3 A100 nodes with 4 HDR NICs, nccl-tests issue 119; 368-400 GB/s "
    "on 2 HGX-H100, nccl-tests issues 290 and 309). Its latency: 2(n-1) steps, the 2(M-1) "
    "that cross between the M nodes at the NIC's α (NCCL's tuning model, src/graph/tuning.cc). "
    "A hierarchical all-reduce (reduce-scatter in the node, an all-reduce of each GPU's 1/g "
    "share over its own NIC, all-gather in the node) sends only 2(M-1)/M of that share through "
    "the NICs, so at a few nodes it can beat the Ring's NIC bound: tree-like algorithms "
    "(NCCL's Tree, NVLS-Tree, CollNet) approach it. Its levels are pipelined, so the slower "
    "level's bandwidth time sets the pace and the latencies add (jax-ml/scaling-book, 'How to "
    "Think About GPUs', cross-node collectives: T = max(T at node, T in scale-out network)). "
    "Run one level after the other instead, the levels' times add, and with the NICs close to "
    "the node's link it is slower than the Ring.")


@dataclass(frozen=True)
class LinkEfficiency:
    """The fraction of a link's one-way bandwidth a large collective reaches (nccl-tests bus
    bandwidth / spec), like ``roofline.achievable`` for compute; ``measured`` says whether a
    published measurement backs it or it is a stated assumption."""

    fraction: float
    source: str
    measured: bool


#: nccl-tests on one 8xH100 SXM node with the RING algorithm (NCCL_ALGO=Ring), and every
#: collective other than all-reduce: bus bandwidth reaches about 370 of 450 GB/s for large
#: messages ("450GB/s is the line rate. With the protocol overhead (~20%) NCCL can get an
#: effective NVLink bandwidth of 370GB/s, which you can observe as BusBw when running
#: non-allreduce operations, or when running with NCCL_ALGO=RING": S. Jeaugey, NVIDIA/nccl-tests
#: issue 212; Ring 365-370 GB/s on 2-8 H100s: NVIDIA/nccl issue 1455; jax-ml/scaling-book,
#: 'How to Think About GPUs': "difficult in practice to exceed 370 GB/s").
NVLINK_ACHIEVABLE = LinkEfficiency(
    370 / 450, "nccl-tests ring bus bandwidth on 8xH100 SXM (NCCL_ALGO=Ring, or any "
    "collective but all-reduce): ~370 of 450 GB/s (NVIDIA/nccl-tests issue 212, NVIDIA/nccl "
    "issue 1455, jax-ml/scaling-book)", True)
_ASSUMED_ACHIEVABLE = LinkEfficiency(
    370 / 450, "stated assumption: no published nccl-tests figure for this link in the "
    "project's references, so the NVLink 4 ring measurement's fraction (370 of 450 GB/s, 82%) "
    "is used; measure yours (Part 1)", False)
_ASSUMED_UPPER = LinkEfficiency(
    370 / 450, "stated assumption, and an upper bound: the one-way figure itself is derived "
    "and unverified (RCCL does not drive every link at full rate), and the NVLink 4 ring "
    "fraction (82%) is applied to it; measure yours (Part 1)", False)


#: nccl-tests across nodes on InfiniBand: "For NDR @ 400Gbps you should see 46-48GB/s per NIC"
#: (NVIDIA, nccl-tests issue 290): 47 of 50 GB/s. Applied to every InfiniBand NIC; the A100
#: measurements over HDR (192 GB/s bus on 2 DGX-A100 with 8 NICs each, 96 GB/s on 3 nodes with
#: 4) are what tests/test_reality_anchors_comm.py holds it against, not what it was read from.
NIC_ACHIEVABLE = LinkEfficiency(
    47 / 50, "nccl-tests across nodes: 46-48 of 50 GB/s per InfiniBand NDR NIC (NVIDIA, "
    "nccl-tests issue 290)", True)
_INFINIBAND = ("ib-hdr", "ib-ndr")


def link_efficiency(link) -> LinkEfficiency:
    """The sourced achievable fraction of ``link``'s one-way bandwidth (see
    :class:`LinkEfficiency`): NVLink 4 with NCCL's Ring, an InfiniBand NIC across nodes, else a
    stated assumption (the NVLink 4 ring fraction)."""
    lk = get_link(link)
    if lk.key == "nvlink4":
        return NVLINK_ACHIEVABLE
    if lk.key in _INFINIBAND:
        return NIC_ACHIEVABLE
    return _ASSUMED_UPPER if lk.approximate else _ASSUMED_ACHIEVABLE


@dataclass(frozen=True)
class SwitchAllReduce:
    """A measured all-reduce that reduces inside the switch (NVLink SHARP, NVLS), which the
    ring model does not describe: the data crosses each GPU's link about once each way instead
    of 2(n-1)/n times, so nccl-tests' bus bandwidth (computed with the ring's 2(n-1)/n) can
    exceed the link's one-way figure. ``time`` uses the measured bus bandwidth."""

    link: str  # the link key whose switch reduces
    n: int  # GPUs in the measurement
    busbw_gbs: float  # nccl-tests bus bandwidth, large messages
    algbw_gbs: float  # nccl-tests algorithm bandwidth S / t
    source: str

    def time(self, nbytes) -> float:
        """Seconds for a large all-reduce of ``nbytes`` (latency aside): S x 2(n-1)/n / busbw."""
        return positive("nbytes", nbytes) * bus_factor("all-reduce", self.n) / (
            self.busbw_gbs * 1e9)


#: NCCL's default all-reduce on one 8xH100 SXM (NVSwitch 3) node: NVLink SHARP, ~480 GB/s bus
#: bandwidth, algbw ~275 GB/s ("allreduce uses NVLink SHARP by default ... On 8 GPUs, you
#: should reach a peak busBw of ~480GB/s (algbw ~275GB/s)": S. Jeaugey, NVIDIA/nccl-tests
#: issue 212; NVLS 480 GB/s vs Ring 365-370 on 8 H100s: NVIDIA/nccl issue 1455).
NVLS_H100 = SwitchAllReduce(
    "nvlink4", 8, 480.0, 275.0,
    "nccl-tests all_reduce_perf on 8xH100 SXM with NCCL's default algorithm (NVLink SHARP): "
    "busbw ~480 GB/s, algbw ~275 GB/s (NVIDIA/nccl-tests issue 212; NVIDIA/nccl issue 1455)")


#: Each link's PCIe generation on the devices that have one (a Gen5 link on a Gen4 card runs at
#: Gen4) and the devices an NVLink, Infinity Fabric or ICI link belongs to.
_PCIE_GEN = {"h100-pcie": 5, "rtx-5090": 5, "rtx-5060": 5, "l4": 4, "rtx-4090": 4}
_LINK_PCIE_GEN = {"pcie4-x16": 4, "pcie5-x16": 5}


def pair_problem(device, link) -> str | None:
    """Why ``device`` cannot be joined by ``link`` (a sentence that says what to pick instead),
    or None when the pair exists. NVLink, Infinity Fabric and TPU ICI belong to their own chips;
    an SXM/OAM module's GPUs are joined on their board, not over PCIe; a PCIe card runs at its
    own generation; edge boards and laptops have only a network port. Scale-out links (InfiniBand,
    Ethernet) join any two machines. Devices outside the registry (custom) are not checked."""
    d, lk = hardware.get(device, arg="device"), get_link(link)
    if lk.kind != "scale-up" or d.key not in hardware.keys():
        return None
    own = DEVICE_LINKS.get(d.key)
    if lk.key in _LINK_PCIE_GEN:
        gen = _PCIE_GEN.get(d.key)
        if gen is None:
            own_link = LINKS[own] if own else None
            native = ("it has no chip-to-chip link, only a network port" if own_link is None
                      else f"its only link to another machine is {own_link.name}"
                      if own_link.kind != "scale-up"
                      else f"its chips are joined by {own_link.name}")
            return (f"The {d.name} is not a PCIe card: {native}. Pick a PCIe card (e.g. the "
                    "NVIDIA H100 PCIe) for GPUs joined by PCIe.")
        if gen < _LINK_PCIE_GEN[lk.key]:
            return (f"The {d.name} is a PCIe Gen{gen} card: it cannot run {lk.name}. Pick "
                    f"PCIe Gen{gen} x16.")
        return None
    if own != lk.key:
        owners = [hardware.get(k).name for k, v in DEVICE_LINKS.items() if v == lk.key]
        native = f" Its own link is {LINKS[own].name}." if own else ""
        return (f"{lk.name} joins only the {' and the '.join(owners)}, not the {d.name}."
                f"{native} Pick the chip's own link, or a network link between machines.")
    return None


def check_pair(device, link) -> None:
    """ValueError naming ``link`` when :func:`pair_problem` finds one."""
    why = pair_problem(device, link)
    if why:
        raise ValueError(f"link={shown(get_link(link).key)} with device="
                         f"{shown(hardware.get(device, arg='device').key)}: {why}")


@dataclass(frozen=True)
class Path:
    """Where a collective over ``n`` chips runs on a link: one ring inside the link's domain,
    or, beyond it, ``nodes`` nodes of ``g`` chips over ``link``, joined by ``nics`` NICs
    (rails) of ``nic`` per node. How it runs there is the ``algorithm`` each method takes
    (:data:`ALGORITHMS`, :data:`ACROSS_NODES_NOTE`): ``"ring"``, NCCL's flat Ring (the
    default), ``"hierarchical"`` or ``"tree"``. Bandwidths are scaled by ``efficiency`` (the
    node's link) and ``nic_efficiency`` (1: the spec; :func:`link_efficiency`: what nccl-tests
    reaches)."""

    link: Link
    n: int
    g: int  # chips per node (= n within the domain)
    nodes: int  # M (1 within the domain)
    nic: Link | None
    nics: int  # NICs per node (rails)
    efficiency: float
    nic_efficiency: float = 1.0

    @property
    def hierarchical(self) -> bool:
        """Whether the collective spans nodes (two kinds of link), whatever the algorithm."""
        return self.nodes > 1

    @property
    def node_gbs(self) -> float:
        """One-way GB/s each chip sees inside the node."""
        return self.link.one_way_gbs * self.efficiency

    @property
    def egress_gbs(self) -> float:
        """One-way GB/s out of a node through its NICs together (0 within one node)."""
        return self.nic.one_way_gbs * self.nics * self.nic_efficiency if self.nic else 0.0

    @property
    def rail_gbs(self) -> float:
        """One-way GB/s each chip has across nodes: the node's NICs shared by its g chips."""
        return self.egress_gbs / self.g

    def latency(self, op, algorithm: str = "ring") -> float:
        """Seconds of per-step latency. One node: steps x the link's α. Across M nodes: the
        flat Ring pays 2(n-1) steps (all-reduce; n-1 otherwise), the 2(M-1) (M-1) that cross
        between nodes at the NIC's α and the rest at the link's (NCCL's tuning model);
        hierarchical and tree pay each level's steps, added."""
        o = op_name(op)
        a = algorithm_name(o, algorithm)
        if not self.hierarchical:
            return latency_steps(o, self.n, a) * self.link.latency_s
        if a == "ring":
            inter = latency_steps(o, self.nodes, "ring")
            return ((latency_steps(o, self.n, "ring") - inter) * self.link.latency_s
                    + inter * self.nic.latency_s)
        t = self.nic.latency_s * latency_steps(o, self.nodes, a)
        return t + (latency_steps(o, self.g, a) * self.link.latency_s if self.g > 1 else 0.0)

    def seconds_per_byte(self, op, algorithm: str = "ring") -> float:
        """The bandwidth term per byte of ``nbytes``. One node: factor / B. Across nodes, the
        flat Ring: factor(n) / the slower of B_node and the node's NIC egress (each NIC carries
        its ring's share 2(n-1)/n times); hierarchical and tree: the slower of the pipelined
        levels, factor(g) / B_node and factor(M) / g / B_rail; hierarchical-sequential: the
        two added (one level after the other)."""
        o = op_name(op)
        a = algorithm_name(o, algorithm)
        if not self.hierarchical:
            return bandwidth_factor(o, self.n, a) / (self.node_gbs * 1e9)
        if a == "ring":
            return bus_factor(o, self.n) / (min(self.node_gbs, self.egress_gbs) * 1e9)
        cross = bandwidth_factor(o, self.nodes, a) / self.g / (self.rail_gbs * 1e9)
        node = (bandwidth_factor(o, self.g, a) / (self.node_gbs * 1e9) if self.g > 1
                else 0.0)
        return node + cross if a == SEQUENTIAL else max(node, cross)

    def bandwidth_time(self, op, nbytes, algorithm: str = "ring") -> float:
        """Seconds of the bandwidth term for ``nbytes``: :meth:`seconds_per_byte` x nbytes."""
        return self.seconds_per_byte(op, algorithm) * positive("nbytes", nbytes)

    def time(self, op, nbytes, algorithm: str = "ring") -> float:
        """Seconds for one collective of ``nbytes``: :meth:`latency` + :meth:`bandwidth_time`."""
        return self.latency(op, algorithm) + self.bandwidth_time(op, nbytes, algorithm)

    def crossover_bytes(self, op, algorithm: str = "ring") -> float:
        """Message size where this path's latency and bandwidth terms are equal (below it
        latency dominates): :meth:`latency` / :meth:`seconds_per_byte`; within one ring the
        same as the module's :func:`crossover_bytes` at the link's rate and α."""
        return self.latency(op, algorithm) / self.seconds_per_byte(op, algorithm)

    def bus_gbs(self, op: str = "all-reduce", algorithm: str = "ring") -> float:
        """nccl-tests bus bandwidth of a large collective on this path (latency aside)."""
        return bus_factor(op, self.n) / self.seconds_per_byte(op, algorithm) / 1e9

    def binding_level(self, op: str = "all-reduce", algorithm: str = "ring") -> str:
        """Which sets the bandwidth time: "link" (inside the node) or "NICs" (between nodes)."""
        o = op_name(op)
        a = algorithm_name(o, algorithm)
        if not self.hierarchical:
            return "link"
        if a == "ring":
            return "link" if self.node_gbs <= self.egress_gbs else "NICs"
        node = bandwidth_factor(o, self.g, a) / self.node_gbs if self.g > 1 else 0.0
        cross = bandwidth_factor(o, self.nodes, a) / self.g / self.rail_gbs
        return "link" if node >= cross else "NICs"

    @property
    def name(self) -> str:
        if not self.hierarchical:
            return self.link.name
        return (f"{self.link.short_name} within {self.g}, {self.nics} x "
                f"{self.nic.short_name} per node between {self.nodes} nodes")


#: What each algorithm is called where a lab names it.
ALGORITHM_NAMES = {"ring": "NCCL's Ring (flat: one ring per NIC through every GPU)",
                   "hierarchical": "hierarchical, pipelined (reduce-scatter in the node, "
                                   "all-reduce across nodes per rail, all-gather in the node, "
                                   "all at once)",
                   "hierarchical-sequential": "hierarchical, one level after the other "
                                              "(the same three phases, not pipelined)",
                   "tree": "tree (a tree inside each level)"}


def collective_path(link, n, *, nics_per_node: int | None = None, nic=None,
                    achievable: bool = False) -> Path:
    """The :class:`Path` a collective of ``n`` chips takes on ``link``. Within the link's
    ``domain`` (or on a link without one): one ring. Beyond it: ``n / domain`` nodes joined by
    ``nic`` (default :data:`SCALE_OUT_LINK`) with ``nics_per_node`` NICs each (default one per
    chip, as in HGX nodes). ``achievable``: bandwidths at :func:`link_efficiency`."""
    lk, nn = get_link(link), participant_count(n)
    if not isinstance(achievable, bool):
        raise ValueError(f"achievable must be True or False, got {shown(achievable)}")
    eff = link_efficiency(lk).fraction if achievable else 1.0
    if lk.domain is None or nn <= lk.domain:
        if nics_per_node is not None:
            positive_int("nics_per_node", nics_per_node)
        if nic is not None:
            _scale_out(nic)
        return Path(lk, nn, nn, 1, None, 0, eff)
    g = lk.domain
    if nn % g:
        raise ValueError(f"n={shown(n)} chips do not fill whole nodes of {g} ({lk.name} joins "
                         f"at most {g}): pick a multiple of {g}")
    out = _scale_out(SCALE_OUT_LINK if nic is None else nic)
    rails = g if nics_per_node is None else positive_int("nics_per_node", nics_per_node)
    if rails > g:
        raise ValueError(f"nics_per_node={shown(nics_per_node)} is more than the {g} chips of a "
                         "node: each chip drives at most one NIC here")
    return Path(lk, nn, g, nn // g, out, rails, eff,
                link_efficiency(out).fraction if achievable else 1.0)


def _scale_out(nic) -> Link:
    out = _get_link(nic, "nic")
    if out.kind != "scale-out":
        raise ValueError(f"nic={shown(out.key)} is not a link between nodes: pick one of "
                         + ", ".join(k for k, v in LINKS.items() if v.kind == "scale-out"))
    return out


def ring_link(link, n: int) -> Link:
    """The link one ring of ``n`` chips would run at, as a single :class:`Link` (kept for
    callers that need one bandwidth): within the domain the link itself; beyond it a link whose
    one-way bandwidth is the all-reduce bus bandwidth of NCCL's flat Ring on
    :func:`collective_path` (NICs one per chip) and whose latency is the scale-out link's."""
    lk = get_link(link)
    n = positive_int("n", n)
    if lk.domain is None or n <= lk.domain:
        return lk
    p = collective_path(lk, n)
    return Link(f"{lk.key}+{p.nic.key}", p.name, p.bus_gbs("all-reduce"), lk.quoted,
                f"{lk.source}; {p.nic.source}",
                f"NCCL's Ring through {p.nodes} nodes of {p.g}: the slower of {lk.name} and the "
                f"node's {p.nics} x {p.nic.name} sets the pace", p.nic.latency_us,
                kind="scale-out")


# --- the α-β model -----------------------------------------------------------------------------

def op_name(op, arg: str = "op") -> str:
    """The collective's canonical name (``"all-reduce"``...) from any spelling; a clear
    ValueError names ``arg`` otherwise."""
    arg = text("arg", arg)
    o = text(arg, op).lower().replace("_", "-").replace(" ", "-")
    o = {"allreduce": "all-reduce", "allgather": "all-gather",
         "reducescatter": "reduce-scatter"}.get(o, o)
    if o not in OPS:
        raise ValueError(f"{arg} must be one of {', '.join(OPS)}, got {shown(op)}")
    return o


def participant_count(n, arg: str = "n") -> int:
    """``n`` as a participant count: an int of at least 2 (one chip has nothing to exchange)."""
    v = positive_int(text("arg", arg), n)
    if v < 2:
        raise ValueError(f"{arg} must be >= 2 participants for a collective, got {shown(n)}")
    return v


def algorithm_name(op: str, algorithm) -> str:
    """``algorithm`` as one of :data:`ALGORITHMS`, checked against the collective ``op``."""
    op = op_name(op)
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
    o, k = op_name(op), participant_count(n)
    return (2 if o == "all-reduce" else 1) * (k - 1) / k


def bus_factor_derivation(op, n) -> str:
    """:func:`bus_factor` as a student reads it worked out for ``n``: "2 × 7/8" (all-reduce,
    n = 8), "7/8" (all-gather, reduce-scatter)."""
    o, k = op_name(op), participant_count(n)
    return ("2 × " if o == "all-reduce" else "") + f"{k - 1}/{k}"


def latency_steps(op, n, algorithm: str = "ring") -> int:
    """How many α a collective over one level pays: ring (and hierarchical, which is a ring
    inside one level) 2(n-1) (all-reduce) or n-1; tree 2⌈log2 n⌉."""
    o, k = op_name(op), participant_count(n)
    if algorithm_name(o, algorithm) == "tree":
        return 2 * math.ceil(math.log2(k))
    return (2 if o == "all-reduce" else 1) * (k - 1)


def bandwidth_factor(op, n, algorithm: str = "ring") -> float:
    """The multiple of S / B a collective over one level pays: the ring's bus factor (also
    the hierarchical one's, a ring inside one level), or 2 for the tree."""
    o, k = op_name(op), participant_count(n)
    return 2.0 if algorithm_name(o, algorithm) == "tree" else bus_factor(o, k)


def collective_time(op, nbytes, n, link_gbs, latency_s, algorithm: str = "ring") -> float:
    """Seconds for one collective of ``nbytes`` (nccl-tests convention, module docstring)
    across ``n`` participants on a link of ``link_gbs`` GB/s one way and per-step latency
    ``latency_s``: steps × α + factor × S / B."""
    o, k = op_name(op), participant_count(n)
    s = positive("nbytes", nbytes)
    b = positive("link_gbs", link_gbs) * 1e9
    a = non_negative("latency_s", latency_s)
    return latency_steps(o, k, algorithm) * a + bandwidth_factor(o, k, algorithm) * s / b


def link_time(op, nbytes, n, link, algorithm: str = "ring", *,
              nics_per_node: int | None = None, nic=None, achievable: bool = False) -> float:
    """Seconds for one collective on a registry link (or a :class:`Link`), with its α, on the
    :func:`collective_path` of ``n`` chips: one ring inside the link's domain; beyond it
    ``algorithm`` says how (NCCL's flat Ring by default, or ``"hierarchical"``: see
    :data:`ACROSS_NODES_NOTE`). ``achievable``: at :func:`link_efficiency` of the spec (what
    nccl-tests reaches), else at the spec."""
    o = op_name(op)
    algorithm_name(o, algorithm)
    p = collective_path(link, n, nics_per_node=nics_per_node, nic=nic, achievable=achievable)
    return p.time(o, nbytes, algorithm)


def latency_bandwidth_split(op, nbytes, n, link_gbs, latency_s,
                            algorithm: str = "ring") -> tuple[float, float]:
    """(latency term, bandwidth term) of :func:`collective_time`, in seconds."""
    t = collective_time(op, nbytes, n, link_gbs, latency_s, algorithm)
    lat = latency_steps(op, n, algorithm) * float(latency_s)
    return lat, t - lat


def crossover_bytes(op, n, link_gbs, latency_s, algorithm: str = "ring") -> float:
    """Message size where the bandwidth term equals the latency term: below it latency
    dominates, above it bandwidth does. S* = steps × α × B / factor."""
    o, k = op_name(op), participant_count(n)
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
