"""workloads.fingerprint pinned where mutation testing found it loose: /proc/cpuinfo, NUMA,
/proc/meminfo and os-release parsing, DMI and systemd-detect-virt VM detection, container
runtimes, NVML answers (virtualization modes, NUMA node -1, CUDA versions, clocks) and the
cross-check's evidence lines.

Host files are real files under a fake root (``collect_system(root=...)``); commands are the
injectable ``run`` (a stand-in for systemd-detect-virt, absent or answering). NVML is a test
double of ``pynvml`` (no NVIDIA driver here). The host modelled first is a real NVIDIA H200
guest seen from a Docker container: NVML virtualization mode passthrough, sysfs numa_node -1,
one NUMA node, the cpuinfo ``hypervisor`` flag, no DMI, no systemd-detect-virt.
"""

from __future__ import annotations

import codecs
import io
import locale
import os
import platform
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import workloads.fingerprint.nvml as nvml_mod
from tests.workloads.nvml_h200 import H200Nvml, NVMLError
from workloads.fingerprint.crosscheck import setting_flags
from workloads.fingerprint.nvml import (
    call,
    cuda_version_str,
    device_info,
    gpu_info,
    init,
    throttle_names,
)
from workloads.fingerprint.system import collect_system as system
from workloads.fingerprint.system import (
    container_info,
    cpu_info,
    memory_total_mib,
    numa_info,
    vm_info,
)

H200_CPUINFO = """\
processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8480+
physical id\t: 0
flags\t\t: fpu vme sse sse2 avx512f hypervisor arch_capabilities
bogomips\t: 4000.00

processor\t: 1
vendor_id\t: GenuineIntel
model name\t: a later model name line is not the CPU's
physical id\t: 0
flags\t\t: fpu
"""


def write(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


def absent(argv: list[str]) -> str | None:
    """No systemd-detect-virt (a Docker container): the command cannot run."""
    return None


def h200_root(tmp_path: Path) -> Path:
    write(tmp_path, "proc/cpuinfo", H200_CPUINFO)
    write(tmp_path, "proc/meminfo", "MemTotal:       2113425408 kB\nMemFree:  12 kB\n")
    write(tmp_path, "sys/devices/system/node/node0/cpulist", "0-43\n")
    write(tmp_path, "sys/devices/system/node/possible", "0\n")
    write(tmp_path, "sys/devices/system/node/online", "0\n")
    write(tmp_path, ".dockerenv", "")
    write(
        tmp_path,
        "etc/os-release",
        'NAME="Ubuntu"\nPRETTY_NAME="Ubuntu 22.04.4 LTS"\nID=ubuntu\n'
        'VERSION_ID="22.04"\n# a comment\n',
    )
    return tmp_path


# --- host facts -------------------------------------------------------------------------------


def test_h200_guest_in_docker_reads_as_a_vm_with_one_numa_node(tmp_path: Path) -> None:
    fp = system(root=h200_root(tmp_path), env={}, run=absent)
    assert fp["vm"] == {
        "is_vm": True,
        "systemd_detect_virt": None,
        "dmi": {
            "sys_vendor": None,
            "product_name": None,
            "bios_vendor": None,
            "board_vendor": None,
        },
        "dmi_says_vm": False,
        "cpuinfo_hypervisor_flag": True,
        "hypervisor": None,
    }
    assert fp["numa"] == {"nodes": 1, "cpulists": {"node0": "0-43"}}
    assert fp["cpu"]["model"] == "Intel(R) Xeon(R) Platinum 8480+"
    assert fp["cpu"]["sockets"] == 1 and fp["cpu"]["hypervisor_flag"] is True
    assert fp["memory_mib"] == 2113425408 // 1024
    assert fp["os"]["name"] == "Ubuntu 22.04.4 LTS"
    assert (fp["os"]["id"], fp["os"]["version_id"]) == ("ubuntu", "22.04")
    assert fp["container"]["runtime"] == "docker" and fp["execution_env"] == "docker"


def test_cpuinfo_first_flags_line_sockets_and_no_model(tmp_path: Path) -> None:
    write(
        tmp_path,
        "proc/cpuinfo",
        (
            "processor\t: 0\nphysical id\t: 0\nflags\t\t: fpu sse\n"
            "processor\t: 1\nphysical id\t: 1\nflags\t\t: fpu hypervisor\n"
            "processor\t: 2\nphysical id\t: 1\n"
        ),
    )
    cpu = cpu_info(tmp_path)
    assert cpu["sockets"] == 2
    assert cpu["hypervisor_flag"] is False  # the first flags line speaks for the CPU
    write(tmp_path, "proc/cpuinfo", "flags\t: fpu nohypervisor hypervisor_lite\n")
    cpu = cpu_info(tmp_path)
    assert cpu["hypervisor_flag"] is False and cpu["sockets"] is None  # whole flag names only


def test_no_cpuinfo_meminfo_or_numa_is_none_not_an_error(tmp_path: Path) -> None:
    cpu = cpu_info(tmp_path)
    assert cpu["hypervisor_flag"] is False and cpu["sockets"] is None
    assert memory_total_mib(tmp_path) is None
    assert numa_info(tmp_path) == {"nodes": None, "cpulists": {}}
    write(tmp_path, "proc/meminfo", "MemFree: 5 kB\nMemTotal: 2047 kB\n")
    assert memory_total_mib(tmp_path) == 1


def test_numa_nodes_sorted_and_only_node_directories(tmp_path: Path) -> None:
    for n, cpus in ((1, "8-15"), (0, "0-7")):
        write(tmp_path, f"sys/devices/system/node/node{n}/cpulist", cpus + "\n")
    (tmp_path / "sys/devices/system/node/node2").mkdir()  # memory-only node: no cpulist
    write(tmp_path, "sys/devices/system/node/has_cpu", "0-1\n")
    numa = numa_info(tmp_path)
    assert numa["nodes"] == 3
    assert list(numa["cpulists"].items()) == [("node0", "0-7"), ("node1", "8-15"), ("node2", None)]


def test_os_release_falls_back_to_usr_lib_and_to_name(tmp_path: Path) -> None:
    write(tmp_path, "usr/lib/os-release", "NAME='Rocky'\nNAME=\"Rocky Linux\"\nID = rocky \n")
    fp = system(root=tmp_path, env={}, run=absent)
    assert fp["os"]["name"] == "Rocky Linux" and fp["os"]["id"] == "rocky"
    assert fp["os"]["version_id"] is None


@pytest.mark.parametrize(
    ("dmi", "says_vm", "hypervisor"),
    [
        ({"sys_vendor": "QEMU", "product_name": "Standard PC (Q35 + ICH9, 2009)"}, True, "QEMU"),
        ({"sys_vendor": "Red Hat", "product_name": "KVM"}, True, "Red Hat"),
        (
            {"sys_vendor": "Microsoft Corporation", "product_name": "Virtual Machine"},
            True,
            "Microsoft Corporation",
        ),
        ({"bios_vendor": "Amazon EC2"}, True, None),
        ({"board_vendor": "Google", "bios_vendor": "Google"}, False, None),
        ({"sys_vendor": "Supermicro", "product_name": "SYS-821GE-TNHR"}, False, None),
    ],
)
def test_dmi_vm_vendors_in_any_field(
    tmp_path: Path, dmi: dict[str, str], says_vm: bool, hypervisor: str | None
) -> None:
    for key, value in dmi.items():
        write(tmp_path, f"sys/class/dmi/id/{key}", value + "\n")
    vm = vm_info(tmp_path, lambda argv: "none", False)
    assert vm["dmi_says_vm"] is says_vm and vm["is_vm"] is says_vm
    assert vm["hypervisor"] == hypervisor
    assert vm["systemd_detect_virt"] == "none"
    assert vm["dmi"] == {
        k: dmi.get(k) for k in ("sys_vendor", "product_name", "bios_vendor", "board_vendor")
    }


def test_systemd_detect_virt_is_asked_about_vms_and_wins_over_dmi(tmp_path: Path) -> None:
    asked: list[list[str]] = []

    def run(argv: list[str]) -> str | None:
        asked.append(argv)
        return "kvm"

    write(tmp_path, "sys/class/dmi/id/sys_vendor", "QEMU\n")
    vm = vm_info(tmp_path, run, False)
    assert asked == [["systemd-detect-virt", "--vm"]]
    assert vm["hypervisor"] == "kvm" and vm["is_vm"] is True


@pytest.mark.parametrize(
    ("env", "files", "cgroup", "virt", "runtime"),
    [
        ({}, [], "0::/init.scope", "none", None),
        ({}, [], "0::/init.scope", None, None),
        ({}, [], "12:pids:/docker/0123abcd\n", "none", "docker"),
        ({}, [], "0::/kubepods/burstable/pod1/abc", "none", "kubernetes"),
        ({}, [], "", "docker", "docker"),
        ({}, [], "", "podman", "podman"),
        ({}, [], "", "lxc", "lxc"),
        (
            {"KUBERNETES_SERVICE_HOST": "10.0.0.1", "APPTAINER_NAME": "a"},
            [".dockerenv"],
            "",
            "docker",
            "kubernetes",
        ),
        ({"SINGULARITY_NAME": "a"}, ["run/.containerenv"], "", "none", "apptainer"),
        ({}, ["run/.containerenv", ".dockerenv"], "", "none", "podman"),
        ({"HOME": "/root", "APPTAINERX": "1"}, [], "", "none", None),
    ],
)
def test_container_runtime_by_marker_and_priority(
    tmp_path: Path,
    env: dict[str, str],
    files: list[str],
    cgroup: str,
    virt: str | None,
    runtime: str | None,
) -> None:
    for f in files:
        write(tmp_path, f, "")
    write(tmp_path, "proc/1/cgroup", cgroup)
    asked: list[list[str]] = []

    def run(argv: list[str]) -> str | None:
        asked.append(argv)
        return virt

    c = container_info(tmp_path, env, run)
    assert asked == [["systemd-detect-virt", "--container"]]
    assert c["runtime"] == runtime and c["in_container"] is (runtime is not None)
    assert c["systemd_detect_virt"] == virt
    assert c["dockerenv"] is (".dockerenv" in files)
    assert c["containerenv"] is ("run/.containerenv" in files)
    assert c["kubernetes"] is ("KUBERNETES_SERVICE_HOST" in env)
    assert c["apptainer_vars"] == sorted(
        k for k in env if k.startswith(("SINGULARITY_", "APPTAINER_"))
    )


# --- NVML ---------------------------------------------------------------------------------------


@pytest.fixture
def sysfs(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """A double of the PCI devices' sysfs numa_node files (this machine's all say -1): the
    nvml module's ``open`` reads from this mapping, a missing path raises FileNotFoundError."""
    files: dict[str, str] = {}
    real_open = open

    def fake_open(path: str, *args: Any, **kwargs: Any) -> Any:
        if not str(path).startswith("/sys/"):
            return real_open(path, *args, **kwargs)
        codecs.lookup(kwargs.get("encoding") or "utf-8")  # an unknown codec fails as in open()
        if path not in files:
            raise FileNotFoundError(2, "No such file or directory", path)
        return io.StringIO(files[path])

    monkeypatch.setattr(nvml_mod, "open", fake_open, raising=False)
    return files


def test_h200_passthrough_with_numa_minus_one_is_null(sysfs: dict[str, str]) -> None:
    sysfs["/sys/bus/pci/devices/0000:1a:00.0/numa_node"] = "-1\n"
    fake = H200Nvml()
    info = gpu_info(fake)
    (gpu,) = info["gpus"]
    assert gpu["virtualization_mode"] == "passthrough"
    assert info["virtualization_modes"] == ["passthrough"]
    assert gpu["numa_node"] is None
    assert gpu["memory_total_mib"] == 143771
    assert gpu["compute_capability"] == "9.0"
    assert gpu["power_limit_w"] == 700.0
    assert gpu["mig_mode"] == {"current": 1, "pending": 0}
    assert gpu["pci_bus_id"] == "00000000:1A:00.0" and gpu["persistence_mode"] == 1
    assert info["cuda_driver_version"] == "12.4"  # the _v2 call first
    assert info["nvml_version"] == "12.550.90.07"
    assert (info["present"], info["count"], info["reason"]) == (True, 1, None)
    assert fake.shutdowns == 1


@pytest.mark.parametrize(
    ("nvml_numa", "sysfs_text", "expected"),
    [
        (0, None, 0),  # NVML's answer, node 0 included
        (1, "0\n", 1),
        (-1, "1\n", 1),  # NVML says -1: the sysfs file of the bus id (lower case, 4-digit domain)
        (NVMLError("Not Supported"), " 0 \n", 0),
        (-1, None, None),  # no sysfs file
        (-1, "x\n", None),  # not a number
        (-1, "-1\n", None),
        ("0", "2\n", 2),  # not an int from NVML: sysfs
    ],
)
def test_numa_node_from_nvml_else_sysfs(
    sysfs: dict[str, str], nvml_numa: Any, sysfs_text: str | None, expected: int | None
) -> None:
    if sysfs_text is not None:
        sysfs["/sys/bus/pci/devices/0000:1a:00.0/numa_node"] = sysfs_text
    assert device_info(H200Nvml(numa=nvml_numa), 0)["numa_node"] == expected


@pytest.mark.parametrize(
    ("mode", "name"),
    [
        (0, "none"),
        (1, "passthrough"),
        (2, "vgpu"),
        (3, "host_vgpu"),
        (4, "host_vsga"),
        (7, "unknown(7)"),
    ],
)
def test_nvml_virtualization_modes(sysfs: dict[str, str], mode: int, name: str) -> None:
    assert device_info(H200Nvml(virt_mode=mode), 0)["virtualization_mode"] == name


def test_no_handle_and_no_gpus(sysfs: dict[str, str]) -> None:
    class NoHandle(H200Nvml):
        def nvmlDeviceGetHandleByIndex(self, i: int) -> tuple[str, int]:
            raise NVMLError("Unknown Error")

    assert device_info(NoHandle(), 3) == {"index": 3, "error": "no handle"}
    fake = H200Nvml(count=0)
    info = gpu_info(fake)
    assert (info["present"], info["count"], info["reason"]) == (False, 0, "NVML found no GPU")
    assert info["gpus"] == [] and info["virtualization_modes"] == [] and fake.shutdowns == 1


def test_cuda_versions_throttle_names_and_guarded_calls() -> None:
    assert cuda_version_str(12040) == "12.4" and cuda_version_str(11080) == "11.8"
    assert cuda_version_str(12000) == "12.0" and cuda_version_str(9020) == "9.2"
    assert [cuda_version_str(v) for v in (0, -1, None, "12040")] == [None] * 4
    assert throttle_names(0x1 | 0x100) == ["gpu_idle", "display_clock_setting"]
    assert throttle_names(0) == [] and throttle_names(None) == []
    assert call(SimpleNamespace(), "nvmlMissing") is None
    assert call(SimpleNamespace(f=lambda a, b: a + b), "f", 2, 3) == 5
    assert call(SimpleNamespace(f=lambda: b"\xffok"), "f") == "\ufffdok"
    assert init(None) == "nvidia-ml-py (pynvml) is not installed"


# --- the cross-check's evidence -----------------------------------------------------------------


def test_h200_guest_said_to_be_bare_metal_is_flagged_with_its_evidence(tmp_path: Path) -> None:
    fp = system(root=h200_root(tmp_path), env={}, run=absent)
    setting = {"virtualization": "container", "exec_env": "docker", "gpu_path": "whole-machine"}
    assert setting_flags(setting, fp) == [
        "lab says bare metal (gpu_path whole-machine), fingerprint sees a hypervisor: "
        "systemd-detect-virt --vm unavailable, no DMI VM vendor, cpuinfo hypervisor flag set"
    ]
    setting = {"virtualization": "container-in-vm", "exec_env": "docker", "gpu_path": "passthrough"}
    assert setting_flags(setting, fp) == []


def test_container_evidence_lists_each_marker() -> None:
    fp = {
        "vm": {"is_vm": False},
        "container": {
            "in_container": True,
            "runtime": "podman",
            "dockerenv": True,
            "containerenv": True,
            "kubernetes": True,
            "apptainer_vars": ["APPTAINER_A", "APPTAINER_B", "APPTAINER_C"],
            "systemd_detect_virt": "podman",
        },
    }
    setting = {"virtualization": "container", "exec_env": "k8s", "gpu_path": "container-bm"}
    assert setting_flags(setting, fp) == [
        "lab says container (exec_env k8s), fingerprint finds runtime podman: /.dockerenv, "
        "/run/.containerenv, KUBERNETES_SERVICE_HOST, APPTAINER_A, APPTAINER_B, "
        "systemd-detect-virt --container podman"
    ]


def test_a_fingerprint_without_detection_says_what_was_not_checked() -> None:
    setting = {"virtualization": "none", "exec_env": "native", "gpu_path": "local"}
    assert setting_flags(setting, {"vm": {"is_vm": "yes"}, "container": []}) == [
        "fingerprint has no VM detection: virtualization not cross-checked",
        "fingerprint has no container detection: exec_env not cross-checked",
    ]
    # an error beside the detection: still cross-checked
    fp = {"error": "partial", "vm": {"is_vm": False}, "container": {"in_container": False}}
    assert setting_flags(setting, fp) == []
    assert setting_flags(setting, {"error": ""}) == ["setting not cross-checked: no fingerprint"]


# --- second round: what the first measurement left ----------------------------------------------


def test_device_facts_pcie_and_unsupported_memory_mode_and_capability(
    sysfs: dict[str, str],
) -> None:
    gpu = device_info(H200Nvml(), 0)
    assert gpu["index"] == 0 and gpu["compute_capability"] == "9.0"
    assert gpu["pcie"] == {"gen_current": 4, "gen_max": 5, "width_current": 8, "width_max": 16}
    fake = H200Nvml()
    fake.no_memory_or_mode = True
    gpu = device_info(fake, 0)
    assert gpu["memory_total_mib"] is None and gpu["virtualization_mode"] is None
    assert gpu["compute_capability"] is None
    assert (gpu["power_limit_w"], gpu["persistence_mode"]) == (700.0, 1)


@pytest.mark.parametrize(
    ("bus_id", "path"),
    [
        ("0000B7D4:9A:00.0", "/sys/bus/pci/devices/b7d4:9a:00.0/numa_node"),  # Azure-like domain
        ("0000:1A:00.0", "/sys/bus/pci/devices/0000:1a:00.0/numa_node"),  # a 4-digit domain
    ],
)
def test_sysfs_numa_path_of_a_bus_id(sysfs: dict[str, str], bus_id: str, path: str) -> None:
    sysfs[path] = "1\n"

    class Bus(H200Nvml):
        def nvmlDeviceGetPciInfo(self, h: Any) -> SimpleNamespace:
            return SimpleNamespace(busId=bus_id)

    assert device_info(Bus(numa=-1), 0)["numa_node"] == 1


def test_collect_passes_the_nvml_it_is_given(tmp_path: Path, sysfs: dict[str, str]) -> None:
    from workloads.fingerprint import collect

    fp = collect(H200Nvml(), root=h200_root(tmp_path), env={}, run=absent)
    assert fp["gpu"]["count"] == 1 and fp["gpu"]["gpus"][0]["name"] == "NVIDIA H200"


def test_host_keys_and_cpu_counts(tmp_path: Path) -> None:
    fp = system(root=h200_root(tmp_path), env={}, run=absent)
    assert fp["os"]["system"] == platform.system()
    assert fp["kernel_version"] == platform.version()
    assert fp["cpu"]["arch"] == platform.machine()
    assert fp["cpu"]["usable_cpus"] == len(os.sched_getaffinity(0))
    assert cpu_info(tmp_path / "none")["model"] == (platform.processor() or None)


def test_odd_but_valid_host_files(tmp_path: Path) -> None:
    """A QEMU model-id holding ':', os-release values holding '=' or starting with 'X', a DMI
    field with bytes that are not UTF-8."""
    write(tmp_path, "proc/cpuinfo", "model name\t: QEMU cpu: custom\nflags\t: hypervisor\n")
    assert cpu_info(tmp_path)["model"] == "QEMU cpu: custom"
    write(tmp_path, "etc/os-release", 'NAME="XCP-ng"\nPRETTY_NAME="XCP-ng 8.2 (a=b)"\nID=xcp-ng\n')
    fp = system(root=tmp_path, env={}, run=absent)
    assert fp["os"]["name"] == "XCP-ng 8.2 (a=b)" and fp["os"]["id"] == "xcp-ng"
    (tmp_path / "sys/class/dmi/id").mkdir(parents=True)
    (tmp_path / "sys/class/dmi/id/board_vendor").write_bytes(b"Board\xff\xfe Co\n")
    assert vm_info(tmp_path, absent, False)["dmi"]["board_vendor"] == "Board\ufffd\ufffd Co"


def test_run_command_gives_stdout_text_also_on_failure() -> None:
    from workloads.fingerprint.system import run_command

    assert run_command(["sh", "-c", "echo ' out '; exit 3"]) == "out"
    assert run_command(["/nonexistent/systemd-detect-virt"]) is None


def test_vm_and_container_evidence_words(tmp_path: Path) -> None:
    fp = {
        "vm": {
            "is_vm": True,
            "dmi_says_vm": True,
            "hypervisor": "VMware, Inc.",
            "systemd_detect_virt": "vmware",
            "cpuinfo_hypervisor_flag": True,
        },
        "container": {"in_container": True, "runtime": "docker", "systemd_detect_virt": None},
    }
    setting = {"virtualization": "none", "exec_env": "native", "gpu_path": "whole-machine"}
    assert setting_flags(setting, fp) == [
        "lab says bare metal (gpu_path whole-machine), fingerprint sees VMware, Inc.: "
        "systemd-detect-virt --vm vmware, DMI vendor is a VM's, cpuinfo hypervisor flag set",
        "lab says native (no container), fingerprint finds a docker container: "
        "systemd-detect-virt --container unavailable",
    ]


def test_utf8_host_files_read_the_same_under_an_ascii_locale(tmp_path: Path) -> None:
    """os-release and DMI fields holding UTF-8 (a vendor's accented name) read while the C
    library's locale is "C" (ASCII codeset), as on a minimal host image: the probe decodes
    UTF-8 itself, not the locale's encoding. The locale is the process's own, set and restored
    here; Python's UTF-8 mode (PYTHONUTF8=1) would ignore it, so the test says so instead."""
    write(tmp_path, "etc/os-release", 'PRETTY_NAME="Débian GNU/Linux 12 (bookworm) — lab"\n')
    write(tmp_path, "sys/class/dmi/id/sys_vendor", "Société Générale Hyperviseurs\n")
    old = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        codeset = locale.getpreferredencoding(False)
        assert "UTF" not in codeset.upper(), f"the locale's codeset stays {codeset}: UTF-8 mode?"
        fp = system(root=tmp_path, env={}, run=absent)
    finally:
        locale.setlocale(locale.LC_CTYPE, old)
    assert fp["os"]["name"] == "Débian GNU/Linux 12 (bookworm) — lab"
    assert fp["vm"]["dmi"]["sys_vendor"] == "Société Générale Hyperviseurs"
