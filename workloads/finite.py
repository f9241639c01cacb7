"""Values that are not numbers: NaN and infinity (a float that overflowed) are no JSON and no
measurement. The runner's record writer (workloads.records.RecordWriter) turns a record that
holds one into a failed record naming the field (:func:`refuse_nonfinite`); the exporters
write such a value as null (:func:`nulled`)."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any


def nonfinite_paths(node: Any, where: str = "") -> Iterator[str]:
    """The paths (``metrics.tflops``, ``step_times_s[3]``) of the values in ``node`` that are
    floats but not finite numbers (NaN, infinity)."""
    if isinstance(node, float):
        if not math.isfinite(node):
            yield where
    elif isinstance(node, dict):
        for k, v in node.items():
            yield from nonfinite_paths(v, f"{where}.{k}" if where else str(k))
    elif isinstance(node, list | tuple):
        for i, v in enumerate(node):
            yield from nonfinite_paths(v, f"{where}[{i}]")


def nulled(node: Any) -> Any:
    if isinstance(node, float) and not math.isfinite(node):
        return None
    if isinstance(node, dict):
        return {k: nulled(v) for k, v in node.items()}
    if isinstance(node, list | tuple):
        return [nulled(v) for v in node]
    return node


def refuse_nonfinite(rec: dict[str, Any]) -> dict[str, Any]:
    """``rec`` with every value that is not a finite number set to null, as a failed record
    whose error names those fields (an ``ok`` record becomes ``failed``; another status is
    kept, its error extended). A measurement of NaN or infinity is no measurement."""
    paths = list(nonfinite_paths(rec))
    if not paths:
        return rec
    shown = ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")
    why = f"not a finite number (NaN or infinity) in {shown}; the value(s) are written as null"
    out: dict[str, Any] = nulled(rec)
    if out.get("status") == "ok":
        out["status"], out["error"] = "failed", why
    else:
        out["error"] = f"{out['error']}; {why}" if out.get("error") else why
    return out
