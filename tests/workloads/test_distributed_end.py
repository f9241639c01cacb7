"""How an all-reduce worker ends (workloads/scenarios/distributed_worker.end_together), with a
stand-in for TensorFlow's eager context: the real barrier is run by the all-reduce tests of
tests/catalogue/test_distributed.py and tests/workloads/test_distributed_hosts.py, which
assert that every worker met the others there."""

from __future__ import annotations

from typing import Any

import pytest

from workloads.scenarios import distributed_worker as dw


class Context:
    """What end_together uses of ``tensorflow.python.eager.context.context()``: the barrier and
    the coordination service's key-value store (a key read before it is set times out, as
    TensorFlow's does after ``timeout_in_ms``)."""

    def __init__(
        self,
        service: Any = "standalone",
        error: Exception | None = None,
        keys: dict[str, str] | None = None,
        set_error: Exception | None = None,
    ) -> None:
        self.coordination_service = service
        self.error = error
        self.set_error = set_error
        self.keys = dict(keys or {})
        self.calls: list[tuple[str, int]] = []
        self.key_calls: list[tuple[str, str, int | None]] = []

    def wait_at_barrier(self, barrier_id: str, timeout_in_ms: int) -> None:
        self.calls.append((barrier_id, timeout_in_ms))
        if self.error is not None:
            raise self.error

    def set_config_key_value(self, key: str, value: str) -> None:
        self.key_calls.append(("set", key, None))
        if self.set_error is not None:
            raise self.set_error
        self.keys[key] = value

    def get_config_key_value(self, key: str, timeout_in_ms: int = 0) -> str:
        self.key_calls.append(("get", key, timeout_in_ms))
        if key not in self.keys:
            raise TimeoutError(f"DEADLINE_EXCEEDED: GetKeyValue() timed out with key: {key}")
        return self.keys[key]


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


def test_a_worker_acknowledges_the_barrier_for_the_leader() -> None:
    ctx = Context()
    assert dw.end_together(ctx, index=1, workers=2) == "met"
    assert ctx.keys == {"gpulab-distributed-end-ack/1": "1"}
    assert [c[0] for c in ctx.key_calls] == ["set"]  # a worker never waits on the others


def test_an_ack_lost_with_the_leader_still_reports_the_met_barrier(
    capsys: pytest.CaptureFixture[str],
) -> None:
    lost = RuntimeError("UnavailableError: Failed to send RPC to coordination service\nmore")
    assert dw.end_together(Context(set_error=lost), index=2, workers=3) == "met"
    assert "Failed to send RPC" in capsys.readouterr().err


def test_the_leader_leaves_only_once_every_other_worker_acknowledged() -> None:
    acks = {f"gpulab-distributed-end-ack/{i}": "1" for i in (1, 2, 3)}
    ctx = Context(keys=acks)
    assert dw.end_together(ctx, index=0, workers=4) == "met"
    assert ctx.key_calls == [
        ("get", f"gpulab-distributed-end-ack/{i}", dw.END_ACK_MS) for i in (1, 2, 3)
    ]


def test_the_leader_names_a_worker_that_never_acknowledged() -> None:
    ctx = Context(keys={"gpulab-distributed-end-ack/1": "1"})
    got = dw.end_together(ctx, index=0, workers=3)
    assert got.startswith("met; no acknowledgement from worker:2 (TimeoutError: DEADLINE")
    assert "worker:1" not in got and "\n" not in got


def test_a_failed_barrier_sends_no_acknowledgement() -> None:
    ctx = Context(error=RuntimeError("Socket closed"))
    assert dw.end_together(ctx, index=1, workers=2).startswith("failed: ")
    assert ctx.key_calls == [] and ctx.keys == {}
