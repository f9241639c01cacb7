"""What the records ran on: a GPU, a CPU, or not recorded (the verdicts' "method check").

A record ran on a CPU when the framework says so (``params.device.used`` "cpu": a GPU host
whose framework ran on the CPU) or its fingerprint lists no GPU (``gpu.present`` false, or
an empty ``gpu.gpus``); on a GPU when its fingerprint lists one. A record without a
fingerprint states neither.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def device_kind(rec: Mapping[str, Any]) -> str:
    """``gpu``, ``cpu`` or ``unknown`` (see the module docstring)."""
    fp = rec.get("fingerprint")
    gpu = fp.get("gpu") if isinstance(fp, Mapping) else None
    gpus = gpu.get("gpus") if isinstance(gpu, Mapping) else None
    params = rec.get("params")
    device = params.get("device") if isinstance(params, Mapping) else None
    used = device.get("used") if isinstance(device, Mapping) else None
    if used == "cpu":
        return "cpu"
    if isinstance(gpus, list) and gpus:
        return "gpu"
    if isinstance(gpu, Mapping) and (gpu.get("present") is False or gpus == []):
        return "cpu"
    return "unknown"


def on_cpu(records: Iterable[Mapping[str, Any]]) -> bool:
    """The records ran on no GPU: some say CPU, none says GPU."""
    kinds = {device_kind(r) for r in records}
    return "cpu" in kinds and "gpu" not in kinds
