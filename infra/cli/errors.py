"""One-line errors for the CLI."""

from __future__ import annotations

import sys


class UsageError(ValueError):
    """Bad input to a gpulab command; the message names the offending key or value."""


def fail(message: str) -> None:
    print(f"gpulab: error: {message}", file=sys.stderr)
