"""`gpulab study run` as a user runs it, with the real runner (TensorFlow) on this machine.

The closer2018 study on the local topology (`--on-local`: each arm in its execution
environment here; the docker arms need a Docker engine and are skipped with the reason when
none answers) with a CPU-sized suite. The run is interrupted with SIGINT while an arm is
measuring, then run again: the finished records stay, none is written twice, the study ends
complete, and the report's verdict table shows method checks (a CPU run: no verdict word).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.parts import REPO

SUITE = Path(__file__).resolve().parent / "closer-cpu.yaml"


def study(*args: str, results: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "infra.cli",
        "study",
        *args,
        "--results-dir",
        str(results),
    ]


def journal(results: Path) -> dict:
    path = results / "study-closer2018" / "study.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def record_ids(results: Path) -> list[str]:
    units = results / "study-closer2018" / "units"
    return [
        json.loads(line)["record_id"]
        for f in sorted(units.glob("*.r[0-9].jsonl"), key=lambda f: f.stat().st_mtime)
        for line in f.read_text().splitlines()
        if line.strip()
    ]


def runner_running(pid: int) -> bool:
    """Whether a runner (`python -m workloads`) runs below process `pid`, read from /proc."""
    todo, seen = [pid], set()
    while todo:
        p = todo.pop()
        seen.add(p)
        try:
            cmd = Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")
            kids = [
                int(c)
                for t in Path(f"/proc/{p}/task").iterdir()
                for c in (t / "children").read_text().split()
            ]
        except (FileNotFoundError, ProcessLookupError):
            continue
        if p != pid and b"-m" in cmd and b"workloads" in cmd:
            return True
        todo += [k for k in kids if k not in seen]
    return False


@pytest.mark.slow
@pytest.mark.tf
def test_closer2018_on_local_interrupted_mid_arm_then_resumed(tmp_path: Path) -> None:
    results = tmp_path / "results"
    env = dict(os.environ, DOCKER_HOST="unix:///nonexistent/docker.sock", COLUMNS="200")
    env.pop("GPULAB_RESULTS", None)
    # the built-in study with 2 repeats (its own 8 are what a verdict needs; this test is about
    # the interruption and the resume)
    built_in = (REPO / "studies" / "closer2018.yaml").read_text()
    copy = tmp_path / "closer2018.yaml"
    copy.write_text(re.sub(r"(?m)^repeats: \d+", "repeats: 2", built_in))
    assert "repeats: 2" in copy.read_text()
    run = study("run", str(copy), "--on-local", "--suite", str(SUITE), results=results)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        run,
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # as from a terminal: SIGINT at its default, whatever this test runner inherited (a job
        # started with `&` by a non-interactive shell ignores SIGINT, and so would its children)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # wait until the third unit (arm vm) is measuring: the journal says it runs and its
        # runner process exists (a fixed wait raced a fast unit: the unit ended first and the
        # Ctrl-C fell into repeat 2), then Ctrl-C
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and proc.poll() is None:
            units = journal(results).get("units", {})
            if units.get("vm#1", {}).get("status") == "running" and runner_running(proc.pid):
                break
            time.sleep(0.1)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted in arm vm, repeat 1" in err
    j = journal(results)
    status = {k: v["status"] for k, v in j["units"].items()}
    # the study's 2 repeats, interleaved: bm cbm vm cvm, then cbm vm cvm bm
    assert [k for k in j["order"]] == [
        [a, r] for r, arms in ((1, "bm cbm vm cvm"), (2, "cbm vm cvm bm")) for a in arms.split()
    ]
    assert status == {
        **dict.fromkeys(status, "pending"),
        "bm#1": "done",
        "cbm#1": "skipped",
    }
    assert "no Docker engine" in j["units"]["cbm#1"]["reason"]
    before = record_ids(results)
    assert len(before) == j["units"]["bm#1"]["records"] == 1
    print(f"\n[study] interrupted after {time.monotonic() - t0:.0f} s: records {len(before)}")

    t1 = time.monotonic()
    r = subprocess.run(run, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "resuming" in r.stderr and "[3/8] arm vm, repeat 1/2" in r.stderr
    j = journal(results)
    assert {k: v["status"] for k, v in j["units"].items()} == {
        f"{arm}#{r}": "done" if arm in ("bm", "vm") else "skipped"
        for arm in ("bm", "cbm", "vm", "cvm")
        for r in (1, 2)
    }
    after = record_ids(results)
    assert set(before) <= set(after) and len(after) == len(set(after)) == 4
    print(
        f"[study] resumed in {time.monotonic() - t1:.0f} s: records {len(before)} -> {len(after)}"
    )
    print(r.stdout)
    # the verdict table: the claim the suite tests, judged on this CPU run and labelled so
    rep = json.loads((results / "study-closer2018" / "report" / "study.json").read_text())
    rows = {v["claim"]: v for v in rep["verdicts"]}
    assert rows["closer2018/single_synthetic"]["label"] == "CPU"
    assert rows["closer2018/single_synthetic"]["verdict"] == "method check"
    assert rows["closer2018/single_synthetic"]["verdict"] != "not measured"
    assert rows["closer2018/distributed_real"]["verdict"] == "not measured"
    assert "closer2018/single_synthetic" in r.stdout and "method" in r.stdout
    assert sorted(rep["missing_arms"]) == ["cbm", "cvm"]
