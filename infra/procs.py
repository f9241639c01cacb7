"""The runner's child processes: started so that they never outlive gpulab, and recognized
again later (a pid with its start time, so a reused pid is never mistaken for the runner).

A child is started in its own process group (``process_group=0``) so that a signal reaches it
and its helpers together and only when gpulab sends it, and with ``PR_SET_PDEATHSIG`` (Linux)
so that the kernel ends it when gpulab dies, even by ``kill -9``. The runner does the same for
its measuring children, which ends the whole tree.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

PR_SET_PDEATHSIG = 1


def host() -> str:
    return socket.gethostname()


def start_ticks(pid: int) -> int | None:
    """When process ``pid`` started (clock ticks since boot, /proc/<pid>/stat field 22);
    None when there is no such process, it has ended (a zombie), or there is no /proc."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2 :].split()  # the command may hold spaces and ')'
    if fields[:1] in ([b"Z"], [b"X"]):  # a zombie: ended, not yet reaped
        return None
    try:
        return int(fields[19])
    except (IndexError, ValueError):
        return None


@dataclass(frozen=True)
class ProcessRef:
    """A process as gpulab recorded it: pid, start time and host."""

    pid: int
    start: int | None
    host: str

    @classmethod
    def of(cls, pid: int) -> ProcessRef:
        return cls(pid, start_ticks(pid), host())

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "start": self.start, "host": self.host}

    @classmethod
    def from_json(cls, raw: Any) -> ProcessRef | None:
        if not isinstance(raw, dict):
            return None
        pid, start, where = raw.get("pid"), raw.get("start"), raw.get("host")
        if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
            return None
        if start is not None and (isinstance(start, bool) or not isinstance(start, int)):
            return None
        return cls(pid, start, str(where or ""))

    def here(self) -> bool:
        return self.host == host()

    def alive(self) -> bool:
        """Still running (on this host: the same pid with the same start time)."""
        if not self.here():
            return False
        now = start_ticks(self.pid)
        return now is not None and (self.start is None or now == self.start)


def signal_group(pgid: int, sig: int) -> None:
    """``kill -SIG -pgid``; a group already gone (or not ours) is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def stop_process(ref: ProcessRef, grace_s: float = 10.0) -> bool:
    """End a recorded process and its group: SIGTERM, then SIGKILL after ``grace_s``.
    True when it is gone (or was already)."""
    if not ref.alive():
        return True
    signal_group(ref.pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while ref.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    if ref.alive():
        signal_group(ref.pid, signal.SIGKILL)
        deadline = time.monotonic() + 5.0
        while ref.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    return not ref.alive()


def die_with_parent() -> Callable[[], None]:
    """A ``preexec_fn``: the child gets SIGKILL when this process dies (Linux), and ends at
    once if this process died before the call. libc is resolved here, in the parent, so the
    child (forked beside other threads) only makes two system calls."""
    parent = os.getpid()
    try:
        prctl: Any = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # not Linux: the process group and the resume check
        prctl = None

    def preexec() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:
            os.kill(os.getpid(), signal.SIGKILL)

    return preexec
