"""Helpers for the mock-runtime tests: run the program under the mocks, capture exports,
resolve Outputs (value and secretness) inside a ``@pulumi.runtime.test``."""

from __future__ import annotations

from typing import Any

import pulumi

from infra import program
from infra.config import LabConfig, from_pulumi_config
from tests.pulumi.mocks import stack_raw, use_config

# topology -> seconds its example stack took to evaluate under the mocks (test_outputs_mock)
TIMINGS: dict[str, float] = {}


class Exports(dict):
    """Stack outputs captured from ``pulumi.export``."""


def run_stack(
    topology: str, exports: Exports | None = None, /, **overrides: Any
) -> tuple[LabConfig, Any, list[Any]]:
    """Validate and build an example stack (with overrides) the way __main__.py does: with
    ``exports``, the whole program (topology, Ansible, workloads); without, the topology only."""
    use_config(stack_raw(topology, **overrides))
    cfg = from_pulumi_config()
    if exports is None:
        component, hosts = program.build(cfg)
    else:
        original = pulumi.export
        pulumi.export = exports.__setitem__  # type: ignore[assignment]
        try:
            made = program.run(cfg)
            component, hosts = made["component"], made["hosts"]
        finally:
            pulumi.export = original  # type: ignore[assignment]
    return cfg, component, hosts


async def settle() -> None:
    """Wait until every resource registration the program started has reached the mocks."""
    from pulumi.runtime.stack import wait_for_rpcs

    await wait_for_rpcs(await_all_outstanding_tasks=False)


async def resolve(value: Any) -> tuple[Any, bool]:
    """(plain value, is_secret) of an Input, nested Outputs included."""
    out = pulumi.Output.from_input(value)
    data = await out.future()
    return data, await out.is_secret()


def check(coro: Any) -> pulumi.Output[Any]:
    """Return this from a ``@pulumi.runtime.test`` so the async assertions run and count."""
    return pulumi.Output.from_input(coro)
