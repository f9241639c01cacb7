"""The side-by-side benchmarks' shared arguments: a bad ``--rounds`` is one line naming the
option, before anything is built, booted or installed (run as a user would, by path)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "script", ["venv_install", "lab_image", "ansible_strategy", "runner_startup"]
)
@pytest.mark.parametrize("value", ["0", "-2", "two"])
def test_bad_rounds_is_one_line_naming_the_option(script: str, value: str) -> None:
    r = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / f"{script}.py"), "--rounds", value],
        capture_output=True, text=True, timeout=60, cwd="/",
    )  # fmt: skip
    assert r.returncode == 2, r
    assert r.stdout == ""
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{script}.py: error: argument --rounds: "), r.stderr
    assert value in last and "Traceback" not in r.stderr


def test_rounds_accepts_one_or_more() -> None:
    sys.path.insert(0, str(REPO))
    from benchmarks.side_by_side import rounds

    assert rounds("1") == 1 and rounds("3") == 3
