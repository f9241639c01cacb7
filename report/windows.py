"""What an elapsed time measures (its window), and how much of it the runner's windows are.

The papers' elapsed times are a whole job's, launch to finish (CLOSER 2018: "job launch to
finish, includes data loading"); the runner also records its parts (``startup_s``: process
start to the first step, ``first_step_s``: the first, compiling steps, ``timed_s``: the timed
window), so a check on ``elapsed_s`` can say how much of it was start-up. Records of a runner
older than those fields carry none, and the check says so.
"""

from __future__ import annotations

from report.table import Row, Table

WINDOWS = {
    "elapsed_s": "elapsed = job launch to finish, start-up included, as the paper's",
    "elapsed_degradation": "elapsed = each job's launch to finish, as the paper's",
    "train_wall_s": "training wall-clock (the epochs), as the paper's run time",
    "completion_time_ratio": "the jobs' timed windows",
}
PARTS = (("startup_s", "start-up"), ("first_step_s", "first steps"), ("timed_s", "timed"))
NONE_RECORDED = "(no start-up or timed windows in these records: a runner older than them)"


def parts_note(t: Table, row: Row) -> str | None:
    """``(start-up 20.1 s, first steps 3.2 s, timed 1.1 s of 25.0 s)`` for an ``elapsed_s``
    row whose records carry the runner's windows (medians); None where they carry none."""
    found = {
        r.metric: r.summary.median
        for r in t.rows
        if r.key == row.key and r.arm == row.arm and r.metric in dict(PARTS)
    }
    if not found:
        return None
    shown = ", ".join(f"{word} {found[m]:.3g} s" for m, word in PARTS if m in found)
    return f"({shown} of {row.summary.median:.3g} s)"
