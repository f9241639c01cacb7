"""A fake ``pynvml`` (NVIDIA hardware cannot run here): one GPU whose throttle counters grow
while they are being throttled, and a log of every counter read.

Put this directory first on ``sys.path`` / ``PYTHONPATH`` (child processes too) instead of
nvidia-ml-py. Driven by the environment, so child processes behave alike:

- ``FAKE_NVML_THROTTLE``: comma-separated counter names that grow in real time (nanoseconds
  since the module was imported): violation policies ``power``, ``thermal``, ``sync_boost``,
  ``board_limit``, ``low_utilization``, ``reliability`` and the clock-event fields
  ``sw_thermal_slowdown``, ``hw_thermal_slowdown``, ``hw_power_brake_slowdown``. Counters not
  named stay at their start value.
- ``FAKE_NVML_REASONS``: the current clock-event-reasons mask (default 0).
- ``FAKE_NVML_LOG``: a file each counter read appends one JSON line to:
  ``{"t": time.time(), "pid": ..., "what": "violation" | "fields" | "reasons"}``.

Only what workloads.fingerprint.nvml calls is here; anything else raises AttributeError, as a
missing function of an older binding does (``nvml.call`` turns both into None).
"""

from __future__ import annotations

import json
import os
import time
from types import SimpleNamespace
from typing import Any

_START = time.monotonic_ns()
_BASE = 5_000_000_000  # counters do not start at 0 on a real board
POLICIES = {
    0: "power",
    1: "thermal",
    2: "sync_boost",
    3: "board_limit",
    4: "low_utilization",
    5: "reliability",
    10: "total_app_clocks",
    11: "total_base_clocks",
}
FIELDS = {269: "sw_thermal_slowdown", 270: "hw_thermal_slowdown", 271: "hw_power_brake_slowdown"}


class NVMLError(Exception):
    pass


def _log(what: str) -> None:
    path = os.environ.get("FAKE_NVML_LOG")
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"t": time.time(), "pid": os.getpid(), "what": what}) + "\n")


def _counter(name: str) -> int:
    growing = {n.strip() for n in os.environ.get("FAKE_NVML_THROTTLE", "").split(",")}
    if name in growing:
        return _BASE + (time.monotonic_ns() - _START)
    return _BASE


def nvmlInit() -> None:
    pass


def nvmlShutdown() -> None:
    pass


def nvmlDeviceGetCount() -> int:
    return 1


def nvmlDeviceGetHandleByIndex(index: int) -> Any:
    if index != 0:
        raise NVMLError("invalid argument")
    return SimpleNamespace(index=index)


def nvmlDeviceGetName(handle: Any) -> str:
    return "NVIDIA H100 80GB HBM3 (fake)"


def nvmlDeviceGetViolationStatus(handle: Any, policy: int) -> Any:
    _log("violation")
    name = POLICIES.get(policy)
    if name is None:
        raise NVMLError("not supported")
    return SimpleNamespace(referenceTime=time.monotonic_ns() // 1000, violationTime=_counter(name))


def nvmlDeviceGetFieldValues(handle: Any, field_ids: list[int]) -> list[Any]:
    _log("fields")
    return [
        SimpleNamespace(
            fieldId=f,
            nvmlReturn=0 if f in FIELDS else 2,
            value=SimpleNamespace(ullVal=_counter(FIELDS.get(f, ""))),
        )
        for f in field_ids
    ]


def nvmlDeviceGetCurrentClocksEventReasons(handle: Any) -> int:
    _log("reasons")
    return int(os.environ.get("FAKE_NVML_REASONS", "0"), 0)
