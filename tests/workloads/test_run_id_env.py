"""The run id a lab hands its hosts (GPULAB_RUN_ID): every host of one run writes the same one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from workloads.errors import InputError
from workloads.records import RUN_ID_RE, run_id_from_env

REPO = Path(__file__).resolve().parents[2]


def test_the_lab_run_id_is_used_as_given() -> None:
    assert run_id_from_env({"GPULAB_RUN_ID": "20261124T015825Z-49cb14"}) == (
        "20261124T015825Z-49cb14"
    )


def test_without_one_each_call_makes_a_new_run_id() -> None:
    a, b = run_id_from_env({}), run_id_from_env({"GPULAB_RUN_ID": ""})
    assert a != b and RUN_ID_RE.match(a) and RUN_ID_RE.match(b)


@pytest.mark.parametrize("bad", ["../x", "a b", "x" * 65, "-lead", "semi;colon"])
def test_a_bad_run_id_is_refused_naming_the_variable(bad: str) -> None:
    with pytest.raises(InputError, match="GPULAB_RUN_ID"):
        run_id_from_env({"GPULAB_RUN_ID": bad})


def test_runner_refuses_a_bad_run_id_with_one_line_and_exit_2(tmp_path: Path) -> None:
    """As the role starts it: ``python -m workloads bench`` with the variable set; a bad one is
    refused before anything runs (no record file)."""
    out = tmp_path / "r.jsonl"
    r = subprocess.run(
        [sys.executable, "-m", "workloads", "bench", "--model", "mnist_cnn", "--steps", "1",
         "--warmup", "0", "--repeats", "1", "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, GPULAB_RUN_ID="bad id"),
    )  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, r.stderr[-1000:]
    assert len(lines) == 1 and "GPULAB_RUN_ID" in lines[0], lines
    assert not out.exists()
