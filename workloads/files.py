"""Write a file whole or not at all, with the mode every file of a run gets.

Every write of a result, a report, an export, an inventory, a figure or a journal goes through
:func:`replacing` (or :func:`write_text` / :func:`write_bytes`): the data goes to a temporary
file in the same directory, is flushed to disk, and is renamed over the target. A failed write
(a full disk, a read-only directory, a name over the file system's limit) leaves the previous
file, or nothing, and raises :class:`OutputError`: one line naming the path and the reason.

New files get ``0o666 & ~umask`` (:func:`file_mode`), what a plain ``open()`` gives, so group
and others can read results unless the user's umask says otherwise; ``tempfile`` alone would
leave them 0600.
"""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from workloads.errors import InputError


class OutputError(InputError):
    """A file could not be written; the message names the path and the reason."""


def _umask() -> int:
    try:
        with open("/proc/self/status", encoding="ascii", errors="replace") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)  # no /proc: read it by setting it (and put it back at once)
    os.umask(current)
    return current


def file_mode() -> int:
    """The mode of a new file: what ``open(path, "w")`` would give under the current umask."""
    return 0o666 & ~_umask()


def reason(exc: OSError) -> str:
    """The reason an OS call failed, in words (``No space left on device``)."""
    if exc.errno == errno.ENAMETOOLONG:
        return "a name in the path is longer than the file system allows"
    return exc.strerror or str(exc)


def output_error(path: str | os.PathLike[str], exc: OSError) -> OutputError:
    return OutputError(f"cannot write {os.fsdecode(path)!r}: {reason(exc)}")


def make_dirs(path: str | os.PathLike[str]) -> Path:
    """``mkdir -p path``, or one line naming it and why not."""
    p = Path(path)
    try:
        p.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise OutputError(f"cannot write into {os.fsdecode(p)!r}: it is not a directory") from None
    except OSError as exc:
        raise output_error(p, exc) from None
    return p


@contextmanager
def replacing(path: str | os.PathLike[str], mode: int | None = None) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed over ``path`` when the block ends.

    ``mode``: the new file's mode (default :func:`file_mode`); a file only its owner may read
    (0o600, a credential) is never readable by others, not even for a moment.

    The block writes the file itself (``open``, DuckDB's ``COPY``, ``savefig``...). When the
    block raises, or the file cannot be flushed or renamed, the temporary file is removed and
    ``path`` is left as it was; an ``OSError`` becomes an :class:`OutputError`.
    """
    target = Path(path)
    make_dirs(target.parent)
    try:
        fd, name = tempfile.mkstemp(
            prefix=f".{target.name[:200]}.", suffix=".tmp", dir=target.parent
        )
    except OSError as exc:
        raise output_error(target, exc) from None
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, file_mode() if mode is None else mode)
        os.replace(tmp, target)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise output_error(target, exc) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_bytes(path: str | os.PathLike[str], data: bytes, mode: int | None = None) -> None:
    """Write ``data`` to ``path`` whole, or leave ``path`` as it was (see :func:`replacing`)."""
    with replacing(path, mode) as tmp, open(tmp, "wb") as fh:
        fh.write(data)


def write_text(path: str | os.PathLike[str], text: str, mode: int | None = None) -> None:
    """Write ``text`` (UTF-8) to ``path`` whole, or leave ``path`` as it was."""
    write_bytes(path, text.encode("utf-8"), mode)
