"""The report groups by the setting each record states, guesses nothing, and shows the flags
the fingerprint cross-check put on a record (workloads.setting, workloads.fingerprint)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
