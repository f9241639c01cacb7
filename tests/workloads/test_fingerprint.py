"""Environment fingerprint: this machine (no NVIDIA driver), and an NVML double for GPU values.

``FakeNvml`` below is a test double of NVIDIA's ``pynvml`` module (nvidia-ml-py): no NVIDIA
hardware or driver exists here, so vGPU and passthrough answers are simulated, including the
NotSupported errors a vGPU guest gives.
"""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from workloads.fingerprint import collect
from workloads.fingerprint.nvml import Sampler, gpu_info
from workloads.fingerprint.system import collect_system


def test_this_machine_records_no_gpu_cleanly():
    fp = collect()
    gpu = fp["gpu"]
    has_driver = Path("/proc/driver/nvidia").exists()
    if has_driver:
        pytest.skip("this machine has an NVIDIA driver")
    assert gpu["present"] is False and gpu["count"] == 0 and gpu["gpus"] == []
    assert gpu["reason"]  # says why: no driver / no binding
    assert fp["kernel"] == platform.release()
    assert fp["host"] == platform.node()
    assert fp["cpu"]["logical_cpus"] == os.cpu_count()
    flags = Path("/proc/cpuinfo").read_text()
    assert fp["cpu"]["hypervisor_flag"] == (" hypervisor" in flags)
    if fp["cpu"]["hypervisor_flag"]:
        assert fp["vm"]["is_vm"] is True
    assert fp["container"]["dockerenv"] == Path("/.dockerenv").exists()
    assert fp["container"]["containerenv"] == Path("/run/.containerenv").exists()
    nodes = list(Path("/sys/devices/system/node").glob("node[0-9]*"))
    assert fp["numa"]["nodes"] == (len(nodes) or None)
    assert fp["execution_env"] == (fp["container"]["runtime"] or "native")
    sw = fp["software"]
    assert sw["python"] == platform.python_version()
    assert "keras" in sw["packages"]
    assert sw["git"]["revision"] is None or len(sw["git"]["revision"]) == 40


def test_sampler_without_a_driver_is_a_no_op():
    with Sampler(interval_s=0.01) as s:
        time.sleep(0.03)
    if not s.active:
        assert s.samples == [] and s.summary() == {}


class NVMLError(Exception):
    pass


class FakeNvml:
    """Test double of pynvml: GPU 0 a vGPU guest (many NotSupported), GPU 1 passthrough."""

    def __init__(self, fail_init: bool = False) -> None:
        self.fail_init = fail_init
        self.shutdowns = 0

    def nvmlInit(self):
        if self.fail_init:
            raise NVMLError("NVML Shared Library Not Found")

    def nvmlShutdown(self):
        self.shutdowns += 1

    def nvmlSystemGetDriverVersion(self):
        return b"535.129.03"  # old bindings return bytes

    def nvmlSystemGetCudaDriverVersion(self):
        return 12020

    def nvmlDeviceGetCount(self):
        return 2

    def nvmlDeviceGetHandleByIndex(self, i):
        return ("h", i)

    def _vgpu(self, h):
        if h[1] == 0:
            raise NVMLError("Not Supported")

    def nvmlDeviceGetName(self, h):
        return ["GRID P100-4Q", "Tesla P100-PCIE-16GB"][h[1]]

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-{h[1]:08d}-fake"

    def nvmlDeviceGetPciInfo(self, h):
        return SimpleNamespace(busId=f"00000000:0{h[1] + 3}:00.0".encode())

    def nvmlDeviceGetMemoryInfo(self, h):
        total = [4096, 16384][h[1]] * 1024 * 1024
        return SimpleNamespace(total=total, used=total // 4, free=total - total // 4)

    def nvmlDeviceGetVirtualizationMode(self, h):
        return [2, 1][h[1]]  # NVML_GPU_VIRTUALIZATION_MODE_VGPU, _PASSTHROUGH

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h):
        self._vgpu(h)
        return 3

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h):
        self._vgpu(h)
        return 3

    def nvmlDeviceGetCurrPcieLinkWidth(self, h):
        self._vgpu(h)
        return 16

    def nvmlDeviceGetMaxPcieLinkWidth(self, h):
        self._vgpu(h)
        return 16

    def nvmlDeviceGetNumaNodeId(self, h):
        self._vgpu(h)
        return 1

    def nvmlDeviceGetMigMode(self, h):
        self._vgpu(h)
        return [0, 0]

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return (6, 0)

    def nvmlDeviceGetUtilizationRates(self, h):
        return SimpleNamespace(gpu=[90, 50][h[1]], memory=40)

    def nvmlDeviceGetPowerUsage(self, h):
        self._vgpu(h)
        return 150_000  # mW

    def nvmlDeviceGetClockInfo(self, h, clock):
        return 1300 if clock == 1 else 715

    def nvmlDeviceGetTemperature(self, h, sensor):
        return 60

    def nvmlDeviceGetCurrentClocksThrottleReasons(self, h):
        return [0x0, 0x4 | 0x40][h[1]]


def test_nvml_double_vgpu_and_passthrough_values():
    fake = FakeNvml()
    info = gpu_info(fake)
    assert info["present"] is True and info["count"] == 2
    assert info["driver_version"] == "535.129.03"
    assert info["cuda_driver_version"] == "12.2"
    assert info["virtualization_modes"] == ["passthrough", "vgpu"]
    vgpu, pt = info["gpus"]
    assert vgpu["name"] == "GRID P100-4Q" and vgpu["virtualization_mode"] == "vgpu"
    assert vgpu["memory_total_mib"] == 4096
    # a vGPU guest answers NotSupported: recorded as unknown, not an exception
    assert vgpu["pcie"] == {
        "gen_current": None,
        "gen_max": None,
        "width_current": None,
        "width_max": None,
    }
    assert vgpu["mig_mode"] is None
    assert pt["virtualization_mode"] == "passthrough" and pt["uuid"] == "GPU-00000001-fake"
    assert pt["pcie"]["gen_current"] == 3 and pt["pcie"]["width_current"] == 16
    assert pt["numa_node"] == 1 and pt["mig_mode"] == {"current": 0, "pending": 0}
    assert pt["pci_bus_id"] == "00000000:04:00.0" and pt["compute_capability"] == "6.0"
    assert fake.shutdowns == 1


def test_nvml_double_without_driver_is_no_gpu():
    info = gpu_info(FakeNvml(fail_init=True))
    assert info == {
        "present": False,
        "count": 0,
        "gpus": [],
        "reason": "no NVIDIA driver: NVMLError: NVML Shared Library Not Found",
    }


def test_sampler_with_nvml_double_covers_the_window():
    with Sampler(interval_s=0.01, nvml=FakeNvml()) as s:
        time.sleep(0.05)
    assert s.active
    per_gpu = {g: [x for x in s.samples if x["gpu"] == g] for g in (0, 1)}
    assert all(len(v) >= 2 for v in per_gpu.values())
    m = s.summary()
    assert m["gpu0_util_pct_mean"] == 90 and m["gpu1_util_pct_mean"] == 50
    assert "gpu0_power_w_mean" not in m and m["gpu1_power_w_mean"] == 150.0
    assert m["gpu1_mem_used_mib_max"] == 4096
    assert s.throttle_reasons() == {"gpu0": [], "gpu1": ["hw_thermal_slowdown", "sw_power_cap"]}


def fake_root(tmp_path: Path, vendor: str | None = None, product: str = "") -> Path:
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("model name\t: Test CPU\nflags\t\t: fpu sse\n")
    if vendor:
        dmi = tmp_path / "sys/class/dmi/id"
        dmi.mkdir(parents=True)
        (dmi / "sys_vendor").write_text(vendor + "\n")
        (dmi / "product_name").write_text(product + "\n")
    return tmp_path


def no_virt(argv):
    return "none"


def test_vm_by_dmi_and_container_markers(tmp_path):
    root = fake_root(tmp_path, vendor="VMware, Inc.", product="VMware Virtual Platform")
    fp = collect_system(root=root, env={}, run=no_virt)
    assert fp["vm"]["is_vm"] and fp["vm"]["dmi_says_vm"]
    assert fp["vm"]["hypervisor"] == "VMware, Inc."
    assert fp["container"]["in_container"] is False and fp["execution_env"] == "native"
    env = {"SINGULARITY_CONTAINER": "/x.sif", "APPTAINER_NAME": "x.sif"}
    fp = collect_system(root=root, env=env, run=no_virt)
    assert fp["execution_env"] == "apptainer"
    assert fp["container"]["apptainer_vars"] == ["APPTAINER_NAME", "SINGULARITY_CONTAINER"]
    fp = collect_system(root=root, env={"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, run=no_virt)
    assert fp["execution_env"] == "kubernetes"
    (root / ".dockerenv").write_text("")
    assert collect_system(root=root, env={}, run=no_virt)["execution_env"] == "docker"
    (root / "run").mkdir()
    (root / "run/.containerenv").write_text("")
    assert collect_system(root=root, env={}, run=no_virt)["execution_env"] == "podman"


def test_bare_metal_reads_as_native(tmp_path):
    root = fake_root(tmp_path, vendor="Dell Inc.", product="PowerEdge R740")
    fp = collect_system(root=root, env={}, run=no_virt)
    assert fp["vm"]["is_vm"] is False and fp["execution_env"] == "native"
    fp = collect_system(root=root, env={}, run=lambda argv: "kvm" if "--vm" in argv else "none")
    assert fp["vm"]["is_vm"] is True and fp["vm"]["hypervisor"] == "kvm"
    fp = collect_system(root=root, env={}, run=lambda argv: None)  # no systemd-detect-virt
    assert fp["vm"]["is_vm"] is False and fp["cpu"]["model"] == "Test CPU"


# --- the lab's stated setting cross-checked against the fingerprint ---------------------------


def _flags(gpu_path: str, exec_env: str, fp: dict) -> list[str]:
    from workloads.setting import make_setting, setting_record_fields

    return setting_record_fields(make_setting(gpu_path, exec_env), fp)["setting_flags"]


def test_cpuinfo_hypervisor_flag_alone_keeps_a_vm_from_passing_for_bare_metal(tmp_path):
    """No systemd-detect-virt, no DMI vendor: only /proc/cpuinfo's hypervisor flag."""
    root = fake_root(tmp_path)
    (root / "proc/cpuinfo").write_text("model name\t: Test CPU\nflags\t\t: fpu hypervisor sse\n")
    fp = collect_system(root=root, env={}, run=lambda argv: None)
    assert fp["vm"]["is_vm"] is True and fp["vm"]["cpuinfo_hypervisor_flag"] is True
    (flag,) = _flags("whole-machine", "native", fp)
    assert flag.startswith("lab says bare metal (gpu_path whole-machine), fingerprint sees ")
    assert "systemd-detect-virt --vm unavailable" in flag
    assert "cpuinfo hypervisor flag set" in flag
    assert _flags("pci-passthrough", "native", fp) == []  # the lab says VM: agreed


def test_lab_says_vm_but_fingerprint_sees_bare_metal(tmp_path):
    fp = collect_system(
        root=fake_root(tmp_path, "Dell Inc.", "PowerEdge R740"), env={}, run=no_virt
    )
    assert _flags("vgpu", "native", fp) == [
        "lab says vm (gpu_path vgpu), fingerprint says bare metal: systemd-detect-virt --vm "
        "none, no DMI VM vendor, no cpuinfo hypervisor flag"
    ]
    assert _flags("whole-machine", "native", fp) == []


def test_lab_says_container_but_no_marker_and_the_reverse(tmp_path):
    root = fake_root(tmp_path, "Dell Inc.", "PowerEdge R740")
    fp = collect_system(root=root, env={}, run=no_virt)
    (flag,) = _flags("whole-machine", "docker", fp)
    assert flag.startswith("lab says container (exec_env docker), fingerprint finds no container")
    fp = collect_system(root=root, env={"APPTAINER_NAME": "w.sif"}, run=no_virt)
    assert _flags("whole-machine", "singularity", fp) == []  # singularity = apptainer
    (flag,) = _flags("whole-machine", "docker", fp)
    assert "fingerprint finds runtime apptainer" in flag
    (flag,) = _flags("whole-machine", "native", fp)
    assert flag.startswith("lab says native (no container), fingerprint finds a apptainer")
    (root / ".dockerenv").write_text("")
    assert _flags("local", "docker", collect_system(root=root, env={}, run=no_virt)) == []


def test_no_fingerprint_is_said_not_guessed():
    assert _flags("local", "native", {}) == ["setting not cross-checked: no fingerprint"]
    assert _flags("local", "native", {"error": "OSError: boom"}) == [
        "setting not cross-checked: OSError: boom"
    ]


@pytest.mark.parametrize(
    ("gpu_path", "exec_env", "virtualization", "sharing"),
    [
        ("whole-machine", "native", "none", "exclusive"),
        ("whole-machine", "docker", "container", "exclusive"),
        ("local", "singularity", "container", "exclusive"),
        ("pci-passthrough", "native", "vm", "exclusive"),
        ("container-vm", "k8s", "container-in-vm", "exclusive"),
        ("container-bm", "k8s", "container", "exclusive"),
        ("vgpu", "docker", "container-in-vm", "vgpu"),
        ("bitfusion", "bitfusion", "vm", "bitfusion"),
    ],
)
def test_virtualization_is_derived_from_gpu_path_and_exec_env(
    gpu_path: str, exec_env: str, virtualization: str, sharing: str
) -> None:
    from workloads.setting import make_setting

    s = make_setting(gpu_path, exec_env)
    assert (s.virtualization, s.sharing) == (virtualization, sharing)
    assert s.exec_env != "singularity"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("nowhere", "native"), "gpu_path 'nowhere' is not one of"),
        (("none", "native"), "gpu_path 'none' is not one of"),
        (("local", "lxc"), "exec_env 'lxc' is not one of"),
        (("local", "native", "shared!"), "sharing 'shared!' is not one of"),
    ],
)
def test_bad_setting_values_are_one_line_input_errors(args: tuple, message: str) -> None:
    from workloads.errors import InputError
    from workloads.setting import make_setting

    with pytest.raises(InputError, match=message):
        make_setting(*args)
