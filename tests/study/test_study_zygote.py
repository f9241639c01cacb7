"""infra/study/local.py: a study on ``local`` shares one zygote among its native units.

Real zygotes (each imports TensorFlow): the first unit whose suite forks starts it, the next
get the same one, a unit whose suite execs gets none, one that died is started again, and the
study's end ends it. The whole flow (the README's main command: one zygote for the first-run
study's 9 units) is counted in tests/lifecycle/test_local_run.py.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from infra.study.local import LocalUnits
from tests.parts import REPO

pytestmark = [pytest.mark.slow, pytest.mark.tf]

FORKS = str(REPO / "studies" / "suites" / "local-single.yaml")
EXECS = str(Path(__file__).with_name("closer-cpu.yaml"))


def test_one_zygote_for_the_units_that_fork_another_when_it_died_none_after_the_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GPULAB_PROCESS_START", raising=False)
    units = LocalUnits(console=None)
    try:
        first = units.zygote(FORKS)
        assert first is not None and first.proc.poll() is None
        assert units.zygote(FORKS) is first
        assert units.zygote(EXECS) is None
        # $GPULAB_PROCESS_START over the suite, as the runner reads it
        monkeypatch.setenv("GPULAB_PROCESS_START", "exec")
        assert units.zygote(FORKS) is None
        monkeypatch.delenv("GPULAB_PROCESS_START")

        os.kill(first.proc.pid, signal.SIGKILL)
        first.proc.wait(timeout=30)
        second = units.zygote(FORKS)
        assert second is not None and second is not first and second.path != first.path
        assert second.proc.poll() is None
    finally:
        units.close()
    assert second.proc.returncode is not None
    assert units.zygote(EXECS) is None
