"""vSphere calls pulumi-vsphere cannot make: GPU-host queries, vGPU attach/detach, VM audit.

``attach_vgpu`` / ``detach_vgpu`` are what the vsphere-gpu topology's dynamic resource
(:mod:`infra.dynamic.vgpu`) calls on create and delete; both are idempotent and need the VM
powered off. vCenter accepts any profile string in a reconfigure and fails only at power-on,
so the profile is checked here against what the VM's host supports
(``HostSystem.config.sharedPassthruGpuTypes``).

Every failure is a one-line :class:`~infra.clouds.CloudError`; no message holds a password.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
from dataclasses import dataclass, field
from typing import Any

from infra.clouds import Check, CloudError, fail, guarded, ok, one_line

NVIDIA_VENDOR_ID = 0x10DE
ServiceInstance = Any  # pyVmomi vim.ServiceInstance


def split_server(server: str, default_port: int = 443) -> tuple[str, int]:
    """``vcenter.example.org`` or ``host:port`` -> (host, port)."""
    host, sep, port = server.rpartition(":")
    if sep and port.isdigit() and "]" not in port:
        return host.strip("[]"), int(port)
    return server, default_port


def connect(
    host: str,
    user: str,
    password: str,
    port: int = 443,
    insecure: bool = False,
    timeout: float = 30,
) -> ServiceInstance:
    """Log in to vCenter and return its ServiceInstance.

    ``insecure`` skips TLS certificate verification (self-signed lab vCenters); otherwise the
    certificate must chain to a trusted CA, also for localhost.
    """
    from pyVim.connect import SmartConnect
    from pyVmomi import vim

    where = f"vCenter {host}:{port}"
    if not user or not password:
        raise CloudError(f"{where}: no credentials given (set the user and VSPHERE_PASSWORD)")
    ctx = ssl._create_unverified_context() if insecure else ssl.create_default_context()
    try:
        return SmartConnect(
            host=host,
            port=port,
            user=user,
            pwd=password,
            sslContext=ctx,
            connectionPoolTimeout=timeout,
        )
    except vim.fault.InvalidLogin:
        raise CloudError(f"{where}: login failed: bad user name or password") from None
    except vim.fault.NoPermission as exc:
        raise CloudError(f"{where}: permission denied: {_no_permission(exc)}") from None
    except ssl.SSLCertVerificationError as exc:
        raise CloudError(
            f"{where}: TLS certificate not trusted ({exc.verify_message}); install its CA "
            "certificate or set gpulab:vsphere_insecure: true for a lab vCenter"
        ) from None
    except ConnectionRefusedError:
        raise CloudError(f"{where}: connection refused (is vCenter up on that port?)") from None
    except socket.gaierror:
        raise CloudError(f"{where}: host name does not resolve") from None
    except TimeoutError:
        raise CloudError(f"{where}: no answer within {timeout:.0f} s") from None
    except OSError as exc:
        raise CloudError(one_line(f"{where}: {exc.strerror or exc}", password)) from None
    except vim.fault.VimFault as exc:
        raise CloudError(one_line(f"{where}: {_fault(exc)}", password)) from None
    except Exception as exc:  # not a vSphere SDK endpoint, HTTP errors, SOAP faults
        msg = f"{where}: not a usable vCenter SDK endpoint ({type(exc).__name__}: {exc})"
        raise CloudError(one_line(msg, password, user)) from None


def connect_server(
    server: str, user: str, password: str, insecure: bool = False
) -> ServiceInstance:
    """:func:`connect` to ``server`` given as ``host`` or ``host:port``."""
    host, port = split_server(server)
    return connect(host, user, password, port=port, insecure=insecure)


def disconnect(si: ServiceInstance) -> None:
    """Log out; best effort (the session times out anyway)."""
    from pyVim.connect import Disconnect

    with contextlib.suppress(Exception):
        Disconnect(si)


def _no_permission(exc: Any) -> str:
    priv = getattr(exc, "privilegeId", None) or "a privilege"
    obj = getattr(exc, "object", None)
    name = getattr(obj, "_moId", None) or "an object"
    return f"the user lacks {priv} on {name}; grant it in vCenter's roles"


def _fault(exc: Any) -> str:
    msg = getattr(exc, "msg", None) or getattr(exc, "faultMessage", None) or ""
    return one_line(f"{type(exc).__name__.split('.')[-1]}: {msg}".rstrip(": "))


def guard(what: str) -> contextlib.AbstractContextManager[None]:
    """Turn vSphere faults inside the block into a one-line CloudError."""
    return guarded(what, _describe)


def _describe(what: str, exc: Exception) -> str | None:
    from pyVmomi import vim, vmodl

    if isinstance(exc, vim.fault.NoPermission):
        return f"{what}: permission denied: {_no_permission(exc)}"
    if isinstance(exc, vim.fault.VimFault | vmodl.MethodFault):
        return f"{what}: {_fault(exc)}"
    if isinstance(exc, ConnectionError | OSError):
        return one_line(f"{what}: lost the connection to vCenter ({exc})")
    return None  # not vCenter's failure: raised as it is


# ----------------------------------------------------------------------------- inventory


def _objects(si: ServiceInstance, kind: Any, props: list[str]) -> list[dict[str, Any]]:
    """All managed objects of ``kind`` with ``props``, in one PropertyCollector call."""
    from pyVmomi import vmodl

    content = si.RetrieveContent()
    view = content.viewManager.CreateContainerView(content.rootFolder, [kind], True)
    try:
        pc = vmodl.query.PropertyCollector
        spec = pc.FilterSpec(
            objectSet=[
                pc.ObjectSpec(
                    obj=view,
                    skip=True,
                    selectSet=[
                        pc.TraversalSpec(name="view", type=type(view), path="view", skip=False)
                    ],
                )
            ],
            propSet=[pc.PropertySpec(type=kind, pathSet=props)],
        )
        out = []
        for o in content.propertyCollector.RetrieveContents([spec]):
            row = {p.name: p.val for p in o.propSet}
            row["obj"] = o.obj
            out.append(row)
        return out
    finally:
        view.Destroy()


def find_vm(si: ServiceInstance, name: str) -> Any:
    from pyVmomi import vim

    with guard(f"VM {name}"):
        found = [
            r["obj"] for r in _objects(si, vim.VirtualMachine, ["name"]) if r.get("name") == name
        ]
    if not found:
        raise CloudError(f"VM {name}: no such virtual machine in this vCenter")
    if len(found) > 1:
        raise CloudError(f"VM {name}: {len(found)} virtual machines have this name; rename")
    return found[0]


@dataclass
class GpuDevice:
    id: str
    device_name: str
    device_id: int
    passthrough_capable: bool = False
    passthrough_enabled: bool = False


@dataclass
class GpuHost:
    name: str
    parent: str  # cluster (or standalone compute resource) name
    gpus: list[GpuDevice] = field(default_factory=list)
    vgpu_profiles: list[str] = field(default_factory=list)

    @property
    def passthrough_ready(self) -> list[GpuDevice]:
        return [g for g in self.gpus if g.passthrough_capable and g.passthrough_enabled]


def gpu_hosts(si: ServiceInstance, cluster: str | None = None) -> list[GpuHost]:
    """Hosts with NVIDIA PCI devices (vendor 0x10de): their passthrough state and the vGPU
    profiles each supports. ``cluster`` limits the answer to one cluster's hosts."""
    from pyVmomi import vim

    props = [
        "name",
        "parent",
        "hardware.pciDevice",
        "config.pciPassthruInfo",
        "config.sharedPassthruGpuTypes",
    ]
    with guard("GPU host query"):
        rows = _objects(si, vim.HostSystem, props)
        out = []
        for r in rows:
            parent = r["parent"].name if r.get("parent") is not None else ""
            if cluster and parent != cluster:
                continue
            passthru = {p.id: p for p in r.get("config.pciPassthruInfo") or []}
            gpus = []
            for d in r.get("hardware.pciDevice") or []:
                if d.vendorId & 0xFFFF != NVIDIA_VENDOR_ID:
                    continue
                p = passthru.get(d.id)
                gpus.append(
                    GpuDevice(
                        d.id,
                        d.deviceName,
                        d.deviceId & 0xFFFF,
                        bool(p and p.passthruCapable),
                        bool(p and p.passthruEnabled),
                    )
                )
            if gpus:
                profiles = list(r.get("config.sharedPassthruGpuTypes") or [])
                out.append(GpuHost(r["name"], parent, gpus, profiles))
    return sorted(out, key=lambda h: h.name)


# ----------------------------------------------------------------------------------- vGPU


def _vgpu_devices(vm: Any) -> list[Any]:
    from pyVmomi import vim

    return [
        d
        for d in vm.config.hardware.device
        if isinstance(d, vim.vm.device.VirtualPCIPassthrough)
        and isinstance(d.backing, vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo)
    ]


def find_vm_by_uuid(si: ServiceInstance, uuid: str, name: str | None = None) -> Any | None:
    """The VM whose BIOS UUID (``config.uuid``, pulumi-vsphere's ``VirtualMachine.uuid``) is
    ``uuid``, or None when vCenter has none. Names change and repeat; the UUID does not."""
    with guard(f"VM {name or uuid}"):
        index = si.RetrieveContent().searchIndex
        return index.FindByUuid(None, uuid, True, False)


def vm_of(si: ServiceInstance, vm_name: str, uuid: str | None = None) -> Any:
    """The VM by ``uuid`` when given, else by name; CloudError when there is none."""
    if uuid is None:
        return find_vm(si, vm_name)
    vm = find_vm_by_uuid(si, uuid, vm_name)
    if vm is None:
        raise CloudError(f"VM {vm_name}: no virtual machine with UUID {uuid} in this vCenter")
    return vm


def vgpu_profiles_of(vm: Any, vm_name: str = "") -> list[str]:
    """The vGPU profiles of the devices the VM has now."""
    with guard(f"VM {vm_name or vm._moId}"):
        return [d.backing.vgpu for d in _vgpu_devices(vm)]


def vm_vgpu_profiles(si: ServiceInstance, vm_name: str, uuid: str | None = None) -> list[str]:
    return vgpu_profiles_of(vm_of(si, vm_name, uuid), vm_name)


def power_state(vm: Any, vm_name: str) -> str:
    """``poweredOn``, ``poweredOff`` or ``suspended``."""
    with guard(f"VM {vm_name}"):
        return str(vm.runtime.powerState)


def set_power(vm: Any, vm_name: str, on: bool) -> None:
    """Power the VM on or off (hard) and check that it got there."""
    from pyVim.task import WaitForTask

    want = "poweredOn" if on else "poweredOff"
    with guard(f"power {'on' if on else 'off'} VM {vm_name}"):
        if vm.runtime.powerState != want:
            WaitForTask(vm.PowerOnVM_Task() if on else vm.PowerOffVM_Task())
        state = vm.runtime.powerState
    if state != want:
        raise CloudError(f"VM {vm_name} is {state} after powering it {'on' if on else 'off'}")


def _powered_off(vm: Any, vm_name: str, action: str) -> None:
    state = vm.runtime.powerState
    if state != "poweredOff":
        raise CloudError(f"VM {vm_name} is {state}: power it off before {action} a vGPU")


def _reconfigure(vm: Any, spec: Any, what: str) -> None:
    from pyVim.task import WaitForTask

    with guard(what):
        WaitForTask(vm.ReconfigVM_Task(spec=spec))


def attach_vgpu(
    si: ServiceInstance, vm_name: str, profile: str, uuid: str | None = None
) -> list[str]:
    """Add a vGPU ``profile`` to the powered-off VM (by ``uuid`` when given, else by name;
    no-op when it has one).

    Raises CloudError when the VM's host does not support the profile. Also locks the VM's
    memory reservation to its size, which vSphere requires of vGPU VMs. Returns the VM's
    vGPU profiles afterwards.
    """
    from pyVmomi import vim

    vm = vm_of(si, vm_name, uuid)
    what = f"attach vGPU {profile} to VM {vm_name}"
    with guard(what):
        current = [d.backing.vgpu for d in _vgpu_devices(vm)]
        if profile in current:
            return current
        _powered_off(vm, vm_name, "attaching")
        host = vm.runtime.host
        supported = list(host.config.sharedPassthruGpuTypes or []) if host else []
        host_name = host.name if host else "(none)"
    if profile not in supported:
        offer = ", ".join(supported) if supported else "none: no vGPU-capable GPU"
        raise CloudError(
            f"{what}: host {host_name} does not support {profile} (supported: {offer})"
        )
    dev = vim.vm.device.VirtualPCIPassthrough(
        key=-1, backing=vim.vm.device.VirtualPCIPassthrough.VmiopBackingInfo(vgpu=profile)
    )
    spec = vim.vm.ConfigSpec(
        deviceChange=[vim.vm.device.VirtualDeviceSpec(operation="add", device=dev)],
        memoryReservationLockedToMax=True,
    )
    _reconfigure(vm, spec, what)
    return vgpu_profiles_of(vm, vm_name)


def detach_vgpu(
    si: ServiceInstance, vm_name: str, profile: str, uuid: str | None = None
) -> list[str]:
    """Remove every vGPU device of ``profile`` from the powered-off VM (no-op when none).
    Returns the VM's vGPU profiles afterwards."""
    from pyVmomi import vim

    vm = vm_of(si, vm_name, uuid)
    what = f"detach vGPU {profile} from VM {vm_name}"
    with guard(what):
        devices = [d for d in _vgpu_devices(vm) if d.backing.vgpu == profile]
        if not devices:
            return [d.backing.vgpu for d in _vgpu_devices(vm)]
        _powered_off(vm, vm_name, "detaching")
        spec = vim.vm.ConfigSpec(
            deviceChange=[
                vim.vm.device.VirtualDeviceSpec(operation="remove", device=d) for d in devices
            ]
        )
    _reconfigure(vm, spec, what)
    return vgpu_profiles_of(vm, vm_name)


# ---------------------------------------------------------------------------------- audit


def lab_vms(si: ServiceInstance, prefix: str | None = None, tag: str | None = None) -> list[str]:
    """Names of the VMs whose name starts with ``prefix``, or whose annotation holds ``tag`` as
    a word (``gpulab-lab=<lab>`` style too), or that carry ``tag`` as a custom attribute value."""
    from pyVmomi import vim

    with guard("VM audit"):
        rows = _objects(si, vim.VirtualMachine, ["name", "config.annotation", "customValue"])
    out = []
    for r in rows:
        name = r.get("name") or ""
        note = (r.get("config.annotation") or "").replace("=", " ").replace(",", " ").split()
        values = [getattr(v, "value", None) for v in r.get("customValue") or []]
        if (prefix and name.startswith(prefix)) or (tag and (tag in note or tag in values)):
            out.append(name)
    return sorted(out)


def audit_vms(
    si: ServiceInstance, prefix: str | None = None, tag: str | None = None
) -> list[Check]:
    """After ``pulumi destroy`` no VM of the lab is left: one failing row per leftover VM."""
    if not prefix and not tag:
        raise ValueError("audit_vms needs a name prefix or a tag")
    left = lab_vms(si, prefix, tag)
    what = " or ".join(
        x for x in (f"name {prefix}*" if prefix else "", f"tag {tag}" if tag else "") if x
    )
    if not left:
        return [ok("vsphere VMs", f"no VM with {what} left")]
    return [
        fail(
            f"vsphere VM {name}",
            f"still exists ({what})",
            f"pulumi destroy again, or power off and delete VM {name} in vCenter",
        )
        for name in left
    ]
