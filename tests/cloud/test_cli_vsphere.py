"""``gpulab preflight`` / ``gpulab audit`` end to end for a vsphere-gpu stack against the
vCenter simulator: the real CLI in a subprocess, the real stack-file loader, real vSphere
calls. Shows the table for a passing and a failing case, and that connection errors are one
line with no credential in the output."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cloud.helpers import write_stack
from tests.parts import REPO

pytestmark = pytest.mark.vcsim

PASSTHROUGH_KEYS = {
    "gpu_host": None,
    "pci_device_ids": None,
    "gpus_per_vm": None,
    "gpu_bar_gb": None,
}


def gpulab(*args: str, password: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VSPHERE_", "OS_"))}
    env["COLUMNS"] = "200"
    if password is not None:
        env["VSPHERE_PASSWORD"] = password
    p = subprocess.run(
        [sys.executable, "-m", "infra.cli", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    print(p.stdout + p.stderr)
    return p


def vgpu_stack(path: Path, vcsim: Any, **changes: Any) -> Path:
    base: dict[str, Any] = dict(
        vsphere_server=f"{vcsim.host}:{vcsim.port}",
        vsphere_user=vcsim.user,
        vsphere_insecure=True,
        # an encrypted value of the user's own (the example's REPLACE_ME one is refused);
        # the CLI reads the password from VSPHERE_PASSWORD, never from the stack file
        vsphere_password={"secure": "v1:dGVzdC1zdGFjay1zZWNyZXQ="},
        datacenter="DC0",
        cluster="DC0_C0",
        datastore="LocalDS_0",
        network="VM Network",
        template="DC0_H0_VM0",
        mode="vgpu",
        vgpu_profile="grid_p100-4q",
        host_count=2,
        **PASSTHROUGH_KEYS,
    )
    base.update(changes)
    return write_stack(path, "vsphere-gpu", **base)


def test_preflight_vgpu_passing_table_exit_0(vcsim: Any, tmp_path: Path) -> None:
    p = gpulab(
        "preflight", str(vgpu_stack(tmp_path / "Pulumi.vs.yaml", vcsim)), password=vcsim.password
    )
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "FAIL" not in out and "7 checks, 0 failed" in out
    for row in (
        "vcenter connection",
        "vsphere datacenter DC0",
        "vsphere template DC0_H0_VM0",
        "vgpu profile grid_p100-4q",
    ):
        assert row in out
    assert "room for DC0_C0_H0: 4, DC0_C0_H1: 4, DC0_C0_H2: 4 (2 needed)" in out
    assert vcsim.password not in out + p.stderr


def test_preflight_vgpu_failing_table_exit_1_with_fixes(vcsim: Any, tmp_path: Path) -> None:
    stack = vgpu_stack(
        tmp_path / "Pulumi.vs.yaml",
        vcsim,
        vgpu_profile="grid_v100-8q",
        template="ubuntu-22.04-template",
    )
    p = gpulab("preflight", str(stack), password=vcsim.password)
    assert p.returncode == 1
    out = p.stdout
    assert "7 checks, 2 failed" in out
    assert "no host of cluster DC0_C0 supports it; supported: grid_p100-16q" in out
    assert "set gpulab:vgpu_profile to a supported profile" in out
    assert "set gpulab:template to an existing template" in out

    p = gpulab(
        "preflight",
        str(vgpu_stack(tmp_path / "b.yaml", vcsim, host_count=13)),
        password=vcsim.password,
    )
    assert p.returncode == 1
    assert "13 VMs need one each" in p.stdout


def test_preflight_passthrough_enabled_and_not_enabled(vcsim: Any, tmp_path: Path) -> None:
    pt = {
        "mode": "passthrough",
        "vgpu_profile": None,
        "host_count": 1,
        "gpus_per_vm": 1,
        "gpu_bar_gb": 16,
        "pci_device_ids": ["0000:3b:00.0"],
    }
    p = gpulab(
        "preflight",
        str(vgpu_stack(tmp_path / "a.yaml", vcsim, gpu_host="DC0_C0_H0", **pt)),
        password=vcsim.password,
    )
    assert p.returncode == 0
    assert "Tesla P100 PCIe 16GB]: passthrough enabled" in p.stdout
    p = gpulab(
        "preflight",
        str(vgpu_stack(tmp_path / "b.yaml", vcsim, gpu_host="DC0_H0", **pt)),
        password=vcsim.password,
    )
    assert p.returncode == 1
    assert "is in DC0_H0, not in cluster DC0_C0" in p.stdout
    assert "passthrough capable but not enabled" in p.stdout
    assert "enable passthrough for 0000:3b:00.0 on DC0_H0" in p.stdout


def test_audit_lists_lab_vm_until_it_is_gone(vcsim: Any, tmp_path: Path) -> None:
    from pyVim.connect import Disconnect
    from pyVim.task import WaitForTask
    from pyVmomi import vim

    from infra.clouds import vsphere as vs

    stack = str(vgpu_stack(tmp_path / "Pulumi.vs.yaml", vcsim))
    p = gpulab("audit", stack, password=vcsim.password)
    assert p.returncode == 0 and "no VM with name vs-lab-* or tag vs-lab left" in p.stdout
    si = vs.connect(vcsim.host, vcsim.user, vcsim.password, port=vcsim.port, insecure=True)
    try:
        src = vs.find_vm(si, "DC0_H0_VM1")
        WaitForTask(
            src.CloneVM_Task(
                folder=src.parent,
                name="vs-lab-gpu-1",
                spec=vim.vm.CloneSpec(location=vim.vm.RelocateSpec()),
            )
        )
        p = gpulab("audit", stack, password=vcsim.password)
        assert p.returncode == 1
        assert "vsphere VM vs-lab-gpu-1" in p.stdout and "delete VM vs-lab-gpu-1" in p.stdout
        WaitForTask(vs.find_vm(si, "vs-lab-gpu-1").Destroy_Task())
    finally:
        Disconnect(si)
    assert gpulab("audit", stack, password=vcsim.password).returncode == 0


def test_bad_password_and_refused_connection_are_one_line_no_secret(
    vcsim: Any, tmp_path: Path
) -> None:
    wrong = "Sup3r-" + vcsim.password
    p = gpulab("preflight", str(vgpu_stack(tmp_path / "a.yaml", vcsim)), password=wrong)
    assert p.returncode == 1
    assert "login failed: bad user name or password" in p.stdout
    assert wrong not in p.stdout + p.stderr and vcsim.password not in p.stdout + p.stderr
    assert "1 checks, 1 failed" in p.stdout

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    stack = vgpu_stack(tmp_path / "b.yaml", vcsim, vsphere_server=f"127.0.0.1:{port}")
    p = gpulab("audit", str(stack), password=vcsim.password)
    assert p.returncode == 1
    assert f"vCenter 127.0.0.1:{port}: connection refused" in p.stdout
    assert vcsim.password not in p.stdout + p.stderr

    p = gpulab("preflight", str(stack), password=None)
    assert p.returncode == 1 and "no password: set VSPHERE_PASSWORD" in p.stdout


def test_bad_stack_file_is_usage_error_exit_2(tmp_path: Path) -> None:
    p = gpulab("preflight", str(tmp_path / "missing.yaml"), password=None)
    assert p.returncode == 2
    assert p.stderr.strip().endswith("missing.yaml' does not exist")
    bad = write_stack(tmp_path / "bad.yaml", "vsphere-gpu", vgpu_profile="p100")
    p = gpulab("audit", str(bad), password=None)
    assert p.returncode == 2 and "gpulab:vgpu_profile" in p.stderr
