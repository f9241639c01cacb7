"""tf_cnn_benchmarks timing without a host sync per step: W warm-up steps, T timed steps.

``images/sec = global batch x T / wall-clock of the timed loop``. The loop:

- warm-up: W steps, each waited for (the first compiles); their times are kept apart
  (``warmup_times_s``; ``first_step_s`` is their sum: from the first step's start to the sync
  after the last warm-up step). ``on_step`` runs after each, so a start barrier after the last
  warm-up step (workloads.scenarios.barrier) waits with the device idle.
- timed: the first clock reading, then the T steps dispatched one after another without
  waiting; every K (``sync_every``) steps, and after the last one, the host waits for the
  device (``sync``) and reads the clock: one block. ``block_times_s`` are the blocks' wall
  times, ``step_times_s`` each block's time over its steps (per step when K = 1), the timed
  wall-clock is the last reading minus the first.

A host sync per step (tf_cnn_benchmarks fetched the loss every step) leaves the device idle
while the host turns around: 11-15 ms steps lost about 11 % on an H200. ``sync_every``:
``"auto"`` (default) makes each block last at least ``block_s`` (1 s) at the warm-up steps'
speed (the median of the warm-up steps after the first; K = 1 when there is none to go by),
an int forces K, ``"tf_cnn"`` is K = 1 (the per-step fetch). The step's outputs (the losses)
stay on the device in ``handles``: fetch them once, after the loop. The clock is injectable so
tests drive it by hand.
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

Clock = Callable[[], float]
OnStep = Callable[[str, int, int], None]  # (phase "warmup"|"timed", step index 1-based, total)
Sync = Callable[[Any], Any]  # waits until the device has finished the step that gave its input

AUTO = "auto"
TF_CNN = "tf_cnn"
SYNC_MODES = (AUTO, TF_CNN)
DEFAULT_BLOCK_S = 1.0  # auto: each block of K steps lasts at least this long
DEFAULT_MIN_TIMED_S = 1.0  # a timed window shorter than this is flagged (params.timing)


@dataclass
class LoopTiming:
    warmup: int
    steps: int
    wall_s: float  # wall-clock of the timed loop: first reading to the sync after the last step
    step_times_s: list[float] = field(default_factory=list)  # per block: its time / its steps
    warmup_times_s: list[float] = field(default_factory=list)
    sync_every: int = 1  # K: steps per host synchronization in the timed loop
    sync_mode: str = "fixed"  # auto, fixed or tf_cnn: how K was chosen
    block_times_s: list[float] = field(default_factory=list)
    block_steps: list[int] = field(default_factory=list)
    warm_step_s: float | None = None  # the warm-up step time auto went by (None: none)
    started_unix: float | None = None  # wall-clock time (time.time) of the first step's start
    handles: list[Any] = field(default_factory=list, repr=False)  # the timed steps' outputs

    @property
    def first_step_s(self) -> float:
        """The warm-up (first, compiling, step included), each step waited for."""
        return sum(self.warmup_times_s)

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

    def params(self, min_timed_s: float = DEFAULT_MIN_TIMED_S) -> dict[str, Any]:
        """How the loop synchronized, for a record's ``params.timing``."""
        return {
            "sync_every": self.sync_every,
            "sync_mode": self.sync_mode,
            "block_steps": list(self.block_steps),
            "block_target_s": DEFAULT_BLOCK_S if self.sync_mode == AUTO else None,
            "warm_step_s": self.warm_step_s,
            "min_timed_s": min_timed_s,
            "short_window": self.wall_s < min_timed_s,
        }


def images_per_sec(global_batch: int, steps: int, wall_s: float) -> float:
    if wall_s <= 0:
        raise ValueError(f"timed loop wall-clock {wall_s!r} s is not positive")
    return global_batch * steps / wall_s


def parse_sync_every(value: Any) -> int | str:
    """``auto``, ``tf_cnn`` or an integer >= 1 (also as text); ValueError naming the value."""
    if isinstance(value, str):
        text = value.strip().lower().replace("-", "_")
        if text in SYNC_MODES:
            return text
        if text.isdigit() and len(text) <= 9:
            value = int(text)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise ValueError(f"sync_every must be auto, tf_cnn or an integer >= 1, got {value!r}")


def sync_mode_of(asked: int | str) -> str:
    """The mode a ``sync_every`` setting asks for: auto, tf_cnn or fixed (an int)."""
    value = parse_sync_every(asked)
    return value if isinstance(value, str) else "fixed"


def choose_sync_every(
    asked: int | str, warmup_times_s: list[float], steps: int, block_s: float = DEFAULT_BLOCK_S
) -> tuple[int, str, float | None]:
    """(K, mode, the warm step time used): K in 1..steps."""
    if asked == TF_CNN:
        return 1, TF_CNN, None
    if isinstance(asked, int):
        return max(1, min(asked, steps)), "fixed", None
    warm = warmup_times_s[1:]  # the first warm-up step compiles: not a step time
    if not warm:
        return 1, AUTO, None
    step_s = statistics.median(warm)
    if step_s <= 0:
        return steps, AUTO, step_s
    return max(1, min(steps, math.ceil(block_s / step_s))), AUTO, step_s


def _no_sync(value: Any) -> None:
    """For a step that waits for the device itself (returns when its step has finished)."""


def timed_loop(
    step_fn: Callable[[], Any],
    warmup: int,
    steps: int,
    clock: Clock = time.perf_counter,
    on_step: OnStep | None = None,
    window: AbstractContextManager[Any] | None = None,
    sync: Sync | None = None,
    sync_every: int | str = 1,
    block_s: float = DEFAULT_BLOCK_S,
    unix_clock: Clock = time.time,
) -> LoopTiming:
    """Run ``warmup`` untimed then ``steps`` timed calls of ``step_fn`` (see the module doc).

    ``step_fn()`` dispatches one step and returns its output (the loss, left on the device);
    ``sync(output)`` waits until the device has finished that step (and every one before it).
    Without ``sync``, ``step_fn`` must wait for its step itself (then K only sets the blocks).
    ``on_step`` is called after each step; its cost is charged to the timed loop (and to the
    next block), so keep it cheap. ``window`` (e.g. the NVML counters and sampler) is entered
    after the warm-up sync, before the first timed reading, and left after the last one.
    """
    if warmup < 0 or steps < 1:
        raise ValueError(f"warmup {warmup} must be >= 0 and steps {steps} >= 1")
    asked = parse_sync_every(sync_every)
    wait = sync or _no_sync
    warmup_times: list[float] = []
    started = unix_clock()
    for i in range(1, warmup + 1):
        t0 = clock()
        wait(step_fn())
        warmup_times.append(clock() - t0)
        if on_step is not None:
            on_step("warmup", i, warmup)
    k, mode, warm_step = choose_sync_every(asked, warmup_times, steps, block_s)
    handles: list[Any] = []
    blocks: list[float] = []
    block_steps: list[int] = []
    with window if window is not None else contextlib.nullcontext():
        start = last = clock()
        if warmup == 0:
            started = unix_clock()
        pending = 0
        for i in range(1, steps + 1):
            out = step_fn()
            handles.append(out)
            pending += 1
            if pending == k or i == steps:
                wait(out)
                now = clock()
                blocks.append(now - last)
                block_steps.append(pending)
                last, pending = now, 0
            if on_step is not None:
                on_step("timed", i, steps)
    times = [b / n for b, n in zip(blocks, block_steps, strict=True)]
    return LoopTiming(
        warmup,
        steps,
        last - start,
        times,
        warmup_times,
        sync_every=k,
        sync_mode=mode,
        block_times_s=blocks,
        block_steps=block_steps,
        warm_step_s=warm_step,
        started_unix=started,
        handles=handles,
    )


def record_fields(t: LoopTiming, launched_at: float | None) -> dict[str, Any]:
    """The record's timing fields: ``sync_every``, ``startup_s`` (from the job's launch,
    ``launched_at`` in time.time(), to the first step's start; None when either is unknown),
    ``first_step_s`` (the warm-up), ``timed_s`` and ``block_times_s``."""
    startup = None
    if launched_at and t.started_unix is not None:
        startup = max(0.0, t.started_unix - launched_at)
    return {
        "sync_every": t.sync_every,
        "startup_s": startup,
        "first_step_s": t.first_step_s,
        "timed_s": t.wall_s,
        "block_times_s": list(t.block_times_s),
    }


def finite_losses(values: list[float]) -> int | None:
    """The 1-based index of the first loss that is not finite, or None."""
    for i, v in enumerate(values, 1):
        if not math.isfinite(v):
            return i
    return None


class ManualClock:
    """A clock for tests: returns ``now``; ``advance(dt)`` moves it."""

    def __init__(self, start: float = 0.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, dt: float) -> None:
        self.now += dt
