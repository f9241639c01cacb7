"""One-line errors for the CLI."""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from infra.errors import UsageError
from infra.signals import exit_code, signum_of, stop_signals

T = TypeVar("T")

__all__ = [
    "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_TERMINATED", "EXIT_USAGE", "OptionError",
    "UsageError", "fail", "interrupted_line", "stopping_on_signals",
]  # fmt: skip

# Exit codes of every gpulab command (docs/cli.md).
EXIT_OK = 0
EXIT_FAILED = 1  # a step failed (engine, Ansible, a workload run, a measurement)
EXIT_USAGE = 2  # bad input: one line naming the key, value or host
EXIT_INTERRUPTED = 130  # SIGINT (Ctrl-C): finished records kept
EXIT_TERMINATED = 143  # SIGTERM (128 + 15; SIGHUP: 129): finished records kept


def fail(message: str) -> None:
    """One line on stderr, ``gpulab: error: <message>`` (and the message of a ``--json``
    envelope, when the command then exits non-zero)."""
    from infra.cli.output import note_error

    print(f"gpulab: error: {message}", file=sys.stderr)
    note_error(message)


def interrupted_line(exc: BaseException) -> str:
    return getattr(exc, "note", "") or f"interrupted ({signal.Signals(signum_of(exc)).name})"


@contextmanager
def stopping_on_signals() -> Iterator[None]:
    """For a command that runs the workload runner: SIGINT, SIGTERM and SIGHUP stop it the
    same way (infra.signals), then one line and exit 128 + signal (130, 143, 129)."""
    import typer

    try:
        with stop_signals():
            yield
    except KeyboardInterrupt as exc:
        fail(interrupted_line(exc))
        raise typer.Exit(exit_code(exc)) from None


class OptionError(Exception):
    """A bad option value found while parsing (not a ValueError, so that the parser's
    validation layer passes it on instead of wrapping it): one line, exit 2."""


def option_parser(parse: Callable[[str], T]) -> Callable[[str], T]:
    """``parse`` for a typer option: its UsageError/InputError becomes an OptionError."""
    from workloads.errors import InputError

    def wrapped(value: str) -> T:
        try:
            return parse(value)
        except (UsageError, InputError) as exc:
            raise OptionError(str(exc)) from None

    return wrapped
