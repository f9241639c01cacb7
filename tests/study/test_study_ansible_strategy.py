"""``gpulab study run`` with a lab arm runs Ansible on the labs it builds: an unknown
``GPULAB_ANSIBLE_STRATEGY`` stops it before the study's lock, journal or any lab is made."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from infra.errors import UsageError
from infra.study.driver import Driver, RunOptions
from infra.study.model import load_study
from tests.lifecycle.test_automation_double import AutoDouble
from tests.study.helpers import write_study

GPULAB = str(Path(sys.executable).parent / "gpulab")
LINE = "GPULAB_ANSIBLE_STRATEGY='bogus' is not one of mitogen_linear, mitogen_free, linear, free"
ARMS = [
    {"name": "vm", "stack": "nova-pci", "exec_env": "native"},
    {"name": "here", "stack": "local", "exec_env": "native"},
]


def test_study_run_with_a_lab_arm_and_an_unknown_strategy_stops_first(tmp_path: Path) -> None:
    """The console script, as a user runs it: exit 2, one line, nothing under the results."""
    study = write_study(tmp_path, arms=ARMS)
    results = tmp_path / "results"
    env = {**os.environ, "GPULAB_ANSIBLE_STRATEGY": "bogus", "GPULAB_RESULTS": str(results)}
    r = subprocess.run(
        [GPULAB, "study", "run", str(study)], cwd=tmp_path, env=env,
        capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert (r.returncode, r.stdout, r.stderr) == (2, "", f"gpulab: error: {LINE}\n")
    assert not results.exists()


def test_the_driver_checks_the_strategy_only_for_lab_arms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_ANSIBLE_STRATEGY", "bogus")
    auto = AutoDouble()

    def driver(**opts: object) -> Driver:
        study = load_study(str(tmp_path / "t.yaml"))
        return Driver(study, tmp_path / "results", RunOptions(auto=auto, **opts),  # type: ignore[arg-type]
                      Console(file=io.StringIO()))  # fmt: skip

    write_study(tmp_path, arms=ARMS)
    with pytest.raises(UsageError, match=r"^GPULAB_ANSIBLE_STRATEGY='bogus' is not one of "):
        driver()
    assert auto.calls == [] and not (tmp_path / "results").exists()
    # every arm on this machine (--on-local): no Ansible runs, nothing to refuse
    assert driver(on_local=True).study.arms[0].is_local
