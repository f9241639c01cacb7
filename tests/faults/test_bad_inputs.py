"""Every command that reads an input file, given a bad one: exit code 2, one line on stderr,
no traceback, and no file left behind.

Commands x cases (missing, a directory, binary, unreadable, empty, not a mapping). The CLI
runs as a user runs it (``.venv/bin/gpulab`` in a subprocess, cwd an empty directory so a
default ``results/`` would show). "Unreadable" is a FIFO (as root, ``chmod 000`` does not stop
a read; the FIFO would block a plain read forever) and, as another user, a ``chmod 000`` file.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.report.synth import reps, write

REPO = Path(__file__).resolve().parents[2]
GPULAB = str(Path(sys.executable).parent / "gpulab")

CASES = ["missing", "directory", "binary", "unreadable-fifo", "empty", "not-a-mapping"]
if os.geteuid() != 0:
    CASES.append("unreadable-mode-000")


def make_input(kind: str, path: Path) -> Path:
    """The bad input at ``path`` (its name ends in .yaml, so every command takes it as a path)."""
    if kind == "directory":
        path.mkdir()
    elif kind == "binary":
        path.write_bytes(b"\x7fELF\x02\x01\x01\x00\xff\xfe\x00\x00garbage\x80\x81")
    elif kind == "unreadable-fifo":
        os.mkfifo(path)
    elif kind == "unreadable-mode-000":
        path.write_text("config: {}\n")
        path.chmod(0)
    elif kind == "empty":
        path.write_text("")
    elif kind == "not-a-mapping":
        path.write_text("- just\n- a list\n")
    return path


def commands(bad: Path, work: Path) -> dict[str, list[str]]:
    one = reps("local", "native", experiment="e", model="resnet50", ips=100.0, repeats=1)
    records = write(work / "in" / "records.jsonl", one)
    return {
        "validate": ["validate", str(bad)],
        "preflight": ["preflight", str(bad)],
        "audit": ["audit", str(bad)],
        "bench --suite": ["bench", "--suite", str(bad), "--out", str(work / "b.jsonl")],
        "report --published": [
            "report", str(records), "--published", str(bad), "--out-dir",
            str(work / "rep"),
        ],
        "run local --suite": [
            "run", "local", "--suite", str(bad), "--results-dir", str(work / "res"),
            "--no-docker", "--no-report",
        ],
        "data mnist-like --out-dir": ["data", "mnist-like", "--out-dir", str(bad), "--train",
                                      "10", "--test", "10"],
        "study run": ["study", "run", str(bad), "--results-dir", str(work / "res")],
        "study status": ["study", "status", str(bad)],
        "inventory --outputs": ["inventory", "local", "--outputs", str(bad)],
        "compare": ["compare", str(bad), str(records)],
        "export": ["export", str(bad), "--format", "parquet", "--out", str(work / "x.parquet")],
    }  # fmt: skip


COMMANDS = [
    "validate", "preflight", "audit", "bench --suite", "report --published",
    "run local --suite", "data mnist-like --out-dir", "study run", "study status",
    "inventory --outputs", "compare", "export",
]  # fmt: skip


def _tree(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


# `data --out-dir` makes a missing directory and writes into an existing one: those two cases are
# not bad input for it, so they are not generated (rather than skipped).
TABLE = [
    (command, case)
    for command in COMMANDS
    for case in CASES
    if not (command.startswith("data") and case in ("missing", "directory"))
]


@pytest.mark.parametrize(("command", "case"), TABLE)
def test_bad_input_is_one_line_exit_2_and_leaves_nothing(
    tmp_path: Path, command: str, case: str
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    argv = commands(tmp_path / "bad.yaml", work)[command]
    bad = make_input(case, tmp_path / "bad.yaml")
    before = _tree(tmp_path)
    r = subprocess.run(
        [GPULAB, *argv], cwd=work, capture_output=True, text=True, timeout=120,
        env=dict(os.environ, GPULAB_RESULTS=str(work / "results"), NO_COLOR="1"),
    )  # fmt: skip
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert r.returncode == 2, (command, case, r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert "Traceback" not in r.stderr + r.stdout
    assert len(lines) == 1, lines
    assert lines[0].startswith("gpulab: error: "), lines[0]
    assert "bad.yaml" in lines[0], lines[0]  # the line names the input
    assert _tree(tmp_path) == before, (command, case, _tree(tmp_path) - before)
    assert bad.exists() or case == "missing"
