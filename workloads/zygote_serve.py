"""The zygote's side of workloads/zygote.py: ``python -m workloads _zygote @NAME BACKEND``.

It imports the backend's framework and the runner's modules once, listens on its abstract Unix
socket, and forks one measuring process per connection of its own user (``SO_PEERCRED``): the
process takes the passed descriptors at their numbers, the environment and working directory it
was asked for, its own session, and runs ``_measure`` as a fresh interpreter would. The zygote
reports the pid, then the exit status; it SIGKILLs a process whose asking process hung up, and
ends (its processes with it) when its stdin closes: the runner ended it, or died.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import selectors
import signal
import socket
import struct
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from workloads import zygote
from workloads.quick_exit import exit_now
from workloads.zygote import MAX_FDS, READY, address, die_with_parent


def peer_uid(conn: socket.socket) -> int:
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def preload(backend: str) -> None:
    """Import what a measurement imports before its own work: the framework and the runner."""
    from workloads.lean_imports import keep_out
    from workloads.step import select_backend

    keep_out(backend)
    select_backend(backend)
    if backend == "tensorflow":
        import tensorflow  # noqa: F401
    import workloads.expect_device
    import workloads.fingerprint
    import workloads.scenarios.single  # noqa: F401


def serve(name: str, backend: str, measure: Callable[[], int]) -> int:
    """The zygote's loop: fork a measuring process per connection, which runs ``measure``
    (``python -m workloads _measure``'s function) and ends with its status, until stdin closes
    (the runner ended it, or died). Only processes of this user are served (SO_PEERCRED): an
    abstract socket has no file permissions, and a job names commands to run (wrappers)."""
    die_with_parent()
    os.close(os.pidfd_open(os.getpid()))  # Linux >= 5.3 (else no zygote: the run execs)
    preload(backend)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address(name))
    listener.listen(64)
    sys.stdout.write(READY + "\n")
    sys.stdout.flush()
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ, "accept")
    sel.register(0, selectors.EVENT_READ, "owner")
    live: dict[int, tuple[socket.socket, int]] = {}  # pid -> (connection, pidfd)
    try:
        while True:
            for key, _mask in sel.select():
                what = key.data
                if what == "owner":
                    if not os.read(0, 4096):
                        return 0  # the runner closed our stdin (or died): done
                elif what == "accept":
                    conn, _ = listener.accept()
                    if peer_uid(conn) != os.getuid():
                        conn.close()
                        continue
                    pid = _fork_one(conn, listener, sel, live, measure)
                    if pid:
                        pidfd = os.pidfd_open(pid)
                        live[pid] = (conn, pidfd)
                        sel.register(pidfd, selectors.EVENT_READ, ("ended", pid))
                        sel.register(conn, selectors.EVENT_READ, ("client", pid))
                elif what[0] == "ended":
                    _reap(what[1], sel, live)
                elif what[0] == "client":  # the asking process went away (or hung up)
                    pid = what[1]
                    if pid in live:
                        with contextlib.suppress(OSError):
                            os.killpg(pid, signal.SIGKILL)
                        sel.unregister(live[pid][0])
    finally:
        for pid in list(live):
            with contextlib.suppress(OSError):
                os.killpg(pid, signal.SIGKILL)


def _reap(
    pid: int, sel: selectors.BaseSelector, live: dict[int, tuple[socket.socket, int]]
) -> None:
    conn, pidfd = live.pop(pid)
    _, status = os.waitpid(pid, 0)
    with contextlib.suppress(KeyError, ValueError):
        sel.unregister(pidfd)
    os.close(pidfd)
    with contextlib.suppress(KeyError, ValueError):
        sel.unregister(conn)
    with contextlib.suppress(OSError):
        conn.sendall((json.dumps({"rc": os.waitstatus_to_exitcode(status)}) + "\n").encode())
    conn.close()


def _read_request(conn: socket.socket) -> tuple[dict[str, Any], list[int]]:
    data, fds, _flags, _addr = socket.recv_fds(conn, 1 << 20, MAX_FDS)
    while not data.endswith(b"\n"):
        more = conn.recv(1 << 20)
        if not more:
            break
        data += more
    return json.loads(data), fds


def _fork_one(
    conn: socket.socket,
    listener: socket.socket,
    sel: selectors.BaseSelector,
    live: dict[int, tuple[socket.socket, int]],
    measure: Callable[[], int],
) -> int:
    try:
        request, fds = _read_request(conn)
    except (OSError, ValueError):
        conn.close()
        return 0
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        try:
            for _c, pidfd in live.values():
                os.close(pidfd)
            sel.close()
            _become_child(request, fds, [listener, conn, *(c for c, _ in live.values())])
            if os.getppid() != parent:  # the zygote died before PR_SET_PDEATHSIG was set
                os._exit(1)
            exit_now(measure())
        finally:
            os._exit(70)  # exit_now ends the process itself; this only if it raised
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # the asker is gone: its hang-up kills the process
        conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
    return pid


def _become_child(request: dict[str, Any], fds: list[int], sockets: list[socket.socket]) -> None:
    zygote.FORKED = True
    os.setsid()
    die_with_parent()
    # the dispositions of a fresh interpreter (SIGPIPE stays ignored, as Python sets it)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for s in sockets:
        s.close()
    # the received descriptors onto their numbers (0, 1, 2, barrier pipes), via numbers above
    # any of them so that none overwrites another before it is moved
    targets = [int(t) for t in request["targets"]]
    base = max([*targets, *fds, 2]) + 1
    high = [fcntl.fcntl(fd, fcntl.F_DUPFD, base) for fd in fds]  # free numbers >= base
    for fd in fds:
        os.close(fd)
    for h, t in zip(high, targets, strict=True):
        os.dup2(h, t)
    for h in high:
        os.close(h)
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    tempfile.tempdir = None  # TMPDIR is the job's
    import random

    random.seed()
    with contextlib.suppress(Exception):
        import numpy as np

        np.random.seed()
    sys.argv = [sys.argv[0], "_measure"]
