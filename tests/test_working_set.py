"""Lab 5 measurement: cache_sizes (what the OS reports), the working-set sweep and its
plateaus, the per-call overhead and the GEMM sawtooth (labs.core.measure.caches,
working_set, effects) and live.run_if_pressed.

The pure parts (sysfs parsing, sizes, ordering, plateau naming) run without torch; real sweeps
are small, budgeted and checked with loose bounds (this machine is 2 shared cores)."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from labs.core import measure as M
from labs.core.measure import caches as C
from labs.core.measure import effects as E
from labs.core.measure import working_set as W

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
    got = C._linux(str(root))
    assert [(c.name, c.size_bytes) for c in got.levels] == [
        ("L1d", 48 * KIB), ("L2", 2 * MIB), ("L3", 36 * MIB)]  # instruction cache left out
    assert [c.scope for c in got.levels] == ["per core", "per core", "shared by 16 CPUs"]
    assert got.levels[0].line_bytes == 64 and got.levels[0].source.endswith("index0/size")
    assert got.as_mapping() == {"L1d": 48 * KIB, "L2": 2 * MIB, "L3": 36 * MIB}
    assert "L3 36 MiB (shared by 16 CPUs)" in got.describe()


def test_unreadable_or_missing_sysfs_is_unknown_not_an_error(tmp_path, monkeypatch):
    assert C._linux(str(tmp_path / "nope")) is None
    _sysfs(tmp_path / "bad", [("1", "Data", "lots", "0")])
    assert C._linux(str(tmp_path / "bad")) is None
    monkeypatch.setattr(C, "SYSFS", str(tmp_path / "nope"))
    monkeypatch.setattr(sys, "platform", "linux")
    got = C.cache_sizes()
    assert not got.known and "lists no cache sizes" in got.note
    assert "unknown" in got.describe()


def test_browser_build_reports_unknown(monkeypatch):
    monkeypatch.setattr(sys, "platform", "emscripten")
    got = C.cache_sizes()
    assert not got.known and "browser" in got.note


def test_macos_sysctl_prefers_the_performance_cores(monkeypatch):
    values = {"hw.perflevel0.l1dcachesize": 131072, "hw.perflevel0.l2cachesize": 16777216,
              "hw.l1dcachesize": 65536, "hw.l2cachesize": 4194304}
    monkeypatch.setattr(C, "_sysctl", lambda name: values.get(name))
    monkeypatch.setattr(sys, "platform", "darwin")
    got = C.cache_sizes()
    assert got.as_mapping() == {"L1d": 128 * KIB, "L2": 16 * MIB}
    assert "sysctl" in got.source


def test_cache_sizes_never_raises(monkeypatch):
    def boom(*a, **k):
        raise RuntimeError("sysfs exploded")
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(C, "_linux", boom)
    got = C.cache_sizes()
    assert not got.known and "sysfs exploded" in got.note


@pytest.mark.parametrize("text, want", [("32K", 32768), ("512K", 524288), ("1M", MIB),
                                        ("36864K", 36 * MIB), ("123", 123), ("x", None)])
def test_parse_size(text, want):
    assert C.parse_size(text) == want


def test_gpu_cache_sizes_from_driver_and_registry():
    info = SimpleNamespace(registry_key="h100-sxm", cache_mb=50.0, sm_count=132)
    got = C.gpu_cache_sizes(info)
    assert got.as_mapping() == {"shared memory": 228 * KIB, "L2": 50 * MIB}
    unknown = C.gpu_cache_sizes(SimpleNamespace(registry_key=None, cache_mb=None, sm_count=1))
    assert not unknown.known


# --- sizes, order, bad input (no torch needed) --------------------------------------------------

def test_default_sizes_reach_well_past_the_last_cache():
    info = SimpleNamespace(kind="cpu")
    caches = C.CacheSizes((C.CacheLevel("L1d", 1, 32 * KIB), C.CacheLevel("L3", 3, 32 * MIB)),
                          "test")
    sizes = W.default_sizes(info, caches)
    assert sizes[0] == 16 * KIB and sizes[-1] >= 8 * 32 * MIB and sizes == sorted(set(sizes))
    assert all(s % 4096 == 0 for s in sizes)
    assert all(1.3 <= b / a <= 1.5 for a, b in zip(sizes, sizes[1:]))  # two per octave
    # a server's shared L3 (this VM reports 480 MiB): the sweep still ends well past it
    big = C.CacheSizes((C.CacheLevel("L2", 2, 2 * MIB), C.CacheLevel("L3", 3, 480 * MIB)), "t")
    sizes = W.default_sizes(info, big)
    assert 1.4 * 480 * MIB <= sizes[-1] <= 2 * 480 * MIB
    gpu = W.default_sizes(SimpleNamespace(kind="cuda"),
                          C.CacheSizes((C.CacheLevel("L2", 2, 50 * MIB),), "t"))
    assert gpu[0] == 256 * KIB and gpu[-1] >= 400 * MIB


def test_measure_order_is_coarse_to_fine_and_complete():
    sizes = list(range(1, 12))
    order = W.measure_order(sizes)
    assert sorted(order) == sizes and order[:6] == [1, 3, 5, 7, 9, 11]


@pytest.mark.parametrize("sizes, match", [([0], "sizes"), ([-4096], "sizes"), ([1000], "multiples"),
                                          ([4097], "multiples"), ([], "empty"), ("big", "sizes")])
def test_bad_sizes_raise_naming_the_argument(sizes, match):
    with pytest.raises(ValueError, match=match):
        W._check_sizes(sizes)


def test_bad_budget_is_refused_before_anything_runs():
    with pytest.raises(ValueError, match="budget_s"):
        M.working_set_sweep("cpu", budget_s=0)
    with pytest.raises(ValueError, match="budget_s"):
        M.call_overhead_sweep("cpu", budget_s=-1)


def test_hierarchy_levels_of_a_synthetic_sweep():
    """hierarchy_levels finds plateaus from the sweep's points and names them by its caches."""
    sizes = [16 * KIB * 2**k for k in range(15)]
    bws = [150 if s <= 32 * KIB else 90 if s <= 512 * KIB else 60 if s <= 8 * MIB else 12
           for s in sizes]
    pts = tuple(W.SweepPoint(s, "ok", g, g * 0.9, 0.1, 50) for s, g in zip(sizes, bws))
    caches = C.CacheSizes(tuple(C.CacheLevel(n, i + 1, b) for i, (n, b) in enumerate(
        (("L1d", 32 * KIB), ("L2", 512 * KIB), ("L3", 32 * MIB)))), "test")
    sweep = W.WorkingSetSweep("cpu x", "cpu", 1, pts + (W.SweepPoint(2**30, "skipped: time "
                                                                    "budget"),), caches, 10, 9, MIB)
    levels = M.hierarchy_levels(sweep)
    assert [p.name for p in levels] == ["L1d", "L2", "L3", "DRAM"]
    assert [round(p.bandwidth_gbs) for p in levels] == [150, 90, 60, 12]
    assert len(sweep.skipped) == 1 and len(sweep.rows()) == 16
    with pytest.raises(ValueError, match="at least 2"):
        M.hierarchy_levels(W.WorkingSetSweep("x", "cpu", 1, pts[:1], caches, 1, 1, MIB))
    with pytest.raises(ValueError, match="WorkingSetSweep"):
        M.hierarchy_levels({"points": []})


# --- real measurements (torch) -----------------------------------------------------------------

torch = pytest.importorskip("torch")


@pytest.mark.slow
def test_real_sweep_finds_caches_faster_than_dram():
    """A short real sweep on this machine, loose bounds: every size measured within budget,
    a read that fits in L2 at least 1.5x faster than one past the last-level cache, and the
    plateaus end with DRAM. The large sizes come from the caches this machine reports (at
    least 8x a 32 MiB L3; twice a server's shared L3 of hundreds of MiB)."""
    largest = max(C.cache_sizes().as_mapping().values(), default=32 * MIB)
    top = max(256 * MIB, -(-2 * int(largest) // MIB) * MIB)
    sizes = [64 * KIB, 128 * KIB, 256 * KIB, top // 2, top * 3 // 4, top]
    sweep = M.working_set_sweep("cpu", sizes=sizes, budget_s=8)
    assert sweep.elapsed_s < 8 + 5
    got = {p.bytes: p for p in sweep.measured}
    assert len(got) == len(sizes)
    for p in got.values():
        assert 0.1 < p.gbs < 2000 and p.median_gbs <= p.gbs * 1.001 and p.reps >= 5
    assert got[128 * KIB].gbs > 1.5 * got[top].gbs
    assert got[64 * KIB].reads_per_call > 1 and got[top].reads_per_call == 1
    levels = M.hierarchy_levels(sweep, min_points=2)
    assert levels[-1].name == "DRAM" and len(levels) >= 2


def test_a_read_that_skips_data_is_caught(monkeypatch):
    real = W._reader

    def lying(torch_, buf, w_elems, chunk_elems):
        fn, r, elems, prepass, expect = real(torch_, buf, w_elems, chunk_elems)
        return fn, r, elems, prepass, expect * 2  # as if half of the data were never read
    monkeypatch.setattr(W, "_reader", lying)
    with pytest.raises(RuntimeError, match="data was skipped"):
        M.working_set_sweep("cpu", sizes=[64 * KIB], budget_s=1)


def test_the_budget_marks_what_it_could_not_reach():
    sweep = M.working_set_sweep("cpu", sizes=[16 * KIB * 2**k for k in range(12)],
                                budget_s=0.05)
    assert sweep.points[0].status == "ok"  # the first size always runs
    assert sweep.skipped and all(p.status == "skipped: time budget" for p in sweep.skipped)


def test_call_overhead_flattens_for_small_reads():
    o = M.call_overhead_sweep("cpu", sizes=[256, 1024, 4 * MIB], budget_s=1.5)
    t = {r["bytes"]: r["median_s"] for r in o.rows}
    assert o.overhead_s > 0 and o.bandwidth_gbs > 0
    assert t[1024] < 4 * t[256]  # 4x the bytes, nowhere near 4x the time: a fixed cost
    assert t[4 * MIB] > 3 * t[256]  # a large read is bandwidth-bound
    assert o.crossover_bytes == pytest.approx(o.overhead_s * o.bandwidth_gbs * 1e9)


def test_gemm_sawtooth_rows_and_the_models_prediction():
    s = M.gemm_sawtooth("cpu", sizes=[64, 68, 80], budget_s=2)
    assert s.kind == "cpu" and s.units == 1 and s.tile in (8, 16, 32)
    rows = {r["n"]: r for r in s.measured}
    assert set(rows) == {64, 68, 80}
    for r in rows.values():
        assert r["tflops"] > 0 and r["median_tflops"] <= r["tflops"] * 1.001
    if s.tile == 16:
        assert rows[68]["predicted"] == pytest.approx((68 / 80) ** 2)
        assert rows[64]["relative"] == 1
    meas, pred = s.dips()
    assert pred is None or 0 < pred <= 1


# --- the marimo face -----------------------------------------------------------------------------

def test_run_if_pressed_never_stops_the_cell(monkeypatch):
    from labs.core import live

    ran = []
    result, msg = live.run_if_pressed(SimpleNamespace(value=False), ran.append, total=1,
                                      title="t")
    assert result is None and "Nothing has been measured yet" in msg.text and not ran
    monkeypatch.setattr(M, "detect", lambda device=None: SimpleNamespace(
        available=False, message="no torch here"))
    result, msg = live.run_if_pressed(SimpleNamespace(value=True), ran.append, total=1,
                                      title="t")
    assert result is None and "no torch here" in msg.text and not ran


def test_run_if_pressed_turns_failures_into_messages(monkeypatch):
    from labs.core import live

    monkeypatch.setattr(M, "detect", lambda device=None: SimpleNamespace(available=True))

    def refuse(progress):
        raise M.DoesNotFit("needs 9 GB but only 1 GB is free")
    result, msg = live.run_if_pressed(SimpleNamespace(value=True), refuse, total=1, title="t")
    assert result is None and "needs 9 GB" in msg.text and "Traceback" not in msg.text
    result, msg = live.run_if_pressed(SimpleNamespace(value=True), lambda p: 42, total=1,
                                      title="t")
    assert (result, msg) == (42, None)
