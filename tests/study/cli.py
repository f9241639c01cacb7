"""The gpulab CLI as a user runs it (a subprocess), and the processes it leaves, read from /proc."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from tests.parts import REPO

LONG_SUITE = Path(__file__).resolve().parent / "long-cpu.yaml"


def env(tmp_path: Path) -> dict[str, str]:
    """No Docker engine, wide lines, a registry of runners and a TMPDIR of the test's own (a
    runner killed with gpulab cannot remove its job's temporary directory)."""
    out = dict(os.environ, COLUMNS="200", TERM="dumb", DOCKER_HOST="unix:///nonexistent.sock")
    out["GPULAB_RUNTIME_DIR"] = str(tmp_path / "runners")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    out["TMPDIR"] = str(tmp_path / "tmp")
    out.pop("GPULAB_RESULTS", None)
    return out


def gpulab_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "infra.cli", *args]


def start(argv: list[str], tmp_path: Path) -> subprocess.Popen[str]:
    """As from a terminal: SIGINT at its default, whatever this test runner inherited."""
    return subprocess.Popen(
        argv,
        cwd=REPO,
        env=env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def gpulab(tmp_path: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        gpulab_argv(*args),
        cwd=REPO,
        env=env(tmp_path),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def long_study(tmp_path: Path, name: str = "t", repeats: int = 1) -> Path:
    """One native arm on the local topology running the long suite (2 records a unit)."""
    path = tmp_path / f"{name}.yaml"
    doc: dict[str, Any] = {
        "name": name,
        "suite": str(LONG_SUITE),
        "repeats": repeats,
        "arms": [{"name": "a", "stack": "local", "exec_env": "native"}],
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def journal(results: Path, name: str = "t") -> dict[str, Any]:
    path = results / f"study-{name}" / "study.json"
    try:
        got: dict[str, Any] = json.loads(path.read_text())
    except (OSError, ValueError):  # not yet written (or being renamed into place)
        return {}
    return got


def wait_measuring(proc: subprocess.Popen[str]) -> int:
    """Until gpulab's runner child (``python -m workloads bench``) measures: a measuring
    process under the runner (started as its own interpreter, or forked from the runner's
    zygote) or under gpulab (forked from the study's zygote, infra/study/local.py: a child of
    gpulab's, asked for by the runner); the runner's pid."""
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        tree = descendants(proc.pid)
        for pid in tree:
            if "workloads bench" in cmdline(pid) and any(is_measuring(p) for p in tree):
                return pid
        time.sleep(0.2)
    raise AssertionError(f"no runner measured under pid {proc.pid} (exit {proc.poll()})")


def is_measuring(pid: int) -> bool:
    """A measuring process: forked from a zygote (its cmdline is the zygote's, its parent the
    zygote), or one started as its own interpreter."""
    if "workloads _measure" in cmdline(pid):
        return True
    try:
        ppid = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])
    except (OSError, ValueError, IndexError):
        return False
    return "workloads _zygote" in cmdline(pid) and "workloads _zygote" in cmdline(ppid)


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def _parents() -> dict[int, int]:
    out = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if fields and fields[0] not in ("Z", "X"):
            out[int(stat.parent.name)] = int(fields[1])
    return out


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, at any depth (zombies are not alive)."""
    parents = _parents()
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parents.items() if pp == p]
        found += kids
        todo += kids
    return found


def alive(pids: list[int]) -> list[str]:
    """The pids still running (with their command line)."""
    out = []
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        try:
            state = stat.read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in ("Z", "X"):
            out.append(f"{pid} {cmdline(pid)}")
    return out


def wait_gone(pids: list[int], within_s: float = 10.0) -> list[str]:
    deadline = time.monotonic() + within_s
    while alive(pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive(pids)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]
