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
