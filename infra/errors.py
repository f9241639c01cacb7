"""Errors every layer of ``infra`` raises for bad user input.

The CLI (``infra.cli``) turns them into one line and exit code 2; modules below the CLI import
them from here, never from ``infra.cli``.
"""

from __future__ import annotations


class UsageError(ValueError):
    """Bad input to a gpulab command; the message names the offending key or value."""
