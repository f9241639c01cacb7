"""Intervals over units: Student's t without scipy, and the estimate a verdict judges.

A unit is one study repeat (report.units): the interval of a quantity is taken over its
per-unit values, never over the repetitions inside a unit. With unit values x_1..x_n (a
paired log ratio per unit for a normalized value, the unit's own value for a ratio or a
degradation, a per-unit contrast for a relation check) the estimate is their mean and its
95 % interval the t interval ``mean ± t(0.975, n - 1) s / sqrt(n)``, back-transformed
(``exp``) where the values are logs. benchmarks/calibration.py measures its coverage on
simulated records (93-97 % for nominal 95 % at 0.5-2 % run-to-run noise).

:meth:`Estimate.p_outside` is the p-value of "the true value lies outside the band": the
smaller one-sided t test against the band's two edges, doubled (a Bonferroni over the two
edges); a single row with p <= 0.05 has its whole 95 % interval outside the band.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

LEVEL = 0.95
LOG, LINEAR = "log", "linear"


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < eps:
            break
    return h


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x)
    front = math.exp(ln + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 1.0 if t > 0 else 0.0
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_ppf(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t (bisection on :func:`t_cdf`; 1e-10 absolute)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"t quantile of p={p}")
    if p < 0.5:
        return -t_ppf(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-10:
            break
    return (lo + hi) / 2.0


_PPF: dict[tuple[float, int], float] = {}


def t_quantile(p: float, df: int) -> float:
    """:func:`t_ppf`, remembered (a report asks for the same few quantiles many times)."""
    key = (p, df)
    if key not in _PPF:
        _PPF[key] = t_ppf(p, df)
    return _PPF[key]


@dataclass(frozen=True)
class Estimate:
    """The mean of per-unit values (``scale`` log: of their logs) and its t interval."""

    n: int  # units
    mean: float  # on the working scale
    se: float | None  # standard error of the mean (None with one unit)
    scale: str  # LOG or LINEAR

    @property
    def df(self) -> int:
        return self.n - 1

    def back(self, x: float) -> float:
        return math.exp(x) if self.scale == LOG else x

    def to_scale(self, x: float) -> float:
        if self.scale != LOG:
            return x
        if x <= 0.0:
            return -math.inf
        return math.log(x) if math.isfinite(x) else math.inf

    @property
    def value(self) -> float:
        return self.back(self.mean)

    def interval(self, level: float = LEVEL) -> tuple[float, float] | None:
        """The two-sided ``level`` interval on the natural scale (None with one unit)."""
        if self.se is None:
            return None
        half = t_quantile(0.5 + level / 2.0, self.df) * self.se
        return self.back(self.mean - half), self.back(self.mean + half)

    @property
    def lo(self) -> float | None:
        ci = self.interval()
        return None if ci is None else ci[0]

    @property
    def hi(self) -> float | None:
        ci = self.interval()
        return None if ci is None else ci[1]

    def p_outside(self, lo: float, hi: float) -> float:
        """p-value of "the true value lies outside [lo, hi]" (see the module docstring)."""
        if self.se is None:
            return 1.0
        ps = []
        g_lo, g_hi = self.to_scale(lo), self.to_scale(hi)
        if self.se == 0.0:
            return 0.0 if self.mean < g_lo or self.mean > g_hi else 1.0
        if math.isfinite(g_lo):
            ps.append(t_cdf((self.mean - g_lo) / self.se, self.df))
        if math.isfinite(g_hi):
            ps.append(1.0 - t_cdf((self.mean - g_hi) / self.se, self.df))
        return min(1.0, 2.0 * min(ps)) if ps else 1.0

    def inside(self, lo: float, hi: float) -> bool:
        """The whole 95 % interval lies inside [lo, hi] (both one-sided tests at 2.5 %)."""
        ci = self.interval()
        return ci is not None and ci[0] >= lo and ci[1] <= hi


def estimate(values: Iterable[float], scale: str = LINEAR) -> Estimate | None:
    """The :class:`Estimate` of per-unit ``values`` (positive ones where ``scale`` is LOG);
    None where there is none, or where a LOG value is not positive."""
    xs = [float(v) for v in values]
    if not xs or not all(math.isfinite(v) for v in xs):
        return None
    if scale == LOG:
        if any(v <= 0.0 for v in xs):
            return None
        xs = [math.log(v) for v in xs]
    n = len(xs)
    mean = math.fsum(xs) / n
    if n < 2:
        return Estimate(n, mean, None, scale)
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    return Estimate(n, mean, math.sqrt(var / n), scale)


def holm(pvalues: list[float], alpha: float = 1.0 - LEVEL) -> list[bool]:
    """Holm's step-down: which hypotheses are rejected with the family-wise error <= alpha."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    out = [False] * len(pvalues)
    m = len(pvalues)
    for rank, i in enumerate(order):
        if pvalues[i] > alpha / (m - rank):
            break
        out[i] = True
    return out
