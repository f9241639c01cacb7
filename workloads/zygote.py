"""Measuring processes forked from one that has imported the framework already (a zygote).

Every measurement runs in its own process (``python -m workloads _measure``), and on a CPU most
of such a process's seconds go to importing TensorFlow and Keras (5-6 s of CPU on a 2-core
machine, more than a CPU-sized measurement). A suite with ``process_start: fork`` (or
``--process-start fork``, ``$GPULAB_PROCESS_START``) has its runner start one zygote
(``python -m workloads _zygote @NAME BACKEND``) that imports the backend's framework and the
runner's modules once, then forks a fresh process for each measurement and each job of a
multi-job scenario: its own pid, session, environment, working directory, standard streams and
barrier pipes; the framework imported, but no runtime, device, thread pool or random state of
the zygote's (none exists before the fork; the random generators are seeded anew). Its
``elapsed_s`` then no longer holds the interpreter's start and the framework's import, which
the papers' runs (``exec``, the default) do; ``params.process_start`` says which.

The zygote is a child of the runner (``python -m workloads bench``) and ends when the runner
closes its stdin or dies; each forked process dies with the zygote, and is SIGKILLed (its whole
session) when the process that asked for it goes away first. A job with a wrapper (``bitfusion
run``), of another backend, or without a zygote that answers is started as its own interpreter.

Protocol: an abstract Unix socket (no file to leave behind), served to processes of the
zygote's own user only (``SO_PEERCRED``), one connection per process: the client sends one JSON
line (``env``, ``cwd``, ``targets``: the descriptor numbers the passed descriptors take in the
child) with the descriptors (``SCM_RIGHTS``); the zygote answers ``{"pid": N}`` once forked,
then ``{"rc": N}`` when the process has ended, and closes.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import secrets
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from typing import IO

ENV = "GPULAB_ZYGOTE"  # the address of the run's zygote, set while it runs
BACKEND_ENV = "GPULAB_ZYGOTE_BACKEND"
READY = "ready"
START_TIMEOUT_S = 300.0
MAX_FDS = 16
FORKED = False  # True in a process the zygote forked


def address(name: str) -> str:
    """The socket's address: an abstract Unix socket (Linux; no file to leave behind, no
    path length limit), written ``@name`` where a NUL cannot go (argv, the environment)."""
    return "\0" + name.removeprefix("@")


def die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _last_line(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace")
    lines = [ln for ln in text.splitlines() if ln.strip() and "absl::" not in ln]
    return lines[-1][-300:] if lines else ""


class Zygote:
    """A started zygote (:meth:`start`); inside ``exported(zygote)`` its address is
    ``$GPULAB_ZYGOTE``, so the runner and its scenario processes fork from it."""

    def __init__(self, proc: subprocess.Popen[str], name: str, backend: str) -> None:
        self.proc = proc
        self.path = name  # ``@name``: the abstract socket's (see address)
        self.backend = backend

    @classmethod
    def start(
        cls, backend: str, env: Mapping[str, str], python: str = sys.executable
    ) -> Zygote | None:
        """A ready zygote for ``backend``, or None when it did not come up (one line on stderr
        says why; the runner then starts every measuring process as its own interpreter)."""
        name = f"@gpulab-zygote-{os.getpid()}-{secrets.token_hex(8)}"
        with tempfile.TemporaryFile() as err:
            proc = subprocess.Popen(
                [python, "-m", "workloads", "_zygote", name, backend],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=err,
                text=True,
                env=dict(env),
                start_new_session=True,
                preexec_fn=die_with_parent,
            )
            assert proc.stdout is not None
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            line = ""
            if sel.select(START_TIMEOUT_S):
                line = proc.stdout.readline().strip()
            sel.close()
            zygote = cls(proc, name, backend)
            if line == READY:
                return zygote
            zygote.close()
            err.seek(0)
            why = _last_line(err.read()) or f"no answer within {START_TIMEOUT_S:g} s"
        print(
            f"runner: no zygote ({why}); each measuring process imports the framework",
            file=sys.stderr,
        )
        return None

    def close(self) -> None:
        """End the zygote (its processes with it) and remove its socket."""
        with contextlib.suppress(OSError):
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(OSError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def inherited(backend: str) -> bool:
    """Whether this process was given a zygote of ``backend`` (``$GPULAB_ZYGOTE``: a study's,
    which serves every unit of the study, infra/study/local.py)."""
    return bool(os.environ.get(ENV)) and os.environ.get(BACKEND_ENV) == backend


@contextlib.contextmanager
def exported(zygote: Zygote | None) -> Iterator[None]:
    """``$GPULAB_ZYGOTE`` (and its backend) set to ``zygote``'s while the block runs, so this
    process and every process it starts fork their measuring processes from it; with None,
    unset (every measuring process its own interpreter, whatever this process was given)."""
    old = {k: os.environ.get(k) for k in (ENV, BACKEND_ENV)}
    if zygote is None:
        os.environ.pop(ENV, None)
        os.environ.pop(BACKEND_ENV, None)
    else:
        os.environ[ENV], os.environ[BACKEND_ENV] = zygote.path, zygote.backend
    try:
        yield
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class Forked:
    """A process the zygote forked, as much of :class:`subprocess.Popen` as the runner uses:
    ``pid``, ``poll``, ``wait``, ``returncode``, ``stdin``/``stdout`` (when piped)."""

    def __init__(self, conn: socket.socket, pid: int) -> None:
        self.conn = conn
        self.pid = pid
        self.returncode: int | None = None
        self.stdin: IO[str] | None = None
        self.stdout: IO[str] | None = None
        self._buf = b""

    def _take(self, timeout: float | None) -> None:
        if self.returncode is not None:
            return
        self.conn.settimeout(timeout)
        try:
            while b"\n" not in self._buf:
                chunk = self.conn.recv(4096)
                if not chunk:  # the zygote died: so did its processes (PR_SET_PDEATHSIG)
                    self.returncode = -signal.SIGKILL
                    self.conn.close()
                    return
                self._buf += chunk
        except (TimeoutError, BlockingIOError):
            return
        self.returncode = int(json.loads(self._buf)["rc"])
        self.conn.close()

    def poll(self) -> int | None:
        self._take(0.0)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        self._take(timeout)
        if self.returncode is None:
            raise subprocess.TimeoutExpired(["_measure"], timeout or 0.0)
        return self.returncode


def spawn(
    env: Mapping[str, str],
    stdin: int,
    stdout: int,
    stderr: int,
    pass_fds: tuple[int, ...] = (),
    cwd: str | None = None,
) -> Forked | None:
    """Ask the run's zygote for a measuring process with this environment and these
    descriptors (as numbers in this process; ``pass_fds`` keep theirs); None when no zygote
    of ``env``'s backend answers (start one as its own interpreter then)."""
    path = os.environ.get(ENV, "")
    if not path or env.get("KERAS_BACKEND") != os.environ.get(BACKEND_ENV):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(address(path))
        fds = [stdin, stdout, stderr, *pass_fds]
        request = {"env": dict(env), "cwd": cwd or os.getcwd(), "targets": [0, 1, 2, *pass_fds]}
        socket.send_fds(conn, [(json.dumps(request) + "\n").encode()], fds)
        reply = b""
        deadline = time.monotonic() + 60
        conn.settimeout(60)
        while not reply.endswith(b"\n") and time.monotonic() < deadline:
            chunk = conn.recv(4096)
            if not chunk:
                break
            reply += chunk
        first, _, rest = reply.partition(b"\n")
        pid = int(json.loads(first)["pid"])
    except (OSError, ValueError, KeyError):
        conn.close()
        return None
    forked = Forked(conn, pid)
    forked._buf = rest
    return forked


def pipe_in() -> tuple[int, IO[str]]:
    """A pipe for a forked process's stdin: (its end, our writer)."""
    r, w = os.pipe()
    return r, os.fdopen(w, "w", encoding="utf-8")


def pipe_out() -> tuple[int, IO[str]]:
    r, w = os.pipe()
    return w, os.fdopen(r, "r", encoding="utf-8")
