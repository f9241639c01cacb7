"""GPUs through NVML (``import pynvml`` from NVIDIA's nvidia-ml-py), every call guarded.

vGPU guests answer NotSupported to many queries and machines without a driver raise on
``nvmlInit``: each call here returns ``None`` on any error, and a machine without a driver or
without the binding is recorded as ``{"present": False, "reason": ...}`` ("no GPU"). The
``nvml`` argument takes a stand-in module (tests pass a double).

Throttle counters around a timed window: workloads.fingerprint.throttle.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType
from typing import Any

VIRT_MODES = {0: "none", 1: "passthrough", 2: "vgpu", 3: "host_vgpu", 4: "host_vsga"}
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
CLOCK_SM, CLOCK_MEM = 1, 2  # NVML_CLOCK_SM, NVML_CLOCK_MEM
TEMPERATURE_GPU = 0


def load(nvml: Any = None) -> Any:
    if nvml is not None:
        return nvml
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def call(mod: Any, name: str, *args: Any) -> Any:
    """``mod.name(*args)``; None when the function is missing or raises (NotSupported ...)."""
    fn = getattr(mod, name, None)
    if fn is None:
        return None
    try:
        value = fn(*args)
    except Exception:
        return None
    return value.decode(errors="replace") if isinstance(value, bytes) else value


def init(mod: Any) -> str | None:
    """Initialize NVML; returns None on success, else why it failed."""
    if mod is None:
        return "nvidia-ml-py (pynvml) is not installed"
    try:
        mod.nvmlInit()
    except Exception as exc:
        return f"no NVIDIA driver: {type(exc).__name__}: {exc}"
    return None


def cuda_version_str(v: Any) -> str | None:
    return f"{v // 1000}.{(v % 1000) // 10}" if isinstance(v, int) and v > 0 else None


def throttle_names(mask: Any) -> list[str]:
    if not isinstance(mask, int):
        return []
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


def _numa_from_sysfs(bus_id: str | None) -> int | None:
    if not bus_id:
        return None
    # NVML bus ids have an 8-digit domain ("00000000:3B:00.0"); sysfs uses 4 digits, lower case
    dom, _, rest = bus_id.partition(":")
    path = f"/sys/bus/pci/devices/{dom[-4:].lower()}:{rest.lower()}/numa_node"
    try:
        with open(path, encoding="ascii") as fh:
            node = int(fh.read().strip())
    except (OSError, ValueError):
        return None
    return node if node >= 0 else None


def device_info(mod: Any, index: int) -> dict[str, Any]:
    h = call(mod, "nvmlDeviceGetHandleByIndex", index)
    if h is None:
        return {"index": index, "error": "no handle"}
    pci = call(mod, "nvmlDeviceGetPciInfo", h)
    bus_id = getattr(pci, "busId", None) if pci is not None else None
    if isinstance(bus_id, bytes):
        bus_id = bus_id.decode(errors="replace")
    mem = call(mod, "nvmlDeviceGetMemoryInfo", h)
    virt = call(mod, "nvmlDeviceGetVirtualizationMode", h)
    mig = call(mod, "nvmlDeviceGetMigMode", h)
    cc = call(mod, "nvmlDeviceGetCudaComputeCapability", h)
    numa = call(mod, "nvmlDeviceGetNumaNodeId", h)
    return {
        "index": index,
        "name": call(mod, "nvmlDeviceGetName", h),
        "uuid": call(mod, "nvmlDeviceGetUUID", h),
        "pci_bus_id": bus_id,
        "memory_total_mib": mem.total // (1024 * 1024) if mem is not None else None,
        "virtualization_mode": VIRT_MODES.get(virt, f"unknown({virt})")
        if virt is not None
        else None,
        "pcie": {
            "gen_current": call(mod, "nvmlDeviceGetCurrPcieLinkGeneration", h),
            "gen_max": call(mod, "nvmlDeviceGetMaxPcieLinkGeneration", h),
            "width_current": call(mod, "nvmlDeviceGetCurrPcieLinkWidth", h),
            "width_max": call(mod, "nvmlDeviceGetMaxPcieLinkWidth", h),
        },
        "numa_node": numa if isinstance(numa, int) and numa >= 0 else _numa_from_sysfs(bus_id),
        "mig_mode": {"current": mig[0], "pending": mig[1]}
        if isinstance(mig, list | tuple) and len(mig) == 2
        else None,
        "compute_capability": f"{cc[0]}.{cc[1]}" if isinstance(cc, list | tuple) else None,
        "power_limit_w": _mw(call(mod, "nvmlDeviceGetEnforcedPowerLimit", h)),
        "persistence_mode": call(mod, "nvmlDeviceGetPersistenceMode", h),
    }


def _mw(value: Any) -> float | None:
    return value / 1000.0 if isinstance(value, int | float) else None


def gpu_info(nvml: Any = None) -> dict[str, Any]:
    """Static facts of every GPU, or ``{"present": False, "reason": ...}`` without a driver."""
    mod = load(nvml)
    why = init(mod)
    if why is not None:
        return {"present": False, "count": 0, "reason": why, "gpus": []}
    try:
        count = call(mod, "nvmlDeviceGetCount") or 0
        info = {
            "present": count > 0,
            "count": count,
            "reason": None if count else "NVML found no GPU",
            "driver_version": call(mod, "nvmlSystemGetDriverVersion"),
            "cuda_driver_version": cuda_version_str(
                call(mod, "nvmlSystemGetCudaDriverVersion_v2")
                or call(mod, "nvmlSystemGetCudaDriverVersion")
            ),
            "nvml_version": call(mod, "nvmlSystemGetNVMLVersion"),
            "gpus": [device_info(mod, i) for i in range(count)],
        }
    finally:
        call(mod, "nvmlShutdown")
    modes = {g.get("virtualization_mode") for g in info["gpus"]} - {None}
    info["virtualization_modes"] = sorted(modes)
    return info


def sample(mod: Any, handle: Any) -> dict[str, Any]:
    util = call(mod, "nvmlDeviceGetUtilizationRates", handle)
    mem = call(mod, "nvmlDeviceGetMemoryInfo", handle)
    reasons = call(mod, "nvmlDeviceGetCurrentClocksEventReasons", handle)
    if reasons is None:
        reasons = call(mod, "nvmlDeviceGetCurrentClocksThrottleReasons", handle)
    return {
        "util_pct": getattr(util, "gpu", None),
        "mem_util_pct": getattr(util, "memory", None),
        "mem_used_mib": mem.used // (1024 * 1024) if mem is not None else None,
        "power_w": _mw(call(mod, "nvmlDeviceGetPowerUsage", handle)),
        "sm_clock_mhz": call(mod, "nvmlDeviceGetClockInfo", handle, CLOCK_SM),
        "mem_clock_mhz": call(mod, "nvmlDeviceGetClockInfo", handle, CLOCK_MEM),
        "temp_c": call(mod, "nvmlDeviceGetTemperature", handle, TEMPERATURE_GPU),
        "throttle_mask": reasons,
    }


class Sampler:
    """Background NVML sampler over a window (``with Sampler(): ...``); a no-op without GPUs.

    ``samples`` holds ``{"t": seconds since start, "gpu": index, ...}`` dicts; ``summary()``
    gives flat per-GPU means/maxima for a record's ``metrics``.
    """

    def __init__(self, interval_s: float = 0.5, nvml: Any = None) -> None:
        self.interval_s = interval_s
        self._mod = load(nvml)
        self.samples: list[dict[str, Any]] = []
        self.active = False
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._handles: list[Any] = []

    def __enter__(self) -> Sampler:
        if init(self._mod) is not None:
            return self
        count = call(self._mod, "nvmlDeviceGetCount") or 0
        self._handles = [call(self._mod, "nvmlDeviceGetHandleByIndex", i) for i in range(count)]
        if not any(h is not None for h in self._handles):
            call(self._mod, "nvmlShutdown")
            return self
        self.active = True
        self._t0 = time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="nvml-sampler", daemon=True)
        self._thread.start()
        return self

    def _take(self) -> None:
        t = round(time.monotonic() - self._t0, 3)
        for i, h in enumerate(self._handles):
            if h is not None:
                self.samples.append({"t": t, "gpu": i, **sample(self._mod, h)})

    def _loop(self) -> None:
        self._take()
        while not self._stop.wait(self.interval_s):
            self._take()

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        if not self.active:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._take()  # one sample at the end of the window
        call(self._mod, "nvmlShutdown")

    def summary(self) -> dict[str, float]:
        out: dict[str, float] = {}
        gpus = sorted({s["gpu"] for s in self.samples})
        for g in gpus:
            rows = [s for s in self.samples if s["gpu"] == g]
            out[f"gpu{g}_samples"] = float(len(rows))
            for key, agg in (
                ("util_pct", "mean"),
                ("mem_util_pct", "mean"),
                ("mem_used_mib", "max"),
                ("power_w", "mean"),
                ("sm_clock_mhz", "mean"),
                ("temp_c", "max"),
            ):
                vals = [float(r[key]) for r in rows if isinstance(r.get(key), int | float)]
                if vals:
                    value = max(vals) if agg == "max" else sum(vals) / len(vals)
                    out[f"gpu{g}_{key}_{agg}"] = round(value, 3)
        return out

    def throttle_reasons(self) -> dict[str, list[str]]:
        seen: dict[str, set[str]] = {}
        for s in self.samples:
            seen.setdefault(f"gpu{s['gpu']}", set()).update(throttle_names(s["throttle_mask"]))
        return {k: sorted(v) for k, v in seen.items()}
