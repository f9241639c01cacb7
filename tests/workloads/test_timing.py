"""tf_cnn timing arithmetic on a controlled clock (no framework, no real time)."""

from __future__ import annotations

import pytest

from workloads.timing import ManualClock, images_per_sec, timed_loop


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
