"""The NVML sampler (``workloads.fingerprint.nvml.sample`` and ``Sampler``) pinned on what a
record's metrics carry: each sample's values and time, the window's first and last sample, the
per-GPU summary, the throttle reasons, and NVML's init/shutdown pairing.

No NVIDIA driver exists here, so NVML is doubled: ``SamplingNvml`` extends ``H200Nvml`` (the
pynvml double of tests/workloads/nvml_h200.py) with the sampling calls, as strict as
the library: a bad handle, clock type or sensor raises ``NVMLError`` (Invalid Argument), and,
as NVML's reference count does, a call after the last ``nvmlShutdown`` raises Uninitialized and
is recorded. The readings step with ``tick`` (the test's stand-in for time passing on the GPU);
where a sample's time is checked the sampler's clock is doubled too (``FakeTime``), the
thread's waits stay real.
"""

from __future__ import annotations

import threading
import time
from types import SimpleNamespace
from typing import Any

import pytest

import workloads.fingerprint.nvml as nvml_mod
from tests.workloads.nvml_h200 import H200Nvml, NVMLError
from workloads.fingerprint.nvml import Sampler, sample

MIB = 1024 * 1024
# NVML_CLOCK_GRAPHICS, _SM, _MEM, _VIDEO: each answers its own value, so a wrong type shows
CLOCKS = {0: 1410, 1: 1980, 2: 2619, 3: 1545}

# (gpu index, tick) -> what the GPU reports; GPU 1 has no power reading (NotSupported)
READINGS: dict[tuple[int, int], dict[str, Any]] = {
    (0, 0): {"gpu": 90, "memory": 40, "used": 1000 * MIB + 5, "mw": 300_500, "sm": 1980,
             "temp": 61, "reasons": 0x1},
    (0, 1): {"gpu": 70, "memory": 30, "used": 3000 * MIB, "mw": 401_000, "sm": 1755,
             "temp": 65, "reasons": 0x4},
    (1, 0): {"gpu": 0, "memory": 0, "used": 0, "mw": None, "sm": 345, "temp": 40,
             "reasons": 0x0},
    (1, 1): {"gpu": 0, "memory": 0, "used": 7, "mw": None, "sm": 345, "temp": 41,
             "reasons": 0x0},
}  # fmt: skip


class SamplingNvml(H200Nvml):
    """pynvml double for the sampler: ``H200Nvml`` plus utilisation, memory in use, power,
    clocks, temperature and the clocks-event (throttle) reasons of each GPU at ``tick``.

    ``binding`` picks the reasons call the binding offers: ``"event"`` (nvidia-ml-py 12.535+:
    ``nvmlDeviceGetCurrentClocksEventReasons``; the deprecated name left out, as a later
    binding may drop it), ``"throttle"`` (an older binding: only
    ``nvmlDeviceGetCurrentClocksThrottleReasons``) or ``"old-driver"`` (both names, the new one
    raising Function Not Found as a driver before 535 does)."""

    def __init__(self, count: int = 2, binding: str = "event") -> None:
        super().__init__(count=count)
        self.tick = 0
        self.binding = binding
        self.refs = 0  # NVML's init reference count
        self.inits = 0
        self.after_shutdown: list[str] = []
        self.no_power: set[int] = set()

    def nvmlInit(self) -> None:
        self.refs += 1
        self.inits += 1

    def nvmlShutdown(self) -> None:
        if self.refs == 0:
            raise NVMLError("Uninitialized")
        self.refs -= 1
        self.shutdowns += 1

    def _reading(self, name: str, h: Any) -> dict[str, Any]:
        if self.refs == 0:
            self.after_shutdown.append(name)
            raise NVMLError("Uninitialized")
        self._check(h)
        return READINGS[(h[1], self.tick)]

    def nvmlDeviceGetUtilizationRates(self, h: Any) -> SimpleNamespace:
        r = self._reading("utilization", h)
        return SimpleNamespace(gpu=r["gpu"], memory=r["memory"])

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> SimpleNamespace:
        r = self._reading("memory", h)
        total = 143771 * MIB
        return SimpleNamespace(total=total, used=r["used"], free=total - r["used"])

    def nvmlDeviceGetPowerUsage(self, h: Any) -> int:
        r = self._reading("power", h)
        if r["mw"] is None:
            raise NVMLError("Not Supported")
        return int(r["mw"])

    def nvmlDeviceGetClockInfo(self, h: Any, clock: Any) -> int:
        r = self._reading("clock", h)
        if clock not in CLOCKS:
            raise NVMLError("Invalid Argument")
        return int(r["sm"]) if clock == 1 else CLOCKS[clock]

    def nvmlDeviceGetTemperature(self, h: Any, sensor: Any) -> int:
        r = self._reading("temperature", h)
        if sensor != 0:  # NVML_TEMPERATURE_GPU is the only sensor
            raise NVMLError("Invalid Argument")
        return int(r["temp"])

    def __getattr__(self, name: str) -> Any:
        if name == "nvmlDeviceGetCurrentClocksEventReasons" and self.binding != "throttle":
            if self.binding == "old-driver":
                return self._function_not_found
            return self._reasons
        if name == "nvmlDeviceGetCurrentClocksThrottleReasons" and self.binding != "event":
            return self._reasons
        raise AttributeError(name)

    def _function_not_found(self, h: Any) -> int:
        raise NVMLError("Function Not Found")

    def _reasons(self, h: Any) -> int:
        return int(self._reading("reasons", h)["reasons"])


class FakeTime:
    """The sampler's clock (``nvml.time``) under the test's hand: ``now`` seconds."""

    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


def wait_for(cond: Any, what: str, limit_s: float = 5.0) -> None:
    deadline = time.monotonic() + limit_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {limit_s} s: {what}")
        time.sleep(0.002)


def sampler_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "nvml-sampler"]


# --- one sample --------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", ["event", "throttle", "old-driver"])
def test_one_sample_reads_every_value_of_the_gpu(binding: str) -> None:
    fake = SamplingNvml(binding=binding)
    fake.nvmlInit()
    assert sample(fake, ("h", 0)) == {
        "util_pct": 90,
        "mem_util_pct": 40,
        "mem_used_mib": 1000,  # whole MiB, the 5 bytes over cut off
        "power_w": 300.5,
        "sm_clock_mhz": 1980,
        "mem_clock_mhz": 2619,
        "temp_c": 61,
        "throttle_mask": 0x1,
    }
    fake.tick = 1
    got = sample(fake, ("h", 0))
    assert (got["mem_used_mib"], got["power_w"], got["throttle_mask"]) == (3000, 401.0, 0x4)


def test_a_gpu_that_answers_nothing_samples_as_nulls() -> None:
    """A vGPU guest or a GPU that fell off the bus: every query raises; the sample is all None
    rather than an exception in the sampler's thread."""
    fake = SamplingNvml()
    fake.nvmlInit()
    assert sample(fake, ("gone", 9)) == dict.fromkeys(
        [
            "util_pct",
            "mem_util_pct",
            "mem_used_mib",
            "power_w",
            "sm_clock_mhz",
            "mem_clock_mhz",
            "temp_c",
            "throttle_mask",
        ]
    )
    assert sample(fake, ("h", 1))["power_w"] is None  # one NotSupported: only that value


# --- the window --------------------------------------------------------------------------------


def test_window_samples_at_its_start_and_end_with_times_and_summary(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """interval 60 s: the sampler takes the sample at the start of the window and the one at
    its end, nothing between; times come from the doubled clock."""
    clock = FakeTime(1000.0)
    monkeypatch.setattr(nvml_mod, "time", clock)
    fake = SamplingNvml()
    s = Sampler(interval_s=60, nvml=fake)
    assert s.active is False and s.samples == []
    with s as entered:
        assert entered is s and entered.active is True
        wait_for(lambda: len(s.samples) == 2, "the first sample of both GPUs")
        fake.tick, clock.now = 1, 1002.34567
    assert [(x["t"], x["gpu"]) for x in s.samples] == [(0.0, 0), (0.0, 1), (2.346, 0), (2.346, 1)]
    assert s.samples[0] == {"t": 0.0, "gpu": 0, **sample(fake_at(0), ("h", 0))}
    assert s.samples[3] == {"t": 2.346, "gpu": 1, **sample(fake_at(1), ("h", 1))}
    assert s.summary() == {
        "gpu0_samples": 2.0,
        "gpu0_util_pct_mean": 80.0,
        "gpu0_mem_util_pct_mean": 35.0,
        "gpu0_mem_used_mib_max": 3000.0,
        "gpu0_power_w_mean": 350.75,
        "gpu0_sm_clock_mhz_mean": 1867.5,
        "gpu0_temp_c_max": 65.0,
        "gpu1_samples": 2.0,
        "gpu1_util_pct_mean": 0.0,  # an idle GPU's zeros are values, not gaps
        "gpu1_mem_util_pct_mean": 0.0,
        "gpu1_mem_used_mib_max": 0.0,
        "gpu1_sm_clock_mhz_mean": 345.0,
        "gpu1_temp_c_max": 41.0,
    }
    assert s.throttle_reasons() == {"gpu0": ["gpu_idle", "sw_power_cap"], "gpu1": []}
    assert (fake.inits, fake.refs, fake.after_shutdown) == (1, 0, [])


def fake_at(tick: int) -> SamplingNvml:
    fake = SamplingNvml()
    fake.nvmlInit()
    fake.tick = tick
    return fake


def test_samples_repeat_at_the_interval_until_the_window_ends() -> None:
    fake = SamplingNvml()
    with Sampler(interval_s=0.005, nvml=fake) as s:
        wait_for(lambda: len(s.samples) >= 8, "four samples of each GPU")
    n = len(s.samples)
    time.sleep(0.03)
    assert len(s.samples) == n  # nothing after the window
    ts = [x["t"] for x in s.samples]
    assert ts == sorted(ts) and ts[0] >= 0 and ts[-1] > 0
    assert all(t == round(t, 3) for t in ts)
    assert [x["gpu"] for x in s.samples] == [0, 1] * (n // 2)
    assert sampler_threads() == []
    assert (fake.refs, fake.shutdowns, fake.after_shutdown) == (0, 1, [])


def test_default_interval_is_half_a_second() -> None:
    assert Sampler(nvml=SamplingNvml()).interval_s == 0.5


def test_the_sampling_thread_is_a_named_daemon() -> None:
    """Named ``nvml-sampler`` (as thread dumps show it) and a daemon: a window left open never
    keeps the interpreter from exiting."""
    before = set(threading.enumerate())
    with Sampler(interval_s=60, nvml=SamplingNvml()):
        (thread,) = set(threading.enumerate()) - before
        assert thread.name == "nvml-sampler" and thread.daemon is True
    assert not thread.is_alive()


def test_a_gpu_without_handle_is_left_out_under_its_own_index(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    class MiddleGone(SamplingNvml):
        def nvmlDeviceGetHandleByIndex(self, i: int) -> tuple[str, int]:
            if i == 1:
                raise NVMLError("GPU is lost")
            return ("h", i)

    monkeypatch.setitem(READINGS, (2, 0), READINGS[(1, 0)])
    with Sampler(interval_s=60, nvml=MiddleGone(count=3)) as s:
        wait_for(lambda: len(s.samples) == 2, "the first sample of GPUs 0 and 2")
    assert [x["gpu"] for x in s.samples] == [0, 2, 0, 2]
    assert set(s.summary()) >= {"gpu0_samples", "gpu2_samples"}
    assert "gpu1_samples" not in s.summary()


def test_the_last_sample_waits_for_the_thread_and_shutdown_comes_last() -> None:
    """The sampling thread is held inside an NVML call when the window closes: the end sample
    and nvmlShutdown wait for it, so no NVML call comes after the shutdown (NVML would answer
    Uninitialized and the sample would be lost)."""
    gate, parked = threading.Event(), threading.Event()

    class Held(SamplingNvml):
        hold = False

        def nvmlDeviceGetUtilizationRates(self, h: Any) -> SimpleNamespace:
            if self.hold and threading.current_thread() is not threading.main_thread():
                parked.set()
                gate.wait(10)
            return super().nvmlDeviceGetUtilizationRates(h)

    fake = Held()
    timer = threading.Timer(0.2, gate.set)
    with Sampler(interval_s=0.005, nvml=fake) as s:
        wait_for(lambda: len(s.samples) >= 2, "the first sample")
        fake.hold = True
        wait_for(parked.is_set, "the thread held in an NVML call")
        timer.start()
    timer.join()
    wait_for(lambda: not sampler_threads(), "the thread's end")
    assert fake.after_shutdown == [] and (fake.refs, fake.shutdowns) == (0, 1)
    assert [(x["gpu"], x["util_pct"]) for x in s.samples[-2:]] == [(0, 90), (1, 0)]


# --- no GPU to sample --------------------------------------------------------------------------


def test_no_driver_no_gpus_or_no_handles_is_a_no_op_that_releases_nvml() -> None:
    class NoDriver(SamplingNvml):
        def nvmlInit(self) -> None:
            raise NVMLError("Driver Not Loaded")

    class NoCount(SamplingNvml):
        def nvmlDeviceGetCount(self) -> int:
            raise NVMLError("Unknown Error")

    class NoHandles(SamplingNvml):
        def nvmlDeviceGetHandleByIndex(self, i: int) -> tuple[str, int]:
            raise NVMLError("GPU is lost")

    for fake, inits in ((NoDriver(), 0), (NoCount(), 1), (NoHandles(), 1), (SamplingNvml(0), 1)):
        with Sampler(interval_s=0.001, nvml=fake) as s:
            assert s.active is False
            assert (fake.inits, fake.refs, fake.shutdowns) == (inits, 0, inits)
        assert (fake.refs, fake.shutdowns) == (0, inits), type(fake).__name__
        assert s.samples == [] and s.summary() == {} and s.throttle_reasons() == {}
        assert sampler_threads() == []


# --- the summary of a window -------------------------------------------------------------------


def test_summary_means_maxima_rounding_and_gaps() -> None:
    """``samples`` as a window leaves them (the documented form); means are rounded to 3
    decimals, memory in use and temperature are maxima, a value no sample has is left out."""
    s = Sampler(nvml=SamplingNvml())
    row = {"mem_clock_mhz": 1, "throttle_mask": None}
    s.samples = [
        {"t": 0.0, "gpu": 3, "util_pct": 1, "mem_util_pct": 2, "mem_used_mib": 10,
         "power_w": 100.0, "sm_clock_mhz": 1000, "temp_c": 50, **row},
        {"t": 0.5, "gpu": 3, "util_pct": 1, "mem_util_pct": 2, "mem_used_mib": 30,
         "power_w": 100.5, "sm_clock_mhz": 1001, "temp_c": 70, **row},
        {"t": 1.0, "gpu": 3, "util_pct": 2, "mem_util_pct": 3, "mem_used_mib": 20,
         "power_w": None, "sm_clock_mhz": 1001, "temp_c": 60, **row},
        {"t": 1.0, "gpu": 5, "util_pct": None, "mem_util_pct": None, "mem_used_mib": None,
         "power_w": None, "sm_clock_mhz": None, "temp_c": None, **row},
    ]  # fmt: skip
    assert s.summary() == {
        "gpu3_samples": 3.0,
        "gpu3_util_pct_mean": 1.333,
        "gpu3_mem_util_pct_mean": 2.333,
        "gpu3_mem_used_mib_max": 30.0,
        "gpu3_power_w_mean": 100.25,
        "gpu3_sm_clock_mhz_mean": 1000.667,
        "gpu3_temp_c_max": 70.0,
        "gpu5_samples": 1.0,
    }
    s.samples[0]["throttle_mask"] = 0x40 | 0x8
    s.samples[1]["throttle_mask"] = 0x8
    assert s.throttle_reasons() == {"gpu3": ["hw_slowdown", "hw_thermal_slowdown"], "gpu5": []}
