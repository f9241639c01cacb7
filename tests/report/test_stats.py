"""Statistics over repetitions: median, seeded bootstrap CI, coefficient of variation."""

from __future__ import annotations

import random
import statistics

import pytest

from report.stats import CV_FLAG, bootstrap_ci, coefficient_of_variation, summarize


def test_median_and_summary_fields() -> None:
    s = summarize([10.0, 12.0, 11.0, 100.0, 9.0], "k")
    assert s.n == 5
    assert s.median == 11.0
    assert s.ci_lo <= s.median <= s.ci_hi
    assert s.values == (10.0, 12.0, 11.0, 100.0, 9.0)


def test_bootstrap_is_deterministic_per_key_and_varies_across_keys() -> None:
    rng = random.Random(1)
    xs = [rng.gauss(100, 5) for _ in range(9)]
    assert bootstrap_ci(xs, "group-a") == bootstrap_ci(xs, "group-a")
    assert bootstrap_ci(xs, "group-a") != bootstrap_ci(xs, "group-b")


def test_single_value_ci_is_the_value() -> None:
    assert bootstrap_ci([3.5], "k") == (3.5, 3.5)
    s = summarize([3.5], "k")
    assert s.cv is None and not s.cv_flag


def test_ci_contains_the_true_median_about_95_percent_of_the_time() -> None:
    """Coverage over 300 samples of n=15 from N(100, 5): the true median is 100."""
    rng = random.Random(7)
    hits = 0
    trials = 300
    for t in range(trials):
        xs = [rng.gauss(100.0, 5.0) for _ in range(15)]
        lo, hi = bootstrap_ci(xs, f"trial-{t}")
        hits += lo <= 100.0 <= hi
    assert 0.85 <= hits / trials <= 0.995, hits / trials


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
