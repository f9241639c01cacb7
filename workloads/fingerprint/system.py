"""Host facts: name, OS, kernel, CPU, memory, NUMA, and VM / container detection.

Every probe is guarded: a missing file or command yields ``None``, never an exception. ``root``
(a directory standing in for ``/``), ``env`` and ``run`` are injectable for tests.
"""

from __future__ import annotations

import os
import platform
import re
import socket
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

Run = Callable[[list[str]], "str | None"]

# DMI vendor/product substrings that mean a virtual machine.
VM_DMI_MARKERS = (
    "vmware",
    "qemu",
    "kvm",
    "xen",
    "virtualbox",
    "innotek",
    "bochs",
    "parallels",
    "openstack",
    "microsoft corporation virtual",
    "virtual machine",
    "amazon ec2",
    "google compute engine",
    "firecracker",
    "cloud hypervisor",
)


def run_command(argv: list[str]) -> str | None:
    """stdout of ``argv`` stripped (also when it exits non-zero), None if it cannot run."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout.strip()


def _read(root: Path, path: str) -> str | None:
    try:
        return (root / path.lstrip("/")).read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return None


def _os_release(root: Path) -> dict[str, str]:
    text = _read(root, "/etc/os-release") or _read(root, "/usr/lib/os-release") or ""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip().strip('"')
    return out


def cpu_info(root: Path) -> dict[str, Any]:
    text = _read(root, "/proc/cpuinfo") or ""
    model = None
    flags: set[str] = set()
    sockets: set[str] = set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and model is None:
            model = value.strip()
        elif key == "flags" and not flags:
            flags = set(value.split())
        elif key == "physical id":
            sockets.add(value.strip())
    try:
        usable = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        usable = None
    return {
        "model": model or platform.processor() or None,
        "arch": platform.machine(),
        "logical_cpus": os.cpu_count(),
        "usable_cpus": usable,
        "sockets": len(sockets) or None,
        "hypervisor_flag": "hypervisor" in flags,
    }


def numa_info(root: Path) -> dict[str, Any]:
    base = root / "sys/devices/system/node"
    nodes: dict[str, str | None] = {}
    try:
        for node in sorted(base.glob("node[0-9]*")):
            nodes[node.name] = _read(root, f"/sys/devices/system/node/{node.name}/cpulist")
    except OSError:
        pass
    return {"nodes": len(nodes) or None, "cpulists": nodes}


def memory_total_mib(root: Path) -> int | None:
    m = re.search(r"^MemTotal:\s+(\d+) kB", _read(root, "/proc/meminfo") or "", re.M)
    return int(m.group(1)) // 1024 if m else None


def vm_info(root: Path, run: Run, hypervisor_flag: bool) -> dict[str, Any]:
    virt = run(["systemd-detect-virt", "--vm"])
    dmi = {
        key: _read(root, f"/sys/class/dmi/id/{key}")
        for key in ("sys_vendor", "product_name", "bios_vendor", "board_vendor")
    }
    dmi_text = " ".join(v for v in dmi.values() if v).lower()
    dmi_vm = any(marker in dmi_text for marker in VM_DMI_MARKERS)
    detected = virt if virt and virt != "none" else None
    return {
        "is_vm": bool(detected or dmi_vm or hypervisor_flag),
        "systemd_detect_virt": virt,
        "dmi": dmi,
        "dmi_says_vm": dmi_vm,
        "cpuinfo_hypervisor_flag": hypervisor_flag,
        "hypervisor": detected or (dmi.get("sys_vendor") if dmi_vm else None),
    }


def container_info(root: Path, env: Mapping[str, str], run: Run) -> dict[str, Any]:
    virt = run(["systemd-detect-virt", "--container"])
    dockerenv = (root / ".dockerenv").exists()
    containerenv = (root / "run/.containerenv").exists()
    apptainer_vars = sorted(k for k in env if k.startswith(("SINGULARITY_", "APPTAINER_")))
    k8s = "KUBERNETES_SERVICE_HOST" in env
    cgroup = (_read(root, "/proc/1/cgroup") or "").lower()
    if k8s or "kubepods" in cgroup:
        runtime = "kubernetes"
    elif apptainer_vars:
        runtime = "apptainer"
    elif containerenv or virt == "podman":
        runtime = "podman"
    elif dockerenv or virt == "docker" or "/docker/" in cgroup:
        runtime = "docker"
    elif virt and virt != "none":
        runtime = virt
    else:
        runtime = None
    return {
        "in_container": runtime is not None,
        "runtime": runtime,
        "systemd_detect_virt": virt,
        "dockerenv": dockerenv,
        "containerenv": containerenv,
        "apptainer_vars": apptainer_vars,
        "kubernetes": k8s,
    }


def collect_system(
    root: str | os.PathLike[str] = "/",
    env: Mapping[str, str] | None = None,
    run: Run = run_command,
) -> dict[str, Any]:
    base = Path(root)
    env = os.environ if env is None else env
    osr = _os_release(base)
    cpu = cpu_info(base)
    vm = vm_info(base, run, bool(cpu["hypervisor_flag"]))
    container = container_info(base, env, run)
    return {
        "host": socket.gethostname(),
        "os": {
            "system": platform.system(),
            "name": osr.get("PRETTY_NAME") or osr.get("NAME"),
            "id": osr.get("ID"),
            "version_id": osr.get("VERSION_ID"),
        },
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "cpu": cpu,
        "memory_mib": memory_total_mib(base),
        "numa": numa_info(base),
        "vm": vm,
        "container": container,
        "execution_env": container["runtime"] or "native",
    }
