"""Shared pieces of the study tests: a study document, parsed or written to a temporary
directory, and a DOUBLE of the local unit runner that writes records as the runner would (no
framework)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from infra.study.local import UnitResult
from infra.study.model import Arm, Study, parse_study
from workloads.records import make_record
from workloads.suites import load_suite


def study_doc(**change: Any) -> dict[str, Any]:
    """A study document as a study file holds it: study ``t`` of the smoke suite, arms ``a``
    (native) and ``b`` (docker) on the local stack; ``change`` replaces whole keys."""
    d: dict[str, Any] = {
        "name": "t",
        "suite": "smoke",
        "arms": [
            {"name": "a", "stack": "local", "exec_env": "native"},
            {"name": "b", "stack": "local", "exec_env": "docker"},
        ],
    }
    d.update(change)
    return d


def parsed_study(tmp_path: Path, digest: str, **change: Any) -> Study:
    """:func:`study_doc` as ``parse_study`` reads it from ``tmp_path/t.yaml`` (not written)."""
    return parse_study(study_doc(**change), tmp_path / "t.yaml", digest)


def write_study(tmp_path: Path, **doc: Any) -> Path:
    """A study file of two native arms, 2 repeats; ``doc`` replaces whole keys."""
    arms = [
        {"name": "a", "stack": "local", "exec_env": "native"},
        {"name": "b", "stack": "local", "exec_env": "native"},
    ]
    base = study_doc(**{"repeats": 2, "arms": arms, **doc})
    path = tmp_path / f"{base['name']}.yaml"
    path.write_text(yaml.safe_dump(base))
    return path


def skipped_study(tmp_path: Path, name: str = "t") -> Path:
    """A study whose every unit is skipped on this machine (k8s and apptainer need a lab): the
    study commands run for real, in a second, with no runner."""
    arms = [
        {"name": "a", "stack": "local", "exec_env": "k8s"},
        {"name": "b", "stack": "local", "exec_env": "apptainer"},
    ]
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "suite": "smoke", "arms": arms}))
    return path


class UnitsDouble:
    """Stands in for LocalUnits: each unit appends ``per_unit`` records (default: one per
    measurement of the arm's suite, as the runner writes them); ``script`` maps a
    call number (1-based) to what happens there: "fail" (one record, then a failed unit) or
    "interrupt" (one record, then Ctrl-C, as the runner's SIGINT would)."""

    def __init__(self, per_unit: int | None = None, script: dict[int, str] | None = None) -> None:
        self.per_unit = per_unit
        self.script = script or {}
        self.calls: list[str] = []
        self.removed: list[str] = []  # containers it was asked to remove
        self.closed = False

    def remove_container(self, name: str) -> None:
        self.removed.append(name)

    def close(self) -> None:  # LocalUnits ends the study's zygote here
        self.closed = True

    def run(
        self, arm: Arm, suite: str, out: Path, log: Path, run_id: str, on_start: Any = None
    ) -> UnitResult:
        self.calls.append(arm.name)
        what = self.script.get(len(self.calls), "")
        n = 1 if what else self.per_unit or load_suite(suite).measurements
        with out.open("a") as fh:
            for i in range(n):
                rec = make_record(
                    run_id=run_id,
                    suite="smoke",
                    experiment="smoke-mnist_cnn",
                    model="mnist_cnn",
                    arm=arm.label,
                    topology="local",
                    images_per_sec=100.0 + i,
                    repeat=i,
                )
                fh.write(json.dumps(rec) + "\n")
        if what == "interrupt":
            raise KeyboardInterrupt
        if what == "fail":
            return UnitResult("failed", "runner exited 1: injected failure")
        return UnitResult("done")


def ids(files: list[Path]) -> list[str]:
    return [json.loads(ln)["record_id"] for f in files for ln in f.read_text().splitlines() if ln]
