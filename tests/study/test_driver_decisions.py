"""The driver's decisions that need no lab (infra/study/driver.py), called directly: the study
as ``--on-local`` / ``--suite`` make it, the elapsed-time format of the progress line, when a
lab arm's stack is rebuilt, and what the teardown records and prints. The teardown's labs are a
DOUBLE (no Pulumi engine here): it returns the rows LabUnits.teardown returns."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from infra.study.driver import Driver, RunOptions, _fmt, localize
from infra.study.model import Study
from infra.study.plan import Unit
from tests.study.helpers import parsed_study


def test_a_run_as_it_is_keeps_the_study() -> None:
    s = Study("t", Path("t.yaml"), "smoke", (), digest="dg")
    assert localize(s, RunOptions()) == s


def test_on_local_and_another_suite_change_every_arm_and_the_digest(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.lab.yaml"
    stack.write_text("config:\n  gpulab:topology: nova-pci\n")
    s = parsed_study(
        tmp_path,
        "dg",
        arms=[
            {"name": "a", "stack_file": str(stack), "exec_env": "native"},
            {"name": "b", "stack": "local", "exec_env": "docker"},
        ],
    )
    assert s.arms[0].topology == "nova-pci" and s.arms[0].stack_file is not None
    s = dataclasses.replace(s, arms=(dataclasses.replace(s.arms[0], config=(("k", 1),)), s.arms[1]))
    local = localize(s, RunOptions(on_local=True))
    assert [(a.stack, a.topology, a.stack_file, a.config) for a in local.arms] == [
        ("local", "local", None, ()),
        ("local", "local", None, ()),
    ]
    assert [a.exec_env for a in local.arms] == ["native", "docker"]
    assert local.digest == "dg+local"
    both = localize(s, RunOptions(on_local=True, suite="closer2018"))
    assert [a.suite for a in both.arms] == ["closer2018", "closer2018"]
    assert both.digest == "dg+local+suite=closer2018"
    suite_only = localize(s, RunOptions(suite="x"))
    assert suite_only.digest == "dg+suite=x" and suite_only.arms[0].topology == "nova-pci"


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0:00"),
        (59.4, "0:59"),
        (59.6, "1:00"),
        (61, "1:01"),
        (3599, "59:59"),
        (3600, "1:00:00"),
        (3725, "1:02:05"),
        (36000 + 59 * 60 + 9, "10:59:09"),
    ],
)
def test_elapsed_time_is_minutes_seconds_or_hours(seconds: float, text: str) -> None:
    assert _fmt(seconds) == text


class LabsDouble:
    """Stands for LabUnits.teardown (which runs ``pulumi destroy`` through the engine)."""

    def __init__(self, rows: list[dict[str, Any]]) -> None:
        self.rows = rows
        self.keep: list[bool] = []

    def teardown(self, keep: bool) -> list[dict[str, Any]]:
        self.keep.append(keep)
        return self.rows


def make(tmp_path: Path, **change: Any) -> tuple[Driver, io.StringIO]:
    out = io.StringIO()
    d = Driver(
        parsed_study(tmp_path, "dg", **change),
        tmp_path / "results",
        RunOptions(keep=True),
        Console(file=out, width=200),
    )
    return d, out


@pytest.mark.parametrize(
    ("rebuild", "last", "unit", "want"),
    [
        ("never", ["a", 1], Unit("b", 2), False),
        ("between-arms", None, Unit("b", 1), False),
        ("between-arms", ["a", 1], Unit("a", 2), False),
        ("between-arms", ["a", 1], Unit("b", 1), True),
        ("between-repeats", ["a", 1], Unit("b", 1), False),
        ("between-repeats", ["b", 1], Unit("b", 2), True),
        ("every-unit", ["a", 1], Unit("b", 2), False),
    ],
)
def test_a_stack_is_rebuilt_when_the_policy_says_the_last_unit_on_it_differs(
    tmp_path: Path, rebuild: str, last: list[Any] | None, unit: Unit, want: bool
) -> None:
    d, _ = make(tmp_path, rebuild=rebuild, repeats=2)
    if last is not None:
        d.journal.built()["local"] = {"last": last}
    arm = d.study.arm(unit.arm)
    assert d._needs_rebuild(arm, unit) is want
    d.journal.built()["local"] = {"last": []}
    assert d._needs_rebuild(arm, unit) is False  # an empty record: nothing ran on it yet


def test_the_teardown_is_recorded_in_the_journal_and_printed_per_stack(tmp_path: Path) -> None:
    d, out = make(tmp_path)
    rows = [
        {"stack": "lab-a", "status": "destroyed", "reason": ""},
        {"stack": "lab-b", "status": "kept", "reason": "--keep"},
    ]
    labs = LabsDouble(rows)
    d.labs = labs  # type: ignore[assignment]
    d._teardown()
    assert labs.keep == [True]
    assert d.journal.data["teardown"]["stacks"] == rows
    assert d.journal.data["teardown"]["at"]
    on_disk = (tmp_path / "results" / "study-t" / "study.json").read_text()
    assert '"lab-b"' in on_disk
    assert out.getvalue().splitlines() == [
        "teardown lab-a: destroyed",
        "teardown lab-b: kept (--keep)",
    ]


def test_the_teardown_lines_are_printed_as_they_are_on_a_terminal(tmp_path: Path) -> None:
    d, _ = make(tmp_path)
    out = io.StringIO()
    d.console = Console(file=out, width=200, force_terminal=True, color_system="standard")
    d.labs = LabsDouble([{"stack": "lab-1", "status": "failed", "reason": "exit 255 (ssh)"}])  # type: ignore[assignment]
    d._teardown()
    assert out.getvalue() == "teardown lab-1: failed (exit 255 (ssh))\n"  # no colour codes
