"""`gpulab study run` as a user runs it, with the real runner (TensorFlow, MNIST CNN on the
CPU): a second command while a study runs, SIGTERM, and SIGKILL then a resume.

What must hold: one run of a study at a time (the second `run`, `run --fresh` and `report`
say who runs it, in one line, exit 2, and touch nothing); a stop signal ends the runner with
gpulab and leaves no unit "running" (exit 143 for SIGTERM); after `kill -9` no runner outlives
gpulab and the resume measures alone, so no record is flagged as overlapped.
"""

from __future__ import annotations

import re
import signal
import socket
from pathlib import Path

import pytest

from tests.study.cli import (
    alive,
    descendants,
    gpulab,
    gpulab_argv,
    journal,
    long_study,
    records,
    start,
    wait_gone,
    wait_measuring,
)

pytestmark = [pytest.mark.slow, pytest.mark.tf]


def run_argv(study: Path, results: Path, *extra: str) -> list[str]:
    return gpulab_argv("study", "run", str(study), "--results-dir", str(results), *extra)


def test_a_second_run_fresh_or_report_is_refused_while_a_study_runs(tmp_path: Path) -> None:
    study, results = long_study(tmp_path), tmp_path / "results"
    first = start(run_argv(study, results, "--no-report"), tmp_path)
    try:
        wait_measuring(first)
        busy = re.compile(
            rf"gpulab: error: study t is in use by `gpulab study run` \(pid {first.pid} on host "
            rf"{re.escape(socket.gethostname())}, since \S+\); wait for it to end or stop it "
            rf"\(lock {re.escape(str(results / 'study-t.lock'))}\)"
        )
        for args in (["run"], ["run", "--fresh"], ["report"]):
            r = gpulab(tmp_path, "study", *args, str(study), "--results-dir", str(results))
            print(f"\n[second `study {' '.join(args)}`] exit {r.returncode}: {r.stderr.strip()}")
            assert r.returncode == 2, r.stderr
            assert busy.fullmatch(r.stderr.strip()), r.stderr
        status = gpulab(tmp_path, "study", "status", str(study), "--results-dir", str(results))
        assert status.returncode == 0, status.stderr
        assert f"in use now by `gpulab study run` (pid {first.pid}" in status.stdout
        _out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err[-2000:]
    # the first run's records are intact: the unit is done with both, nothing moved aside
    j = journal(results)
    assert j["units"]["a#1"]["status"] == "done" and j["units"]["a#1"]["records"] == 2
    units = results / "study-t" / "units"
    assert [r["status"] for r in records(units / "a.r1.jsonl")] == ["ok", "ok"]
    assert sorted(p.name for p in units.iterdir()) == ["a.r1.jsonl", "a.r1.log"]
    assert sorted(p.name for p in results.iterdir()) == ["study-t", "study-t.lock"]
    assert len(j["runs"]) == 1  # the refused commands wrote nothing into the journal
    r = gpulab(tmp_path, "study", "report", str(study), "--results-dir", str(results))
    assert r.returncode == 0, r.stderr


def test_sigterm_stops_the_runner_with_gpulab_and_the_study_resumes(tmp_path: Path) -> None:
    study, results = long_study(tmp_path), tmp_path / "results"
    proc = start(run_argv(study, results, "--no-report"), tmp_path)
    try:
        runner = wait_measuring(proc)
        tree = descendants(proc.pid)
        assert j_runner(results) == runner  # the journal knows the runner it started
        proc.send_signal(signal.SIGTERM)  # `kill <pid>`: to gpulab alone
        _out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = wait_gone(tree, 5)
    print(f"\n[SIGTERM] exit {proc.returncode}; processes left: {left}; {err.strip()[-300:]}")
    assert proc.returncode == 143, err[-2000:]
    assert left == []
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "gpulab: error: study t interrupted in arm a, repeat 1 (SIGTERM): finished units kept; "
        "`gpulab study run` again continues"
    )
    j = journal(results)
    assert j["units"]["a#1"]["status"] == "pending"
    assert j["units"]["a#1"]["reason"] == "stopped part-way (SIGTERM); run again re-runs it"
    assert j["runs"][-1]["interrupted"] is True
    units = results / "study-t" / "units"
    (aside,) = units.glob("a.r1.stopped-*.jsonl")  # the runner's interrupted record, kept aside
    assert records(aside)[-1]["status"] == "interrupted"

    r = gpulab(tmp_path, "study", "run", str(study), "--results-dir", str(results), "--no-report")
    assert r.returncode == 0, r.stderr[-2000:]
    j = journal(results)
    assert j["units"]["a#1"]["status"] == "done" and j["units"]["a#1"]["records"] == 2
    assert [x["status"] for x in records(units / "a.r1.jsonl")] == ["ok", "ok"]


def j_runner(results: Path) -> int | None:
    runner = journal(results).get("units", {}).get("a#1", {}).get("runner") or {}
    return runner.get("pid")


def test_sigkill_then_resume_no_runner_outlives_gpulab_and_none_overlaps(tmp_path: Path) -> None:
    study, results = long_study(tmp_path), tmp_path / "results"
    proc = start(run_argv(study, results, "--no-report"), tmp_path)
    try:
        wait_measuring(proc)
        tree = descendants(proc.pid)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    left = wait_gone(tree, 5)  # the kernel ends the runner (and so its child) with gpulab
    print(f"\n[SIGKILL] exit {proc.returncode}; processes left after 5 s: {left}")
    assert left == []
    assert journal(results)["units"]["a#1"]["status"] == "running"  # nobody could say otherwise

    r = gpulab(tmp_path, "study", "run", str(study), "--results-dir", str(results), "--no-report")
    print(f"[resume] exit {r.returncode}: " + " | ".join(
        ln for ln in r.stderr.splitlines() if ln.startswith("study t:")))  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    assert "arm a, repeat 1 was left running by a run that ended without recording it" in (
        " ".join(r.stderr.split())
    )
    j = journal(results)
    assert j["units"]["a#1"]["status"] == "done" and j["units"]["a#1"]["records"] == 2
    assert not j["units"]["a#1"].get("overlapped")
    recs = records(results / "study-t" / "units" / "a.r1.jsonl")
    assert [x["status"] for x in recs] == ["ok", "ok"]
    assert not any("another runner" in f for x in recs for f in x.get("setting_flags") or [])
    assert alive(tree) == []
