"""Scenario options: an entry's ``options`` over the scenario's defaults, unknown keys refused.

Every scenario's ``check_options`` starts here, so that an unknown key reads the same for all of
them; each then checks its own values.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from workloads.errors import InputError


def with_defaults(
    options: Mapping[str, Any],
    defaults: Mapping[str, Any],
    scenario: str,
    also: Iterable[str] = (),
) -> dict[str, Any]:
    """``defaults`` overlaid with ``options``. A key that is neither in ``defaults`` nor in
    ``also`` (keys without a default) is an InputError naming it, the scenario and the keys."""
    known = {*defaults, *also}
    out = dict(defaults)
    for key, value in options.items():
        if key not in known:
            raise InputError(
                f"option {key!r} is unknown for scenario {scenario!r} "
                f"(known: {', '.join(sorted(known))})"
            )
        out[key] = value
    return out


def positive_number(out: Mapping[str, Any], key: str) -> None:
    """``out[key]`` is a number > 0 (not a bool), else an InputError naming the key."""
    value = out[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise InputError(f"option {key!r} must be a number > 0, got {value!r}")


def fraction(out: Mapping[str, Any], key: str) -> None:
    """``out[key]`` is a number from 0 to 1 (not a bool), else an InputError naming the key."""
    value = out[key]
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
        raise InputError(f"option {key!r} must be a number from 0 to 1, got {value!r}")
