"""Cross-check the lab's stated setting against what the fingerprint observed.

The lab's setting (:mod:`workloads.setting`) is what a record is grouped by; the fingerprint
never overrides it. Where the two disagree the record carries a flag, one sentence each, in
``setting_flags``:

- the lab says VM (``vm``/``container-in-vm``) but no VM is seen: ``systemd-detect-virt --vm``
  says none (or is missing), no DMI VM vendor, no ``hypervisor`` flag in /proc/cpuinfo;
- the lab says bare metal (``none``/``container``) but a hypervisor is seen by any of them (the
  cpuinfo ``hypervisor`` flag alone is enough: a VM must not pass for bare metal);
- the lab says container but no container marker is found (/.dockerenv, /run/.containerenv,
  APPTAINER_*/SINGULARITY_* variables, KUBERNETES_SERVICE_HOST, kubepods/docker cgroup,
  ``systemd-detect-virt --container``), or a different runtime is found;
- the lab says native but a container is found;
- no fingerprint (or a failed one): not cross-checked.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workloads.execenv import ENVS

VM_VIRT = ("vm", "container-in-vm")


def _vm_evidence(vm: Mapping[str, Any]) -> str:
    parts = [f"systemd-detect-virt --vm {vm.get('systemd_detect_virt') or 'unavailable'}"]
    parts.append("DMI vendor is a VM's" if vm.get("dmi_says_vm") else "no DMI VM vendor")
    parts.append(
        "cpuinfo hypervisor flag set"
        if vm.get("cpuinfo_hypervisor_flag")
        else "no cpuinfo hypervisor flag"
    )
    return ", ".join(parts)


def _container_evidence(c: Mapping[str, Any]) -> str:
    seen = [
        name
        for name, on in (
            ("/.dockerenv", c.get("dockerenv")),
            ("/run/.containerenv", c.get("containerenv")),
            ("KUBERNETES_SERVICE_HOST", c.get("kubernetes")),
        )
        if on
    ]
    seen += list(c.get("apptainer_vars") or [])[:2]
    virt = c.get("systemd_detect_virt")
    seen.append(f"systemd-detect-virt --container {virt or 'unavailable'}")
    return ", ".join(seen)


def setting_flags(setting: Mapping[str, Any], fingerprint: Mapping[str, Any] | None) -> list[str]:
    """One line per disagreement between ``setting`` (record fields) and ``fingerprint``."""
    virt = str(setting.get("virtualization"))
    env = str(setting.get("exec_env"))
    path = setting.get("gpu_path")
    if not fingerprint or ("error" in fingerprint and "vm" not in fingerprint):
        why = (fingerprint or {}).get("error") or "no fingerprint"
        return [f"setting not cross-checked: {why}"]
    flags: list[str] = []
    vm = fingerprint.get("vm")
    if isinstance(vm, Mapping) and isinstance(vm.get("is_vm"), bool):
        lab_vm = virt in VM_VIRT
        if lab_vm and not vm["is_vm"]:
            flags.append(
                f"lab says vm (gpu_path {path}), fingerprint says bare metal: {_vm_evidence(vm)}"
            )
        elif not lab_vm and vm["is_vm"]:
            seen = vm.get("hypervisor") or "a hypervisor"
            flags.append(
                f"lab says bare metal (gpu_path {path}), fingerprint sees {seen}: "
                f"{_vm_evidence(vm)}"
            )
    else:
        flags.append("fingerprint has no VM detection: virtualization not cross-checked")
    c = fingerprint.get("container")
    if isinstance(c, Mapping) and isinstance(c.get("in_container"), bool):
        runtime = c.get("runtime")
        # the fingerprint's runtime names for the lab's container execution environments
        runtimes = ENVS[env].runtimes if env in ENVS else ()
        if runtimes and not c["in_container"]:
            flags.append(
                f"lab says container (exec_env {env}), fingerprint finds no container marker: "
                f"{_container_evidence(c)}"
            )
        elif runtimes and runtime not in runtimes:
            flags.append(
                f"lab says container (exec_env {env}), fingerprint finds runtime {runtime}: "
                f"{_container_evidence(c)}"
            )
        elif not runtimes and c["in_container"]:
            flags.append(
                f"lab says {env} (no container), fingerprint finds a {runtime} container: "
                f"{_container_evidence(c)}"
            )
    else:
        flags.append("fingerprint has no container detection: exec_env not cross-checked")
    return flags
