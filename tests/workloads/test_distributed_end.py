"""How an all-reduce worker ends (workloads/scenarios/distributed_worker.end_together), with a
stand-in for TensorFlow's eager context: the real barrier is run by the all-reduce tests of
tests/catalogue/test_distributed.py and tests/workloads/test_distributed_hosts.py, which
assert that every worker met the others there."""

from __future__ import annotations

from typing import Any

import pytest

from workloads.scenarios import distributed_worker as dw


class Context:
    """The two things end_together reads of ``tensorflow.python.eager.context.context()``."""

    def __init__(self, service: Any = "standalone", error: Exception | None = None) -> None:
        self.coordination_service = service
        self.error = error
        self.calls: list[tuple[str, int]] = []

    def wait_at_barrier(self, barrier_id: str, timeout_in_ms: int) -> None:
        self.calls.append((barrier_id, timeout_in_ms))
        if self.error is not None:
            raise self.error


def test_every_worker_waits_at_one_named_barrier_with_a_bound() -> None:
    ctx = Context()
    assert dw.end_together(ctx) == "met"
    assert ctx.calls == [("gpulab-distributed-end", 60_000)]
    assert dw.end_together(ctx, timeout_ms=5) == "met"
    assert ctx.calls[-1] == ("gpulab-distributed-end", 5)


def test_without_a_coordination_service_there_is_nothing_to_wait_for() -> None:
    ctx = Context(service=None)
    assert dw.end_together(ctx) == "no coordination service"
    assert ctx.calls == []


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("Socket closed\nThe error could be from a previous operation."),
        TimeoutError("barrier timed out " + "x" * 500),
        ValueError(""),
    ],
)
def test_a_failed_barrier_is_reported_in_one_line_and_never_raised(error: Exception) -> None:
    got = dw.end_together(Context(error=error))
    assert got.startswith(f"failed: {type(error).__name__}: ")
    assert "\n" not in got and len(got) <= len("failed: TimeoutError: ") + 200
    if "Socket" in str(error):
        assert got == "failed: RuntimeError: Socket closed"
