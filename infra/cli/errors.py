"""One-line errors for the CLI."""

from __future__ import annotations

import sys

from infra.errors import UsageError

__all__ = ["EXIT_FAILED", "EXIT_INTERRUPTED", "EXIT_OK", "EXIT_USAGE", "UsageError", "fail"]

# Exit codes of every gpulab command (docs/lifecycle.md).
EXIT_OK = 0
EXIT_FAILED = 1  # a step failed (engine, Ansible, a workload run, a measurement)
EXIT_USAGE = 2  # bad input: one line naming the key, value or host
EXIT_INTERRUPTED = 130  # SIGINT/SIGTERM: finished records kept


def fail(message: str) -> None:
    print(f"gpulab: error: {message}", file=sys.stderr)
