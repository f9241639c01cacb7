"""Runs left out of the statistics, and why: failed, interrupted, throttled.

Throttled, exactly: the record's fingerprint holds the NVML sampler's readings over the timed
window, and at least one reading has a clock-throttle reason in THROTTLE_MASK:

  0x08 HW slowdown, 0x20 SW thermal slowdown, 0x40 HW thermal slowdown, 0x80 HW power brake

(NVML ``nvmlClocksEventReasons``/``nvmlClocksThrottleReasons`` bits). Not counted: 0x01 GPU
idle, 0x02 applications clocks setting, 0x10 sync boost, 0x100 display clock setting (none
slows a running job), and 0x04 SW power cap, which a compute-bound job at its power limit shows
in normal operation; records at the power cap are kept and listed as "power-capped".

Readings are ``params.nvml_window.throttle_mask`` (workloads.fingerprint.throttle.CounterWindow:
an int, the reasons whose cumulative NVML counters grew over the timed window, or were set at
either end of it; every scenario records one, a record made of several instances the OR of
theirs), ``params.nvml_samples`` (workloads.fingerprint.nvml.Sampler: one dict per sample
with an int ``throttle_mask``), and anything in ``fingerprint`` under any of SAMPLER_KEYS (e.g.
``fingerprint.nvml_sampler``), as a dict or a list of per-GPU dicts, each holding any of
REASON_KEYS (e.g. ``throttle_reasons``) as an int bitmask, a list of int bitmasks (one per
sample), or a list of reason names (``hw_slowdown``, ``HwThermalSlowdown`` ...; case, ``_``
and ``-`` are ignored, a ``clocks_event_reason``/``throttle_reason`` prefix is dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

REASON_BITS = {
    "gpuidle": 0x01,
    "applicationsclockssetting": 0x02,
    "swpowercap": 0x04,
    "hwslowdown": 0x08,
    "syncboost": 0x10,
    "swthermalslowdown": 0x20,
    "hwthermalslowdown": 0x40,
    "hwpowerbrakeslowdown": 0x80,
    "hwpowerbrake": 0x80,
    "displayclocksetting": 0x100,
}
THROTTLE_MASK = 0x08 | 0x20 | 0x40 | 0x80
POWER_CAP = 0x04
SAMPLER_KEYS = (
    "_params_nvml_samples",
    "nvml_sampler",
    "sampler",
    "nvml_samples",
    "gpu_samples",
    "samples",
    "nvml",
)
REASON_KEYS = (
    "throttle_mask",
    "throttle_reasons",
    "throttle_reasons_seen",
    "clocks_event_reasons",
    "clocks_throttle_reasons",
    "throttle",
)
_PREFIX = re.compile(r"^(nvml)?(clocks?(event|throttle)reasons?|throttlereasons?)")


@dataclass(frozen=True)
class Excluded:
    record_id: str
    reason: str  # "failed", "interrupted", "throttled"
    detail: str
    record: dict[str, Any]


def reason_bits(value: Any) -> int:
    """OR of the throttle-reason bits in ``value`` (int, list of ints, names or a mix)."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        name = re.sub(r"[^a-z]", "", value.lower())
        name = _PREFIX.sub("", name)
        return REASON_BITS.get(name, 0)
    if isinstance(value, list | tuple):
        out = 0
        for v in value:
            out |= reason_bits(v)
        return out
    if isinstance(value, dict):  # {"hw_slowdown": true, ...} or {"hw_slowdown": 3 samples}
        return reason_bits([k for k, v in value.items() if v])
    return 0


def _readings(fp: dict[str, Any]) -> Iterator[Any]:
    for key in SAMPLER_KEYS:
        node = fp.get(key)
        nodes = node if isinstance(node, list) else [node]
        for n in nodes:
            if not isinstance(n, dict):
                continue
            for rk in REASON_KEYS:
                if rk in n:
                    yield n[rk]
            for sub in ("samples", "gpus", "per_gpu"):
                if isinstance(n.get(sub), list):
                    yield from _readings({key: n[sub]})


def window_bits(record: dict[str, Any]) -> int:
    """The int ``params.nvml_window.throttle_mask`` of ``record`` (0 when absent or not an
    int: the same rule as report.scan_sql's)."""
    params = record.get("params")
    window = params.get("nvml_window") if isinstance(params, dict) else None
    mask = window.get("throttle_mask") if isinstance(window, dict) else None
    return mask if isinstance(mask, int) and not isinstance(mask, bool) else 0


def throttle_bits(record: dict[str, Any]) -> int:
    fp = dict(record.get("fingerprint") or {})
    samples = (record.get("params") or {}).get("nvml_samples")
    if isinstance(samples, list):
        fp["_params_nvml_samples"] = samples
    bits = window_bits(record)
    for r in _readings(fp):
        bits |= reason_bits(r)
    return bits


def bit_names(bits: int) -> str:
    names = {
        0x04: "sw_power_cap",
        0x08: "hw_slowdown",
        0x20: "sw_thermal_slowdown",
        0x40: "hw_thermal_slowdown",
        0x80: "hw_power_brake",
    }
    return ", ".join(n for b, n in names.items() if bits & b) or "none"


def split(
    records: Iterable[dict[str, Any]],
) -> tuple[list[dict[str, Any]], list[Excluded], list[dict[str, Any]]]:
    """(kept, excluded, power_capped): failed/interrupted/throttled runs go to ``excluded``."""
    kept: list[dict[str, Any]] = []
    excluded: list[Excluded] = []
    capped: list[dict[str, Any]] = []
    for rec in records:
        if rec["status"] != "ok":
            detail = (rec.get("error") or "").strip().splitlines()
            excluded.append(
                Excluded(rec["record_id"], rec["status"], detail[0] if detail else "", rec)
            )
            continue
        bits = throttle_bits(rec)
        if bits & THROTTLE_MASK:
            excluded.append(
                Excluded(rec["record_id"], "throttled", bit_names(bits & THROTTLE_MASK), rec)
            )
            continue
        if bits & POWER_CAP:
            capped.append(rec)
        kept.append(rec)
    return kept, excluded, capped
