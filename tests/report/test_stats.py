"""Statistics over repetitions: median, seeded bootstrap CI, coefficient of variation."""

from __future__ import annotations

import random
import statistics

import numpy as np
import pytest

from report.stats import (
    CV_FLAG,
    EXACT_N,
    MIN_N,
    _resampled_medians,
    bootstrap_ci,
    coefficient_of_variation,
    ratio_ci,
    summarize,
)


def test_median_and_summary_fields() -> None:
    s = summarize([10.0, 12.0, 11.0, 100.0, 9.0], "k")
    assert s.n == 5
    assert s.median == 11.0
    assert s.ci_lo <= s.median <= s.ci_hi
    assert s.values == (10.0, 12.0, 11.0, 100.0, 9.0)


def test_bootstrap_is_deterministic_per_key_and_varies_across_keys() -> None:
    """The same key gives the same interval; each key draws its own resamples.

    Two keys alone may give equal intervals by chance: with 2000 rounds the percentiles of
    the resampled medians land on the same few order statistics (40 keys give only 4 distinct
    95 % intervals here). With 20 rounds the percentiles interpolate between draws, so
    independent draws per key give mostly distinct intervals (33 of 40 with this seeded
    sample), while a seed that ignored the key would give one.
    """
    rng = random.Random(1)
    xs = [rng.gauss(100, 5) for _ in range(25)]
    assert bootstrap_ci(xs, "group-a") == bootstrap_ci(list(xs), "group-a")
    assert bootstrap_ci(xs, "group-a", n_boot=20) == bootstrap_ci(xs, "group-a", n_boot=20)
    intervals = {bootstrap_ci(xs, f"group-{i}", n_boot=20) for i in range(40)}
    assert len(intervals) >= 20, len(intervals)


def test_single_value_ci_is_the_value() -> None:
    assert bootstrap_ci([3.5], "k") == (3.5, 3.5)
    s = summarize([3.5], "k")
    assert s.cv is None and not s.cv_flag


@pytest.mark.parametrize(("level", "covers"), [(0.95, True), (0.90, False)])
def test_ci_coverage_at_95_percent_and_a_90_percent_interval_fails_it(
    level: float, covers: bool
) -> None:
    """Coverage over 1000 seeded samples of n=15 from N(100, 5): the true median is 100.

    The band is 0.91-0.97. The percentile bootstrap of a median at n=15 under-covers a little
    (about 0.93 here for a 95 % interval), and 1000 trials put the standard error of the
    coverage near 0.008, so the band is about -2 and +5 standard errors around it. A 90 %
    interval covers about 0.89: outside the band, so a level mix-up cannot pass this test.
    """
    rng = random.Random(7)
    hits = 0
    trials = 1000
    for t in range(trials):
        xs = [rng.gauss(100.0, 5.0) for _ in range(15)]
        lo, hi = bootstrap_ci(xs, f"trial-{t}", level=level)
        hits += lo <= 100.0 <= hi
    assert (0.91 <= hits / trials <= 0.97) is covers, hits / trials


def test_ratio_interval_is_seeded_and_includes_the_baselines_spread() -> None:
    rng = random.Random(5)
    arm = [rng.gauss(90, 2) for _ in range(5)]
    tight = [rng.gauss(100, 0.1) for _ in range(5)]
    loose = [rng.gauss(100, 6) for _ in range(5)]
    assert ratio_ci(arm, tight, "g|a|m") == ratio_ci(arm, tight, "g|a|m")  # deterministic
    lo_t, hi_t = ratio_ci(arm, tight, "k")
    lo_l, hi_l = ratio_ci(arm, loose, "k")
    assert lo_t <= statistics.median(arm) / statistics.median(tight) <= hi_t
    assert hi_l - lo_l > hi_t - lo_t  # the baseline's own spread widens the interval
    assert ratio_ci([2.0], [4.0], "k") == (0.5, 0.5)


def test_fewer_than_three_repeats_are_flagged() -> None:
    assert MIN_N == 3
    assert summarize([1.0, 1.1], "k").few and not summarize([1.0, 1.1, 1.2], "k").few


def test_ci_narrows_with_more_repetitions() -> None:
    rng = random.Random(3)
    small = [rng.gauss(50, 2) for _ in range(5)]
    big = [rng.gauss(50, 2) for _ in range(80)]
    w_small = bootstrap_ci(small, "s")[1] - bootstrap_ci(small, "s")[0]
    w_big = bootstrap_ci(big, "b")[1] - bootstrap_ci(big, "b")[0]
    assert w_big < w_small


@pytest.mark.parametrize(
    ("values", "flag"),
    [([100, 101, 99, 100.5, 99.5], False), ([100, 106, 94, 103, 97], True)],
)
def test_cv_flag_above_three_percent(values: list[float], flag: bool) -> None:
    cv = coefficient_of_variation(values)
    assert cv == pytest.approx(statistics.stdev(values) / statistics.fmean(values))
    assert summarize(values, "k").cv_flag is flag
    assert (cv > CV_FLAG) is flag


def test_bootstrap_of_many_repetitions_matches_resampling_every_value() -> None:
    """Above EXACT_N values the resampled medians come from their exact distribution: the
    interval agrees with brute-force resampling (same estimator), for odd and even n."""
    import numpy as np

    from report.stats import EXACT_N, bootstrap_ci

    rng = np.random.default_rng(7)
    for n in (EXACT_N + 301, EXACT_N + 300):
        xs = rng.lognormal(0.0, 0.3, size=n)
        lo, hi = bootstrap_ci(list(xs), f"many-{n}")
        idx = np.random.default_rng(1).integers(0, n, size=(4000, n))
        blo, bhi = np.quantile(np.median(xs[idx], axis=1), [0.025, 0.975])
        width = bhi - blo
        assert abs(lo - blo) < 0.15 * width and abs(hi - bhi) < 0.15 * width
        assert lo < float(np.median(xs)) < hi


# -- at the edges ------------------------------------------------------------
# The ratio interval's level, width and refusals, the coefficient of variation's edges, the
# empty summary. Resampling {1, 2, 3} with replacement gives a median of 1 with probability 7/27
# (0.26), 2 with 13/27 and 3 with 7/27, so central intervals at a level have known ends: at 40 %
# the 30th and 70th percentiles are both 2; at 60 % the 20th and 80th are 1 and 3. 20000 seeded
# rounds put each probability within 0.01 of its value, far from those boundaries.

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
