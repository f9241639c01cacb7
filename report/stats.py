"""Statistics over repetitions: median, 95 % CI, CV with a flag.

A table row's CI is the t interval of the mean over its units (report.units: one study
repeat, or one run, is one unit; the repetitions inside a unit are averaged into one value
first, report.intervals), so repetitions that ran back to back never count as independent.
Without units (``summarize(values, key)`` alone, and ``gpulab compare``) the CI is a seeded
percentile bootstrap of the median.

The bootstrap resamples the repetitions with replacement (N_BOOT times) and takes the 2.5th
and 97.5th percentiles of the resampled medians. Its generator is seeded from a string key
(the group and arm), so the same records always give the same interval.

:func:`ratio_ci` (``gpulab compare``) resamples both sides' repetitions independently and
takes the ratio of the two resampled medians. With fewer than MIN_N repetitions in an arm
:attr:`Summary.few` flags the row; the verdicts count units instead (report.claims).
Above EXACT_N repetitions the resampled medians are drawn from their exact distribution
(order statistics of uniforms) instead of by resampling every value: the same bootstrap at a
cost that does not grow with n.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from report.intervals import estimate

N_BOOT = 2000
LEVEL = 0.95
CV_FLAG = 0.03  # a coefficient of variation above 3 % is flagged
MIN_N = 3  # fewer repetitions than this: flagged, and no verdict rests on the row
Values = Sequence[float] | np.ndarray  # a group's values: a list, or report.scan's array
EXACT_N = 200  # more repetitions: resampled medians drawn from their exact distribution


def _resampled_medians(xs: np.ndarray, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """``n_boot`` medians of resamples (with replacement) of ``xs``.

    Up to EXACT_N values: resample and take the median (n_boot x n draws). Above, the same
    distribution at O(n_boot): the k-th smallest of n draws from the values is
    ``sorted[ceil(n U) - 1]`` with U the k-th smallest of n uniforms, U ~ Beta(k, n - k + 1);
    for an even n the next one is U + (1 - U) Beta(1, n - k), and the median their mean.
    """
    n = xs.size
    if n <= EXACT_N:
        return np.asarray(np.median(xs[rng.integers(0, n, size=(n_boot, n))], axis=1))
    s = np.sort(xs)

    def at(u: np.ndarray) -> np.ndarray:
        return np.asarray(s[np.clip(np.ceil(n * u).astype(np.int64) - 1, 0, n - 1)])

    if n % 2:
        m = (n + 1) // 2
        return at(rng.beta(m, n - m + 1, size=n_boot))
    m = n // 2
    u1 = rng.beta(m, n - m + 1, size=n_boot)
    u2 = u1 + (1.0 - u1) * rng.beta(1, n - m, size=n_boot)
    return np.asarray((at(u1) + at(u2)) / 2.0)


@dataclass(frozen=True)
class Summary:
    n: int
    median: float
    ci_lo: float
    ci_hi: float
    cv: float | None  # sample stdev / mean; None with fewer than 2 values
    values: tuple[float, ...]
    n_units: int | None = None  # units the CI is over (None: a bootstrap over repetitions)

    @property
    def cv_flag(self) -> bool:
        return self.cv is not None and self.cv > CV_FLAG

    @property
    def few(self) -> bool:
        """Fewer than MIN_N repetitions: the interval cannot be trusted."""
        return self.n < MIN_N


def seed_for(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode("utf-8")).digest()[:8], "big")


def bootstrap_ci(
    values: Values, key: str, level: float = LEVEL, n_boot: int = N_BOOT
) -> tuple[float, float]:
    xs = np.asarray(values, dtype=float)
    if xs.size == 0:
        raise ValueError("bootstrap of no values")
    if xs.size == 1:
        return float(xs[0]), float(xs[0])
    rng = np.random.default_rng(seed_for(key))
    meds = _resampled_medians(xs, rng, n_boot)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(meds, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def ratio_ci(
    num: Sequence[float],
    den: Sequence[float],
    key: str,
    level: float = LEVEL,
    n_boot: int = N_BOOT,
) -> tuple[float, float]:
    """Percentile-bootstrap interval of median(num) / median(den) over both arms' repetitions.

    Each bootstrap round resamples ``num`` and ``den`` independently (unpaired repetitions of
    two arms) with a generator seeded from ``key``; the same inputs always give the same
    interval. One value in each arm gives the point ratio (zero width: see MIN_N).
    """
    a = np.asarray(num, dtype=float)
    b = np.asarray(den, dtype=float)
    if a.size == 0 or b.size == 0:
        raise ValueError("ratio bootstrap of no values")
    rng = np.random.default_rng(seed_for("ratio|" + key))
    ma = _resampled_medians(a, rng, n_boot)
    mb = _resampled_medians(b, rng, n_boot)
    if np.any(mb == 0):
        raise ValueError("ratio bootstrap with a zero baseline median")
    alpha = (1.0 - level) / 2.0
    lo, hi = np.quantile(ma / mb, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def coefficient_of_variation(values: Values) -> float | None:
    """Sample stdev / |mean| in float arithmetic (numpy: statistics.stdev is exact rational
    arithmetic, about 20x slower, and a CV is shown to 3 digits)."""
    if len(values) < 2:
        return None
    a = np.asarray(values, dtype=float)
    mean = float(a.mean())
    if mean == 0 or not math.isfinite(mean):
        return None
    return float(a.std(ddof=1)) / abs(mean)


def summarize(values: Values, key: str, units: Sequence[float] | None = None) -> Summary:
    """n, median, CI and CV of ``values`` (a sequence or a float array: report.scan hands
    over one array per group, and a million values are converted once, not per step).

    ``units``: one value per unit (the mean of its repetitions); the CI is then the t
    interval of their mean (one unit: no interval, the unit's value on both sides), else
    a bootstrap of the median over ``values``."""
    xs = np.asarray(values, dtype=float)
    if xs.size == 0:
        raise ValueError("summary of no values")
    vals = tuple(xs.tolist())
    median = float(np.median(xs))  # the middle value, or the mean of the two (as statistics)
    if units is None:
        lo, hi = bootstrap_ci(xs, key)
    else:
        est = estimate(units)
        if est is None:
            raise ValueError("summary of no unit values")
        lo, hi = est.interval() or (est.value, est.value)
    return Summary(
        n=len(vals),
        median=median,
        ci_lo=lo,
        ci_hi=hi,
        cv=coefficient_of_variation(xs),
        values=vals,
        n_units=None if units is None else len(units),
    )
