"""How much CPU the report may use, read in one place: ``$GPULAB_REPORT_THREADS`` sets both
DuckDB's threads (report.scan) and the processes that draw the figures (report.figures);
unset, the CPUs this process may run on."""

from __future__ import annotations

import os

from workloads.errors import InputError

ENV = "GPULAB_REPORT_THREADS"


def report_threads() -> int:
    raw = os.environ.get(ENV, "").strip()
    if not raw:
        if hasattr(os, "sched_getaffinity"):
            return len(os.sched_getaffinity(0))
        return os.cpu_count() or 1
    if not raw.isdigit() or int(raw) < 1:
        raise InputError(f"${ENV} must be a whole number of threads, 1 or more; got {raw!r}")
    return int(raw)
