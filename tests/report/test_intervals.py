"""Student's t without scipy, estimates over units, Holm (report.intervals)."""

from __future__ import annotations

import math
import random

import pytest

from report.intervals import LINEAR, LOG, estimate, holm, t_cdf, t_ppf

# two-sided 95 % and 99 % critical values from printed t tables
TABLE = [(1, 12.706, 63.657), (2, 4.303, 9.925), (4, 2.776, 4.604), (9, 2.262, 3.250),
         (30, 2.042, 2.750), (120, 1.980, 2.617)]  # fmt: skip


@pytest.mark.parametrize(("df", "t95", "t99"), TABLE)
def test_t_quantiles_match_the_tables(df: int, t95: float, t99: float) -> None:
    assert t_ppf(0.975, df) == pytest.approx(t95, abs=1e-3)
    assert t_ppf(0.995, df) == pytest.approx(t99, abs=1e-3)
    assert t_ppf(0.025, df) == pytest.approx(-t95, abs=1e-3)
    assert t_cdf(t95, df) == pytest.approx(0.975, abs=1e-4)
    assert t_cdf(0.0, df) == pytest.approx(0.5)


def test_t_cdf_of_one_degree_of_freedom_is_the_cauchy() -> None:
    for x in (-3.0, -0.5, 0.3, 2.0, 40.0):
        assert t_cdf(x, 1) == pytest.approx(0.5 + math.atan(x) / math.pi, abs=1e-12)


def test_estimate_is_the_t_interval_of_the_mean() -> None:
    e = estimate([9.0, 10.0, 11.0, 10.0, 10.0])
    assert e is not None and e.n == 5 and e.value == pytest.approx(10.0)
    half = 2.776445 * math.sqrt(0.5 / 5)
    assert e.interval() == pytest.approx((10.0 - half, 10.0 + half), abs=1e-5)
    one = estimate([3.0])
    assert one is not None and one.interval() is None and one.p_outside(0, 1) == 1.0
    assert estimate([]) is None and estimate([1.0, -1.0], LOG) is None


def test_log_estimates_are_geometric_and_back_transformed() -> None:
    e = estimate([0.8, 0.9, 1.0], LOG)
    assert e is not None
    assert e.value == pytest.approx((0.8 * 0.9 * 1.0) ** (1 / 3))
    lo, hi = e.interval() or (0.0, 0.0)
    assert lo < e.value < hi and lo > 0


def test_p_outside_and_inside_agree_with_the_95_interval() -> None:
    e = estimate([1.10, 1.12, 1.11, 1.13, 1.09])
    assert e is not None
    lo, hi = e.interval() or (0.0, 0.0)
    assert e.inside(lo - 1e-9, hi + 1e-9) and not e.inside(lo + 1e-3, hi)
    assert e.p_outside(0.0, lo - 1e-6) < 0.05 < e.p_outside(0.0, lo + 1e-3)
    assert e.p_outside(hi + 1e-6, 5.0) < 0.05 < e.p_outside(hi - 1e-3, 5.0)


def test_coverage_of_the_t_interval_at_small_n() -> None:
    """1000 seeded samples of 3 units from N(1, 0.02): 93-97 % hold the mean (the
    percentile bootstrap of a median at n = 3 is [min, max] and covers 75 %)."""
    rng = random.Random(11)
    hits = 0
    for _ in range(1000):
        e = estimate([rng.gauss(1.0, 0.02) for _ in range(3)], LINEAR)
        assert e is not None
        lo, hi = e.interval() or (0.0, 0.0)
        hits += lo <= 1.0 <= hi
    assert 0.93 <= hits / 1000 <= 0.97, hits


def test_holm_steps_down() -> None:
    assert holm([0.01, 0.04, 0.03]) == [True, False, False]  # 0.01 <= 0.05/3; 0.03 > 0.05/2
    assert holm([0.01, 0.02, 0.04]) == [True, True, True]  # 0.02 <= 0.025, 0.04 <= 0.05
    assert holm([0.2]) == [False] and holm([]) == []
