"""The timed loop's contract, pinned where mutation testing found it loose (workloads.timing)."""

from __future__ import annotations

import statistics

import pytest

from workloads.timing import LoopTiming, ManualClock, images_per_sec, timed_loop


def steps_taking(clock: ManualClock, durations: list[float]):  # type: ignore[no-untyped-def]
    it = iter(durations)

    def step() -> None:
        clock.advance(next(it))

    return step


def test_summary_names_and_values_of_every_field() -> None:
    clock = ManualClock()
    t = timed_loop(steps_taking(clock, [5.0, 1.0, 2.0, 3.0, 6.0]), warmup=1, steps=4, clock=clock)
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
    t = timed_loop(steps_taking(clock, [0.5]), warmup=0, steps=1, clock=clock)
    assert t.wall_s == 0.5 and t.step_times_s == [0.5]
    with pytest.raises(ValueError, match=r"warmup 0 must be >= 0 and steps 0 >= 1"):
        timed_loop(lambda: None, warmup=0, steps=0, clock=clock)
    with pytest.raises(ValueError, match=r"warmup -1"):
        timed_loop(lambda: None, warmup=-1, steps=3, clock=clock)


def test_images_per_sec_takes_sub_second_wall_clocks() -> None:
    assert images_per_sec(64, 10, 0.5) == 1280.0
    with pytest.raises(ValueError, match="not positive"):
        images_per_sec(64, 10, 0.0)
