"""Bounded integer options: parsed here so a bad value is one line naming the option."""

from __future__ import annotations

from infra.cli.errors import UsageError

MAX_DIGITS = 20  # longer is refused before it is converted (Python caps int() at 4300 digits)


def int_option(name: str, value: str | None, minimum: int, maximum: int) -> int | None:
    """``value`` as an int in ``minimum..maximum`` (None stays None), else a UsageError."""
    if value is None:
        return None
    text = value.strip()
    if len(text) > MAX_DIGITS or not text.lstrip("+-").isdigit() or not text.isascii():
        raise UsageError(f"{name} must be an integer, got {value[:40]!r}")
    number = int(text)
    if not minimum <= number <= maximum:
        raise UsageError(f"{name} must be from {minimum} to {maximum}, got {number}")
    return number
