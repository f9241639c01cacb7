"""The unit of replication: which records are one independent run of an arm.

A study repeat (infra.study: an independent build-or-start and run of every arm,
interleaved) is the unit; the suite's back-to-back repeats inside it are not independent of
one another and are averaged into one value per unit. A record states its unit in
``params.study`` (``name`` and ``repeat``, written by the study driver); a record without it
(a ``gpulab run`` or ``gpulab bench``, not a study) belongs to the unit of its run
(``run_id``): one run is one unit.

Units of different arms are paired by their slot: a study unit's slot is the study repeat
itself (``study:<name>#<repeat>``: the arms of one repeat block pair with one another); a
run's slot is its place among the arm's runs in run-id order (``run#1``, ``run#2`` ...: run
ids begin with their UTC start time), since separate runs of two arms share nothing to
pair on. Pairing independent runs by their order gives the same interval as any other
pairing that does not look at the values.

report.scan_sql computes the same unit key in SQL (``UNIT_SQL`` there); the two must agree.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

STUDY, RUN = "study:", "run:"
MAX_REPEAT = 2**31 - 1


def unit_of(rec: Mapping[str, Any]) -> str:
    """The unit key of a record: ``study:<name>#<repeat>`` or ``run:<run_id>``."""
    params = rec.get("params")
    study = params.get("study") if isinstance(params, Mapping) else None
    if isinstance(study, Mapping):
        rep = study.get("repeat")
        if isinstance(rep, int) and not isinstance(rep, bool) and 0 <= rep <= MAX_REPEAT:
            name = study.get("name")
            return f"{STUDY}{name if isinstance(name, str) else ''}#{rep}"
    run = rec.get("run_id")
    return f"{RUN}{run if isinstance(run, str) else ''}"


def slots(units: Iterable[str]) -> dict[str, str]:
    """Each unit key of one arm -> its slot (see the module docstring)."""
    keys = sorted(set(units))
    runs = [k for k in keys if not k.startswith(STUDY)]
    out = {k: k for k in keys if k.startswith(STUDY)}
    out.update({k: f"run#{i}" for i, k in enumerate(runs, start=1)})
    return out


def describe(n_units: int, study: bool) -> str:
    """``5 units`` / ``1 run``: what the n of an interval counts."""
    word = "unit" if study else "run"
    return f"{n_units} {word}{'' if n_units == 1 else 's'}"
