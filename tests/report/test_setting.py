"""The report groups by the setting each record states, guesses nothing, and shows the flags
the fingerprint cross-check put on a record (workloads.setting, workloads.fingerprint)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from report import build_report
from tests.report import synth
from workloads.setting import make_setting, setting_record_fields

BARE_METAL_FP = {
    "vm": {
        "is_vm": False,
        "systemd_detect_virt": "none",
        "dmi_says_vm": False,
        "cpuinfo_hypervisor_flag": False,
        "hypervisor": None,
    },
    "container": {"in_container": False, "runtime": None, "systemd_detect_virt": "none"},
}


def test_report_shows_the_flag_of_a_record_whose_setting_disagrees(tmp_path: Path) -> None:
    base = synth.reps("ironic-bm", "native", experiment="e", model="resnet50", ips=100.0)
    vm = synth.reps(
        "nova-pci", "native", experiment="e", model="resnet50", ips=90.0, fp=BARE_METAL_FP
    )
    stated = setting_record_fields(make_setting("pci-passthrough", "native"), BARE_METAL_FP)
    vm = [dict(r, **stated) for r in vm]  # as the runner writes it: lab says VM
    old = [
        {
            k: v
            for k, v in r.items()
            if k not in ("gpu_path", "exec_env", "virtualization", "sharing", "setting_flags")
        }
        | {"schema_version": 1}
        for r in synth.reps(
            "vsphere-gpu",
            "vgpu",
            experiment="e",
            model="resnet50",
            ips=80.0,
            fp={"vm": {"is_vm": True}},
        )
    ]
    synth.write(tmp_path / "in" / "new.jsonl", base + vm)
    synth.write(tmp_path / "in" / "old.jsonl", old)
    res = build_report([tmp_path / "in"], tmp_path / "out", embed_figures=False)
    settings = {a.label: s for a, s in res.table.settings.items()}
    # grouped by what the lab stated, not by the fingerprint (which says bare metal / VM)
    assert settings == {
        "ironic-bm/native": "bm",
        "nova-pci/native": "vm",
        "vsphere-gpu/vgpu": "unknown",
    }
    flag = (
        "lab says vm (gpu_path pci-passthrough), fingerprint says bare metal: "
        "systemd-detect-virt --vm none, no DMI VM vendor, no cpuinfo hypervisor flag"
    )
    md = res.markdown.read_text()
    assert f"- `nova-pci/native`: {flag}" in md
    assert flag in res.html.read_text()
    assert "| `vsphere-gpu/vgpu` | unknown setting | 5 |" in md
    note = f"{tmp_path / 'in' / 'old.jsonl'}: 5 record(s) carry no setting"
    assert [p for p in res.problems if p.startswith(note)] and len(res.problems) == 1
    assert note in md


def test_runner_refuses_a_bad_setting_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "r.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "workloads",
            "bench",
            "--model",
            "alexnet",
            "--steps",
            "1",
            "--out",
            str(out),
            "--gpu-path",
            "pci-passthrough",
            "--exec-env",
            "lxc",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert lines == [
        "python -m workloads: error: exec_env 'lxc' is not one of native, docker, "
        "apptainer, k8s, bitfusion (or singularity)"
    ]
    assert not out.exists()


@pytest.mark.integration
def test_the_runner_records_the_setting_from_the_lab_environment(tmp_path: Path) -> None:
    """A real run (mnist_cnn, 2 steps, CPU) given the setting as the workload_run role gives it
    (GPULAB_* environment): the record states it, cross-checked against this machine's real
    fingerprint, and the report groups it by the stated setting."""
    import json
    import os

    from workloads.fingerprint.crosscheck import setting_flags

    out = tmp_path / "r.jsonl"
    lab = {"GPULAB_TOPOLOGY": "vsphere-gpu", "GPULAB_ARM": "apptainer", "GPULAB_GPU_PATH": "vgpu",
           "GPULAB_EXEC_ENV": "singularity", "GPULAB_SHARING": ""}  # fmt: skip
    env = dict(os.environ, **lab)
    proc = subprocess.run(
        [sys.executable, "-m", "workloads", "bench", "--model", "mnist_cnn", "--steps", "2",
         "--warmup", "1", "--batch", "8", "--repeats", "1", "--out", str(out)],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert rec["schema_version"] == 3 and rec["fingerprint_ref"].startswith("sha256:")
    assert (rec["topology"], rec["arm"]) == ("vsphere-gpu", "apptainer")
    stated = {k: rec[k] for k in ("gpu_path", "exec_env", "virtualization", "sharing")}
    assert stated == {"gpu_path": "vgpu", "exec_env": "apptainer",
                      "virtualization": "container-in-vm", "sharing": "vgpu"}  # fmt: skip
    assert rec["setting_flags"] == setting_flags(stated, rec["fingerprint"])
    if rec["fingerprint"]["container"]["runtime"] != "apptainer":  # the cross-check says so
        assert any("lab says container (exec_env apptainer)" in f for f in rec["setting_flags"])
    res = build_report([out], tmp_path / "out", baseline="vsphere-gpu", embed_figures=False)
    assert {a.label: s for a, s in res.table.settings.items()} == {"vsphere-gpu/apptainer": "cvm"}
    assert res.problems == []
