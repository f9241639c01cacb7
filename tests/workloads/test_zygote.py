"""workloads/zygote.py: measuring processes forked from one that imported the framework once.

Real TensorFlow, real processes: ``python -m workloads bench`` as a user runs it (with
``--process-start fork`` every measurement forked, each its own process; by default, as the
papers' runs, each its own interpreter), and the zygote's
promises one by one: a forked process whose asker goes away is killed, the zygote's end ends
its processes, a zygote that cannot come up leaves the run to start interpreters, saying why.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.parts import REPO
from workloads import zygote
from workloads.bench import job_env
from workloads.scenarios import Job
from workloads.scenarios.procs import pid_alive

pytestmark = [pytest.mark.tf, pytest.mark.slow]


def bench(
    tmp_path: Path, name: str, *args: str, env: dict[str, str] | None = None
) -> tuple[list[dict], Path]:
    tmp = tmp_path / f"tmp-{name}"
    tmp.mkdir()
    out = tmp_path / f"{name}.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "workloads", "bench", "--model", "mnist_cnn", "--batch", "8",
         "--steps", "2", "--warmup", "1", "--repeats", "2", "--out", str(out),
         "--gpu-path", "local", *args],
        cwd=REPO, env=dict(os.environ, TMPDIR=str(tmp), **(env or {})), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-2000:]
    assert "no zygote" not in err, err[-2000:]
    # the zygote (its name holds the runner's pid) ended with the run
    assert zygotes_of(proc.pid) == []
    return [json.loads(line) for line in out.read_text().splitlines()], tmp


def zygotes_of(pid: int) -> list[int]:
    """Processes of a zygote that runner ``pid`` started (running, or not yet reaped)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if f"workloads _zygote @gpulab-zygote-{pid}-" in cmd:
                found.append(int(entry.name))
    return found


def test_each_measurement_is_forked_its_own_process_and_exec_starts_interpreters(
    tmp_path: Path,
) -> None:
    records, tmp = bench(tmp_path, "forked", "--process-start", "fork")
    assert [r["status"] for r in records] == ["ok", "ok"]
    assert [r["params"]["process_start"] for r in records] == ["fork", "fork"]
    pids = {r["params"]["pid"] for r in records}
    assert len(pids) == 2 and os.getpid() not in pids
    assert list(tmp.iterdir()) == []  # nothing left in TMPDIR (the zygote's socket has no file)

    records, tmp = bench(tmp_path, "exec")  # the default
    assert [r["params"]["process_start"] for r in records] == ["exec", "exec"]
    assert [r["status"] for r in records] == ["ok", "ok"]

    # the environment variable --help names, and the option over it (one measurement each:
    # the last --repeats counts)
    fork = {"GPULAB_PROCESS_START": "fork"}
    records, _ = bench(tmp_path, "env", "--repeats", "1", env=fork)
    assert [r["params"]["process_start"] for r in records] == ["fork"]
    records, _ = bench(tmp_path, "both", "--repeats", "1", "--process-start", "exec", env=fork)
    assert [r["params"]["process_start"] for r in records] == ["exec"]


def test_a_runner_given_a_zygote_forks_from_it_and_starts_none(tmp_path: Path) -> None:
    """What a study on ``local`` does for its units (infra/study/local.py): the runner given a
    zygote of its backend (``$GPULAB_ZYGOTE``) forks its measuring processes from it and starts
    no zygote of its own; a runner whose suite execs starts interpreters though it was given one
    (every interpreter counted by tests/lifecycle/launch_counter)."""
    from tests.lifecycle.first_run import COUNTER_DIR, measure_launches, zygote_launches

    z = zygote.Zygote.start("tensorflow", job_env("tensorflow"))
    assert z is not None
    launches = tmp_path / "launches.log"
    path = (str(COUNTER_DIR), os.environ.get("PYTHONPATH", ""))
    env = {
        "PYTHONPATH": os.pathsep.join(p for p in path if p),
        "GPULAB_TEST_LAUNCHES": str(launches),
        zygote.ENV: z.path,
        zygote.BACKEND_ENV: "tensorflow",
    }
    try:
        records, _ = bench(tmp_path, "given", "--process-start", "fork", env=env)
        assert [r["params"]["process_start"] for r in records] == ["fork", "fork"]
        assert zygote_launches(launches) == [] and measure_launches(launches) == []

        records, _ = bench(tmp_path, "given-exec", "--process-start", "exec", env=env)
        assert [r["params"]["process_start"] for r in records] == ["exec", "exec"]
        assert zygote_launches(launches) == [] and len(measure_launches(launches)) == 2
        assert z.proc.poll() is None  # the runners leave the zygote they were given running
    finally:
        z.close()


def long_job() -> str:
    job = Job(suite="t", experiment="e", model="mnist_cnn", batch=8, steps=100000, warmup=1)
    return json.dumps(job.to_json())


def spawn_long(tmp_path: Path, z: zygote.Zygote, name: str) -> zygote.Forked:
    log = tmp_path / f"{name}.log"
    stdin_r, writer = zygote.pipe_in()
    with open(log, "wb") as fh, zygote.exported(z):
        forked = zygote.spawn(job_env("tensorflow"), stdin_r, fh.fileno(), fh.fileno())
    os.close(stdin_r)
    writer.write(long_job())
    writer.close()
    assert forked is not None
    deadline = time.monotonic() + 120
    while "@gpulab progress" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert "@gpulab progress" in log.read_text(), log.read_text()[-2000:]
    return forked


def gone(pid: int, within: float = 15.0) -> bool:
    deadline = time.monotonic() + within
    while pid_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not pid_alive(pid)


def test_a_forked_process_is_its_own_session_and_dies_when_its_asker_or_the_zygote_goes(
    tmp_path: Path,
) -> None:
    z = zygote.Zygote.start("tensorflow", job_env("tensorflow"))
    assert z is not None
    try:
        first = spawn_long(tmp_path, z, "first")
        assert first.pid != z.proc.pid and os.getsid(first.pid) == first.pid
        assert first.poll() is None
        first.conn.close()  # the asking process went away
        assert gone(first.pid)

        second = spawn_long(tmp_path, z, "second")
        os.kill(second.pid, signal.SIGTERM)  # a signal to it: its status comes back
        assert second.wait(timeout=30) == -signal.SIGTERM

        third = spawn_long(tmp_path, z, "third")
    finally:
        z.close()
    assert gone(third.pid) and third.wait(timeout=5) != 0
    assert z.proc.returncode is not None


def test_another_user_gets_no_process_from_the_zygote() -> None:
    """The socket is abstract (no file permissions): the zygote serves its own user only (a
    job can name commands to run). A client as ``nobody`` is hung up on, forked nothing."""
    z = zygote.Zygote.start("tensorflow", job_env("tensorflow"))
    assert z is not None
    try:
        code = (
            "import socket, sys\n"
            "s = socket.socket(socket.AF_UNIX)\n"
            f"s.connect({zygote.address(z.path)!r})\n"
            "try:\n"
            "    s.sendall(b'{}\\n')\n"
            "    print(repr(s.recv(100)))\n"
            "except OSError:\n"
            "    print('hung up')\n"
        )
        r = subprocess.run(
            ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
             sys.executable, "-c", code],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert r.returncode == 0 and r.stdout.strip() in ("b''", "hung up"), r.stderr
        assert children(z.proc.pid) == []
    finally:
        z.close()


def children(pid: int) -> list[int]:
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(x) for x in text.split()]


def test_a_zygote_that_cannot_come_up_says_why_and_the_run_starts_interpreters(
    capfd: pytest.CaptureFixture[str],
) -> None:
    z = zygote.Zygote.start("nosuchbackend", job_env("tensorflow"))
    assert z is None
    err = capfd.readouterr().err
    assert "no zygote (" in err and "nosuchbackend" in err, err
