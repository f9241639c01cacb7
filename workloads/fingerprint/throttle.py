"""Throttling over a timed window from NVML's cumulative counters (every scenario records it).

The counters are read just before the window and just after it (:class:`CounterWindow`): the
violation times of ``nvmlDeviceGetViolationStatus`` (power, thermal, sync boost, board limit,
low utilization, reliability, and the application/base clock totals), the clock-event-reason
counters of ``nvmlDeviceGetFieldValues`` (SW/HW thermal slowdown, HW power brake; drivers that
have them) and the instantaneous clock-event reasons at both ends. A counter that grew during
the window sets its reason's bit in the window's ``throttle_mask`` (report.exclusions reads
it); a sampler can miss a throttle between its samples, a counter cannot. Every NVML call is
guarded as in :mod:`.nvml`; ``nvml`` takes a stand-in module (tests pass a double).
"""

from __future__ import annotations

import time
from types import TracebackType
from typing import Any

from workloads.fingerprint.nvml import Sampler, call, init, load, throttle_names

# nvmlDeviceGetViolationStatus policies (nvmlPerfPolicyType_t) -> name
VIOLATION_POLICIES = {
    0: "power",
    1: "thermal",
    2: "sync_boost",
    3: "board_limit",
    4: "low_utilization",
    5: "reliability",
    10: "total_app_clocks",
    11: "total_base_clocks",
}
# nvmlDeviceGetFieldValues ids of the cumulative clock-event-reason counters (ns)
CLOCK_EVENT_FIELDS = {
    269: "sw_thermal_slowdown",
    270: "hw_thermal_slowdown",
    271: "hw_power_brake_slowdown",
}
# the clock-event-reason bit (THROTTLE_REASONS) a growing counter stands for; the totals of
# application and base clocks stand for none (they add up the others)
COUNTER_BITS = {
    "power": 0x4,
    "thermal": 0x20,
    "sync_boost": 0x10,
    "board_limit": 0x8,
    "low_utilization": 0x1,
    "reliability": 0x8,
    "sw_thermal_slowdown": 0x20,
    "hw_thermal_slowdown": 0x40,
    "hw_power_brake_slowdown": 0x80,
}


def counters(mod: Any, handle: Any) -> dict[str, int]:
    """The cumulative violation and clock-event counters of one GPU, in ns (those it has)."""
    out: dict[str, int] = {}
    for policy, name in VIOLATION_POLICIES.items():
        value = getattr(
            call(mod, "nvmlDeviceGetViolationStatus", handle, policy), "violationTime", None
        )
        if isinstance(value, int) and not isinstance(value, bool):
            out[name] = value
    for fv in call(mod, "nvmlDeviceGetFieldValues", handle, list(CLOCK_EVENT_FIELDS)) or []:
        field_name = CLOCK_EVENT_FIELDS.get(int(getattr(fv, "fieldId", -1)))
        value = getattr(getattr(fv, "value", None), "ullVal", None)
        if field_name and getattr(fv, "nvmlReturn", 1) == 0 and isinstance(value, int):
            out[field_name] = value
    return out


def clock_reasons(mod: Any, handle: Any) -> int | None:
    reasons = call(mod, "nvmlDeviceGetCurrentClocksEventReasons", handle)
    if reasons is None:
        reasons = call(mod, "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
    return reasons if isinstance(reasons, int) else None


def window_mask(deltas: dict[str, int], before: int | None, after: int | None) -> int:
    """The reason bits of a window: each counter that grew, and the reasons at both ends."""
    bits = (before or 0) | (after or 0)
    for name, delta in deltas.items():
        if delta > 0:
            bits |= COUNTER_BITS.get(name, 0)
    return bits


class CounterWindow:
    """NVML's cumulative throttle counters read when entered and when left (a no-op without
    GPUs): ``result()`` is the record's ``params.nvml_window``::

        {"present": true, "throttle_mask": OR of the GPUs' masks, "reasons": [names],
         "seconds": window length, "gpus": [{"gpu": i, "violation_ns": {name: delta},
         "reasons_before": mask, "reasons_after": mask, "throttle_mask": mask}]}

    or ``{"present": false, "reason": why, "throttle_mask": 0}``.
    """

    def __init__(self, nvml: Any = None, clock: Any = time.monotonic) -> None:
        self._mod = load(nvml)
        self._clock = clock
        self._handles: list[Any] = []
        self._before: list[tuple[dict[str, int], int | None]] = []
        self._after: list[tuple[dict[str, int], int | None]] = []
        self._why: str | None = "the window was never entered"
        self._t: list[float] = []

    def _read(self) -> list[tuple[dict[str, int], int | None]]:
        return [(counters(self._mod, h), clock_reasons(self._mod, h)) for h in self._handles]

    def __enter__(self) -> CounterWindow:
        self._why = init(self._mod)
        if self._why is not None:
            return self
        count = call(self._mod, "nvmlDeviceGetCount") or 0
        self._handles = [call(self._mod, "nvmlDeviceGetHandleByIndex", i) for i in range(count)]
        if not self._handles:
            self._why = "NVML found no GPU"
            call(self._mod, "nvmlShutdown")
            return self
        self._before = self._read()
        self._t = [self._clock()]
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._why is not None:
            return
        self._after = self._read()
        self._t.append(self._clock())
        call(self._mod, "nvmlShutdown")

    def result(self) -> dict[str, Any]:
        if self._why is not None or not self._after:
            return {"present": False, "reason": self._why or "window not left", "throttle_mask": 0}
        gpus = []
        total = 0
        for i, ((c0, r0), (c1, r1)) in enumerate(zip(self._before, self._after, strict=True)):
            deltas = {k: c1[k] - c0[k] for k in c1 if k in c0}
            mask = window_mask(deltas, r0, r1)
            total |= mask
            gpus.append(
                {
                    "gpu": i,
                    "violation_ns": deltas,
                    "reasons_before": r0,
                    "reasons_after": r1,
                    "throttle_mask": mask,
                }
            )
        return {
            "present": True,
            "throttle_mask": total,
            "reasons": throttle_names(total),
            "seconds": round(self._t[1] - self._t[0], 6),
            "gpus": gpus,
        }


def merge_windows(parts: dict[str, dict[str, Any] | None]) -> dict[str, Any]:
    """One ``params.nvml_window`` for a record made of several instances' windows (the
    ``throttle_mask`` is the OR: a throttle in any part throttles the record)."""
    got = {k: v for k, v in parts.items() if isinstance(v, dict)}
    mask = 0
    for v in got.values():
        m = v.get("throttle_mask")
        mask |= m if isinstance(m, int) and not isinstance(m, bool) else 0
    present = any(v.get("present") for v in got.values())
    out: dict[str, Any] = {"present": present, "throttle_mask": mask, "parts": got}
    out["reasons"] = throttle_names(mask)
    if not present:
        reasons = sorted({str(v.get("reason")) for v in got.values() if v.get("reason")})
        out["reason"] = "; ".join(reasons) or "no part recorded a window"
    return out


class TimedWindow:
    """What the runner reads around a timed window: the throttle counters (always) and, with
    ``sample``, a :class:`Sampler` inside them. ``counters.result()`` is ``params.nvml_window``."""

    def __init__(self, sample: bool = False, nvml: Any = None) -> None:
        self.counters = CounterWindow(nvml)
        self.sampler = Sampler(nvml=nvml) if sample else None

    def __enter__(self) -> TimedWindow:
        self.counters.__enter__()
        if self.sampler is not None:
            self.sampler.__enter__()
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        try:
            if self.sampler is not None:
                self.sampler.__exit__(et, ev, tb)
        finally:
            self.counters.__exit__(et, ev, tb)
