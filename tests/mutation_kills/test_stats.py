"""report.stats pinned where mutation testing found it loose: the ratio interval's level, width
and refusals, the coefficient of variation's edges, the empty summary.

Resampling {1, 2, 3} with replacement gives a median of 1 with probability 7/27 (0.26), 2 with
13/27 and 3 with 7/27, so central intervals at a level have known ends: at 40 % the 30th and
70th percentiles are both 2; at 60 % the 20th and 80th are 1 and 3. 20000 seeded rounds put
each probability within 0.01 of its value, far from those boundaries.
"""

from __future__ import annotations

import random
import statistics

import numpy as np
import pytest

from report.stats import (
    EXACT_N,
    _resampled_medians,
    bootstrap_ci,
    coefficient_of_variation,
    ratio_ci,
    summarize,
)

THREE = [1.0, 2.0, 3.0]


@pytest.mark.parametrize(("level", "ends"), [(0.4, (2.0, 2.0)), (0.6, (1.0, 3.0))])
def test_interval_ends_follow_the_level(level: float, ends: tuple[float, float]) -> None:
    assert bootstrap_ci(THREE, "k", level=level, n_boot=20000) == ends
    assert ratio_ci(THREE, [1.0], "k", level=level, n_boot=20000) == ends
    # the baseline's resampling counts the same way: 2 / {1, 2, 3}
    lo, hi = ratio_ci([2.0], THREE, "k", level=level, n_boot=20000)
    assert (lo, hi) == (pytest.approx(2.0 / ends[1]), pytest.approx(2.0 / ends[0]))


def test_each_arms_spread_alone_widens_the_ratio_interval() -> None:
    rng = random.Random(11)
    spread = [rng.gauss(100, 5) for _ in range(9)]
    flat = [100.0] * 9
    lo, hi = ratio_ci(spread, flat, "k")
    assert lo < statistics.median(spread) / 100.0 < hi
    lo, hi = ratio_ci(flat, spread, "k")
    assert lo < 100.0 / statistics.median(spread) < hi
    assert ratio_ci(flat, flat, "k") == (1.0, 1.0)


def test_ratio_interval_is_the_same_for_the_same_key_even_when_short() -> None:
    """With 20 rounds the ends interpolate between draws: a generator not seeded from the key
    would give a different interval on each call."""
    rng = random.Random(2)
    a = [rng.gauss(90, 4) for _ in range(12)]
    b = [rng.gauss(100, 4) for _ in range(12)]
    assert ratio_ci(a, b, "g|a|m", n_boot=20) == ratio_ci(list(a), list(b), "g|a|m", n_boot=20)
    assert len({ratio_ci(a, b, f"key-{i}", n_boot=20) for i in range(10)}) >= 5


@pytest.mark.parametrize(("num", "den"), [([], [1.0]), ([1.0], []), ([], [])])
def test_ratio_of_an_empty_arm_is_refused(num: list[float], den: list[float]) -> None:
    with pytest.raises(ValueError, match=r"^ratio bootstrap of no values$"):
        ratio_ci(num, den, "k")


def test_a_zero_baseline_median_is_refused_and_a_baseline_of_one_is_not() -> None:
    with pytest.raises(ValueError, match=r"^ratio bootstrap with a zero baseline median$"):
        ratio_ci([1.0, 2.0], [0.0, 0.0, 0.0], "k")
    assert ratio_ci([3.0], [1.0], "k") == (3.0, 3.0)
    assert ratio_ci([3.0, 3.0], [1.0, 1.0, 1.0], "k") == (3.0, 3.0)


def test_coefficient_of_variation_edges() -> None:
    assert coefficient_of_variation([1.0, 3.0]) == pytest.approx(statistics.stdev([1, 3]) / 2)
    assert coefficient_of_variation([0.5, 1.5]) == pytest.approx(statistics.stdev([0.5, 1.5]))
    assert coefficient_of_variation([-1.0, 1.0]) is None  # mean 0: no ratio
    assert coefficient_of_variation([-3.0, -1.0]) == pytest.approx(statistics.stdev([-3, -1]) / 2)
    assert coefficient_of_variation([1.0, float("inf")]) is None
    assert coefficient_of_variation([2.0]) is None


def test_summary_of_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^summary of no values$"):
        summarize([], "k")
    with pytest.raises(ValueError, match=r"^bootstrap of no values$"):
        bootstrap_ci([], "k")


def test_two_values_are_resampled_and_one_value_is_its_own_interval() -> None:
    """Medians of two resampled values are the low one, the mean or the high one (1/4, 1/2,
    1/4): the 95 % interval runs from the low to the high value."""
    assert bootstrap_ci([1.0, 3.0], "k") == (1.0, 3.0)
    assert bootstrap_ci([2.5], "k") == (2.5, 2.5)


@pytest.mark.parametrize("n", [EXACT_N + 1, EXACT_N + 2])
def test_many_repetitions_draw_medians_centred_and_spread_like_resampling(n: int) -> None:
    """Above EXACT_N the medians of resamples are drawn from their exact distribution (order
    statistics of uniforms) instead of by resampling. For the values 0..n-1 that distribution
    is symmetric about (n - 1) / 2, so its mean over 200,000 draws lands within 0.15 of it
    (the draws' standard error is about 0.02; an order statistic taken one rank off moves the
    mean by 0.5 or more). Its spread matches brute-force resampling within 5 %."""
    xs = np.arange(n, dtype=float)
    meds = _resampled_medians(xs, np.random.default_rng(3), 200_000)
    assert meds.shape == (200_000,)
    assert abs(float(meds.mean()) - (n - 1) / 2) < 0.15
    brute = np.median(xs[np.random.default_rng(4).integers(0, n, size=(20_000, n))], axis=1)
    assert float(meds.std()) == pytest.approx(float(brute.std()), rel=0.05)
    assert set(np.unique(meds)) <= {x / 2 for x in range(2 * n - 1)}  # values or midpoints
