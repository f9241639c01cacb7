"""`gpulab compare` of two runs that have nothing in common says why and exits 1 (it printed an
empty table and exited 0): the arms differ, or the groups do, or every common group's settings
differ."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from infra.cli import main
from tests.report import synth

GPULAB = str(Path(sys.executable).parent / "gpulab")


def _run(path: Path, topology: str, arm: str, model: str = "resnet50", run: str = "r",
         image_size: int | None = None) -> Path:  # fmt: skip
    recs = synth.reps(topology, arm, experiment="single_synthetic", model=model, ips=100.0,
                      repeats=3)  # fmt: skip
    for r in recs:
        r["run_id"] = run
        if image_size is not None:
            r["params"]["image_size"] = image_size
    return synth.write(path, recs)


def _compare(capsys: pytest.CaptureFixture[str], *args: Any) -> tuple[int, dict[str, Any], str]:
    rc = main(["compare", *map(str, args), "--json"])
    out, err = capsys.readouterr()
    return rc, json.loads(out), err


def test_runs_of_different_arms_say_so_and_exit_1(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a.jsonl", "ironic-bm", "native", run="a")
    b = _run(tmp_path / "b.jsonl", "nova-pci", "native", run="b")
    rc, got, err = _compare(capsys, a, b)
    why = ("nothing pairs: the sides have no arm in common (A: ironic-bm/native; B: "
           "nova-pci/native); compare two runs of one arm, or normalize arms to a baseline "
           "with `gpulab report A B`")  # fmt: skip
    assert rc == 1 and err == f"gpulab: error: {why}\n"
    assert got["ok"] is False and got["error"] == {"message": why, "code": 1}
    assert got["data"]["unpaired"] == why and got["data"]["groups"] == []


def test_runs_of_other_models_name_the_groups(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a.jsonl", "local", "native", model="resnet50", run="a")
    b = _run(tmp_path / "b.jsonl", "local", "native", model="alexnet", run="b")
    rc, got, _ = _compare(capsys, a, b)
    assert rc == 1
    assert got["data"]["unpaired"].startswith(
        "nothing pairs: arm local/native ran no group (model, batch, variant) on both sides "
        "(A: resnet50 b"
    )
    assert "B: alexnet b" in got["data"]["unpaired"]


def test_runs_of_other_settings_name_the_setting(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a.jsonl", "local", "native", run="a", image_size=224)
    b = _run(tmp_path / "b.jsonl", "local", "native", run="b", image_size=112)
    rc, got, _ = _compare(capsys, a, b)
    assert rc == 1
    assert got["data"]["unpaired"] == "nothing pairs: not paired: image size differs (224 vs 112)"


def test_two_runs_of_one_arm_pair(tmp_path: Path, capsys) -> None:
    a = _run(tmp_path / "a.jsonl", "local", "native", run="a")
    b = _run(tmp_path / "b.jsonl", "local", "native", run="b")
    rc, got, _ = _compare(capsys, a, b)
    assert rc == 0 and got["ok"] and got["data"]["unpaired"] is None


def test_the_table_is_not_printed_empty(tmp_path: Path) -> None:
    """As a user runs it: the console script, outside the checkout, no --json."""
    a = _run(tmp_path / "a.jsonl", "ironic-bm", "native", run="a")
    b = _run(tmp_path / "b.jsonl", "nova-pci", "native", run="b")
    r = subprocess.run([GPULAB, "compare", str(a), str(b)], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120, stdin=subprocess.DEVNULL,
                       env=dict(os.environ, COLUMNS="200", NO_COLOR="1"))  # fmt: skip
    assert r.returncode == 1
    assert "Throughput per paired group" not in r.stdout and "Environment" in r.stdout
    assert r.stderr.startswith("gpulab: error: nothing pairs: the sides have no arm in common")
