"""Read an input file (a suite, a stack file, published results) or say in one line why not.

Every reason a read can fail becomes an :class:`InputError` naming the file: missing, a
directory, not a regular file (a FIFO or a device would block or never end), unreadable,
larger than :data:`MAX_INPUT_BYTES`, or not UTF-8 text.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from workloads.errors import InputError

MAX_INPUT_BYTES = 16 * 1024 * 1024  # suites, stack files and published results are far smaller


def read_input_text(path: str | os.PathLike[str], what: str) -> str:
    """The UTF-8 text of ``path``; ``what`` names it in the error (``suite file``...)."""
    p = Path(path)
    name = f"{what} {str(p)!r}"
    try:
        st = p.stat()
    except FileNotFoundError:
        raise InputError(f"{name} cannot be read: it does not exist") from None
    except OSError as exc:
        raise InputError(f"{name} cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError(f"{name} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{name} is not a regular file")
    if st.st_size > MAX_INPUT_BYTES:
        raise InputError(f"{name} is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
    try:
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open does not hang
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
        with os.fdopen(fd, "rb") as fh:
            data = fh.read(MAX_INPUT_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{name} cannot be read: {exc.strerror}") from None
    if len(data) > MAX_INPUT_BYTES:
        raise InputError(f"{name} is larger than {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
    if b"\0" in data:
        raise InputError(f"{name} is not text (a binary file?)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{name} is not UTF-8 text (a binary file?)") from None
