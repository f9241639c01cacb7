"""From measured items to check outcomes and a claim's verdict: intervals, units, Holm.

Every check of a claim measures items: a row's normalized value or ratio, a figure cell, a
per-unit contrast of a relation check, each an :class:`Item` with its estimate over units
(report.intervals) and the band the claim allows. One rule judges them all:

* an item with fewer units than the claim needs (``need``: report.claims.UNITS_NEEDED, from
  benchmarks/calibration.py) is **inconclusive** and says how many units it has and needs;
* it **passes** when its whole 95 % interval lies inside the band (both one-sided tests at
  2.5 %: for a "no measurable penalty" band this is the equivalence test, two one-sided tests
  against the paper's margin);
* it **fails** only when "the truth lies outside the band" is significant with Holm's
  correction over every tested item of the claim (family-wise error <= 5 %: a claim with
  many rows does not fail by chance); an item whose interval lies outside the band but whose
  failure is not significant over the claim's items is inconclusive;
* anything else (the interval straddles an edge of the band) is inconclusive.

A claim is **reproduced** only when every check is measured and passes, **not reproduced**
when an item fails, **not measured** when no check has records, and **inconclusive**
otherwise (a check inconclusive or not measured).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from report.checks import MISSING, Outcome
from report.intervals import Estimate, holm

PASS, FAIL, UNSURE = "pass", "fail", "inconclusive"  # item and check outcomes (and "missing")
REPRODUCED, NOT_REPRODUCED, NOT_MEASURED = "reproduced", "not reproduced", "not measured"
INCONCLUSIVE = "inconclusive"
SHOWN = 8  # items named per outcome line


@dataclass(frozen=True)
class Item:
    """One measured quantity of a check and the band [lo, hi] it must lie in."""

    name: str
    est: Estimate | None  # None: no unit of it pairs with the baseline's
    lo: float = -math.inf
    hi: float = math.inf
    note: str = ""  # e.g. "(paper 0.82)"
    times: bool = False  # shown as a multiple ("0.93x")
    word: str = "units"  # what n counts: "units" (study repeats) or "runs"


@dataclass(frozen=True)
class Judged:
    item: Item
    status: str
    text: str


def item_text(item: Item) -> str:
    """``name 0.930x [0.912, 0.948] n=5 units`` (the estimate, its 95 % interval, n)."""
    e = item.est
    if e is None:
        return f"{item.name}: no unit pairs with the baseline's{_note(item)}"
    x = "x" if item.times else ""
    ci = e.interval()
    shown = f"[{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "[no interval]"
    return f"{item.name} {e.value:.3f}{x} {shown} n={e.n} {item.word}{_note(item)}"


def _note(item: Item) -> str:
    return f" {item.note}" if item.note else ""


def judge(items_per_check: list[list[Item] | Outcome], need: int) -> list[Outcome]:
    """One Outcome per check: its items judged together (Holm over the whole claim)."""
    flat = [(i, it) for i, got in enumerate(items_per_check) if isinstance(got, list) for it in got]
    tested = [k for k, (_, it) in enumerate(flat) if it.est is not None and it.est.n >= need]
    rejected = holm([_p(flat[k][1]) for k in tested])
    fails = {k for k, r in zip(tested, rejected, strict=True) if r}
    judged: list[list[Judged]] = [[] for _ in items_per_check]
    for k, (i, it) in enumerate(flat):
        judged[i].append(_one(it, k in fails, k in tested, need, len(tested)))
    out = []
    for got, js in zip(items_per_check, judged, strict=True):
        if isinstance(got, Outcome):
            out.append(got)
        elif not js:
            out.append(Outcome(MISSING, "no rows"))
        else:
            out.append(_outcome(js))
    return out


def _p(item: Item) -> float:
    assert item.est is not None
    return item.est.p_outside(item.lo, item.hi)


def _one(item: Item, failed: bool, tested: bool, need: int, m: int) -> Judged:
    text = item_text(item)
    e = item.est
    if e is None:
        return Judged(item, UNSURE, text)
    if not tested:
        return Judged(item, UNSURE, f"{text} (a verdict needs {need} {item.word})")
    if failed:
        return Judged(item, FAIL, text)
    if e.inside(item.lo, item.hi):
        return Judged(item, PASS, text)
    ci = e.interval()
    if ci is not None and (ci[1] < item.lo or ci[0] > item.hi):
        why = f"outside the band, not significant over the claim's {m} items (Holm)"
    else:
        why = "interval straddles the band"
    return Judged(item, UNSURE, f"{text} ({why})")


def _outcome(js: list[Judged]) -> Outcome:
    for status, head in ((FAIL, "outside: "), (UNSURE, "undecided: "), (PASS, "")):
        shown = [j.text for j in js if j.status == status]
        if shown:
            more = f" ... ({len(shown) - SHOWN} more)" if len(shown) > SHOWN else ""
            return Outcome(status, head + "; ".join(shown[:SHOWN]) + more)
    raise AssertionError("unreachable")


def verdict_of(outcomes: list[Outcome]) -> str:
    """The claim's verdict from its checks' outcomes (see the module docstring)."""
    statuses = [o.status for o in outcomes]
    if not statuses or all(s == MISSING for s in statuses):
        return NOT_MEASURED
    if FAIL in statuses:
        return NOT_REPRODUCED
    if all(s == PASS for s in statuses):
        return REPRODUCED
    return INCONCLUSIVE
