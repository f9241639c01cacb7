"""The root conftest's ``own_tmpdir_for_tf_processes``: TensorFlow processes that a test starts
without the runner get a TMPDIR of their own, so what a killed one leaves (autograph's
generated modules) is not left in /tmp."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

_SEEN: list[str] = []


@pytest.mark.tf
@pytest.mark.parametrize("n", [0, 1])
def test_a_tf_test_gives_its_processes_a_tmpdir_of_its_own(n: int) -> None:
    own = Path(os.environ["TMPDIR"])
    assert own.is_dir() and own.name.startswith("test-")
    assert own.parent.name.startswith("gpulab-test-tmp-")
    assert str(own) not in _SEEN  # one per test
    _SEEN.append(str(own))
    assert Path(tempfile.gettempdir()) != own  # this process's tempfile keeps its directory


def test_other_tests_keep_the_environment_s_tmpdir() -> None:
    assert not os.environ.get("TMPDIR", "").startswith(tempfile.gettempdir() + "/gpulab-test-tmp-")
    assert "gpulab-test-tmp-" not in os.environ.get("TMPDIR", "")
