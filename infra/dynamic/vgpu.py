"""VgpuProfile: an NVIDIA vGPU profile on a vSphere VM, as a Pulumi dynamic resource.

The vSphere provider has no vGPU argument, so a ``vsphere-gpu`` lab in ``mode: vgpu`` attaches
the profile with this resource after the VM exists. Inputs: ``vm_uuid`` (the VM's BIOS UUID,
pulumi-vsphere's ``VirtualMachine.uuid``: the VM is found by it, never by its name),
``vm_name`` (for messages), ``profile`` (e.g. ``grid_p100-4q``), ``server`` (vCenter, ``host``
or ``host:port``), ``user``, ``password`` (a secret; kept secret in state through
``additional_secret_outputs``), ``insecure``.

``create`` attaches with :func:`infra.clouds.vsphere.attach_vgpu`: nothing happens to a VM
that already has the profile; otherwise a powered-on VM is powered off (vSphere changes vGPU
devices only on a powered-off VM) and back on afterwards, a powered-off one stays off, and a
suspended one is an error (powering it off would drop its memory). After powering a VM back on
it waits until the guest is back (:func:`infra.clouds.vsphere.wait_for_guest`: VMware Tools
running, an address; at most ``gpulab:host_wait_s``, read from the stack config); the site and
workload runs that depend on this resource then wait for its sshd (infra/wait.py).
``delete`` detaches the same way and succeeds when the VM or the device is already gone.
``read`` (``pulumi refresh``) asks vCenter whether the VM still has the profile: no VM or no
device means the resource is gone (the next ``up`` attaches again); an unreachable vCenter
leaves the stored outputs. A changed VM UUID, profile or vCenter replaces the resource
(delete before create: a VM holds one vGPU profile); credentials and the name update in place.

The engine runs the provider in its own host process (cwd = the repository root): it holds no
state, imports the vSphere SDK inside its methods, and dill pickles it by reference.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from infra.dynamic.aliases import formerly_default_typed

REPLACE_ON = ("vm_uuid", "profile", "server")
UPDATE_ON = ("vm_name", "user", "password", "insecure")
REQUIRED = ("vm_uuid", "vm_name", "server", "user", "password")


def _connect(props: dict[str, Any]) -> Any:
    from infra.clouds import vsphere

    host, port = vsphere.split_server(str(props["server"]))
    return vsphere.connect(
        host,
        str(props["user"]),
        str(props["password"]),
        port=port,
        insecure=bool(props.get("insecure", False)),
    )


def _disconnect(si: Any) -> None:
    try:
        from pyVim.connect import Disconnect

        Disconnect(si)
    except Exception:  # best effort: the session times out anyway
        pass


def _with_vm_off(
    vm: Any, vm_name: str, change: Callable[[], list[str]], wait_s: float
) -> list[str]:
    """Run ``change()`` with the VM powered off, then restore its power state; a VM powered
    back on is waited for until its guest is back (at most ``wait_s``)."""
    from infra.clouds import CloudError, vsphere

    state = vsphere.power_state(vm, vm_name)
    if state == "suspended":
        raise CloudError(
            f"VM {vm_name} is suspended: resume it or power it off, then run up again "
            "(vSphere changes vGPU devices only on a powered-off VM)"
        )
    was_on = state == "poweredOn"
    if was_on:
        vsphere.set_power(vm, vm_name, on=False)
    try:
        return change()
    finally:
        if was_on:
            vsphere.set_power(vm, vm_name, on=True)
            vsphere.wait_for_guest(vm, vm_name, wait_s)


class VgpuProfileProvider(ResourceProvider):
    host_wait_s: float = 600.0  # the stack's gpulab:host_wait_s once configure() ran

    def configure(self, req: Any) -> None:
        from infra.wait import host_wait_s

        self.host_wait_s = host_wait_s(req.config)

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        from infra.keys.types import VGPU_PROFILE_RE

        failures = []
        profile = news.get("profile")
        if not isinstance(profile, str) or not VGPU_PROFILE_RE.match(profile):
            failures.append(CheckFailure("profile", f"not a vGPU profile name: {profile!r}"))
        for key in REQUIRED:
            if not news.get(key):
                failures.append(CheckFailure(key, f"{key} is required"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in REPLACE_ON if olds.get(k) != news.get(k)]
        changed = replaces or [k for k in UPDATE_ON if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=replaces, delete_before_replace=True)

    def create(self, props: dict[str, Any]) -> CreateResult:
        from infra.clouds import vsphere

        uuid, name, profile = str(props["vm_uuid"]), str(props["vm_name"]), str(props["profile"])
        si = _connect(props)
        try:
            vm = vsphere.vm_of(si, name, uuid)
            profiles = vsphere.vgpu_profiles_of(vm, name)
            if profile not in profiles:
                profiles = _with_vm_off(
                    vm,
                    name,
                    lambda: vsphere.attach_vgpu(si, name, profile, uuid=uuid),
                    self.host_wait_s,
                )
        finally:
            _disconnect(si)
        return CreateResult(f"{uuid}/{profile}", {**props, "profiles": list(profiles)})

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from infra.clouds import CloudError, vsphere

        uuid, name, profile = str(props["vm_uuid"]), str(props["vm_name"]), str(props["profile"])
        try:
            si = _connect(props)
        except CloudError as exc:
            pulumi.log.warn(f"VgpuProfile {name}: not refreshed, vCenter unreachable: {exc}")
            return ReadResult(id_, dict(props))
        try:
            vm = vsphere.find_vm_by_uuid(si, uuid, name)
            profiles = vsphere.vgpu_profiles_of(vm, name) if vm is not None else []
        finally:
            _disconnect(si)
        if profile not in profiles:
            return ReadResult("", {})  # VM or vGPU gone: the resource no longer exists
        return ReadResult(id_, {**props, "profiles": profiles})

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        # Only credentials or the VM's name changed: nothing to do on the VM.
        return UpdateResult({**olds, **news})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from infra.clouds import vsphere

        uuid, name, profile = str(props["vm_uuid"]), str(props["vm_name"]), str(props["profile"])
        si = _connect(props)
        try:
            vm = vsphere.find_vm_by_uuid(si, uuid, name)
            if vm is None or profile not in vsphere.vgpu_profiles_of(vm, name):
                return  # VM or device already gone: nothing left to delete
            _with_vm_off(
                vm,
                name,
                lambda: vsphere.detach_vgpu(si, name, profile, uuid=uuid),
                self.host_wait_s,
            )
        finally:
            _disconnect(si)


class _VcenterResource(pulumi.dynamic.Resource):
    """A dynamic resource that works through vCenter: its own inputs and the vCenter login
    (``password`` a secret in the state, as an input and as an output)."""

    def __init__(
        self,
        provider: ResourceProvider,
        name: str,
        props: dict[str, Any],
        *,
        server: pulumi.Input[str],
        user: pulumi.Input[str],
        password: pulumi.Input[str],
        insecure: pulumi.Input[bool],
        opts: pulumi.ResourceOptions | None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["password"])
        )
        login = {"server": server, "user": user, "password": password, "insecure": insecure}
        super().__init__(provider, name, {**props, **login}, opts)


class VgpuProfile(_VcenterResource, module="gpulab", name="VgpuProfile"):
    """One vGPU ``profile`` on the VM whose UUID is ``vm_uuid``; type
    ``pulumi-python:dynamic/gpulab:VgpuProfile``, aliased to the SDK's default type it had
    before (:mod:`infra.dynamic.aliases`)."""

    vm_name: pulumi.Output[str]
    vm_uuid: pulumi.Output[str]
    profile: pulumi.Output[str]
    profiles: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        *,
        vm_uuid: pulumi.Input[str],
        vm_name: pulumi.Input[str],
        profile: pulumi.Input[str],
        server: pulumi.Input[str],
        user: pulumi.Input[str],
        password: pulumi.Input[str],
        insecure: pulumi.Input[bool] = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__(
            VgpuProfileProvider(),
            name,
            {"vm_uuid": vm_uuid, "vm_name": vm_name, "profile": profile, "profiles": None},
            server=server, user=user, password=password, insecure=insecure,
            opts=formerly_default_typed(opts),
        )  # fmt: skip


# The policy resource lives in infra.dynamic.vgpu_policy; its names stay importable from here,
# where stacks made before the move pickled its provider.
from infra.dynamic.vgpu_policy import VgpuPolicy, VgpuPolicyProvider  # noqa: E402

__all__ = ["VgpuPolicy", "VgpuPolicyProvider", "VgpuProfile", "VgpuProfileProvider"]
