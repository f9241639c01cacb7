"""tf_cnn_benchmarks timing: W warm-up steps excluded, T timed steps, images/sec.

``images/sec = global batch x T / wall-clock of the timed loop``. The timed loop's wall-clock is
taken from one clock reading before the first timed step and one after the last, so it also
covers the loop's own bookkeeping; per-step times come from the same readings (each step's end
is the next step's start). The clock is injectable so tests drive it by hand.
"""

from __future__ import annotations

import contextlib
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

Clock = Callable[[], float]
OnStep = Callable[[str, int, int], None]  # (phase "warmup"|"timed", step index 1-based, total)


@dataclass
class LoopTiming:
    warmup: int
    steps: int
    wall_s: float  # wall-clock of the timed loop
    step_times_s: list[float] = field(default_factory=list)
    warmup_times_s: list[float] = field(default_factory=list)

    def images_per_sec(self, global_batch: int) -> float:
        return images_per_sec(global_batch, self.steps, self.wall_s)

    def summary(self) -> dict[str, float]:
        t = self.step_times_s
        return {
            "timed_wall_s": self.wall_s,
            "step_time_mean_s": statistics.fmean(t),
            "step_time_median_s": statistics.median(t),
            "step_time_min_s": min(t),
            "step_time_max_s": max(t),
            "step_time_stdev_s": statistics.stdev(t) if len(t) > 1 else 0.0,
            "warmup_wall_s": sum(self.warmup_times_s),
        }


def images_per_sec(global_batch: int, steps: int, wall_s: float) -> float:
    if wall_s <= 0:
        raise ValueError(f"timed loop wall-clock {wall_s!r} s is not positive")
    return global_batch * steps / wall_s


def timed_loop(
    step_fn: Callable[[], Any],
    warmup: int,
    steps: int,
    clock: Clock = time.perf_counter,
    on_step: OnStep | None = None,
    window: AbstractContextManager[Any] | None = None,
) -> LoopTiming:
    """Run ``warmup`` untimed then ``steps`` timed calls of ``step_fn``.

    ``step_fn`` must return only when its step has finished on the device (the runner's steps
    fetch the scalar loss, which synchronizes, as tf_cnn_benchmarks' per-step fetch does).
    ``on_step`` is called after each step; its cost is charged to the timed loop (and to the
    next step's time), so keep it cheap. ``window`` (e.g. the NVML sampler) is entered just
    before the first timed step and left after the last, outside the timed interval.
    """
    if warmup < 0 or steps < 1:
        raise ValueError(f"warmup {warmup} must be >= 0 and steps {steps} >= 1")
    warmup_times: list[float] = []
    for i in range(1, warmup + 1):
        t0 = clock()
        step_fn()
        warmup_times.append(clock() - t0)
        if on_step is not None:
            on_step("warmup", i, warmup)
    marks = [0.0] * (steps + 1)
    with window if window is not None else contextlib.nullcontext():
        marks[0] = clock()
        if on_step is None:
            for i in range(1, steps + 1):
                step_fn()
                marks[i] = clock()
        else:
            for i in range(1, steps + 1):
                step_fn()
                marks[i] = clock()
                on_step("timed", i, steps)
    wall = marks[steps] - marks[0]
    times = [marks[i] - marks[i - 1] for i in range(1, steps + 1)]
    return LoopTiming(warmup, steps, wall, times, warmup_times)


class ManualClock:
    """A clock for tests: returns ``now``; ``advance(dt)`` moves it."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, dt: float) -> None:
        self.now += dt
