"""One-line errors for the CLI."""

from __future__ import annotations

import sys

from infra.errors import UsageError

__all__ = ["UsageError", "fail"]


def fail(message: str) -> None:
    print(f"gpulab: error: {message}", file=sys.stderr)
