"""The study lock in-process (no framework: the arms' environments need a lab, so the units
are skipped in a second): who holds it, what a refused command says, what it leaves."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from infra.cli import main
from infra.study.lock import acquire, lock_path
from tests.study.helpers import skipped_study


def study(tmp_path: Path, *args: str) -> int:
    return main(["study", *args[:1], str(tmp_path / "t.yaml"), *args[1:],
                 "--results-dir", str(tmp_path / "results")])  # fmt: skip


@pytest.mark.parametrize("command", [["run"], ["run", "--fresh"], ["report"]])
def test_a_held_study_is_refused_in_one_line_naming_the_holder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    skipped_study(tmp_path)
    assert study(tmp_path, "run", "--no-report") == 0
    before = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*"))
    capsys.readouterr()
    with acquire(tmp_path / "results", "t", "study run"):
        assert study(tmp_path, *command) == 2
        err = capsys.readouterr().err
        assert study(tmp_path, "status") == 0
        status = capsys.readouterr().out
    assert err.count("\n") == 1 and err.startswith(
        f"gpulab: error: study t is in use by `gpulab study run` (pid {os.getpid()} on host "
        f"{socket.gethostname()}, since "
    )
    assert f"in use now by `gpulab study run` (pid {os.getpid()}" in " ".join(status.split())
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == before
    assert lock_path(tmp_path / "results", "t").read_text() == ""  # released: nobody holds it
    assert study(tmp_path, *command) in (0, 1)  # free again (report: 1, no unit finished)


def test_the_lock_drops_with_its_holder_and_status_says_nothing_then(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A holder killed without releasing: the kernel drops the flock; its note stays in the
    file, and `status` does not name a process that is gone."""
    import subprocess
    import sys

    skipped_study(tmp_path)
    code = (
        "import sys, os, signal; from pathlib import Path; from infra.study.lock import acquire;"
        "acquire(Path(sys.argv[1]), 't', 'study run'); os.kill(os.getpid(), signal.SIGKILL)"
    )
    r = subprocess.run([sys.executable, "-c", code, str(tmp_path / "results")], check=False)
    assert r.returncode == -9
    assert '"command": "study run"' in lock_path(tmp_path / "results", "t").read_text()
    assert study(tmp_path, "run", "--no-report") == 0
    assert study(tmp_path, "status") == 0
    assert "in use now" not in capsys.readouterr().out


def test_a_lock_path_that_is_a_directory_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skipped_study(tmp_path)
    lock_path(tmp_path / "results", "t").mkdir(parents=True)
    assert study(tmp_path, "run") == 2
    err = capsys.readouterr().err
    assert err == (
        f"gpulab: error: study lock {str(tmp_path / 'results' / 'study-t.lock')!r} is a "
        "directory; remove it\n"
    )
    assert not (tmp_path / "results" / "study-t").exists()


def test_report_of_a_study_where_no_unit_finished_is_not_a_silent_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skipped_study(tmp_path)
    assert study(tmp_path, "run", "--no-report") == 0  # every unit skipped: as documented
    capsys.readouterr()
    assert study(tmp_path, "report") == 1
    assert capsys.readouterr().err == (
        "gpulab: error: study t: no unit has finished (0 failed, 2 skipped, 0 not run): "
        "nothing to report; `gpulab study status t` says why\n"
    )
