"""Statistics over repetitions: the interval over units, and float32 arrays summarized in
double precision (the edges that tests/report/test_stats.py does not reach)."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest

from report.stats import bootstrap_ci, coefficient_of_variation, summarize


def _t975_df2() -> float:
    """The 0.975 quantile of Student's t with 2 degrees of freedom, in closed form:
    for df = 2 the quantile of p is (2p - 1) / sqrt(2 p (1 - p))."""
    p = 0.975
    return (2 * p - 1) / math.sqrt(2 * p * (1 - p))


def test_units_give_the_t_interval_of_their_mean() -> None:
    """With units the CI is mean +- t(0.975, n - 1) s / sqrt(n) over the unit values (here
    mean 2, s = 1, n = 3), not a bootstrap over the repetitions; the median and n stay those
    of the repetitions, and n_units counts the units."""
    s = summarize([10.0, 11.0, 12.0, 13.0], "k", units=[1.0, 2.0, 3.0])
    half = _t975_df2() / math.sqrt(3)
    assert s.ci_lo == pytest.approx(2.0 - half, abs=1e-8)
    assert s.ci_hi == pytest.approx(2.0 + half, abs=1e-8)
    assert s.median == 11.5
    assert s.n == 4
    assert s.n_units == 3


def test_one_unit_is_its_own_zero_width_interval() -> None:
    """One unit has no spread to build an interval from: the unit's value on both sides."""
    s = summarize([5.0, 5.2], "k", units=[5.1])
    assert (s.ci_lo, s.ci_hi) == (5.1, 5.1)
    assert s.n_units == 1
    assert s.median == pytest.approx(5.1)


def test_without_units_the_row_counts_no_units() -> None:
    """No units: a bootstrap over the repetitions, and n_units is None."""
    assert summarize([1.0, 2.0, 3.0], "k").n_units is None


@pytest.mark.parametrize("units", [[], [1.0, math.nan], [math.inf, 2.0]])
def test_units_without_an_estimate_are_refused(units: list[float]) -> None:
    """No unit values, or a non-finite one, give no estimate: refused with its own message."""
    with pytest.raises(ValueError, match=r"^summary of no unit values$"):
        summarize([1.0, 2.0], "k", units=units)


def test_float32_median_is_the_double_precision_midpoint() -> None:
    """A float32 array's median is the mean of its two middle values taken in double
    precision (as statistics.median of the same values): 1 + 2**-24 lies between two
    adjacent float32 numbers, so float32 arithmetic would round it to 1."""
    xs = np.array([1.0, 1.0 + 2.0**-23], dtype=np.float32)
    s = summarize(xs, "k")
    assert s.median == statistics.median([1.0, 1.0 + 2.0**-23]) == 1.0 + 2.0**-24


def test_float32_cv_is_the_cv_of_its_values() -> None:
    """The CV of a float32 array is the sample stdev / mean of the values it holds, in double
    precision. Three values of 1.7e9 and one of 1.7e9 + 128 (float32 numbers 128 apart here)
    have mean 1.7e9 + 32 and deviations -32, -32, -32, 96: s = sqrt(12288 / 3) = 64. A float32
    mean would round to 1.7e9 + 128 and double the CV."""
    base = 1.7e9
    xs = np.array([base, base, base, base + 128], dtype=np.float32)
    want = 64.0 / (base + 32)
    assert coefficient_of_variation(xs) == pytest.approx(want, rel=1e-9)
    assert summarize(xs, "k").cv == pytest.approx(want, rel=1e-9)


def test_float32_bootstrap_matches_the_same_values_as_floats() -> None:
    """The bootstrap interval depends on the values, not on the array's dtype: a float32
    array gives the interval of the same numbers as Python floats (same key, same draws)."""
    xs = np.array([1.0 + k * 2.0**-23 for k in (0, 1, 4, 5, 8, 9, 13, 14)], dtype=np.float32)
    as_floats = [float(x) for x in xs]
    assert bootstrap_ci(xs, "k", n_boot=400) == bootstrap_ci(as_floats, "k", n_boot=400)
