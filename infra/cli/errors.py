"""One-line errors for the CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TypeVar

from infra.errors import UsageError

T = TypeVar("T")

__all__ = [
    "EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "OptionError", "UsageError", "fail",
]  # fmt: skip

# Exit codes of every gpulab command (docs/cli.md).
EXIT_OK = 0
EXIT_FAILED = 1  # a step failed (engine, Ansible, a workload run, a measurement)
EXIT_USAGE = 2  # bad input: one line naming the key, value or host
EXIT_INTERRUPTED = 130  # SIGINT/SIGTERM: finished records kept


def fail(message: str) -> None:
    print(f"gpulab: error: {message}", file=sys.stderr)


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
