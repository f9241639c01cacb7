"""A stack file's directory becomes a Pulumi project on its first `gpulab up`
(infra/cli/lab_project.py): Pulumi.yaml and __main__.py beside it, the engine run there."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import infra.automation
from infra.cli import lab_project, main
from infra.config.schema import project_config
from infra.errors import UsageError
from tests.lifecycle.test_automation_double import AutoDouble

LOCAL = "config:\n  gpulab:topology: local\n  gpulab:lab: {lab}\n"


@pytest.fixture
def labdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory outside the checkout holding Pulumi.mylab.yaml; the working one."""
    (tmp_path / "Pulumi.mylab.yaml").write_text(LOCAL.format(lab="mylab"))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path / "results"))
    return tmp_path


def _engine_double(monkeypatch: pytest.MonkeyPatch) -> AutoDouble:
    """infra.automation.Lab driving the DOUBLE of pulumi.automation (the engine cannot run)."""
    auto = AutoDouble()

    class DoubleLab(infra.automation.Lab):
        def __init__(self, *args: Any, **kw: Any) -> None:
            super().__init__(*args, auto=auto, **kw)

    monkeypatch.setattr(infra.automation, "Lab", DoubleLab)
    return auto


def test_first_up_makes_the_directory_a_project_engine_double(
    labdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    auto = _engine_double(monkeypatch)
    assert main(["up", "mylab"]) == 0
    err = capsys.readouterr().err
    assert f"==> made {labdir} a gpulab lab project: wrote Pulumi.yaml, __main__.py" in err
    assert auto.work_dir == labdir and auto.calls[0] == ("create_or_select", "mylab")
    project = yaml.safe_load((labdir / "Pulumi.yaml").read_text())
    assert project["name"] == "gpulab" and project["config"] == project_config()
    assert project["runtime"]["options"]["virtualenv"] == sys.prefix  # this gpulab's Python
    assert (labdir / "__main__.py").read_text() == lab_project.ENTRY
    before = (labdir / "Pulumi.yaml").stat().st_mtime_ns
    assert main(["up", "mylab"]) == 0  # a project now: nothing rewritten, nothing said
    assert "gpulab lab project" not in capsys.readouterr().err
    assert (labdir / "Pulumi.yaml").stat().st_mtime_ns == before


def test_status_where_no_lab_was_brought_up_says_so(
    labdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _engine_double(monkeypatch)
    assert main(["status", "mylab"]) == 2
    err = capsys.readouterr().err
    assert f"no Pulumi.yaml in {labdir}: stack mylab was never brought up from there" in err
    assert not (labdir / "Pulumi.yaml").exists()


def test_a_foreign_main_py_is_refused(tmp_path: Path) -> None:
    (tmp_path / "__main__.py").write_text("print('not gpulab')\n")
    with pytest.raises(UsageError, match=r"has a __main__\.py of its own and no Pulumi\.yaml"):
        lab_project.write(tmp_path)
    assert not (tmp_path / "Pulumi.yaml").exists()


STUB = """#!/bin/sh
# A stand-in for the Pulumi CLI: answers `version`, refuses everything else as an unreachable
# backend would, and logs each call with the directory it ran in.
echo "$PWD $*" >> "{log}"
if [ "$1" = "version" ]; then echo "v3.200.0"; exit 0; fi
echo "error: failed to reach the backend (stub)" >&2
exit 255
"""


def test_up_runs_the_real_automation_api_in_the_stack_directory_pulumi_cli_stub(
    gpulab, tmp_path: Path
) -> None:
    """The real Automation API with a Pulumi CLI stub (the CLI cannot be installed here): the
    stack file is resolved in the current directory, the project files are written beside
    it, the CLI runs there; its failure is one line, exit 1."""
    bindir, lab, home = tmp_path / "bin", tmp_path / "lab", tmp_path / "home"
    for d in (bindir, lab, home):
        d.mkdir()
    log = tmp_path / "pulumi.log"
    stub = bindir / "pulumi"
    stub.write_text(STUB.format(log=log))
    stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
    (lab / "Pulumi.mylab.yaml").write_text(LOCAL.format(lab="mylab"))
    env = {"PATH": f"{bindir}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(home)}
    r = gpulab("up", "mylab", cwd=lab, env=env)
    assert r.returncode == 1, r.stderr
    assert r.stderr.strip().splitlines()[-1].startswith("gpulab: error: stack mylab: ")
    assert "failed to reach the backend (stub)" in r.stderr
    assert (lab / "Pulumi.yaml").is_file() and (lab / "__main__.py").is_file()
    calls = log.read_text().splitlines()
    assert calls and all(line.startswith(f"{lab} ") for line in calls), calls
    assert any("stack" in line and "mylab" in line for line in calls), calls
