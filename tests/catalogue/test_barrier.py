"""The start barrier of concurrent jobs and the statistics of their timed windows
(workloads/scenarios/barrier.py), on its own: real pipes and real child processes (short
Python scripts that take the barrier the way a job does), no scenario around them.

Kept apart from test_shared_and_sharing.py so that a mutant of the barrier runs only these tests (a
few seconds): a barrier that never lets go hangs until the mutation run's timeout, which is a
multiple of the time of the tests that reach the mutated code.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from workloads.scenarios.barrier import (
    ENV_FDS,
    ENV_TIMEOUT,
    Barrier,
    BarrierError,
    Start,
    wait_in_child,
    window_stats,
)
from workloads.scenarios.procs import ProcGroup

# --- barrier ---------------------------------------------------------------------------------


def test_window_stats_edges() -> None:
    w = window_stats([(2.0, 6.0), (0.0, 3.0)])  # given out of order
    assert (w.union_s, w.together_s, w.start_spread_s, w.end_spread_s) == (6.0, 1.0, 2.0, 3.0)
    assert w.overlap == pytest.approx(1 / 6)
    point = window_stats([(1.0, 1.0)])  # an empty window is allowed, its overlap is 0
    assert (point.union_s, point.overlap) == (0.0, 0.0)
    touching = window_stats([(0.0, 1.0), (1.0, 3.0)])
    assert (touching.union_s, touching.together_s) == (3.0, 0.0)
    apart = window_stats([(0.0, 1.0), (5.0, 6.0), (2.0, 4.0)])
    assert (apart.union_s, apart.together_s, apart.end_spread_s) == (4.0, 0.0, 5.0)
    late = window_stats([(13.0, 30.0), (10.0, 20.0)])  # wall-clock starts are far from 0
    assert (late.start_spread_s, late.end_spread_s, late.together_s) == (3.0, 10.0, 7.0)
    inner = window_stats([(0.0, 10.0), (2.0, 3.0), (4.0, 5.0)])
    assert (inner.union_s, inner.together_s) == (10.0, 0.0)
    with pytest.raises(ValueError, match="non-empty"):
        window_stats([])
    with pytest.raises(ValueError):
        window_stats([(0.0, 1.0), (3.0, 2.0)])


def test_barrier_env_names_both_ends_and_a_whole_second_timeout() -> None:
    gate = Barrier()
    try:
        assert gate.fds == (gate.ready_w, gate.go_r)
        env = gate.env(12.6)
        assert env == {ENV_FDS: f"{gate.ready_w},{gate.go_r}", ENV_TIMEOUT: "13"}
        assert gate.env(0.2)[ENV_TIMEOUT] == "1"  # at least one second
        assert gate.env(-5)[ENV_TIMEOUT] == "1"
    finally:
        gate.close()


def test_wait_in_child_without_a_barrier_is_false(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ENV_FDS, raising=False)
    assert wait_in_child() is False
    monkeypatch.setenv(ENV_FDS, "")
    assert wait_in_child() is False


def _child_side(monkeypatch: pytest.MonkeyPatch, timeout: str | None) -> tuple[int, int, int]:
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    monkeypatch.setenv(ENV_FDS, f"{ready_w},{go_r}")
    if timeout is None:
        monkeypatch.delenv(ENV_TIMEOUT, raising=False)
    else:
        monkeypatch.setenv(ENV_TIMEOUT, timeout)
    return ready_r, go_r, go_w


def test_wait_in_child_reports_ready_then_leaves_on_release(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ready_r, go_r, go_w = _child_side(monkeypatch, None)
    os.write(go_w, b"g")
    try:
        assert wait_in_child() is True
        assert os.read(ready_r, 8) == b"r"
        assert os.read(ready_r, 8) == b""  # the child's ready end is closed
        assert ENV_FDS not in os.environ  # taken, so a grandchild does not wait again
        with pytest.raises(OSError):
            os.fstat(go_r)  # the go end is closed too
    finally:
        os.close(ready_r)
        os.close(go_w)


def test_a_job_keeps_the_seconds_it_waited_at_the_barrier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Job.on_step after the last warm-up step waits at the barrier and keeps how long
    (the record's params.barrier_wait_s: the shared scenario leaves it out of the elapsed
    time); a job without a barrier keeps None."""
    import threading

    from workloads.scenarios import Job

    job = Job(suite="t", experiment="e", model="mnist_cnn")
    job.on_step("warmup", 2, 2)
    assert job.barrier_wait_s is None
    ready_r, _go_r, go_w = _child_side(monkeypatch, None)
    release = threading.Timer(0.3, os.write, (go_w, b"g"))
    release.start()
    try:
        job.on_step("warmup", 1, 2)  # not the last warm-up step: no wait
        assert job.barrier_wait_s is None
        job.on_step("warmup", 2, 2)
        assert job.barrier_wait_s is not None and 0.25 <= job.barrier_wait_s < 5.0
        assert "barrier_wait_s" not in job.to_json()
    finally:
        release.join()
        os.close(ready_r)
        os.close(go_w)


def test_wait_in_child_takes_one_release_and_leaves_the_rest(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """All children share one go pipe and the parent writes one byte per child at once: a
    child takes exactly one, so the others still find theirs."""
    ready_r, go_r, go_w = _child_side(monkeypatch, "30")
    other = os.dup(go_r)  # another child's copy of the go end
    os.write(go_w, b"gg")
    try:
        assert wait_in_child() is True
        assert os.read(other, 8) == b"g"
    finally:
        for fd in (ready_r, go_w, other):
            os.close(fd)


def test_wait_in_child_times_out_and_sees_a_closed_barrier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ready_r, go_r, go_w = _child_side(monkeypatch, "0.3")
    t0 = time.monotonic()
    try:
        with pytest.raises(BarrierError, match=r"^start barrier not released within 0 s$"):
            wait_in_child()
        assert 0.25 < time.monotonic() - t0 < 3
        with pytest.raises(OSError):
            os.fstat(go_r)
    finally:
        os.close(ready_r)
        os.close(go_w)
    ready_r, go_r, go_w = _child_side(monkeypatch, "30")
    os.close(go_w)  # the parent went away without a release
    try:
        with pytest.raises(
            BarrierError, match=r"^start barrier closed without a release \(the parent exited\)$"
        ):
            wait_in_child()
    finally:
        os.close(ready_r)
    ready_r, go_r, go_w = _child_side(monkeypatch, "30")
    os.write(go_w, b"x")  # anything but the release byte is no release
    try:
        with pytest.raises(BarrierError, match="closed without a release"):
            wait_in_child()
    finally:
        os.close(ready_r)
        os.close(go_w)


CHILD = """
import sys, time
from workloads.scenarios.barrier import wait_in_child
time.sleep(float(sys.argv[1]))
wait_in_child()
print("left", flush=True)
time.sleep(float(sys.argv[2]))
"""


def _start(group: ProcGroup, gate: Barrier, argvs: list[list[str]], timeout: float) -> list[Any]:
    """One child per argv behind ``gate``, then the parent's copies of their ends dropped."""
    procs = [
        group.start(f"c{i}", argv, gate.env(timeout), pass_fds=gate.fds)
        for i, argv in enumerate(argvs)
    ]
    gate.children_started()
    return procs


def test_barrier_counts_every_ready_child_and_releases_exactly_n(tmp_path: Path) -> None:
    with ProcGroup(tmp_path) as group:
        gate = Barrier()
        try:
            childrens_ends = gate.fds
            argvs = [[sys.executable, "-c", CHILD, str(0.1 * i), "0"] for i in range(3)]
            procs = _start(group, gate, argvs, 30)
            for fd in childrens_ends:  # the parent's copies are gone
                with pytest.raises(OSError):
                    os.fstat(fd)
            assert gate.wait_ready(procs, time.monotonic() + 30) is None
            assert gate.ready == 3
            before = time.time()
            released = gate.release(3)
            assert before <= released <= time.time()
            assert group.wait(procs, time.monotonic() + 20)
            assert [p.popen.returncode for p in procs] == [0, 0, 0]
        finally:
            gate.close()


# CHILD that also prints a variable of the environment it was given.
CHILD_ENV = CHILD.replace('print("left"', 'print(os.environ["GPULAB_T"], flush=True)\nprint("left"')
CHILD_ENV = CHILD_ENV.replace("import sys, time", "import os, sys, time")


def _starter(group: ProcGroup, name: str, argv: list[str]) -> Start:
    return lambda env, fds: group.start(name, argv, env, pass_fds=fds)


def test_launch_starts_every_child_behind_the_barrier_and_with_closes_the_rest(
    tmp_path: Path,
) -> None:
    """launch(): the barrier's variables over the given ones (a stale barrier variable in the
    jobs' environment must not win), every child waits until the release, the parent keeps
    none of the children's ends; leaving the ``with`` closes its own two."""
    with ProcGroup(tmp_path) as group:
        with Barrier() as gate:
            ends = (gate.ready_r, gate.ready_w, gate.go_r, gate.go_w)
            argvs = [[sys.executable, "-c", CHILD_ENV, str(0.1 * i), "0"] for i in range(3)]
            seen: list[dict[str, str]] = []  # the environment each start was given

            def seeing(start: Any) -> Any:
                return lambda env, fds: (seen.append(env), start(env, fds))[1]

            starts = [seeing(_starter(group, f"c{i}", a)) for i, a in enumerate(argvs)]
            env = {"GPULAB_T": "given", ENV_FDS: "98,99", ENV_TIMEOUT: "0"}
            procs = gate.launch(starts, env, time.monotonic() + 30)
            assert [p.name for p in procs] == ["c0", "c1", "c2"]
            # the children wait at most until the parent's deadline: 30 s from now
            assert [e[ENV_TIMEOUT] for e in seen] == ["30"] * 3
            assert [_is_open(fd) for fd in ends] == [True, False, False, True]
            assert gate.wait_ready(procs, time.monotonic() + 30) is None
            time.sleep(0.3)  # time to leave, were the barrier not holding them
            assert [p.popen.poll() for p in procs] == [None] * 3
            assert not any("left" in p.log.read_text() for p in procs)
            gate.release(3)
            assert group.wait(procs, time.monotonic() + 20)
            assert [p.popen.returncode for p in procs] == [0, 0, 0]
            assert all(p.log.read_text().split() == ["given", "left"] for p in procs)
        assert [_is_open(fd) for fd in ends] == [False] * 4


def test_a_start_that_raises_in_launch_leaves_the_ends_to_the_with(tmp_path: Path) -> None:
    """The second job cannot be started: the ``with`` closes all four ends, so the first
    sees the barrier closed and exits long before its timeout (60 s)."""

    def broken(env: dict[str, str], fds: tuple[int, ...]) -> Any:
        raise OSError("no such wrapper")

    with ProcGroup(tmp_path) as group:
        first = _starter(group, "c0", [sys.executable, "-c", CHILD, "0", "0"])
        with pytest.raises(OSError, match="no such wrapper"), Barrier() as gate:
            ends = (gate.ready_r, gate.ready_w, gate.go_r, gate.go_w)
            gate.launch([first, broken], {}, time.monotonic() + 60)
        assert [_is_open(fd) for fd in ends] == [False] * 4
        (proc,) = group.procs
        assert group.wait([proc], time.monotonic() + 30)
        assert proc.popen.returncode != 0
        # its ready write finds no reader, or its go read finds EOF: either way, no release
        log = proc.log.read_text()
        assert "BrokenPipeError" in log or "closed without a release" in log


# CHILD that leaves a mark (argv[3]) just before it tells the barrier it is ready.
CHILD_MARKED = CHILD.replace("wait_in_child()", "open(sys.argv[3], 'w').close()\nwait_in_child()")


def test_barrier_deadline_names_how_many_are_not_ready(tmp_path: Path) -> None:
    marks = [tmp_path / f"c{i}.imported" for i in range(3)]
    with ProcGroup(tmp_path) as group:
        gate = Barrier()
        try:
            argvs = [
                [sys.executable, "-c", CHILD_MARKED, str(s), "0", str(marks[i])]
                for i, s in enumerate((0.0, 30.0, 30.0))
            ]
            procs = _start(group, gate, argvs, 60)
            # The first child's Python start and imports take from 0.1 s to many seconds on a
            # busy machine: the deadline starts once it is about to say it is ready.
            deadline = time.monotonic() + 60
            while not marks[0].exists():
                assert time.monotonic() < deadline, "the first child never got to its barrier"
                time.sleep(0.02)
            t0 = time.monotonic()
            why = gate.wait_ready(procs, time.monotonic() + 1.5)
            assert why == "2 of 3 jobs not warmed up by the deadline"
            assert 1.4 < time.monotonic() - t0 < 5
            assert gate.wait_ready(procs, time.monotonic() - 1) == (
                "2 of 3 jobs not warmed up by the deadline"
            )
        finally:
            gate.close()


def test_barrier_sees_a_child_exit_after_every_ready_end_closed(tmp_path: Path) -> None:
    """Both children close their ready ends without a byte; one then exits 5 after a while:
    the parent waits for the exit and names it rather than spinning to the deadline."""
    closer = (
        "import os, sys, time\n"
        "fds = os.environ['GPULAB_BARRIER_FDS'].split(',')\n"
        "os.close(int(fds[0]))\n"
        "time.sleep(float(sys.argv[1]))\n"
        "sys.exit(int(sys.argv[2]))\n"
    )
    with ProcGroup(tmp_path) as group:
        gate = Barrier()
        try:
            argvs = [[sys.executable, "-c", closer, t, rc] for t, rc in (("0.6", "5"), ("20", "0"))]
            procs = _start(group, gate, argvs, 30)
            t0 = time.monotonic()
            why = gate.wait_ready(procs, time.monotonic() + 10)
            assert why is not None and why.startswith("c0 exited 5 before the start barrier")
            assert time.monotonic() - t0 < 5
            assert gate.ready == 0
        finally:
            gate.close()


def test_close_never_closes_a_number_that_was_reused(tmp_path: Path) -> None:
    """children_started() frees the children's ends; the next open() may get one of their
    numbers (a job's log, a temporary file). close() must leave that file open."""
    gate = Barrier()
    freed = set(gate.fds)
    gate.children_started()
    gate.children_started()  # a second call closes nothing
    opened = [os.open(tmp_path / f"f{i}", os.O_CREAT | os.O_RDWR) for i in range(2)]
    try:
        assert freed & set(opened), "the kernel hands out the lowest free numbers"
        gate.close()
        gate.close()
        for fd in opened:
            os.fstat(fd)  # still open
            os.write(fd, b"x")
    finally:
        for fd in opened:
            os.close(fd)


def test_wait_in_child_with_a_go_end_that_is_not_open_raises_oserror(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A wrapper that closed the inherited go end: the select's EBADF comes out as it is (the
    close in the cleanup must not replace it with an error of its own)."""
    ready_r, ready_w = os.pipe()
    go_r, go_w = os.pipe()
    os.close(go_r)
    os.close(go_w)
    monkeypatch.setenv(ENV_FDS, f"{ready_w},{go_r}")
    monkeypatch.setenv(ENV_TIMEOUT, "5")
    try:
        with pytest.raises(OSError):
            wait_in_child()
        assert os.read(ready_r, 8) == b"r"
    finally:
        os.close(ready_r)


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_children_started_closes_the_childrens_ends_and_close_the_rest() -> None:
    """No end leaks: the children's two after children_started(), the parent's two at close();
    nothing is opened in between, so a number still open is the barrier's own."""
    gate = Barrier()
    ready_r, ready_w, go_r, go_w = gate.ready_r, gate.ready_w, gate.go_r, gate.go_w
    gate.children_started()
    assert [_is_open(fd) for fd in (ready_r, ready_w, go_r, go_w)] == [True, False, False, True]
    gate.close()
    assert [_is_open(fd) for fd in (ready_r, ready_w, go_r, go_w)] == [False] * 4
    # every end is marked closed, so no later close() reaches a number reused since
    assert (gate.ready_r, gate.ready_w, gate.go_r, gate.go_w) == (-1, -1, -1, -1)


def test_close_after_an_end_was_closed_elsewhere_does_not_raise() -> None:
    gate = Barrier()
    os.close(gate.go_w)  # e.g. by a wrapper's cleanup of inherited descriptors
    ready_r = gate.ready_r
    gate.close()
    assert not _is_open(ready_r)


def test_an_end_on_descriptor_0_is_closed_too() -> None:
    """A process started with stdin closed gets descriptor 0 for the first pipe end (here:
    this process's descriptor 0 is moved away for the test and put back)."""
    saved = os.dup(0)
    try:
        os.close(0)
        gate = Barrier()
        assert gate.ready_r == 0
        gate.close()
        assert not _is_open(0)
    finally:
        os.dup2(saved, 0)
        os.close(saved)


def test_close_without_children_started_closes_all_four_ends() -> None:
    """The jobs could not be started (a bad wrapper): close() alone leaks nothing."""
    gate = Barrier()
    ends = (gate.ready_r, gate.ready_w, gate.go_r, gate.go_w)
    gate.close()
    assert [_is_open(fd) for fd in ends] == [False] * 4
