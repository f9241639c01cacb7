"""vSphere teardown audit: the lab's VMs (GPU and knowledge-worker VMs) and VM folders left
after ``pulumi destroy``.

A VM belongs to the lab when its name starts with ``<lab>-`` or its annotation holds
``lab=<lab>`` (:func:`infra.clouds.vsphere.lab_vms`); a VM folder when its name is ``<lab>``
or starts with ``<lab>-``. One failing row per leftover, with what removes it.
"""

from __future__ import annotations

from infra.clouds import Check, CloudError, fail, ok
from infra.clouds.vsphere import ServiceInstance, _objects, audit_vms, guard


def lab_folders(si: ServiceInstance, lab: str) -> list[tuple[str, int]]:
    """(name, number of children) of the VM folders named ``<lab>`` or ``<lab>-*``."""
    from pyVmomi import vim

    with guard("VM folder audit"):
        rows = _objects(si, vim.Folder, ["name", "childType", "childEntity"])
    out = []
    for r in rows:
        name = r.get("name") or ""
        if "VirtualMachine" not in (r.get("childType") or []):
            continue
        if name == lab or name.startswith(f"{lab}-"):
            out.append((name, len(r.get("childEntity") or [])))
    return sorted(out)


def audit_vsphere(si: ServiceInstance, lab: str) -> list[Check]:
    """Rows for every VM and VM folder of ``lab`` still in vCenter, or passing rows."""
    rows: list[Check] = []
    try:
        rows += audit_vms(si, prefix=f"{lab}-", tag=lab)
    except CloudError as exc:
        rows.append(fail("vsphere VMs", str(exc), "fix access, then audit again"))
    try:
        folders = lab_folders(si, lab)
    except CloudError as exc:
        return [*rows, fail("vsphere VM folders", str(exc), "fix access, then audit again")]
    if not folders:
        return [*rows, ok("vsphere VM folders", f"no VM folder {lab} or {lab}-* left")]
    for name, children in folders:
        rows.append(
            fail(
                f"vsphere VM folder {name}",
                f"still exists ({children} item(s) in it)",
                f"empty it, then delete VM folder {name} in vCenter (govc object.destroy)",
            )
        )
    return rows
