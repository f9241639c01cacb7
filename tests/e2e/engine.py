"""The engine double of the end-to-end lab: what ``pulumi up|refresh|destroy`` does, standing in
for the Pulumi engine (whose CLI cannot be installed here), no friendlier than it.

Pulumi's mocks run the real program (the repository root as ``__main__``, as the Python language
host does); every resource registration comes to :class:`Engine`, which steps it the way the
engine's step generator does (pulumi/pulumi ``pkg/resource/deploy/step_generator.go``):

- **a preview pass first**: the program runs with ``dry_run``; dynamic resources get Check and
  (when in the state) Diff, nothing is created or changed; what will be created, replaced or
  updated has unknown outputs, so whatever depends on it is unknown too. A failing Check stops
  ``up`` before anything changes. :attr:`UpResult.plan` is what the preview said.
- **Check before Create/Update** (``olds`` = the stored inputs); before a replacement Check
  again with no olds, as the engine recomputes the inputs of the new resource.
- **Diff** for a resource in the state: no changes -> ``same`` (the stored id and outputs, no
  provider call); changes with ``replaces`` (or a changed key the resource option
  ``replace_on_changes`` names) -> **replace**, else update in place. Cloud resources have no
  provider here: the keys their Terraform provider marks ForceNew (:data:`FORCE_NEW`) replace.
- **replacement**: create-before-delete by default (the new resource is created, its
  dependents are updated, the old one is deleted after every other step, as the engine's
  ``DeleteReplaced`` steps run last); delete-before-replace when the provider's Diff asks for
  it or the resource option ``delete_before_replace`` says so (the option wins).
- **independent resources in parallel**: the SDK registers them from its executor's threads,
  and the provider host serves concurrent RPCs; only dependencies order them.
- **secrets as secrets**: inputs the program marks secret reach the provider host as the
  engine sends them (:class:`tests.parts.provider_host.ProviderHost`).
- **a fresh provider host per operation**, configured with the stack's config, as the engine
  starts its plugins per deployment; its stderr lines starting ``wait:`` are kept in
  :attr:`UpResult.wait_lines`.

Cloud resources go to a ``cloud`` double when one is given (:class:`tests.e2e.cloud.NspawnCloud`
boots an nspawn host per Nova server and returns while it still boots, as Nova reports ACTIVE;
:class:`tests.e2e.vcsim_cloud.VcsimCloud` clones VMs in the vCenter simulator); without one,
hosts get ``addresses[i]`` by their index.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import re
import runpy
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pulumi
from pulumi.runtime import rpc
from pulumi.runtime.mocks import MockMonitor
from pulumi.runtime.stack import wait_for_rpcs

from tests.e2e.cloud import CloudError
from tests.parts import REPO
from tests.parts.provider_host import ProviderError, ProviderHost
from tests.pulumi.mocks import LabMocks, Registered, engine_config

DYNAMIC = "pulumi-python:dynamic"
UNKNOWN = rpc.UNKNOWN
# Cloud resources whose outputs carry the address Ansible connects to, and where it is.
ADDRESS_OUTPUT = {
    "openstack:networking/floatingIp:FloatingIp": "address",
    "openstack:compute/instance:Instance": "accessIpV4",
    "vsphere:index/virtualMachine:VirtualMachine": "defaultIpAddress",
}
# Inputs whose change replaces a cloud resource (ForceNew in terraform-provider-openstack's
# compute_instance_v2 / networking_* and terraform-provider-vsphere's virtual_machine); any
# other change updates it in place.
FORCE_NEW = {
    "openstack:compute/instance:Instance": {
        "imageId", "imageName", "keyPair", "userData", "networks", "configDrive",
        "availabilityZone", "schedulerHints", "personalities", "blockDevices",
    },
    "openstack:compute/flavor:Flavor": {"name", "vcpus", "ram", "disk", "extraSpecs",
                                        "isPublic", "swap", "rxTxFactor", "ephemeral"},
    "openstack:compute/keypair:Keypair": {"name", "publicKey"},
    "openstack:networking/port:Port": {"networkId"},
    "openstack:networking/floatingIp:FloatingIp": {"pool", "address", "subnetId"},
    "openstack:networking/network:Network": {"tenantId"},
    "openstack:networking/subnet:Subnet": {"networkId", "cidr", "ipVersion"},
    "vsphere:index/virtualMachine:VirtualMachine": {"clone", "datastoreClusterId"},
}  # fmt: skip
INDEX_RE = re.compile(r"-(\d+)(?:-fip)?$")


@dataclass
class Res:
    typ: str
    name: str
    id: str
    inputs: dict[str, Any]
    outs: dict[str, Any]
    deps: set[str] = field(default_factory=set)  # names of the resources it depends on

    @property
    def dynamic(self) -> bool:
        return self.typ.startswith(DYNAMIC)


@dataclass
class Step:
    name: str
    op: str  # create, update, same, replace, delete-replaced, failed; in the plan: the same
    start: float = 0.0  # time.monotonic()
    end: float = 0.0
    detail: str = ""  # e.g. the keys that forced a replacement

    @property
    def seconds(self) -> float:
        return self.end - self.start

    def __iter__(self) -> Iterator[Any]:  # (name, op, seconds), as older tests unpack a step
        return iter((self.name, self.op, self.seconds))


@dataclass
class UpResult:
    stack: str
    exports: dict[str, Any] = field(default_factory=dict)
    error: str | None = None  # the one line `up` ends with
    plan: list[Step] = field(default_factory=list)  # what the preview said
    steps: list[Step] = field(default_factory=list)  # what the update did
    wait_lines: list[str] = field(default_factory=list)  # the providers' "wait:" lines
    elapsed_s: float = 0.0

    def ops(self) -> dict[str, str]:
        return {s.name: s.op for s in self.steps}


class UpError(RuntimeError):
    pass


@dataclass
class _Options:
    """Resource options the engine sees in a registration (the mocks' arguments drop them)."""

    deps: set[str]
    delete_before_replace: bool | None
    replace_on_changes: list[str]


class _Monitor(MockMonitor):  # type: ignore[misc]
    """The mock monitor, keeping each registration's options for the engine double."""

    def __init__(self, mocks: _Mocks) -> None:
        super().__init__(mocks)
        self.double = mocks

    def RegisterResource(self, request: Any) -> Any:
        deps = {str(u).rsplit("::", 1)[-1] for u in [*request.dependencies, request.parent] if u}
        for prop in request.propertyDependencies.values():
            deps |= {str(u).rsplit("::", 1)[-1] for u in prop.urns}
        opts = _Options(
            deps=deps,
            delete_before_replace=(
                bool(request.deleteBeforeReplace) if request.deleteBeforeReplaceDefined else None
            ),
            replace_on_changes=list(request.replaceOnChanges),
        )
        self.double.options[(request.type, request.name)] = opts
        return super().RegisterResource(request)


class _Mocks(LabMocks):
    def __init__(self, engine: Engine, provider: ProviderHost, preview: bool) -> None:
        super().__init__()
        self.engine = engine
        self.provider = provider
        self.preview = preview
        self.options: dict[tuple[str, str], _Options] = {}

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict[str, Any]:
        cloud = self.engine.cloud
        answer = cloud.call(args.token, dict(args.args)) if hasattr(cloud, "call") else None
        return answer if answer is not None else super().call(args)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        opts = self.options.get((args.typ, args.name)) or _Options(set(), None, [])
        self.resources.append(Registered(args.typ, args.name, dict(args.inputs)))
        if args.typ.startswith(DYNAMIC):
            return self.engine.step_dynamic(self, args.typ, args.name, dict(args.inputs), opts)
        return self.engine.step_cloud(self, args.typ, args.name, dict(args.inputs), opts)

    def computed(self, args: pulumi.runtime.MockResourceArgs) -> dict[str, Any]:
        """LabMocks' outputs for a new cloud resource (what the cloud computes)."""
        _, outs = super().new_resource(args)
        self.resources.pop()  # LabMocks records it again; new_resource above already did
        return outs


class Engine:
    """One stack's state across ``up`` / ``refresh`` / ``down``; see the module docstring.

    ``provider_host``: makes a (not yet started) provider host for one operation (or is an
    object with the provider host's RPC methods, used as it is: a test's recording double);
    ``addresses``: the i-th host resource's address when no cloud double gives one."""

    def __init__(
        self,
        provider_host: Callable[[], ProviderHost] | Any,
        addresses: list[str] | None = None,
        log: Callable[[str], None] = print,
        cloud: Any = None,
    ) -> None:
        self.provider_host = provider_host
        self.cloud = cloud
        self.addresses = list(addresses or [])
        self.state: dict[tuple[str, str], Res] = {}
        self.log = log
        self._lock = threading.Lock()
        self._steps: list[Step] = []
        self._errors: list[str] = []
        self._pending_deletes: list[Res] = []
        self.changed_inputs: dict[str, list[str]] = {}  # resource -> inputs its update changed

    # -- the mocks' side ---------------------------------------------------------------------

    def address_for(self, name: str) -> str:
        m = INDEX_RE.search(name)
        i = int(m.group(1)) if m else 0
        if i >= len(self.addresses):
            raise UpError(f"{name}: no test host for host index {i}")
        return self.addresses[i]

    def _record(self, step: Step, preview: bool = False) -> None:
        with self._lock:
            self._steps.append(step)
        if step.op != "same" and not preview:
            self.log(f"    {step.op:15s} {step.name} {step.seconds:6.1f} s {step.detail}")

    def _remember(self, res: Res) -> None:
        with self._lock:
            # A replacement goes to the end: `down` deletes newest first.
            self.state.pop((res.typ, res.name), None)
            self.state[(res.typ, res.name)] = res

    def _fail(self, name: str, exc: BaseException, t0: float) -> None:
        line = f"{name}: {getattr(exc, 'line', None) or _one_line(exc)}"
        with self._lock:
            self._errors.append(line)
        self._record(Step(name, "failed", t0, time.monotonic()))

    def step_cloud(
        self, mocks: _Mocks, typ: str, name: str, inputs: dict[str, Any], opts: _Options
    ) -> tuple[str, dict[str, Any]]:
        prior = self.state.get((typ, name))
        t0 = time.monotonic()
        if prior is not None and prior.inputs == inputs:
            self._record(Step(name, "same", t0, t0))  # the stored id and outputs
            return prior.id, dict(prior.outs)
        changed = sorted(
            k for k in set(inputs) | set(prior.inputs if prior else {})
            if prior is not None and inputs.get(k) != prior.inputs.get(k)
        )  # fmt: skip
        replace_keys = [
            k for k in changed if k in FORCE_NEW.get(typ, set()) or k in opts.replace_on_changes
        ]
        if prior is not None and not replace_keys:
            op = "update"
        else:
            op = "create" if prior is None else "replace"
        dbr = bool(opts.delete_before_replace)
        detail = f"(changed: {', '.join(replace_keys)}{'; delete first' if dbr else ''})"
        detail = detail if op == "replace" else ""
        args = pulumi.runtime.MockResourceArgs(typ, name, inputs, "", "", True)
        if mocks.preview:
            self._record(Step(name, op, t0, t0, detail), preview=True)
            if op == "update":
                return prior.id, {**prior.outs, **inputs}  # type: ignore[union-attr]
            computed = mocks.computed(args)
            outs = {k: (v if k in inputs else UNKNOWN) for k, v in computed.items()}
            if typ in ADDRESS_OUTPUT:
                outs[ADDRESS_OUTPUT[typ]] = UNKNOWN
            return "", outs
        try:
            if op == "update":
                outs = {**prior.outs, **inputs}  # type: ignore[union-attr]
                rid = prior.id  # type: ignore[union-attr]
            else:
                if op == "replace" and dbr:
                    self._delete(prior)  # type: ignore[arg-type]
                rid = f"{name}-{uuid.uuid4().hex[:8]}"  # a new resource has a new id
                outs = mocks.computed(args)
                key = ADDRESS_OUTPUT.get(typ)
                if key is not None and typ not in getattr(self.cloud, "gives_addresses", ()):
                    outs[key] = self.address_for(name)
                if self.cloud is not None:  # a real cloud API, or a double of one
                    self.cloud.create(typ, name, dict(inputs), outs, rid=rid)
                if op == "replace" and not dbr:
                    with self._lock:
                        self._pending_deletes.append(prior)  # type: ignore[arg-type]
        except Exception as exc:
            self._fail(name, exc, t0)
            raise
        self._remember(Res(typ, name, rid, dict(inputs), outs, opts.deps))
        self._record(Step(name, op, t0, time.monotonic(), detail))
        return rid, outs

    def step_dynamic(
        self, mocks: _Mocks, typ: str, name: str, inputs: dict[str, Any], opts: _Options
    ) -> tuple[str, dict[str, Any]]:
        ph = mocks.provider
        prior = self.state.get((typ, name))
        t0 = time.monotonic()
        detail = ""
        try:
            checked, failures = ph.check(name, prior.inputs if prior else {}, inputs)
            if failures:
                raise UpError(f"check failed: {failures}")
            if prior is None:
                op = "create"
            else:
                diff = ph.diff(name, prior.id, prior.outs, checked)
                replaces = list(diff.get("replaces") or [])
                if diff["changes"] and opts.replace_on_changes:
                    # The engine compares the inputs when the provider lists no changed keys.
                    keys = diff.get("diffs") or [
                        k for k in set(checked) | set(prior.inputs)
                        if checked.get(k) != prior.inputs.get(k)
                    ]  # fmt: skip
                    replaces += [k for k in keys if k in opts.replace_on_changes]
                if not diff["changes"]:
                    op = "same"
                elif replaces:
                    op = "replace"
                    dbr = bool(diff.get("delete_before_replace"))
                    if opts.delete_before_replace is not None:
                        dbr = opts.delete_before_replace
                    detail = f"(changed: {', '.join(replaces)}{'; delete first' if dbr else ''})"
                else:
                    op = "update"
            if mocks.preview:
                self._record(Step(name, op, t0, time.monotonic(), detail), preview=True)
                if op == "same":
                    return prior.id, dict(prior.outs)  # type: ignore[union-attr]
                # Outputs of what will change are unknown: the checked inputs, None-valued
                # keys (the outputs a run adds) left out.
                return "", {k: v for k, v in checked.items() if v is not None}
            if op == "same":
                rid, outs = prior.id, prior.outs  # type: ignore[union-attr]
            elif op == "create":
                rid, outs = ph.create(name, checked)
            elif op == "update":
                self.changed_inputs[name] = sorted(
                    k
                    for k in set(checked) | set(prior.inputs)  # type: ignore[union-attr]
                    if checked.get(k) != prior.inputs.get(k)  # type: ignore[union-attr]
                )
                rid = prior.id  # type: ignore[union-attr]
                outs = ph.update(name, rid, prior.outs, checked)  # type: ignore[union-attr]
            else:  # replace: Check again with no olds, then create and delete in order
                checked, failures = ph.check(name, {}, inputs)
                if failures:
                    raise UpError(f"check failed: {failures}")
                if dbr:
                    self._delete(prior, ph)  # type: ignore[arg-type]
                rid, outs = ph.create(name, checked)
                if not dbr:
                    with self._lock:
                        self._pending_deletes.append(prior)  # type: ignore[arg-type]
        except Exception as exc:
            self._fail(name, exc, t0)
            raise
        self._remember(Res(typ, name, rid, checked, outs, opts.deps))
        self._record(Step(name, op, t0, time.monotonic(), detail))
        return rid, outs

    def _delete(self, res: Res, ph: ProviderHost | None = None) -> None:
        if res.dynamic:
            assert ph is not None
            ph.delete(res.name, res.id, res.outs)
        elif self.cloud is not None:
            self.cloud.delete(res)
        with self._lock:
            if self.state.get((res.typ, res.name)) is res:
                del self.state[(res.typ, res.name)]

    # -- the user's side ---------------------------------------------------------------------

    def _run_program(
        self,
        stack: str,
        config: dict[str, str],
        secret_keys: list[str],
        ph: ProviderHost,
        preview: bool,
    ) -> tuple[dict[str, Any], str | None]:
        mocks = _Mocks(self, ph, preview)
        pulumi.runtime.set_mocks(
            mocks, project="gpulab", stack=stack, preview=preview, monitor=_Monitor(mocks)
        )
        pulumi.runtime.set_all_config(config, secret_keys)
        exports: dict[str, Any] = {}
        resolved: dict[str, Any] = {}
        error: str | None = None

        @pulumi.runtime.test  # type: ignore[untyped-decorator]
        def program() -> Any:
            runpy.run_path(str(REPO), run_name="__main__")

            async def settle() -> None:
                await wait_for_rpcs(await_all_outstanding_tasks=False)
                for key, value in exports.items():
                    resolved[key] = await pulumi.Output.from_input(value).future()

            return pulumi.Output.from_input(settle())

        loop = asyncio.get_event_loop()
        loop.set_exception_handler(_quiet_step_errors)
        with _as_language_host(exports):
            try:
                program()
            except Exception as exc:
                error = self._errors[0] if self._errors else _one_line(exc)
            finally:
                gc.collect()  # the failed registrations' futures, now, with the handler on
        if self._errors and error is None:
            error = self._errors[0]
        return resolved, error

    def up(
        self,
        stack: str,
        raw: dict[str, Any],
        secret_values: dict[str, str] | None = None,
        refresh: bool = False,
    ) -> UpResult:
        """``pulumi up`` (``--refresh``: read every resource back first) of ``raw`` (the stack
        file's gpulab keys; ``secret_values``: the decrypted secrets by key); never raises for
        a failed resource: the result's ``error`` is the line the engine ends with."""
        result = UpResult(stack)
        config, secret_keys = engine_config(raw)
        for key, value in (secret_values or {}).items():
            config[f"gpulab:{key}"] = value
        t0 = time.monotonic()
        with self._operation(config, result) as ph:
            if refresh:
                self._refresh(ph)
            self._steps, self._errors = [], []
            _, error = self._run_program(stack, config, secret_keys, ph, preview=True)
            result.plan = list(self._steps)
            if error is not None:
                result.error = f"preview failed: {error}"
            else:
                self._steps, self._errors, self._pending_deletes = [], [], []
                result.exports, result.error = self._run_program(
                    stack, config, secret_keys, ph, preview=False
                )
                # The engine deletes what was replaced after every other step.
                for old in reversed(self._pending_deletes):
                    s = time.monotonic()
                    self._delete(old, ph)
                    self._record(Step(old.name, "delete-replaced", s, time.monotonic()))
                result.steps = list(self._steps)
        result.elapsed_s = time.monotonic() - t0
        return result

    def refresh(self, stack_raw: dict[str, Any]) -> list[str]:
        """``pulumi refresh``: Read every dynamic resource back; returns the names whose
        outputs changed (a resource Read says is gone leaves the state)."""
        config, _ = engine_config(stack_raw)
        with self._operation(config, UpResult("refresh")) as ph:
            return self._refresh(ph)

    def _refresh(self, ph: ProviderHost) -> list[str]:
        changed = []
        for key, res in list(self.state.items()):
            if not res.dynamic:
                continue
            rid, outs = ph.read(res.name, res.id, res.outs)
            if not rid:
                del self.state[key]
                changed.append(res.name)
            elif outs != res.outs:
                res.outs = outs
                changed.append(res.name)
        return changed

    def down(self) -> list[str]:
        """Delete every resource, dependents first; returns the deleted names."""
        deleted: list[str] = []
        with self._operation({}, UpResult("down")) as ph:
            while self.state:
                left = list(self.state.values())
                needed = set().union(*(r.deps for r in left))
                # the newest resource nothing left depends on (children before parents)
                victim = next((r for r in reversed(left) if r.name not in needed), left[-1])
                self._delete(victim, ph)
                deleted.append(victim.name)
        return deleted

    @contextlib.contextmanager
    def _operation(self, config: dict[str, str], result: UpResult) -> Iterator[ProviderHost]:
        """A provider host for one operation, configured with the stack config as the engine
        does; its ``wait:`` stderr lines go to ``result.wait_lines``."""
        ph = self.provider_host() if callable(self.provider_host) else self.provider_host
        if hasattr(ph, "start"):
            ph.start()
        try:
            ph.configure(config)
            yield ph
        finally:
            if hasattr(ph, "stop"):
                ph.stop()
            lines = getattr(ph, "stderr", b"").decode(errors="replace").splitlines()
            result.wait_lines = [ln.strip() for ln in lines if ln.strip().startswith("wait:")]
            for ln in result.wait_lines:
                self.log(f"    {ln}")


def _quiet_step_errors(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
    """The event loop's handler while the program runs: a failed step is the ``up``'s error
    already; the SDK's futures that carry it and are never awaited are not reported again (a
    futures' log from the garbage collector at the wrong moment crashes CPython 3.11's AST
    constructor: "recursion depth mismatch")."""
    if isinstance(context.get("exception"), ProviderError | UpError | CloudError):
        return
    loop.default_exception_handler(context)


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
