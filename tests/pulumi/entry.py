"""Run the program as the Pulumi language host does, under the MOCK runtime (no engine here),
keeping what each ``RegisterResource`` request would tell the engine (its dependencies)."""

from __future__ import annotations

import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime.mocks import MockMonitor

from infra.config import raw_from_stack_file
from tests.pulumi.mocks import REPO, LabMocks, use_config


@dataclass
class Reg:
    urn: str
    typ: str
    name: str
    custom: bool
    parent: str
    deps: set[str]
    inputs: dict[str, Any] = field(default_factory=dict)
    delete_before_replace: bool = False
    aliases: list[Any] = field(default_factory=list)  # the request's alias_pb2.Alias entries


class RecordingMonitor(MockMonitor):
    """The SDK's mock monitor, also keeping what the engine would get: each request's
    ``dependencies`` (depends_on, expanded, plus the resources behind its input Outputs) and
    ``aliases`` (alias specs: the mock monitor, like today's engine, has that feature)."""

    def __init__(self, mocks: LabMocks) -> None:
        super().__init__(mocks)
        self.regs: list[Reg] = []

    def RegisterResource(self, request: Any) -> Any:
        resp = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            inputs = pulumi.runtime.rpc.deserialize_properties(request.object)
            self.regs.append(
                Reg(
                    resp.urn,
                    request.type,
                    request.name,
                    bool(request.custom),
                    request.parent,
                    set(request.dependencies),
                    dict(inputs),
                    bool(request.deleteBeforeReplace),
                    list(request.aliases),
                )
            )
        return resp

    def of_type(self, typ: str) -> list[Reg]:
        return [r for r in self.regs if r.typ == typ]


def stack_config(path: Path, overrides: dict[str, Any]) -> dict[str, Any]:
    raw = raw_from_stack_file(path)
    for key, value in overrides.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


def run_entry_point(
    stack: str, raw: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> tuple[RecordingMonitor, dict[str, Any]]:
    """Run the repository root as the language host does; returns the monitor and the
    exports (settle them inside a ``@pulumi.runtime.test``)."""
    mocks = LabMocks()
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack=stack, preview=False, monitor=monitor)
    use_config(raw)
    exports: dict[str, Any] = {}
    monkeypatch.setattr(pulumi, "export", exports.__setitem__)
    monkeypatch.chdir(REPO)
    monkeypatch.delenv("GPULAB_RESULTS", raising=False)
    monkeypatch.setattr(
        sys, "path", [str(REPO), *[p for p in sys.path if p not in ("", str(REPO))]]
    )
    runpy.run_path(str(REPO), run_name="__main__")
    return monitor, exports
