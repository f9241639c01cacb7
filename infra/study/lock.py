"""One gpulab at a time on a study: an OS lock (``flock``) held for the whole command.

The lock file is ``<results>/study-<name>.lock``, beside the study's directory rather than in
it: ``--fresh`` renames the directory aside, and a lock inside it would move with it while
the next command locked a new file. The file is never removed (removing it would let two
commands lock two different files of the same name); the holder writes who it is into it
(pid, host, command, since) and empties it when it ends. The kernel drops the lock when the
holder's process ends, however it ends, so a killed run never leaves a study locked.

``study run`` (with or without ``--fresh``) and ``study report`` take it; a second one
refuses at once with one line naming the holder (exit 2). ``study status`` only reads who
holds it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.errors import UsageError
from infra.procs import ProcessRef
from infra.study.state import now
from workloads.files import make_dirs, output_error


class StudyBusy(UsageError):
    """Another gpulab holds the study's lock."""


def lock_path(root: Path, name: str) -> Path:
    return root / f"study-{name}.lock"


@dataclass
class StudyLock:
    path: Path
    fd: int

    def release(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)  # nobody holds it now
        os.close(self.fd)  # closing drops the flock
        self.fd = -1

    def __enter__(self) -> StudyLock:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()


def read_holder(path: Path) -> dict[str, Any] | None:
    """Who wrote the lock file last (None when it is empty or unreadable)."""
    try:
        raw = path.read_text(encoding="utf-8", errors="replace").strip()
        got = json.loads(raw) if raw else None
    except (OSError, ValueError):
        return None
    return got if isinstance(got, dict) else None


def describe(holder: dict[str, Any] | None) -> str:
    if not holder:
        return "another gpulab (it has not said who it is yet)"
    return (
        f"`gpulab {holder.get('command', '?')}` (pid {holder.get('pid', '?')} on host "
        f"{holder.get('host', '?')}, since {holder.get('since', '?')})"
    )


def holder_now(root: Path, name: str) -> dict[str, Any] | None:
    """The holder of the study's lock when one is running on this host (or on another host,
    which cannot be checked from here); None when nobody holds it."""
    holder = read_holder(lock_path(root, name))
    if not holder:
        return None
    ref = ProcessRef.from_json(holder)
    if ref is None or (ref.here() and not ref.alive()):
        return None
    return holder


def acquire(root: Path, name: str, command: str) -> StudyLock:
    """Lock the study for ``command`` or raise :class:`StudyBusy` naming who holds it."""
    make_dirs(root)
    path = lock_path(root, name)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise UsageError(f"study lock {str(path)!r} is a directory; remove it") from None
        raise output_error(path, exc) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        os.close(fd)
        if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
            raise output_error(path, exc) from None
        raise StudyBusy(
            f"study {name} is in use by {describe(read_holder(path))}; wait for it to end "
            f"or stop it (lock {path})"
        ) from None
    lock = StudyLock(path, fd)
    me = {**ProcessRef.of(os.getpid()).to_json(), "command": command, "since": now()}
    try:  # in place: the file must stay the one locked (never replaced by a rename)
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me, sort_keys=True) + "\n").encode(), 0)
    except OSError:
        pass  # a full disk: the lock holds all the same; a refused command says "not said"
    return lock
