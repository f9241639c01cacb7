"""tf_cnn timing arithmetic on a controlled clock (no framework, no real time)."""

from __future__ import annotations

import statistics

import pytest

from workloads.timing import LoopTiming, ManualClock, images_per_sec, timed_loop


def make_step(clock: ManualClock, durations: list[float]):
    calls = iter(durations)

    def step() -> None:
        clock.advance(next(calls))

    return step


def test_images_per_sec_is_global_batch_times_steps_over_timed_wall():
    clock = ManualClock(1000.0)
    # 3 warm-up steps (slow, excluded), then 4 timed steps of 0.5 s each
    step = make_step(clock, [9.0, 7.0, 5.0, 0.5, 0.5, 0.5, 0.5])
    t = timed_loop(step, warmup=3, steps=4, clock=clock)
    assert t.wall_s == pytest.approx(2.0)
    assert t.step_times_s == pytest.approx([0.5, 0.5, 0.5, 0.5])
    assert t.warmup_times_s == pytest.approx([9.0, 7.0, 5.0])
    assert t.images_per_sec(64) == pytest.approx(64 * 4 / 2.0)
    assert images_per_sec(512, 100, 50.0) == pytest.approx(1024.0)


def test_uneven_steps_and_summary():
    clock = ManualClock()
    step = make_step(clock, [1.0, 2.0, 4.0])
    t = timed_loop(step, warmup=0, steps=3, clock=clock)
    assert t.step_times_s == pytest.approx([1.0, 2.0, 4.0])
    s = t.summary()
    assert s["timed_wall_s"] == pytest.approx(7.0)
    assert s["step_time_median_s"] == pytest.approx(2.0)
    assert s["step_time_min_s"] == pytest.approx(1.0)
    assert s["step_time_max_s"] == pytest.approx(4.0)
    assert s["warmup_wall_s"] == 0.0
    assert t.images_per_sec(7) == pytest.approx(3.0)


def test_bookkeeping_in_the_loop_is_charged_to_the_timed_wall():
    clock = ManualClock()
    step = make_step(clock, [1.0] * 5)
    seen = []

    def on_step(phase: str, i: int, n: int) -> None:
        seen.append((phase, i, n))
        clock.advance(0.25)  # an expensive progress hook

    t = timed_loop(step, warmup=2, steps=3, clock=clock, on_step=on_step)
    assert seen == [
        ("warmup", 1, 2),
        ("warmup", 2, 2),
        ("timed", 1, 3),
        ("timed", 2, 3),
        ("timed", 3, 3),
    ]
    # the hook after timed step k lands in step k+1; the last hook is after the final mark
    assert t.step_times_s == pytest.approx([1.0, 1.25, 1.25])
    assert t.wall_s == pytest.approx(3.5)


def test_window_covers_only_the_timed_steps():
    clock = ManualClock()
    step = make_step(clock, [1.0] * 4)
    events = []

    class Window:
        def __enter__(self):
            events.append(("enter", clock()))

        def __exit__(self, *exc):
            events.append(("exit", clock()))

    timed_loop(step, warmup=2, steps=2, clock=clock, window=Window())
    assert events == [("enter", 2.0), ("exit", 4.0)]


@pytest.mark.parametrize(("warmup", "steps"), [(-1, 5), (0, 0), (3, -2)])
def test_bad_counts_raise(warmup, steps):
    with pytest.raises(ValueError):
        timed_loop(lambda: None, warmup=warmup, steps=steps, clock=ManualClock())


def test_zero_wall_clock_is_an_error():
    with pytest.raises(ValueError, match="not positive"):
        images_per_sec(32, 10, 0.0)


class AsyncDevice:
    """A device that runs dispatched steps back to back while the host goes on (as CUDA
    streams and JAX's asynchronous dispatch do), on a ManualClock: dispatching costs the host
    ``host_s``, each step keeps the device busy ``step_s``; ``sync`` waits for the device."""

    def __init__(self, clock: ManualClock, step_s: float, host_s: float) -> None:
        self.clock, self.step_s, self.host_s = clock, step_s, host_s
        self.free_at = clock()
        self.dispatched = 0
        self.syncs: list[int] = []  # the step index each sync waited for

    def step(self) -> int:
        self.clock.advance(self.host_s)
        self.free_at = max(self.free_at, self.clock()) + self.step_s
        self.dispatched += 1
        return self.dispatched

    def sync(self, handle: int) -> None:
        self.syncs.append(handle)
        self.clock.now = max(self.clock.now, self.free_at)


def test_blocks_of_k_steps_sync_once_each_and_report_per_block():
    clock = ManualClock()
    dev = AsyncDevice(clock, step_s=0.010, host_s=0.001)
    t = timed_loop(dev.step, warmup=2, steps=25, clock=clock, sync=dev.sync, sync_every=10)
    assert t.sync_every == 10 and t.sync_mode == "fixed"
    assert t.block_steps == [10, 10, 5]
    # warm-up: each step waited for; timed: one sync per block, the last after step 25
    assert dev.syncs == [1, 2, 12, 22, 27]
    assert len(t.block_times_s) == 3 and sum(t.block_times_s) == pytest.approx(t.wall_s)
    per_step = [b / n for b, n in zip(t.block_times_s, [10, 10, 5], strict=True)]
    assert t.step_times_s == pytest.approx(per_step)
    # the device waits for the host only at the start of each block (one 1 ms dispatch after
    # each sync): 25 steps of 10 ms and 3 dispatches
    assert t.wall_s == pytest.approx(25 * 0.010 + 3 * 0.001)
    assert t.handles == list(range(3, 28))  # every timed step's output, for one fetch later
    assert t.first_step_s == pytest.approx(sum(t.warmup_times_s)) == pytest.approx(2 * 0.011)


def test_a_sync_per_step_leaves_the_device_idle_for_the_host_turnaround():
    clock = ManualClock()
    dev = AsyncDevice(clock, step_s=0.010, host_s=0.0012)
    per_step = timed_loop(dev.step, 0, 100, clock=clock, sync=dev.sync, sync_every="tf_cnn")
    blocked = timed_loop(dev.step, 0, 100, clock=clock, sync=dev.sync, sync_every=100)
    assert per_step.sync_every == 1 and per_step.sync_mode == "tf_cnn"
    assert per_step.wall_s == pytest.approx(100 * 0.0112)  # the 11 % a per-step fetch costs
    assert blocked.wall_s == pytest.approx(100 * 0.010 + 0.0012)
    assert blocked.images_per_sec(32) / per_step.images_per_sec(32) == pytest.approx(
        1.12 / 1.0012, rel=1e-6
    )


def test_auto_makes_blocks_of_at_least_a_second_at_the_warm_up_speed():
    clock = ManualClock()
    dev = AsyncDevice(clock, step_s=0.07, host_s=0.0)
    t = timed_loop(dev.step, warmup=3, steps=40, clock=clock, sync=dev.sync, sync_every="auto")
    # the first warm-up step is the compile (here 70 ms like the rest); K = ceil(1 / 0.07)
    assert t.sync_mode == "auto" and t.warm_step_s == pytest.approx(0.07)
    assert t.sync_every == 15 and t.block_steps == [15, 15, 10]
    assert all(b >= 1.0 for b in t.block_times_s[:-1])
    assert t.params()["block_target_s"] == 1.0


def test_auto_without_a_warm_step_to_go_by_syncs_every_step_and_k_stays_within_steps():
    clock = ManualClock()
    dev = AsyncDevice(clock, step_s=0.001, host_s=0.0)
    one = timed_loop(dev.step, warmup=1, steps=4, clock=clock, sync=dev.sync, sync_every="auto")
    assert one.sync_every == 1 and one.block_steps == [1, 1, 1, 1] and one.warm_step_s is None
    fast = timed_loop(dev.step, warmup=3, steps=5, clock=clock, sync=dev.sync, sync_every="auto")
    assert fast.sync_every == 5 and fast.block_steps == [5]
    forced = timed_loop(dev.step, warmup=0, steps=3, clock=clock, sync=dev.sync, sync_every=50)
    assert forced.sync_every == 3 and forced.block_steps == [3]


def test_barrier_and_window_come_after_the_warm_up_sync():
    clock = ManualClock()
    dev = AsyncDevice(clock, step_s=1.0, host_s=0.0)
    events: list[tuple[str, float]] = []

    def on_step(phase: str, i: int, n: int) -> None:
        if phase == "warmup" and i == n:
            events.append(("barrier", clock()))  # the device is idle here: step 2 is done

    class Window:
        def __enter__(self):
            events.append(("enter", clock()))

        def __exit__(self, *exc):
            events.append(("exit", clock()))

    t = timed_loop(
        dev.step, 2, 3, clock=clock, on_step=on_step, window=Window(), sync=dev.sync, sync_every=3
    )
    assert events == [("barrier", 2.0), ("enter", 2.0), ("exit", 5.0)]
    assert t.wall_s == pytest.approx(3.0)


def test_short_window_is_flagged_and_record_fields_say_what_each_part_took():
    from workloads.timing import record_fields

    clock = ManualClock(100.0)
    dev = AsyncDevice(clock, step_s=0.1, host_s=0.0)
    t = timed_loop(
        dev.step, 2, 5, clock=clock, sync=dev.sync, sync_every=2, unix_clock=lambda: 1000.0
    )
    assert t.params(min_timed_s=1.0)["short_window"] is True
    assert t.params(min_timed_s=0.4)["short_window"] is False
    fields = record_fields(t, launched_at=990.0)
    assert fields == {
        "sync_every": 2,
        "startup_s": 10.0,
        "first_step_s": pytest.approx(0.2),
        "timed_s": pytest.approx(0.5),
        "block_times_s": pytest.approx([0.2, 0.2, 0.1]),
    }
    assert record_fields(t, launched_at=0.0)["startup_s"] is None


@pytest.mark.parametrize("bad", [0, -1, "often", "1.5", True, None, "1" * 30])
def test_bad_sync_every_is_refused_naming_the_value(bad):
    from workloads.timing import parse_sync_every

    with pytest.raises(ValueError, match="sync_every must be auto, tf_cnn or an integer"):
        parse_sync_every(bad)


def test_sync_every_text_forms():
    from workloads.timing import parse_sync_every

    assert parse_sync_every("AUTO") == "auto" and parse_sync_every("tf-cnn") == "tf_cnn"
    assert parse_sync_every(" 25 ") == 25 and parse_sync_every(7) == 7


def test_first_nonfinite_loss_is_named():
    from workloads.timing import finite_losses

    assert finite_losses([2.3, 2.2, 2.1]) is None
    assert finite_losses([2.3, float("nan"), float("inf")]) == 2
    assert finite_losses([]) is None


# -- the loop's contract at its edges (summary fields, one step, refusals) --


def test_summary_names_and_values_of_every_field() -> None:
    clock = ManualClock()
    t = timed_loop(make_step(clock, [5.0, 1.0, 2.0, 3.0, 6.0]), warmup=1, steps=4, clock=clock)
    assert t.warmup == 1 and t.steps == 4
    assert t.summary() == {
        "timed_wall_s": 12.0,
        "step_time_mean_s": 3.0,
        "step_time_median_s": 2.5,
        "step_time_min_s": 1.0,
        "step_time_max_s": 6.0,
        "step_time_stdev_s": pytest.approx(statistics.stdev([1.0, 2.0, 3.0, 6.0])),
        "warmup_wall_s": 5.0,
    }


def test_two_steps_have_a_spread_and_one_step_has_none() -> None:
    two = LoopTiming(warmup=0, steps=2, wall_s=4.0, step_times_s=[1.0, 3.0])
    assert two.summary()["step_time_stdev_s"] == pytest.approx(2**0.5)
    one = LoopTiming(warmup=0, steps=1, wall_s=2.0, step_times_s=[2.0])
    assert one.summary()["step_time_stdev_s"] == 0.0


def test_one_timed_step_is_allowed_and_zero_is_refused_with_the_numbers() -> None:
    clock = ManualClock()
    t = timed_loop(make_step(clock, [0.5]), warmup=0, steps=1, clock=clock)
    assert t.wall_s == 0.5 and t.step_times_s == [0.5]
    with pytest.raises(ValueError, match=r"warmup 0 must be >= 0 and steps 0 >= 1"):
        timed_loop(lambda: None, warmup=0, steps=0, clock=clock)
    with pytest.raises(ValueError, match=r"warmup -1"):
        timed_loop(lambda: None, warmup=-1, steps=3, clock=clock)


def test_images_per_sec_takes_sub_second_wall_clocks() -> None:
    assert images_per_sec(64, 10, 0.5) == 1280.0
    with pytest.raises(ValueError, match="not positive"):
        images_per_sec(64, 10, 0.0)


def test_params_say_how_the_loop_synchronized_for_each_mode() -> None:
    """``params.timing`` as the record's schema names it, for an auto and a fixed loop: the
    block target only where auto chose K, and the window flagged only when shorter than the
    minimum (a window of exactly the minimum is long enough)."""
    clock = ManualClock()
    dev = AsyncDevice(clock, step_s=0.25, host_s=0.0)
    auto = timed_loop(dev.step, warmup=2, steps=8, clock=clock, sync=dev.sync, sync_every="auto")
    assert auto.params(min_timed_s=2.0) == {
        "sync_every": 4,
        "sync_mode": "auto",
        "block_steps": [4, 4],
        "block_target_s": 1.0,
        "warm_step_s": pytest.approx(0.25),
        "min_timed_s": 2.0,
        "short_window": False,  # 8 x 0.25 s = exactly the minimum
    }
    assert auto.params(min_timed_s=2.5)["short_window"] is True
    fixed = timed_loop(dev.step, warmup=1, steps=3, clock=clock, sync=dev.sync, sync_every=2)
    assert fixed.params() == {
        "sync_every": 2,
        "sync_mode": "fixed",
        "block_steps": [2, 1],
        "block_target_s": None,
        "warm_step_s": None,
        "min_timed_s": 1.0,
        "short_window": True,
    }
    tf_cnn = timed_loop(dev.step, 1, 2, clock=clock, sync=dev.sync, sync_every="tf_cnn")
    assert tf_cnn.params()["block_target_s"] is None and tf_cnn.params()["sync_mode"] == "tf_cnn"


def test_sync_every_as_text_takes_up_to_nine_digits() -> None:
    from workloads.timing import parse_sync_every

    assert parse_sync_every("999999999") == 999_999_999
    with pytest.raises(ValueError, match="'1000000000'"):
        parse_sync_every("1000000000")


@pytest.mark.parametrize(
    ("asked", "mode"),
    [("auto", "auto"), ("Tf-Cnn", "tf_cnn"), (5, "fixed"), ("12", "fixed")],
)
def test_the_mode_a_sync_every_setting_asks_for(asked: int | str, mode: str) -> None:
    from workloads.timing import sync_mode_of

    assert sync_mode_of(asked) == mode


def test_sync_mode_of_refuses_what_parse_refuses() -> None:
    from workloads.timing import sync_mode_of

    with pytest.raises(ValueError, match="got 0"):
        sync_mode_of(0)


def test_auto_goes_by_the_warm_up_steps_after_the_compiling_one() -> None:
    from workloads.timing import choose_sync_every

    # two warm-up steps: the compile (10 s) is left out, the second (0.1 s) gives K = 10
    assert choose_sync_every("auto", [10.0, 0.1], steps=50) == (10, "auto", 0.1)
    # steps slower than the block: one step per block, never fewer than one
    assert choose_sync_every("auto", [10.0, 2.0, 2.0], steps=50) == (1, "auto", 2.0)
    # steps too short for the clock to see: one block of every step, no division by zero
    assert choose_sync_every("auto", [1.0, 0.0, 0.0], steps=7) == (7, "auto", 0.0)


def test_timed_loop_passes_its_block_length_to_auto() -> None:
    clock = ManualClock()
    dev = AsyncDevice(clock, step_s=0.01, host_s=0.0)
    t = timed_loop(dev.step, 2, 20, clock=clock, sync=dev.sync, sync_every="auto", block_s=0.05)
    assert t.sync_every == 5 and t.block_steps == [5, 5, 5, 5]


class Window:
    """A window whose entry takes ``enter_s`` of wall-clock time (the NVML sampler starting)."""

    def __init__(self, clock: ManualClock, enter_s: float) -> None:
        self.clock, self.enter_s = clock, enter_s

    def __enter__(self) -> None:
        self.clock.advance(self.enter_s)

    def __exit__(self, *exc: object) -> None:
        return None


@pytest.mark.parametrize("warmup", [1, 2])
def test_the_first_step_starts_at_the_warm_up_when_there_is_one(warmup: int) -> None:
    unix = ManualClock(5000.0)
    t = timed_loop(
        make_step(unix, [1.0] * 10), warmup, 3, clock=unix, window=Window(unix, 7.0),
        unix_clock=unix,
    )  # fmt: skip
    assert t.started_unix == 5000.0


def test_without_warm_up_the_first_step_starts_after_the_window_is_entered() -> None:
    unix = ManualClock(5000.0)
    t = timed_loop(
        make_step(unix, [1.0] * 3), 0, 3, clock=unix, window=Window(unix, 7.0), unix_clock=unix
    )
    assert t.started_unix == 5007.0


def test_startup_is_the_time_from_launch_to_the_first_step() -> None:
    from workloads.timing import record_fields

    unix = ManualClock(1000.0)
    t = timed_loop(make_step(unix, [0.5] * 3), 1, 2, clock=unix, unix_clock=unix)
    assert record_fields(t, launched_at=999.7)["startup_s"] == pytest.approx(0.3)
    # a launch stamped after the first step (clocks of two processes): never negative
    assert record_fields(t, launched_at=1000.2)["startup_s"] == 0.0
