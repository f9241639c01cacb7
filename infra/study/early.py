"""The study's first numbers while it runs: each ratio as soon as the units that give it are done.

After a unit is done, the driver prints what that unit completes (the final report and its
verdict table at the end are unchanged):

* images/sec of an arm against the baseline arm's unit of the same repeat, per model and batch
  both measured (once both units of the repeat are done, whichever finished last);
* a shared-scenario unit's own degradations (the foreground beside the background job against
  the foreground alone) and a sharing unit's own ratios (N concurrent jobs against one);
* from the second repeat on, each of these over the repeats done so far: the geometric mean
  (ratios to the baseline) or the mean (a unit's own ratio or degradation) with its 95 %
  interval over the repeats (report.intervals, the intervals the report judges).

Only ``ok`` records count; repetitions inside one unit are averaged first (one value per
repeat, as the report does).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from infra.study.plan import Unit
from infra.study.state import Journal
from infra.study.unit_files import read_part
from report.intervals import LINEAR, LOG, estimate

JOB_ELAPSED = "job_elapsed_degradation"  # elapsed_shared_s / elapsed_alone_s - 1 (report.table)
# a unit's own quantities: (metric, words before the value, how the value is shown)
OWN: dict[str, list[tuple[str, str, str]]] = {
    "sharing": [
        ("aggregate_throughput_ratio", "aggregate throughput", "x one job"),
        ("completion_time_ratio", "completion time", "x one job's"),
    ],
    "shared": [
        ("images_per_sec_degradation", "images/sec lower by", "%"),
        # the scenario's own elapsed_degradation is the timed windows' (the report's
        # timed_degradation); the report's elapsed_degradation is the jobs' launch to finish
        ("elapsed_degradation", "timed window longer by", "%"),
        (JOB_ELAPSED, "job elapsed longer by", "%"),
    ],
}
Key = tuple[str, str, int]  # experiment, model, batch


def _ok_records(path: Path) -> list[dict[str, Any]]:
    return [r for r in read_part(path) if r.get("status") == "ok"]


def _mean(xs: list[float]) -> float | None:
    xs = [x for x in xs if math.isfinite(x)]
    return math.fsum(xs) / len(xs) if xs else None


def _num(v: Any) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)
    return float(v) if ok else None


def _rates(recs: list[dict[str, Any]]) -> dict[Key, float]:
    """images/sec per (experiment, model, batch), the unit's repetitions averaged."""
    got: dict[Key, list[float]] = {}
    for r in recs:
        v = _num(r.get("images_per_sec"))
        if v is not None and v > 0 and r.get("scenario") == "single":
            key = (str(r.get("experiment")), str(r.get("model")), int(r.get("batch_size") or 0))
            got.setdefault(key, []).append(v)
    return {k: m for k, vs in got.items() if (m := _mean(vs)) is not None}


def _own(recs: list[dict[str, Any]]) -> dict[tuple[str, Key, str], float]:
    """A unit's own ratios and degradations per (scenario, key, metric), repetitions averaged."""
    got: dict[tuple[str, Key, str], list[float]] = {}
    for r in recs:
        scenario = str(r.get("scenario"))
        metrics = r.get("metrics")
        if not isinstance(metrics, dict):
            continue
        alone, shared = _num(metrics.get("elapsed_alone_s")), _num(metrics.get("elapsed_shared_s"))
        if alone and shared is not None:
            metrics = {**metrics, JOB_ELAPSED: shared / alone - 1.0}
        key = (str(r.get("experiment")), str(r.get("model")), int(r.get("batch_size") or 0))
        for metric, _words, _unit in OWN.get(scenario, []):
            v = _num(metrics.get(metric))
            if v is not None:
                got.setdefault((scenario, key, metric), []).append(v)
    return {k: m for k, vs in got.items() if (m := _mean(vs)) is not None}


def _name(key: Key, keys: list[Key]) -> str:
    """The model, with its batch where the same model runs at two batches."""
    same = [k for k in keys if k[1] == key[1]]
    return f"{key[1]} b{key[2]}" if len(same) > 1 else key[1]


def _shown(value: float, unit: str) -> str:
    return f"{value * 100:.0f} %" if unit == "%" else f"{value:.2f}{unit}"


def _over(values: list[float], scale: str, unit: str) -> str:
    """`` 0.98x [0.91, 1.04]`` over the repeats (empty under two)."""
    est = estimate(values, scale)
    ci = est.interval() if est is not None else None
    if est is None or ci is None:
        return ""
    if unit == "%":
        return f"{est.value * 100:.0f} % [{ci[0] * 100:.0f}, {ci[1] * 100:.0f}]"
    return f"{est.value:.2f}{unit} [{ci[0]:.2f}, {ci[1]:.2f}]"


class EarlyLines:
    """The lines a done unit completes; ``read`` gives a unit's records (its final file)."""

    def __init__(
        self,
        journal: Journal,
        read: Callable[[Unit], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.journal = journal
        self.read = read or (lambda u: _ok_records(journal.records_file(u)))
        self._cache: dict[Unit, list[dict[str, Any]]] = {}

    def _recs(self, u: Unit) -> list[dict[str, Any]] | None:
        """The unit's ok records, None while it is not done."""
        if self.journal.unit(u).get("status") != "done":
            self._cache.pop(u, None)
            return None
        if u not in self._cache:
            self._cache[u] = self.read(u)
        return self._cache[u]

    def _repeats(self) -> list[int]:
        return sorted({u.repeat for u in self.journal.order()})

    def after(self, u: Unit) -> list[str]:
        """The lines unit ``u`` (just done) completes (none where a file cannot be read: the
        report at the end says why; these lines never stop a study)."""
        try:
            return self._after(u)
        except (OSError, ValueError, TypeError, KeyError):
            return []

    def _after(self, u: Unit) -> list[str]:
        if self._recs(u) is None:
            return []
        base = str(self.journal.data["baseline"])
        arms = list(self.journal.data["arms"])
        pairs = [a for a in arms if a != base] if u.arm == base else [u.arm]
        lines = [ln for arm in pairs for ln in self._ratio_lines(arm, base, u.repeat)]
        return lines + self._own_lines(u)

    def _ratio_lines(self, arm: str, base: str, repeat: int) -> list[str]:
        now_b, now_a = self._recs(Unit(base, repeat)), self._recs(Unit(arm, repeat))
        if now_b is None or now_a is None:
            return []
        b, a = _rates(now_b), _rates(now_a)
        keys = sorted(set(a) & set(b))
        if not keys:
            return []
        shown = ", ".join(f"{_name(k, keys)} {a[k] / b[k]:.2f}x" for k in keys)
        lines = [f"  {arm}/{base} images/sec, repeat {repeat}: {shown}"]
        per_key: dict[Key, list[float]] = {k: [] for k in keys}
        for r in self._repeats():
            rb, ra = self._recs(Unit(base, r)), self._recs(Unit(arm, r))
            if rb is None or ra is None:
                continue
            xb, xa = _rates(rb), _rates(ra)
            for k in keys:
                if k in xa and k in xb:
                    per_key[k].append(xa[k] / xb[k])
        n = min(len(v) for v in per_key.values())
        over = {k: _over(per_key[k], LOG, "x") for k in keys}
        if n >= 2 and all(over.values()):
            shown = ", ".join(f"{_name(k, keys)} {over[k]}" for k in keys)
            lines.append(f"  {arm}/{base} images/sec over {n} repeats: {shown}")
        return lines

    def _own_lines(self, u: Unit) -> list[str]:
        recs = self._recs(u) or []
        own = _own(recs)
        if not own:
            return []
        keys = sorted({k for _s, k, _m in own})
        jobs = {
            int(n)
            for r in recs
            if isinstance(r.get("params"), dict) and isinstance(n := r["params"].get("jobs"), int)
        }
        what = f" ({next(iter(jobs))} jobs)" if len(jobs) == 1 else ""
        now: list[str] = []
        over: list[str] = []
        n_over = 0
        for key in keys:
            now_k, over_k = [], []
            for scenario, k, metric in own:  # in OWN's order
                if k != key:
                    continue
                words, unit = next((w, s) for m, w, s in OWN[scenario] if m == metric)
                now_k.append(f"{words} {_shown(own[(scenario, key, metric)], unit)}")
                values = [
                    v
                    for r in self._repeats()
                    if (rs := self._recs(Unit(u.arm, r))) is not None
                    and (v := _own(rs).get((scenario, key, metric))) is not None
                ]
                if len(values) >= 2 and (text := _over(values, LINEAR, unit)):
                    over_k.append(f"{words} {text}")
                    n_over = len(values) if not n_over else min(n_over, len(values))
            now.append(f"{_name(key, keys)}: {', '.join(now_k)}")
            if over_k:
                over.append(f"{_name(key, keys)}: {', '.join(over_k)}")
        lines = [f"  {u.arm}{what}, repeat {u.repeat}: {'; '.join(now)}"]
        if over:
            lines.append(f"  {u.arm}{what} over {n_over} repeats: {'; '.join(over)}")
        return lines


__all__ = ["EarlyLines"]
