"""A start barrier for concurrent jobs, and the statistics of their timed windows.

Concurrent jobs (the ``sharing`` scenario) start timing together: each child reports the end
of its warm-up on a "ready" pipe and then blocks on a "go" pipe; the parent writes one byte
per job to "go" once every child is ready, so all of them leave the barrier at the same
moment. Both pipe ends travel to the children as inherited file descriptors named in
``$GPULAB_BARRIER_FDS`` ("<ready write end>,<go read end>"); a wrapper in front of the job
(e.g. ``bitfusion run ... --``) must keep inherited descriptors open. The child waits at most
``$GPULAB_BARRIER_TIMEOUT_S`` seconds (the parent's deadline), and the parent kills every job
at its deadline anyway, so a job that never gets ready cannot hang the run.

Each job records its timed window in wall-clock time (``timed_start_unix``,
``timed_end_unix``: the ``single`` scenario, see Job.on_step); :func:`window_stats` turns the
windows into the union of the windows, the time all jobs ran together and the overlap
fraction (together / union).
"""

from __future__ import annotations

import contextlib
import os
import select
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from workloads.scenarios.procs import Proc

ENV_FDS = "GPULAB_BARRIER_FDS"
ENV_TIMEOUT = "GPULAB_BARRIER_TIMEOUT_S"
GO = b"g"

# starts one job behind the barrier: (its environment, the descriptors it must inherit) -> it
Start = Callable[[dict[str, str], tuple[int, ...]], Proc]


class BarrierError(RuntimeError):
    """The barrier was not released (a timeout, or the parent went away)."""


def wait_in_child() -> bool:
    """In a job: report ready and wait for the release. False when no barrier is set."""
    spec = os.environ.pop(ENV_FDS, "")
    if not spec:
        return False
    ready_w, go_r = (int(x) for x in spec.split(","))
    timeout = float(os.environ.get(ENV_TIMEOUT, "3600"))
    try:
        os.write(ready_w, b"r")
        os.close(ready_w)
        readable, _, _ = select.select([go_r], [], [], timeout)
        if not readable:
            raise BarrierError(f"start barrier not released within {timeout:.0f} s")
        if os.read(go_r, 1) != GO:
            raise BarrierError("start barrier closed without a release (the parent exited)")
    finally:
        with contextlib.suppress(OSError):
            os.close(go_r)
    return True


class Barrier:
    """The parent's side: :meth:`launch` the jobs, then ready/release. Used as a context
    manager, so the parent's ends are closed however the run ends (a child that is still
    waiting then sees EOF on "go" and gives up rather than waiting for its timeout)."""

    def __init__(self) -> None:
        self.ready_r, self.ready_w = os.pipe()
        self.go_r, self.go_w = os.pipe()
        self.ready = 0

    @property
    def fds(self) -> tuple[int, ...]:
        return (self.ready_w, self.go_r)

    def env(self, timeout_s: float) -> dict[str, str]:
        return {ENV_FDS: f"{self.ready_w},{self.go_r}", ENV_TIMEOUT: f"{max(1.0, timeout_s):.0f}"}

    def __enter__(self) -> Barrier:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def launch(self, starts: Sequence[Start], env: Mapping[str, str], end: float) -> list[Proc]:
        """Start each job with the barrier's variables over ``env`` and its ends inherited,
        then drop the parent's copies of those ends. The children wait at most until ``end``
        (time.monotonic), the parent's deadline; a start that raises leaves the ends to
        :meth:`close` (the ``with``)."""
        job_env = {**env, **self.env(end - time.monotonic())}
        procs = [start(job_env, self.fds) for start in starts]
        self.children_started()
        return procs

    def children_started(self) -> None:
        """Drop the parent's copies of the children's ends (so EOF means they all went)."""
        _close(self.ready_w, self.go_r)
        self.ready_w = self.go_r = -1  # their numbers may now be reused by any other open()

    def wait_ready(self, procs: Sequence[Proc], deadline: float) -> str | None:
        """Wait (until ``deadline``, time.monotonic) for every job to be ready; None or why not."""
        closed = False  # every child closed its ready end: no more "ready" can come
        while self.ready < len(procs):
            left = deadline - time.monotonic()
            if left <= 0:
                return (
                    f"{len(procs) - self.ready} of {len(procs)} jobs not warmed up by the deadline"
                )
            if not closed:
                readable, _, _ = select.select([self.ready_r], [], [], min(left, 0.2))
                if readable:
                    got = os.read(self.ready_r, 64)
                    self.ready += len(got)
                    closed = not got
                    continue
            dead = [p for p in procs if p.popen.poll() is not None]
            if dead:
                p = dead[0]
                return f"{p.name} exited {p.popen.returncode} before the start barrier: {p.tail()}"
            if closed:  # a child closed its end but has not exited yet: wait for its exit
                time.sleep(0.05)
        return None

    def release(self, n: int) -> float:
        """Let ``n`` waiting jobs go at once; the wall-clock time of the release."""
        os.write(self.go_w, GO * n)
        return time.time()

    def close(self) -> None:
        """Close the ends still open, each once (never a number that something else reused)."""
        _close(self.ready_r, self.ready_w, self.go_r, self.go_w)
        self.ready_r = self.ready_w = self.go_r = self.go_w = -1


def _close(*fds: int) -> None:
    for fd in fds:
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)


@dataclass(frozen=True)
class WindowStats:
    union_s: float  # measure of the union of the windows (gaps excluded)
    together_s: float  # time every window was open at once
    start_spread_s: float  # latest start - earliest start
    end_spread_s: float  # latest end - earliest end

    @property
    def overlap(self) -> float:
        return self.together_s / self.union_s if self.union_s > 0 else 0.0


def window_stats(windows: Sequence[tuple[float, float]]) -> WindowStats:
    """Union, all-together time and spreads of ``(start, end)`` windows (wall-clock seconds)."""
    if not windows or any(e < s for s, e in windows):
        raise ValueError(f"windows must be non-empty (start, end) pairs, got {windows!r}")
    union = 0.0
    cur_s, cur_e = sorted(windows)[0]
    for s, e in sorted(windows)[1:]:
        if s > cur_e:
            union += cur_e - cur_s
            cur_s, cur_e = s, e
        else:
            cur_e = max(cur_e, e)
    union += cur_e - cur_s
    starts = [s for s, _ in windows]
    ends = [e for _, e in windows]
    return WindowStats(
        union_s=union,
        together_s=max(0.0, min(ends) - max(starts)),
        start_spread_s=max(starts) - min(starts),
        end_spread_s=max(ends) - min(ends),
    )
