"""Lab 5 measurement: cache_sizes (what the OS reports), the working-set sweep and its
plateaus, the per-call overhead and the GEMM sawtooth (labs.core.measure.caches,
working_set, effects) and live.run_if_pressed.

The pure parts (sysfs parsing, sizes, ordering, plateau naming) run without torch; real sweeps
(marked ``torch``) are small, budgeted, and held to what one core can physically do."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from labs.core import measure
from labs.core.measure import caches as _caches
from labs.core.measure import effects
from labs.core.measure import working_set

KIB, MIB = 2**10, 2**20


# --- cache_sizes: what the OS reports --------------------------------------------------------

def _sysfs(root: Path, entries):
    for i, (level, kind, size, shared) in enumerate(entries):
        d = root / f"index{i}"
        d.mkdir(parents=True)
        for name, value in (("level", level), ("type", kind), ("size", size),
                            ("shared_cpu_list", shared), ("coherency_line_size", "64")):
            (d / name).write_text(f"{value}\n")
    return root


def test_linux_sysfs_levels_sizes_and_sharing(tmp_path):
    root = _sysfs(tmp_path, [("1", "Data", "48K", "0"), ("1", "Instruction", "32K", "0"),
                             ("2", "Unified", "2048K", "0"), ("3", "Unified", "36M", "0-7,16-23")])
    got = _caches._linux(str(root))
    assert [(c.name, c.size_bytes) for c in got.levels] == [
        ("L1d", 48 * KIB), ("L2", 2 * MIB), ("L3", 36 * MIB)]  # instruction cache left out
    assert [c.scope for c in got.levels] == ["per core", "per core", "shared by 16 CPUs"]
    assert got.levels[0].line_bytes == 64 and got.levels[0].source.endswith("index0/size")
    assert got.as_mapping() == {"L1d": 48 * KIB, "L2": 2 * MIB, "L3": 36 * MIB}
    assert "L3 36 MiB (shared by 16 CPUs)" in got.describe()


def test_unreadable_or_missing_sysfs_is_unknown_not_an_error(tmp_path, monkeypatch):
    assert _caches._linux(str(tmp_path / "nope")) is None
    _sysfs(tmp_path / "bad", [("1", "Data", "lots", "0")])
    assert _caches._linux(str(tmp_path / "bad")) is None
    monkeypatch.setattr(_caches, "SYSFS", str(tmp_path / "nope"))
    monkeypatch.setattr(sys, "platform", "linux")
    got = _caches.cache_sizes()
    assert not got.known and "lists no cache sizes" in got.note
    assert "unknown" in got.describe()


def test_browser_build_reports_unknown(monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")
    got = _caches.cache_sizes()
    assert not got.known and "browser" in got.note


def test_macos_sysctl_prefers_the_performance_cores(monkeypatch):
    values = {"hw.perflevel0.l1dcachesize": 131072, "hw.perflevel0.l2cachesize": 16777216,
              "hw.l1dcachesize": 65536, "hw.l2cachesize": 4194304}
    monkeypatch.setattr(_caches, "_sysctl", lambda name: values.get(name))
    monkeypatch.setattr(sys, "platform", "darwin")
    got = _caches.cache_sizes()
    assert got.as_mapping() == {"L1d": 128 * KIB, "L2": 16 * MIB}
    assert "sysctl" in got.source


def test_cache_sizes_never_raises(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("sysfs exploded")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(_caches, "_linux", boom)
    got = _caches.cache_sizes()
    assert not got.known and "sysfs exploded" in got.note


@pytest.mark.parametrize("text, want", [("32K", 32768), ("512K", 524288), ("1M", MIB),
                                        ("36864K", 36 * MIB), ("123", 123), ("x", None)])
def test_parse_size(text, want):
    assert _caches.parse_size(text) == want


def test_gpu_cache_sizes_from_driver_and_registry():
    info = SimpleNamespace(registry_key="h100-sxm", cache_mb=50.0, sm_count=132)
    got = _caches.gpu_cache_sizes(info)
    assert got.as_mapping() == {"shared memory": 228 * KIB, "L2": 50 * MIB}
    unknown = _caches.gpu_cache_sizes(SimpleNamespace(registry_key=None, cache_mb=None, sm_count=1))
    assert not unknown.known


# --- sizes, order, bad input (no torch needed) --------------------------------------------------

def test_default_sizes_reach_well_past_the_last_cache():
    info = SimpleNamespace(kind="cpu")
    caches = _caches.CacheSizes((_caches.CacheLevel("L1d", 1, 32 * KIB), _caches.CacheLevel("L3", 3, 32 * MIB)),
                          "test")
    sizes = working_set.default_sizes(info, caches)
    assert sizes[0] == 16 * KIB and sizes[-1] >= 8 * 32 * MIB and sizes == sorted(set(sizes))
    assert all(s % 4096 == 0 for s in sizes)
    assert all(1.3 <= b / a <= 1.5 for a, b in zip(sizes, sizes[1:]))  # two per octave
    # a server's shared L3 (a VM reported 480 MiB): the sweep ends 4x past it (it stopped at
    # 1.5x, so main memory's plateau held one or two sizes and the graded ratio hung on them)
    big = _caches.CacheSizes((_caches.CacheLevel("L2", 2, 2 * MIB), _caches.CacheLevel("L3", 3, 480 * MIB)), "t")
    sizes = working_set.default_sizes(info, big)
    assert 4 * 480 * MIB <= sizes[-1] <= 2 * 1024 * MIB
    assert sum(s > 480 * MIB for s in sizes) >= 4  # several sizes past the last cache
    mid = _caches.CacheSizes((_caches.CacheLevel("L3", 3, 128 * MIB),), "t")
    assert working_set.default_sizes(info, mid)[-1] == 1024 * MIB  # 8x, within 2 GiB
    gpu = working_set.default_sizes(SimpleNamespace(kind="cuda"),
                          _caches.CacheSizes((_caches.CacheLevel("L2", 2, 50 * MIB),), "t"))
    assert gpu[0] == 256 * KIB and gpu[-1] >= 400 * MIB


def test_measure_order_is_coarse_to_fine_and_complete():
    sizes = list(range(1, 12))
    order = working_set.measure_order(sizes)
    assert sorted(order) == sizes and order[:6] == [1, 3, 5, 7, 9, 11]


@pytest.mark.parametrize("sizes, match", [([0], "sizes"), ([-4096], "sizes"), ([1000], "multiples"),
                                          ([4097], "multiples"), ([], "empty"), ("big", "sizes")])
def test_bad_sizes_raise_naming_the_argument(sizes, match):
    with pytest.raises(ValueError, match=match):
        working_set._check_sizes(sizes)


def test_bad_budget_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="budget_s"):
        measure.working_set_sweep("cpu", budget_s=0)
    with pytest.raises(ValueError, match="budget_s"):
        measure.call_overhead_sweep("cpu", budget_s=-1)


def test_hierarchy_levels_of_a_synthetic_sweep():
    """hierarchy_levels finds plateaus from the sweep's points and names them by its caches."""
    sizes = [16 * KIB * 2**k for k in range(15)]
    bws = [150 if s <= 32 * KIB else 90 if s <= 512 * KIB else 60 if s <= 8 * MIB else 12
           for s in sizes]
    pts = tuple(working_set.SweepPoint(s, "ok", g, g * 0.9, 0.1, 50) for s, g in zip(sizes, bws))
    caches = _caches.CacheSizes(tuple(_caches.CacheLevel(n, i + 1, b) for i, (n, b) in enumerate(
        (("L1d", 32 * KIB), ("L2", 512 * KIB), ("L3", 32 * MIB)))), "test")
    sweep = working_set.WorkingSetSweep("cpu x", "cpu", 1, pts + (working_set.SweepPoint(2**30, "skipped: time "
                                                                    "budget"),), caches, 10, 9, MIB)
    levels = measure.hierarchy_levels(sweep)
    assert [p.name for p in levels] == ["L1d", "L2", "L3", "DRAM"]
    assert [round(p.bandwidth_gbs) for p in levels] == [150, 90, 60, 12]
    assert len(sweep.skipped) == 1 and len(sweep.rows()) == 16
    with pytest.raises(ValueError, match="at least 2"):
        measure.hierarchy_levels(working_set.WorkingSetSweep("x", "cpu", 1, pts[:1], caches, 1, 1, MIB))
    with pytest.raises(ValueError, match="WorkingSetSweep"):
        measure.hierarchy_levels({"points": []})


# --- real measurements (torch) -----------------------------------------------------------------
# Marked ``torch`` (skipped without it, conftest.py); the rest of this file runs without torch.

#: What the physics allows for ONE thread reading a working set (fastest repetition), the
#: bounds the real sweep is held to (hand-derived):
#: * any level: at most 3 loads per cycle (the most any x86 or Arm core issues) x 64 B (a whole
#:   AVX-512 vector or cache line) x 6 GHz (above any shipping boost clock) = 1152 GB/s;
#: * main memory: at most what one core's outstanding misses can carry (Little's law): 64 lines
#:   in flight (L1 fill buffers plus L2 prefetch, generous) x 64 B / 30 ns (below any DRAM
#:   latency) = 137 GB/s. One thread of a server or laptop core measures 10-30 GB/s (Apple
#:   M-series ~100), so a DRAM figure above 137 GB/s means the data came from a cache;
#: * at least 0.5 GB/s for any size: the slowest DRAM in use (one DDR3-1066 channel, 8.5 GB/s)
#:   with the core lost to other processes 15 times out of 16 in every one of >= 5 repetitions
#:   (the fastest one counts) would still exceed it.
ONE_CORE_MAX_GBS = 3 * 64 * 6e9 / 1e9
ONE_CORE_DRAM_MAX_GBS = 64 * 64 / 30e-9 / 1e9
ONE_CORE_MIN_GBS = 0.5


@pytest.mark.slow
@pytest.mark.torch
def test_real_sweep_finds_caches_faster_than_dram():
    """A short real sweep on this machine: every size measured within budget, each bandwidth
    within what one core can physically do (ONE_CORE_*), a read that fits in L2 at least 1.5x
    faster than one past the last-level cache, and the plateaus end with DRAM. The large sizes
    come from the caches this machine reports (at least 8x a 32 MiB L3; twice a server's
    shared L3 of hundreds of MiB)."""
    largest = max(_caches.cache_sizes().as_mapping().values(), default=32 * MIB)
    top = max(256 * MIB, -(-2 * int(largest) // MIB) * MIB)
    sizes = [64 * KIB, 128 * KIB, 256 * KIB, top // 2, top * 3 // 4, top]
    sweep = measure.working_set_sweep("cpu", sizes=sizes, budget_s=8)
    assert sweep.elapsed_s < 8 + 5
    got = {p.bytes: p for p in sweep.measured}
    assert len(got) == len(sizes)
    for p in got.values():
        assert ONE_CORE_MIN_GBS < p.gbs < ONE_CORE_MAX_GBS, p
        assert p.median_gbs <= p.gbs * 1.001 and p.reps >= 5
    assert got[top].gbs < ONE_CORE_DRAM_MAX_GBS, got[top]  # 2x the last cache: from DRAM
    assert got[128 * KIB].gbs > 1.5 * got[top].gbs
    assert got[64 * KIB].reads_per_call > 1 and got[top].reads_per_call == 1
    levels = measure.hierarchy_levels(sweep, min_points=2)
    assert levels[-1].name == "DRAM" and len(levels) >= 2


@pytest.mark.torch
def test_a_read_that_skips_data_is_caught(monkeypatch):
    real = working_set._reader

    def lying(torch_, buf, w_elems, chunk_elems):
        fn, r, elems, prepass, expect = real(torch_, buf, w_elems, chunk_elems)
        return fn, r, elems, prepass, expect * 2  # as if half of the data were never read
    monkeypatch.setattr(working_set, "_reader", lying)
    with pytest.raises(RuntimeError, match="data was skipped"):
        measure.working_set_sweep("cpu", sizes=[64 * KIB], budget_s=1)


class _Clock:
    """A clock for the sweep's budget that advances ``step`` seconds each time it is read, so
    which sizes the budget reaches depends on the sweep's logic alone, not on how fast this
    machine is (the timed reads keep their own, real clock)."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def perf_counter(self):
        self.now += self.step
        return self.now


@pytest.mark.torch
def test_the_budget_marks_what_it_could_not_reach(monkeypatch):
    """Deterministic (with the real clock a quiet machine read all 12 sizes within
    0.05 s, 1 run in 4, and the test failed). The sweep reads its clock once at the start and
    once before each size. With the clock at 0.00 and +0.01 s per read, budget 0.05 s in
    ROUNDS = 2 rounds (round 1 ends at 0.025 s, round 2 at 0.05 s), coarse to fine
    (measure_order: every other size first):
    round 1: 0.01 -> 16 KiB, 0.02 -> 64 KiB, 0.03 > 0.025 stop;
    round 2 (sizes not yet read first): 0.04 -> 256 KiB, 0.05 -> 1 MiB, 0.06 > 0.05 stop.
    So exactly 4 sizes are read, once each, and the other 8 are marked."""
    assert working_set.ROUNDS == 2  # the arithmetic above
    monkeypatch.setattr(working_set, "time", _Clock(0.01))
    sizes = [16 * KIB * 2**k for k in range(12)]
    sweep = measure.working_set_sweep("cpu", sizes=sizes, budget_s=0.05)
    assert [p.bytes for p in sweep.measured] == [16 * KIB, 64 * KIB, 256 * KIB, MIB]
    assert sweep.points[0].status == "ok"  # the first size always runs
    assert len(sweep.skipped) == 8
    assert all(p.status == "skipped: time budget" for p in sweep.skipped)
    # a budget too short for even one size: the first size still runs, nothing else
    monkeypatch.setattr(working_set, "time", _Clock(1.0))
    sweep = measure.working_set_sweep("cpu", sizes=sizes, budget_s=0.05)
    assert [p.bytes for p in sweep.measured] == [16 * KIB] and len(sweep.skipped) == 11


@pytest.mark.torch
def test_call_overhead_flattens_for_small_reads():
    o = measure.call_overhead_sweep("cpu", sizes=[256, 1024, 4 * MIB], budget_s=1.5)
    t = {r["bytes"]: r["median_s"] for r in o.rows}
    assert o.overhead_s > 0 and o.bandwidth_gbs > 0
    assert t[1024] < 4 * t[256]  # 4x the bytes, nowhere near 4x the time: a fixed cost
    assert t[4 * MIB] > 3 * t[256]  # a large read is bandwidth-bound
    assert o.crossover_bytes == pytest.approx(o.overhead_s * o.bandwidth_gbs * 1e9)


#: The quantisation model's prediction for N = 64, 68, 80 on one CPU thread, for each micro-
#: kernel width T the machine can have (AVX-512: 32, AVX2: 16, else 8). Each N is compared
#: with the multiple of T at or below it (per tile): predicted = (N / (T ceil(N/T)))^2 over the
#: same for that base, whose padding is none (64 and 80 are multiples of 8 and 16; of 32 only 64).
SAWTOOTH_PREDICTED = {
    8: {64: 1.0, 68: (68 / 72) ** 2, 80: 1.0},          # 68 -> 9 tiles of 8 = 72
    16: {64: 1.0, 68: (68 / 80) ** 2, 80: 1.0},         # 68 -> 5 tiles of 16 = 80
    32: {64: 1.0, 68: (68 / 96) ** 2, 80: (80 / 96) ** 2},  # 68 and 80 -> 3 tiles of 32 = 96
}


@pytest.mark.torch
def test_gemm_sawtooth_rows_and_the_models_prediction():
    """The prediction is checked for whatever tile this machine has (it was checked
    only for T = 16, so an AVX-512 machine, T = 32, checked nothing)."""
    s = measure.gemm_sawtooth("cpu", sizes=[64, 68, 80], budget_s=2)
    assert s.kind == "cpu" and s.units == 1 and s.tile in SAWTOOTH_PREDICTED
    rows = {r["n"]: r for r in s.measured}
    assert set(rows) == {64, 68, 80}
    for r in rows.values():
        assert r["tflops"] > 0 and r["median_tflops"] <= r["tflops"] * 1.001
    for n, want in SAWTOOTH_PREDICTED[s.tile].items():
        assert rows[n]["predicted"] == pytest.approx(want), (s.tile, n)
    assert rows[64]["relative"] == 1  # the base, against itself
    meas, pred = s.dips()
    assert pred is None or 0 < pred <= 1


# --- the marimo face -----------------------------------------------------------------------------

def test_run_if_pressed_never_stops_the_cell(monkeypatch):
    from labs.core import live

    ran = []
    result, msg = live.run_if_pressed(SimpleNamespace(value=False), ran.append, total=1,
                                      title="t")
    assert result is None and "Nothing has been measured yet" in msg.text and not ran
    monkeypatch.setattr(measure, "detect", lambda device=None: SimpleNamespace(
        available=False, message="no torch here"))
    result, msg = live.run_if_pressed(SimpleNamespace(value=True), ran.append, total=1,
                                      title="t")
    assert result is None and "no torch here" in msg.text and not ran


def test_run_if_pressed_turns_failures_into_messages(monkeypatch):
    from labs.core import live

    monkeypatch.setattr(measure, "detect", lambda device=None: SimpleNamespace(available=True))

    def refuse(progress):
        raise measure.DoesNotFit("needs 9 GB but only 1 GB is free")
    result, msg = live.run_if_pressed(SimpleNamespace(value=True), refuse, total=1, title="t")
    assert result is None and "needs 9 GB" in msg.text and "Traceback" not in msg.text
    result, msg = live.run_if_pressed(SimpleNamespace(value=True), lambda p: 42, total=1,
                                      title="t")
    assert (result, msg) == (42, None)


def test_a_running_measurement_says_to_keep_the_page_open(monkeypatch):
    """A measurement lives in the page's session and is recorded when it ends: its progress
    bar says a reload stops it, so a student does not lose it unawares."""
    import marimo as mo

    from labs.core import live

    monkeypatch.setattr(measure, "detect", lambda device=None: SimpleNamespace(available=True))
    titles = []

    class Bar:
        def __init__(self, **kw):
            titles.append(kw["title"])

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, **kw):
            pass

    monkeypatch.setattr(mo.status, "progress_bar", Bar)
    result, msg = live.run_if_pressed(SimpleNamespace(value=True), lambda progress: 7, total=1,
                                      title="Timing the sweep")
    assert result == 7 and msg is None
    assert titles == ["Timing the sweep (keep this page open until it ends: a reload stops it, "
                      "and nothing is recorded)"]
