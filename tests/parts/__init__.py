"""Real parts the tests start and stop (nspawn hosts, Ironic, the vCenter simulator, dockerd).

Each ``tests/parts/fixtures_<part>.py`` is a pytest plugin loaded by ``tests/conftest.py``;
its session fixtures start the part, yield a handle, and stop every process they started by
PID. Use :func:`need` when a part is unavailable: in CI (``CI=true``) that is a failure, never
a skip; on a developer machine it skips with the reason.
"""

from __future__ import annotations

import fcntl
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CACHE = REPO / ".cache"


@contextmanager
def build_lock(built: Path) -> Iterator[None]:
    """Hold the lock of what builds ``built`` (a directory under :data:`CACHE`), beside its real
    place: ``scripts/test-parts.sh`` links the parts' builds from the machine's parts cache,
    which every clone on the machine shares, so two clones (or two workers) never build one
    at once; the second finds it built."""
    lock = built.resolve().with_name(built.name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        yield


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(ok: bool, why: str) -> None:
    """Fail (CI) or skip (elsewhere) unless ``ok``; ``why`` says which part is missing."""
    if ok:
        return
    if in_ci():
        pytest.fail(f"required test part missing in CI: {why}", pytrace=False)
    pytest.skip(f"test part missing: {why} (run scripts/test.sh to prepare it)")


def need_root(what: str) -> None:
    need(os.geteuid() == 0, f"{what} needs root")


def need_command(cmd: str, what: str) -> str:
    path = shutil.which(cmd)
    need(path is not None, f"{what} needs {cmd!r} on PATH")
    assert path is not None
    return path
