"""The runner's line per finished measurement (``python -m workloads bench`` on stderr, which the
study and ``gpulab up`` pass on): a result that did not end ``ok`` says why, even when it has a
rate (a sharing or shared result refused for its overlap keeps its metrics)."""

from __future__ import annotations

from typing import Any

from workloads.__main__ import progress_line
from workloads.bench import Event


def _finish(record: dict[str, Any]) -> Event:
    return Event(kind="finish", index=0, total=2, entry=None, repeat=0, record=record)  # type: ignore[arg-type]


def test_a_refused_result_with_a_rate_prints_its_reason() -> None:
    rec = {
        "experiment": "sharing",
        "repeat": 0,
        "status": "failed",
        "images_per_sec": 303.7,
        "error": "sharing: the 4 jobs' timed windows all overlap for 0.10 s of 0.57 s",
    }
    assert progress_line(_finish(rec)) == (
        "[1/2] sharing repeat 0: failed 303.7 images/sec: sharing: the 4 jobs' timed windows "
        "all overlap for 0.10 s of 0.57 s"
    )


def test_an_ok_result_prints_its_rate_and_a_failure_without_rate_its_error() -> None:
    ok = {"experiment": "a", "repeat": 1, "status": "ok", "images_per_sec": 12.25, "error": "x"}
    assert progress_line(_finish(ok)) == "[1/2] a repeat 1: ok 12.2 images/sec"
    bad = {"experiment": "a", "repeat": 0, "status": "failed", "error": "no GPU is visible"}
    assert progress_line(_finish(bad)) == "[1/2] a repeat 0: failed no GPU is visible"


def test_only_finish_events_print() -> None:
    ev = Event(kind="start", index=0, total=1, entry=None, repeat=0)  # type: ignore[arg-type]
    assert progress_line(ev) is None
