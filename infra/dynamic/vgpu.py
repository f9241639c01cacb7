"""VgpuProfile: an NVIDIA vGPU profile on a vSphere VM, as a Pulumi dynamic resource.

The vSphere provider has no vGPU argument, so a ``vsphere-gpu`` lab in ``mode: vgpu`` attaches
the profile with this resource after the VM exists. Inputs: ``vm_name``, ``profile`` (e.g.
``grid_p100-4q``), ``server`` (vCenter, ``host`` or ``host:port``), ``user``, ``password``
(a secret; kept secret in state through ``additional_secret_outputs``), ``insecure``.

``create`` powers the VM off if it runs (vSphere only changes vGPU devices on a powered-off
VM), calls :func:`infra.clouds.vsphere.attach_vgpu` and powers it back on; ``delete`` does
the same with :func:`infra.clouds.vsphere.detach_vgpu`. A changed VM, profile or vCenter
replaces the resource. The provider holds no state: a plain class with imports inside its
methods, so Pulumi's dill serialization pickles it by reference to this module.
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ResourceProvider,
    UpdateResult,
)

REPLACE_ON = ("vm_name", "profile", "server")
UPDATE_ON = ("user", "password", "insecure")


def _connect(props: dict[str, Any]) -> Any:
    from infra.clouds import vsphere

    host, port = vsphere.split_server(str(props["server"]))
    return vsphere.connect(
        host, str(props["user"]), str(props["password"]), port=port,
        insecure=bool(props.get("insecure", False)),
    )


def _disconnect(si: Any) -> None:
    try:
        from pyVim.connect import Disconnect

        Disconnect(si)
    except Exception:  # best effort: the session times out anyway
        pass


def _with_vm_off(si: Any, vm_name: str, change: Any) -> Any:
    """Run ``change()`` with the VM powered off, restoring its power state afterwards."""
    from pyVim.task import WaitForTask

    from infra.clouds import vsphere

    vm = vsphere.find_vm(si, vm_name)
    was_on = vm.runtime.powerState == "poweredOn"
    if was_on:
        WaitForTask(vm.PowerOffVM_Task())
    try:
        return change()
    finally:
        if was_on:
            WaitForTask(vm.PowerOnVM_Task())


class VgpuProfileProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        from infra.config.fields import VGPU_PROFILE_RE

        failures = []
        profile = news.get("profile")
        if not isinstance(profile, str) or not VGPU_PROFILE_RE.match(profile):
            failures.append(CheckFailure("profile", f"not a vGPU profile name: {profile!r}"))
        for key in ("vm_name", "server", "user", "password"):
            if not news.get(key):
                failures.append(CheckFailure(key, f"{key} is required"))
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in REPLACE_ON if olds.get(k) != news.get(k)]
        changed = replaces or [k for k in UPDATE_ON if olds.get(k) != news.get(k)]
        return DiffResult(
            changes=bool(changed), replaces=replaces, delete_before_replace=True
        )

    def create(self, props: dict[str, Any]) -> CreateResult:
        from infra.clouds import vsphere

        vm_name, profile = str(props["vm_name"]), str(props["profile"])
        si = _connect(props)
        try:
            profiles = _with_vm_off(
                si, vm_name, lambda: vsphere.attach_vgpu(si, vm_name, profile)
            )
        finally:
            _disconnect(si)
        return CreateResult(f"{vm_name}/{profile}", {**props, "profiles": list(profiles)})

    def update(
        self, _id: str, _olds: dict[str, Any], news: dict[str, Any]
    ) -> UpdateResult:
        # Only credentials changed: nothing to do on the VM.
        return UpdateResult({**_olds, **news})

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        from infra.clouds import vsphere

        vm_name, profile = str(props["vm_name"]), str(props["profile"])
        si = _connect(props)
        try:
            _with_vm_off(si, vm_name, lambda: vsphere.detach_vgpu(si, vm_name, profile))
        finally:
            _disconnect(si)


class VgpuProfile(pulumi.dynamic.Resource):
    """One vGPU ``profile`` on the VM ``vm_name``."""

    vm_name: pulumi.Output[str]
    profile: pulumi.Output[str]
    profiles: pulumi.Output[list[str]]

    def __init__(
        self,
        name: str,
        *,
        vm_name: pulumi.Input[str],
        profile: pulumi.Input[str],
        server: pulumi.Input[str],
        user: pulumi.Input[str],
        password: pulumi.Input[str],
        insecure: pulumi.Input[bool] = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["password"])
        )
        super().__init__(
            VgpuProfileProvider(),
            name,
            {
                "vm_name": vm_name,
                "profile": profile,
                "server": server,
                "user": user,
                "password": password,
                "insecure": insecure,
                "profiles": None,
            },
            opts,
        )
