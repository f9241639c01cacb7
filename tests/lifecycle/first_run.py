"""The first run's process budget: how many measuring processes (``python -m workloads
_measure``, each building its model and measuring: most of a measurement's seconds on a CPU)
the built-in study ``local-first-run`` starts, counted from its suites.

Per measurement: ``single`` 1; ``shared`` 4 (the scenario's own process, the foreground alone,
the background, the foreground beside it: workloads/scenarios/shared.py); ``sharing``
2 + jobs (the scenario's own process, one job alone, the N jobs together:
workloads/scenarios/sharing.py). Every unit's runner forks them all from the study's one
zygote (workloads/zygote.py, infra/study/local.py), the study's one process that imports
TensorFlow:
tests/lifecycle/test_local_run.py counts the real launches and imports of the README's main
command against this."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from infra.study.model import Study, load_study
from workloads.suites import Entry, load_suite

# the budget of the first run on 2 cores: about 90 s of study (docs/studies.md)
PROCESS_BUDGET = 42
COUNTER_DIR = Path(__file__).resolve().parent / "launch_counter"


def processes(entry: Entry) -> int:
    """Runner processes that one measurement of ``entry`` starts."""
    if entry.scenario == "single":
        return 1
    if entry.scenario == "shared":
        return 4
    if entry.scenario == "sharing":
        return 2 + int(entry.options.get("jobs", 4))
    raise AssertionError(f"scenario {entry.scenario!r} is not one the first run uses")


def planned(
    study: Study | None = None, count: Callable[[Entry], int] = processes
) -> dict[str, int]:
    """Runner processes per arm over the whole study (every repeat), counted by ``count``."""
    st = study or load_study("local-first-run")
    out = {}
    for arm in st.arms:
        suite = st.suites.get(arm.suite) or load_suite(arm.suite)
        per_unit = sum(count(e) * e.repeats for e in suite.entries)
        out[arm.name] = per_unit * st.repeats
    return out


def measure_launches(log: Path) -> list[str]:
    """The ``_measure`` command lines the launch counter logged."""
    if not log.is_file():
        return []
    return [ln for ln in log.read_text().splitlines() if "-m workloads _measure" in ln]


def zygote_launches(log: Path) -> list[str]:
    """The zygotes' command lines (one a study: each unit's runner forks from it)."""
    if not log.is_file():
        return []
    return [ln for ln in log.read_text().splitlines() if "-m workloads _zygote" in ln]


def imports(log: Path, package: str = "tensorflow") -> set[int]:
    """The pids that the launch counter saw import ``package`` (one of its WATCHED)."""
    if not log.is_file():
        return set()
    lines = log.read_text().splitlines()
    return {int(ln.split()[0]) for ln in lines if ln.endswith(f" imports {package}")}
