"""JSON within bounds: refused past :data:`MAX_JSON_DEPTH` levels of nesting, before Python's
parser would recurse that deep (5,000 levels, 13 KB of brackets, were a traceback).

Standard library only: the workload runner imports it (through :mod:`workloads.records`) on a
host whose environment may hold nothing else.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_JSON_DEPTH = 64  # levels of nesting of a record or summary (a record's deepest: ~6)


class JSONDepthError(ValueError):
    """JSON nested deeper than :data:`MAX_JSON_DEPTH` levels."""


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def json_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in the JSON ``text`` (0 for a scalar)."""
    depth = deepest = 0
    for ch in _NOT_BRACKET.sub("", _STRING.sub("", text)):
        if ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def check_json_depth(text: str, limit: int = MAX_JSON_DEPTH) -> None:
    """Raise :class:`JSONDepthError` when ``text`` nests deeper than ``limit`` levels.

    Cheap where it cannot: text with fewer opening brackets than ``limit`` is not looked at.
    """
    if text.count("[") + text.count("{") > limit and json_depth(text) > limit:
        raise JSONDepthError(f"JSON nested deeper than {limit} levels")


def loads_json(text: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """``json.loads`` of text nested at most ``limit`` levels deep (else JSONDepthError)."""
    check_json_depth(text, limit)
    return json.loads(text)
