"""An ESXi host's life cycle through vCenter: maintenance mode, reboot, and the waits, bounded.

Each step is one vSphere call and a wait with a deadline: ``EnterMaintenanceMode_Task`` (it
completes once no powered-on VM is left on the host; vCenter moves VMs itself only in a
DRS-automated cluster, and gpulab moves or powers off none), ``RebootHost_Task`` (refused
unless the host is in maintenance mode; the host then stops responding and comes back with a
new ``runtime.bootTime``, still in maintenance mode) and ``ExitMaintenanceMode_Task``. A step
that fails or does not finish in time is a one-line :class:`~infra.clouds.CloudError` naming
the host and the step; nothing is undone (a host that did not come back stays in maintenance
mode, which the line says).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import datetime
from typing import Any

from infra.clouds import CloudError
from infra.clouds.vsphere import ServiceInstance, guard

Say = Callable[[str], None]


def host_object(si: ServiceInstance, name: str) -> Any:
    """The HostSystem named ``name``; CloudError when vCenter has none."""
    from pyVmomi import vim

    with guard(f"ESXi host {name}"):
        content = si.RetrieveContent()
        view = content.viewManager.CreateContainerView(content.rootFolder, [vim.HostSystem], True)
        try:
            for h in view.view:
                if h.name == name:
                    return h
        finally:
            view.Destroy()
    raise CloudError(f"ESXi host {name}: not found in this vCenter")


def boot_time(host: Any) -> datetime | None:
    """The host's ``runtime.bootTime`` (None while vCenter does not know it)."""
    value = host.runtime.bootTime
    return value if isinstance(value, datetime) else None


def powered_on_vms(host: Any) -> list[str]:
    """Names of the powered-on VMs registered on ``host``."""
    return sorted(vm.name for vm in host.vm or [] if vm.runtime.powerState == "poweredOn")


def poll_interval(timeout_s: float) -> float:
    """How often a wait looks: a hundredth of its limit, between 0.1 and 5 seconds."""
    return min(5.0, max(0.1, timeout_s / 100))


def wait_task(task: Any, timeout_s: float, what: str) -> None:
    """Until ``task`` succeeds; CloudError ``what: <fault>`` or ``what: not done within N s``."""
    deadline = time.monotonic() + timeout_s
    step = poll_interval(timeout_s)
    while True:
        with guard(what):
            state = task.info.state
            if state == "success":
                return
            if state == "error":
                err = task.info.error
                name = type(err).__name__.split(".")[-1] if err is not None else "error"
                msg = (getattr(err, "msg", "") or "").strip()
                raise CloudError(f"{what}: {name}" + (f" ({msg})" if msg else ""))
        if time.monotonic() > deadline:
            raise CloudError(f"{what}: not done within {timeout_s:.0f} s")
        time.sleep(step)


def enter_maintenance(host: Any, name: str, timeout_s: float) -> float:
    """Put the host in maintenance mode (no-op when it is); returns the seconds it took."""
    t0 = time.monotonic()
    if host.runtime.inMaintenanceMode:
        return 0.0
    what = f"ESXi host {name}: maintenance mode"
    with guard(what):
        task = host.EnterMaintenanceMode_Task(
            timeout=max(1, int(timeout_s)), evacuatePoweredOffVms=False
        )
    try:
        wait_task(task, timeout_s + 5, what)
    except CloudError as exc:
        left = powered_on_vms(host)
        vms = f"; powered-on VMs still on it: {', '.join(left)}" if left else ""
        raise CloudError(f"{exc}{vms}") from None
    return time.monotonic() - t0


def exit_maintenance(host: Any, name: str, timeout_s: float) -> float:
    """Take the host out of maintenance mode; returns the seconds it took."""
    t0 = time.monotonic()
    what = f"ESXi host {name}: exit maintenance mode"
    with guard(what):
        task = host.ExitMaintenanceMode_Task(timeout=max(1, int(timeout_s)))
    wait_task(task, timeout_s + 5, what)
    return time.monotonic() - t0


def reboot(host: Any, name: str, timeout_s: float) -> float:
    """Reboot the host (in maintenance mode) and wait until vCenter reports it connected with
    a boot time after the one it had; returns the seconds it was away."""
    before = boot_time(host)
    t0 = time.monotonic()
    what = f"ESXi host {name}: reboot"
    with guard(what):
        task = host.RebootHost_Task(force=False)
    wait_task(task, timeout_s, what)
    deadline = t0 + timeout_s
    step = poll_interval(timeout_s)
    state = "unknown"
    while time.monotonic() <= deadline:
        try:
            with guard(what):
                state = str(host.runtime.connectionState)
                booted = boot_time(host)
        except CloudError:  # vCenter itself hiccups while the host is away: keep waiting
            booted = None
        if state == "connected" and booted is not None and (before is None or booted > before):
            return time.monotonic() - t0
        time.sleep(step)
    raise CloudError(
        f"{what}: not back within {timeout_s:.0f} s (vCenter says {state}); it stays in "
        "maintenance mode: bring it back, then run up again, or down to remove the lab"
    )
