"""Lab 5: plateau detection on bandwidth-vs-working-set staircases (labs.core.physics.staircase)
and the quantisation / per-call models (labs.core.physics.quantization)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from labs.core import quantization
from labs.core import reference_machine
from labs.core import staircase

KIB, MIB = 2**10, 2**20
SIZES = 16 * KIB * 2 ** (np.arange(29) / 2)  # the sweep's default grid: 16 KiB ... 256 MiB


def staircase_curve(sizes, caps, bws):
    """The ideal staircase: the bandwidth of the smallest level holding each size."""
    return np.array([bws[next((i for i, c in enumerate(caps) if v <= c), len(caps))]
                     for v in sizes], float)


# --- synthetic staircases with noise ----------------------------------------------------------

@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000),
       l1=st.sampled_from([32 * KIB, 48 * KIB, 64 * KIB]),
       l2=st.sampled_from([256 * KIB, 512 * KIB, 1 * MIB, 2 * MIB]),
       l3=st.sampled_from([8 * MIB, 16 * MIB, 32 * MIB]),
       drops=st.tuples(st.floats(1.4, 2.5), st.floats(1.4, 2.5), st.floats(2.0, 10.0)),
       noise=st.floats(0.0, 0.05))
def test_every_level_is_found_and_named_under_noise(seed, l1, l2, l3, drops, noise):
    """Four levels separated by >= 1.4x each, 5% noise at most: four plateaus, named L1d, L2,
    L3, DRAM in order, each within 10% of its true bandwidth."""
    bws = [200.0]
    for d in drops:
        bws.append(bws[-1] / d)
    caps = (l1, l2, l3)
    rng = np.random.default_rng(seed)
    g = staircase_curve(SIZES, caps, bws) * np.exp(rng.normal(0, noise, SIZES.size))
    found = staircase.name_plateaus(staircase.find_plateaus(SIZES, g), {"L1d": l1, "L2": l2, "L3": l3})
    assert [p.name for p in found] == ["L1d", "L2", "L3", "DRAM"]
    for p, want in zip(found, bws):
        assert p.bandwidth_gbs == pytest.approx(want, rel=0.10)
        assert p.points >= 2 and p.lo_bytes <= p.hi_bytes


def test_noisy_staircases_are_found_most_of_the_time():
    """10% noise (a loaded machine): the four levels are still found in >= 90% of curves."""
    caps, bws = (32 * KIB, 512 * KIB, 32 * MIB), (150.0, 90.0, 60.0, 14.0)
    hits = 0
    for seed in range(60):
        rng = np.random.default_rng(seed)
        g = staircase_curve(SIZES, caps, bws) * np.exp(rng.normal(0, 0.10, SIZES.size))
        found = staircase.name_plateaus(staircase.find_plateaus(SIZES, g), dict(zip(("L1d", "L2", "L3"), caps)))
        hits += [p.name for p in found] == ["L1d", "L2", "L3", "DRAM"]
    assert hits >= 54


def test_a_flat_curve_is_one_plateau():
    rng = np.random.default_rng(1)
    g = 40 * np.exp(rng.normal(0, 0.04, SIZES.size))
    (only,) = staircase.find_plateaus(SIZES, g)
    assert only.points == SIZES.size and only.bandwidth_gbs == pytest.approx(40, rel=0.05)


def test_a_level_that_drops_early_is_still_named_by_the_nearest_cache():
    """A shared L3 of which other processes leave this thread only 8 MiB: the drop comes at
    8 MiB, not at the 32 MiB the OS reports, and the plateau is still L3, the next DRAM."""
    g = staircase_curve(SIZES, (32 * KIB, 512 * KIB, 8 * MIB), (150, 90, 60, 14))
    found = staircase.name_plateaus(staircase.find_plateaus(SIZES, g),
                            {"L1d": 32 * KIB, "L2": 512 * KIB, "L3": 32 * MIB})
    assert [p.name for p in found] == ["L1d", "L2", "L3", "DRAM"]


def test_without_cache_sizes_plateaus_are_numbered_and_the_last_is_memory():
    g = staircase_curve(SIZES, (32 * KIB, 1 * MIB), (100, 50, 10))
    found = staircase.name_plateaus(staircase.find_plateaus(SIZES, g), {})
    assert [p.name for p in found] == ["level 1", "level 2", "DRAM"]


def test_a_sweep_that_starts_past_l1_names_what_it_saw():
    x = SIZES[SIZES >= MIB]
    g = staircase_curve(x, (32 * KIB, 512 * KIB, 32 * MIB), (150, 90, 60, 14))
    found = staircase.name_plateaus(staircase.find_plateaus(x, g),
                            {"L1d": 32 * KIB, "L2": 512 * KIB, "L3": 32 * MIB}, memory_name="HBM")
    assert [p.name for p in found] == ["L3", "HBM"]
    assert staircase.plateau_ratio(found, "L3", "HBM") == pytest.approx(60 / 14)


def test_the_recorded_reference_run_has_l2_and_dram_plateaus():
    found = reference_machine.plateaus()
    names = [p.name for p in found]
    assert "L2" in names and "DRAM" in names and names[-1] == "DRAM"
    assert staircase.plateau_ratio(found, "L2", "DRAM") > 1.5


CPU_CACHES = {"L1d": 32 * KIB, "L2": 512 * KIB, "L3": 32 * MIB}


def test_main_memory_is_never_a_working_set_the_last_cache_could_hold():
    """A shared L3 that drops early (other processes leave this thread 8 MiB): the sizes from
    11 to 32 MiB run at DRAM speed. The finder's last plateau starts at 11 MiB, and naming it
    alone calls sizes the 32 MiB L3 could hold "DRAM". ``levels`` makes main memory of the
    sizes past 32 MiB only (45 MiB ... 256 MiB: 6 sizes), its bandwidth their median."""
    g = staircase_curve(SIZES, (32 * KIB, 512 * KIB, 8 * MIB), (150, 90, 60, 14))
    g[SIZES <= 32 * MIB] *= 1.05 ** (SIZES[SIZES <= 32 * MIB] > 8 * MIB)  # the busy L3's slope
    g[SIZES > 32 * MIB] = 14.0 * (1 + 0.02 * np.sin(np.arange((SIZES > 32 * MIB).sum())))
    named = staircase.name_plateaus(staircase.find_plateaus(SIZES, g), CPU_CACHES)
    assert named[-1].name == "DRAM" and named[-1].lo_bytes <= 32 * MIB  # the defect
    found = staircase.levels(SIZES, g, CPU_CACHES)
    dram = found[-1]
    assert dram.name == "DRAM" and dram.lo_bytes > 32 * MIB and dram.hi_bytes == SIZES[-1]
    assert dram.points == int((SIZES > 32 * MIB).sum()) == 6
    assert dram.bandwidth_gbs == pytest.approx(float(np.median(g[SIZES > 32 * MIB])))
    assert [p.name for p in found][:2] == ["L1d", "L2"]


def test_a_sweep_that_stops_just_past_the_last_cache_finds_no_main_memory():
    """The sweep used to stop at 1.5x a large L3: one size past it is no plateau, so the
    ratio says what is missing instead of grading a plateau of cache-sized working sets."""
    x = SIZES[SIZES <= 48 * MIB]  # 45 MiB is the only size past 32 MiB
    g = staircase_curve(x, (32 * KIB, 512 * KIB, 8 * MIB), (150, 90, 60, 14))
    assert staircase.name_plateaus(staircase.find_plateaus(x, g), CPU_CACHES)[-1].name == "DRAM"
    found = staircase.levels(x, g, CPU_CACHES)
    assert "DRAM" not in [p.name for p in found]
    with pytest.raises(KeyError, match="'DRAM'"):
        staircase.plateau_ratio(found, "L2", "DRAM")


def test_levels_leave_a_clean_staircase_as_it_was():
    g = staircase_curve(SIZES, (32 * KIB, 512 * KIB, 32 * MIB), (150, 90, 60, 14))
    assert staircase.levels(SIZES, g, CPU_CACHES) == staircase.name_plateaus(staircase.find_plateaus(SIZES, g),
                                                             CPU_CACHES)
    assert staircase.levels(SIZES, g, {}) == staircase.name_plateaus(staircase.find_plateaus(SIZES, g), {})
    # the recorded reference run's DRAM plateau starts past its L3 already: unchanged
    assert reference_machine.plateaus()[-1].lo_bytes > max(reference_machine.CACHES.values())


def test_plateau_ratio_names_what_is_missing():
    found = staircase.name_plateaus(staircase.find_plateaus(SIZES, staircase_curve(SIZES, (MIB,), (50, 10))),
                            {"L2": MIB})
    with pytest.raises(KeyError, match="'L3'.*found: L2, DRAM"):
        staircase.plateau_ratio(found, "L3", "DRAM")


@pytest.mark.parametrize("sizes, gbs, spreads, match", [
    ([0, 2, 3], [1, 1, 1], None, "sizes must be > 0"),
    ([1, float("inf"), 3], [1, 1, 1], None, "sizes must be finite"),
    ("123", [1, 1, 1], None, "sizes must be a list"),
    ([1, 2, 3], None, None, "gbs must be a list"),
    ([-1, 2, 3], [1, 1, 1], None, "sizes"),
    ([1, 2, 3], [1, 0, 1], None, "gbs"),
    ([1, 2, 3], [1, float("nan"), 1], None, "gbs"),
    ([1, 3, 2], [1, 1, 1], None, "strictly increasing"),
    ([1, 2], [1, 1, 1], None, "same length"),
    ([1, 2, 3], [1, 1, 1], [0.1, -1, 0], "spreads"),
])
def test_bad_curves_raise_naming_the_argument(sizes, gbs, spreads, match):
    with pytest.raises(ValueError, match=match):
        staircase.find_plateaus(sizes, gbs, spreads)


def test_bad_options_and_caches_raise():
    with pytest.raises(ValueError, match="min_step"):
        staircase.find_plateaus(SIZES, np.ones(SIZES.size), min_step=0)
    one = staircase.find_plateaus([1e3, 2e3, 4e3], [10, 10, 10])
    with pytest.raises(ValueError, match=r"caches\['L2'\]"):
        staircase.name_plateaus(one, {"L2": -1})
    with pytest.raises(ValueError, match=r"\bplateaus\b"):
        staircase.name_plateaus([], {"L2": 1})
    with pytest.raises(ValueError, match=r"\bplateaus\b"):
        staircase.name_plateaus([{"bandwidth_gbs": 3}], {"L2": 1})
    with pytest.raises(ValueError, match=r"\bmemory_name\b"):
        staircase.name_plateaus(one, {"L2": 1}, memory_name="")
    with pytest.raises(KeyError, match=r"\bupper\b"):
        staircase.plateau_ratio(staircase.name_plateaus(one, {}), "L9", "DRAM")


# --- quantisation ---------------------------------------------------------------------------

def test_wave_quantisation_by_hand():
    """H100 SXM, 132 SMs, 128 x 128 tiles: N = 1408 is 11 x 11 = 121 tiles in one wave (92%
    busy); N = 1536 is 144 tiles in two waves (144 / 264 busy): 0.545 / 0.917 = 0.595."""
    a, b = quantization.quantization(1408, 1408, 128, 132), quantization.quantization(1536, 1536, 128, 132)
    assert (a.tiles, a.waves, b.tiles, b.waves) == (121, 1, 144, 2)
    assert a.tile_efficiency == b.tile_efficiency == 1
    assert b.wave_efficiency == pytest.approx(144 / 264)
    assert quantization.relative_throughput(1408, 1536, 128, 132) == pytest.approx((144 / 264) / (121 / 132))


def test_the_questions_wave_case_tells_the_slips_from_the_model_by_hand():
    """N = 1,280 -> 1,536 on 132 SMs: 100 tiles in one wave (100/132 busy), then 144 in two
    (144/264): the model 0.545 / 0.758 = 0.72. A wave that takes the same time whatever K:
    1.2^3 x 1/2 = 0.864; the first wave taken as full: 144/264 = 0.545."""
    assert quantization.relative_throughput(1280, 1536, 128, 132) == pytest.approx((144 / 264) / (100 / 132))
    assert quantization.relative_throughput_fixed_wave_time(1280, 1536, 128, 132) == pytest.approx(
        1.2**3 / 2)
    assert quantization.quantization(1536, 1536, 128, 132).efficiency == pytest.approx(144 / 264)
    # one unit, no waves to speak of: only the cube of N and the tile count's waves
    assert quantization.relative_throughput_fixed_wave_time(64, 128, 64, 1) == pytest.approx(8 / 4)


def test_tile_quantisation_by_hand():
    q = quantization.quantization(65, 65, 16)  # 5 x 5 tiles of 16 for a 65-wide output
    assert q.tiles == 25 and q.efficiency == pytest.approx(65 * 65 / (80 * 80))


@settings(max_examples=100, deadline=None)
@given(n=st.integers(1, 5000), t=st.sampled_from([8, 16, 64, 128, 256]),
       u=st.integers(1, 200))
def test_efficiency_is_one_exactly_at_full_tiles_and_waves(n, t, u):
    q = quantization.quantization(n, n, t, u)
    assert 0 < q.efficiency <= 1
    full = n % t == 0 and q.tiles % u == 0
    assert (q.efficiency == 1) == full


def test_sawtooth_relative_per_tile_and_against_the_best():
    ns, thr = [64, 68, 72, 80], [10.0, 8.0, 9.0, 12.0]
    meas, pred = quantization.sawtooth_relative(ns, thr, 16, per_tile=True)
    assert meas == pytest.approx([1, 0.8, 0.9, 1])
    assert pred[0] == 1 and pred[1] == pytest.approx((68 / 80) ** 2)
    meas, _ = quantization.sawtooth_relative(ns, thr, 16, per_tile=False)
    assert meas == pytest.approx([t / 12 for t in thr])
    with pytest.raises(ValueError, match="same length"):
        quantization.sawtooth_relative([64, 80], [1.0], 16, per_tile=True)
    with pytest.raises(ValueError, match=r"\bper_tile\b"):
        quantization.sawtooth_relative([64], [1.0], 16, per_tile="yes")


def test_call_time_and_the_overhead_crossover():
    # 5 us fixed + 1 MiB at 50 GB/s; crossover = 5e-6 x 50e9 = 250 kB
    assert quantization.call_time(MIB, 50, 5e-6) == pytest.approx(5e-6 + MIB / 50e9)
    assert quantization.overhead_crossover_bytes(50, 5e-6) == pytest.approx(250_000)
    s = quantization.shrink_speedup(MIB, KIB, 50, 5e-6)
    assert s == pytest.approx((5e-6 + MIB / 50e9) / (5e-6 + KIB / 50e9))
    assert s < 1024 / 50  # far below the ratio of bytes once the overhead dominates
    assert quantization.shrink_speedup(MIB, KIB, 50, 0.0) == pytest.approx(1024)


def _old_fit(sizes, seconds):
    """The per-call line as it was fitted: the smallest size's time, and the bandwidth from the
    largest size alone."""
    return seconds[0], sizes[-1] / (seconds[-1] - seconds[0]) / 1e9


@pytest.mark.parametrize("sizes", [[256 * 4**k for k in range(8)],
                                   [256 * 2**k for k in range(15)]])
def test_the_per_call_line_is_fitted_robustly_through_an_outlier(sizes):
    """A curve 1.2 µs + bytes / 116 GB/s whose largest size (4 MiB, past a 1 MiB L2) ran at 29
    GB/s: fitting the bandwidth to that one point gave 1.2 µs + bytes / 29 GB/s, 3.6x the
    measured 10.2 µs at 1 MiB (37.4 µs). The robust fit recovers the line through the others,
    so the model drawn passes through the measured curve at the question's 1 MiB."""
    t = [1.2e-6 + x / 116e9 for x in sizes]
    t[-1] = 1.2e-6 + sizes[-1] / 29e9
    old = _old_fit(sizes, t)
    at_mib = t[sizes.index(MIB)]
    assert quantization.call_time(MIB, old[1], old[0]) / at_mib > 3  # the defect
    overhead, gbs = quantization.fit_call_time(sizes, t)
    assert overhead == pytest.approx(1.2e-6, rel=0.02) and gbs == pytest.approx(116, rel=0.02)
    assert quantization.call_time(MIB, gbs, overhead) == pytest.approx(at_mib, rel=0.02)


def test_the_per_call_fit_of_a_clean_line_is_exact_and_of_noise_close():
    sizes = [256 * 2**k for k in range(15)]
    t = [2e-6 + x / 80e9 for x in sizes]
    assert quantization.fit_call_time(sizes, t) == pytest.approx((2e-6, 80), rel=1e-6)
    rng = np.random.default_rng(3)
    noisy = [v * math.exp(rng.normal(0, 0.05)) for v in t]
    overhead, gbs = quantization.fit_call_time(sizes, noisy)
    assert overhead == pytest.approx(2e-6, rel=0.1) and gbs == pytest.approx(80, rel=0.15)
    # flat (all overhead): no negative overhead, a finite bandwidth
    overhead, gbs = quantization.fit_call_time([256, 1024, 4096], [2e-6, 2e-6, 2e-6])
    assert overhead >= 0 and 0 < gbs < math.inf


def test_the_reference_machines_recorded_line_is_the_fit_of_its_rows():
    rows = reference_machine.OVERHEAD_ROWS
    overhead, gbs = quantization.fit_call_time([r[0] for r in rows], [r[1] for r in rows])
    assert reference_machine.CALL_OVERHEAD_S == pytest.approx(overhead, rel=1e-3)
    assert reference_machine.OVERHEAD_BANDWIDTH_GBS == pytest.approx(gbs, rel=1e-3)


@pytest.mark.parametrize("call, match", [
    (lambda: quantization.quantization(0, 8, 8), "m"),
    (lambda: quantization.quantization(8, 8, 0), "tile"),
    (lambda: quantization.quantization(8, 8, 8, units=-1), "units"),
    (lambda: quantization.call_time(-1, 10, 1e-6), "nbytes"),
    (lambda: quantization.call_time(1, 0, 1e-6), "bandwidth_gbs"),
    (lambda: quantization.shrink_speedup(KIB, MIB, 10, 1e-6), "small_bytes"),
    (lambda: quantization.cpu_gemm_tile(0), "simd_fp32_lanes"),
    (lambda: quantization.fit_call_time([256], [1e-6]), "sizes and seconds"),
    (lambda: quantization.fit_call_time([256, 1024], [1e-6, 0.0]), "seconds"),
    (lambda: quantization.fit_call_time([256, 256], [1e-6, 2e-6]), "two different"),
])
def test_bad_quantisation_arguments_raise_naming_them(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_cpu_tile_is_two_vector_registers():
    assert (quantization.cpu_gemm_tile(8), quantization.cpu_gemm_tile(16)) == (16, 32)
    assert math.isclose(quantization.GPU_GEMM_TILE, 128)


def _named(**gbs):
    return [staircase.Plateau(2.0**i, 2.0**(i + 1), v, 0.01, 4, nm) for i, (nm, v) in enumerate(gbs.items())]


def test_a_ratio_band_cannot_tell_l2_from_l3_where_their_plateaus_sit_close():
    # one AMD EPYC VM: L1d 153.5, L2 110.8, L3 90.5, DRAM 28.9 GB/s. L2/DRAM = 3.834, L3/DRAM
    # = 3.131 (1.224x from it), L1d/DRAM = 5.311 (1.385x): under 1.5 x 1.05 = 1.575 both
    sep = staircase.ratio_separation(_named(L1d=153.5, L2=110.8, L3=90.5, DRAM=28.9), "L2", "DRAM",
                             1.5, 1.05)
    assert sep.ratio == pytest.approx(110.8 / 28.9)
    assert (sep.nearest, sep.nearest_ratio) == ("L3", pytest.approx(90.5 / 28.9))
    assert sep.factor == pytest.approx(110.8 / 90.5) and not sep.separates
    # the reference machine: L1d 1.62x and L3 1.7x away from L2: it separates
    ref = staircase.ratio_separation(reference_machine.plateaus(), "L2", "DRAM", 1.5, 1.05)
    assert ref.separates and ref.nearest == "L1d" and ref.factor > 1.575
    # a machine without L3: the neighbours are L1d and one roof (a ratio of 1)
    two = staircase.ratio_separation(_named(L1d=200.0, L2=60.0, DRAM=40.0), "L2", "DRAM", 1.5, 1.05)
    assert two.nearest == staircase.ONE_ROOF and two.factor == pytest.approx(1.5) and not two.separates
    with pytest.raises(ValueError, match="tolerance"):
        staircase.ratio_separation(reference_machine.plateaus(), "L2", "DRAM", 0.5)
    with pytest.raises(KeyError, match="upper='L4'"):
        staircase.ratio_separation(reference_machine.plateaus(), "L4", "DRAM", 1.5)
