"""Stop signals for the commands that run the workload runner (``study run``, ``run local``).

SIGINT (Ctrl-C), SIGTERM (``kill``, a batch system) and SIGHUP (the terminal closed) raise
:class:`Stopped`, a ``KeyboardInterrupt`` that remembers its signal, in the main thread, so
one code path stops the runner child, records the unit in flight and leaves; the command then
exits ``128 + signal`` (130, 143, 129), as a shell reports a process ended by it.

:func:`deferred` holds signals back while a block that must finish runs (the journal entry and
the records of a unit that has just finished); they are raised when it ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

_held: list[list[int]] = []  # one list per open deferred() block: the signals held back


class Stopped(KeyboardInterrupt):
    """A stop signal arrived; ``signum`` says which (SIGINT for a plain KeyboardInterrupt)."""

    def __init__(self, signum: int = signal.SIGINT, note: str = "") -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum
        self.note = note

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def signum_of(exc: BaseException) -> int:
    """The signal behind an interruption: a :class:`Stopped`'s, else SIGINT (Ctrl-C)."""
    return int(getattr(exc, "signum", signal.SIGINT))


def exit_code(exc: BaseException) -> int:
    """What a shell reports for a process ended by the signal: 130 SIGINT, 143 SIGTERM."""
    return 128 + signum_of(exc)


def _handle(signum: int, _frame: Any) -> None:
    if _held:
        _held[-1].append(signum)
        return
    raise Stopped(signum)


@contextmanager
def stop_signals() -> Iterator[None]:
    """While the block runs, every stop signal raises :class:`Stopped` (main thread only)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {sig: signal.signal(sig, _handle) for sig in STOP_SIGNALS}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


@contextmanager
def deferred() -> Iterator[None]:
    """Hold stop signals back until the block ends, then raise the first one (if any)."""
    _held.append([])
    try:
        yield
    finally:
        got = _held.pop()
        if got and _held:  # an outer block holds them too
            _held[-1].extend(got)
        elif got:
            raise Stopped(got[0])  # a stop wins over an error the block raised (its context)
