"""The engine double of the end-to-end lab: Pulumi's mocks run the real program, cloud
resources come back with the addresses of booted nspawn hosts, dynamic resources go to the
real provider host (Check, then Create, or Diff/Update for one already in the state); a cloud
resource already in the state with the same inputs keeps its stored id and outputs, as Pulumi's
"same" step does.

Only the engine and the cloud APIs are doubled. :meth:`Engine.up` runs the repository root as
``__main__`` exactly as the Python language host does (cwd = repository root, ``sys.path[0]``
= that directory) with the stack's config; :meth:`Engine.down` deletes the dynamic resources in
reverse creation order through the provider host and forgets the cloud ones.
"""

from __future__ import annotations

import contextlib
import os
import re
import runpy
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime.stack import wait_for_rpcs

from tests.pulumi.mocks import LabMocks, Registered, engine_config

REPO = Path(__file__).resolve().parents[2]
DYNAMIC = "pulumi-python:dynamic"
# Cloud resources whose outputs carry the address Ansible connects to, and where it is.
ADDRESS_OUTPUT = {
    "openstack:networking/floatingIp:FloatingIp": "address",
    "openstack:compute/instance:Instance": "accessIpV4",
    "vsphere:index/virtualMachine:VirtualMachine": "defaultIpAddress",
}
INDEX_RE = re.compile(r"-(\d+)(?:-fip)?$")


@dataclass
class Res:
    typ: str
    name: str
    id: str
    inputs: dict[str, Any]
    outs: dict[str, Any]

    @property
    def dynamic(self) -> bool:
        return self.typ.startswith(DYNAMIC)


@dataclass
class UpResult:
    stack: str
    exports: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the one line `up` ends with
    steps: list[tuple[str, str, float]] = field(default_factory=list)  # (resource, op, s)
    elapsed_s: float = 0.0


class UpError(RuntimeError):
    pass


class _Mocks(LabMocks):
    def __init__(self, engine: Engine) -> None:
        super().__init__()
        self.engine = engine

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        if args.typ.startswith(DYNAMIC):
            return self.engine.apply_dynamic(args.typ, args.name, dict(args.inputs))
        prior = self.engine.state.get((args.typ, args.name))
        if prior is not None and prior.inputs == dict(args.inputs):
            # Pulumi's "same" step: a cloud resource whose inputs did not change keeps the id
            # and outputs in the state; nothing is created again. Computing them afresh would
            # hand out values the real cloud keeps (a port's fixed IP comes from LabMocks'
            # registration counter, and the registration order varies between two runs of
            # the program), so the hosts fed to the site run would differ on every up.
            self.resources.append(Registered(args.typ, args.name, dict(args.inputs)))
            return prior.id, dict(prior.outs)
        rid, outs = super().new_resource(args)
        key = ADDRESS_OUTPUT.get(args.typ)
        if key is not None:
            outs[key] = self.engine.address_for(args.name)
        if self.engine.cloud is not None:  # a real cloud API where one runs (vCenter simulator)
            self.engine.cloud.create(args.typ, args.name, dict(args.inputs), outs)
        self.engine.remember(Res(args.typ, args.name, rid, dict(args.inputs), outs))
        return rid, outs


class Engine:
    """One stack's state across ``up`` / ``down``; see the module docstring."""

    def __init__(
        self,
        provider: Any,
        addresses: list[str],
        log: Callable[[str], None] = print,
        cloud: Any = None,
    ) -> None:
        self.provider = provider
        self.cloud = cloud  # create(typ, name, inputs, outs) / delete(res), or None
        self.addresses = addresses  # the i-th host resource gets addresses[i]
        self.state: dict[tuple[str, str], Res] = {}
        self.log = log
        self._lock = threading.Lock()
        self._steps: list[tuple[str, str, float]] = []
        self._errors: list[str] = []
        self.changed_inputs: dict[str, list[str]] = {}  # resource -> inputs its update changed

    # -- the mocks' side ---------------------------------------------------------------------

    def address_for(self, name: str) -> str:
        m = INDEX_RE.search(name)
        i = int(m.group(1)) if m else 0
        if i >= len(self.addresses):
            raise UpError(f"{name}: no test host for host index {i}")
        return self.addresses[i]

    def remember(self, res: Res) -> None:
        with self._lock:
            self.state[(res.typ, res.name)] = res

    def apply_dynamic(
        self, typ: str, name: str, inputs: dict[str, Any]
    ) -> tuple[str, dict[str, Any]]:
        ph = self.provider
        prior = self.state.get((typ, name))
        t0 = time.monotonic()
        try:
            checked, failures = ph.check(name, prior.inputs if prior else {}, inputs)
            if failures:
                raise UpError(f"check failed: {failures}")
            if prior is None:
                op = "create"
                rid, outs = ph.create(name, checked)
            elif ph.diff(name, prior.id, prior.outs, checked)["changes"]:
                op = "update"
                self.changed_inputs[name] = sorted(
                    k
                    for k in set(checked) | set(prior.inputs)
                    if checked.get(k) != prior.inputs.get(k)
                )
                rid, outs = prior.id, ph.update(name, prior.id, prior.outs, checked)
            else:
                op = "same"
                rid, outs = prior.id, prior.outs
        except Exception as exc:
            line = f"{name}: {getattr(exc, 'line', None) or exc}"
            with self._lock:
                self._errors.append(line)
                self._steps.append((name, "failed", time.monotonic() - t0))
            raise
        dt = time.monotonic() - t0
        with self._lock:
            self._steps.append((name, op, dt))
        self.remember(Res(typ, name, rid, checked, outs))
        self.log(f"    {op:6s} {name} ({typ.split(':')[-1]}) {dt:6.1f} s")
        return rid, outs

    # -- the user's side ---------------------------------------------------------------------

    def up(
        self, stack: str, raw: dict[str, Any], secret_values: dict[str, str] | None = None
    ) -> UpResult:
        """``pulumi up`` of ``raw`` (the stack file's gpulab keys; ``secret_values``: the
        decrypted secrets by key); never raises for a failed resource: the result's ``error``
        is the line the engine ends with."""
        result = UpResult(stack)
        self._steps, self._errors = [], []
        config, secret_keys = engine_config(raw)
        for key, value in (secret_values or {}).items():
            config[f"gpulab:{key}"] = value
        self.provider.configure(config)  # as the engine does, with the stack config
        mocks = _Mocks(self)
        pulumi.runtime.set_mocks(mocks, project="gpulab", stack=stack, preview=False)
        pulumi.runtime.set_all_config(config, secret_keys)
        exports: dict[str, Any] = {}
        resolved: dict[str, Any] = {}

        @pulumi.runtime.test  # type: ignore[untyped-decorator]
        def program() -> Any:
            runpy.run_path(str(REPO), run_name="__main__")

            async def settle() -> None:
                await wait_for_rpcs(await_all_outstanding_tasks=False)
                for key, value in exports.items():
                    resolved[key] = await pulumi.Output.from_input(value).future()

            return pulumi.Output.from_input(settle())

        t0 = time.monotonic()
        with _as_language_host(exports):
            try:
                program()
            except Exception as exc:
                result.error = self._errors[0] if self._errors else _one_line(exc)
        if self._errors and result.error is None:
            result.error = self._errors[0]
        result.exports = resolved
        result.steps = list(self._steps)
        result.elapsed_s = time.monotonic() - t0
        return result

    def down(self) -> list[str]:
        """Delete every resource in reverse creation order; returns the deleted names."""
        deleted = []
        for key, res in reversed(list(self.state.items())):
            if res.dynamic:
                self.provider.delete(res.name, res.id, res.outs)
            elif self.cloud is not None:
                self.cloud.delete(res)
            del self.state[key]
            deleted.append(res.name)
        return deleted


def _one_line(exc: BaseException) -> str:
    lines = [ln for ln in str(exc).strip().splitlines() if ln.strip()]
    return lines[-1] if lines else type(exc).__name__


@contextlib.contextmanager
def _as_language_host(exports: dict[str, Any]) -> Iterator[None]:
    """cwd = repository root, ``sys.path[0]`` = it, ``pulumi.export`` collected."""
    old_cwd, old_path, old_export = os.getcwd(), list(sys.path), pulumi.export
    os.chdir(REPO)
    sys.path[:] = [str(REPO), *[p for p in old_path if p not in ("", str(REPO))]]
    pulumi.export = exports.__setitem__  # type: ignore[assignment]
    try:
        yield
    finally:
        pulumi.export = old_export
        sys.path[:] = old_path
        os.chdir(old_cwd)
