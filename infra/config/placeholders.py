"""Example values that must not reach a lab: ``gpulab validate`` (and preflight, up) refuse a
stack file that still holds one, naming each key.

The example stacks under ``examples/`` ship such values on purpose (``pulumi new`` asks for
them); a real stack replaces every one.
"""

from __future__ import annotations

import re
from typing import Any

from infra.keys.types import SecretRef

# Marker words of the examples' values, and RFC 2606 example domains (a host name there resolves
# nowhere useful).
MARKERS = re.compile(
    r"replacewithyourown|replace[_-]?me|change[_-]?me|your[_-]?own|"
    r"(?:^|[.@])example\.(?:com|org|net)(?:$|[:/\s])",
    re.IGNORECASE,
)


def _holds_placeholder(value: Any, depth: int = 0) -> bool:
    if isinstance(value, SecretRef):
        return value.placeholder
    if isinstance(value, str):
        return MARKERS.search(value) is not None
    if depth < 8 and isinstance(value, dict):
        return any(_holds_placeholder(v, depth + 1) for v in value.values())
    if depth < 8 and isinstance(value, list | tuple):
        return any(_holds_placeholder(v, depth + 1) for v in value)
    return False


def placeholder_keys(raw: dict[str, Any]) -> list[str]:
    """The ``gpulab:*`` keys (prefix stripped) whose value is still an example's placeholder."""
    return [key for key, value in raw.items() if _holds_placeholder(value)]


def problems(raw: dict[str, Any]) -> list[str]:
    """One line naming every key that holds a placeholder (empty when there is none)."""
    keys = placeholder_keys(raw)
    if not keys:
        return []
    names = ", ".join(f"gpulab:{k}" for k in keys)
    return [
        f"{names} still hold{'s' if len(keys) == 1 else ''} an example's placeholder value: "
        "set your own (pulumi config set [--secret] KEY VALUE)"
    ]
