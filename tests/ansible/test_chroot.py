"""nvidia_driver from a runfile on a chroot target (community.general.chroot): installed,
never rebooted on a chroot connection, idempotent, a wrong checksum stops it with the task
named, and DGX systems (DMI product name mocked) are left alone."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from infra.ansible import PlaybookError, run_playbook
from tests.ansible.helpers import PLAYBOOKS, Events
from tests.parts.fixtures_nspawn import ChrootTarget, NspawnLab

ROLES = Path(__file__).resolve().parents[2] / "playbooks" / "roles"

pytestmark = [pytest.mark.nspawn, pytest.mark.slow]

RUN = "NVIDIA-Linux-x86_64-580.95.05.run"


def _vars(lab: NspawnLab, **over: object) -> dict[str, object]:
    return {
        "one_role": "nvidia_driver",
        "gpu_facts_install_pciutils": False,  # keep the chroot off the network
        "nvidia_driver_source": "runfile",
        "nvidia_driver_runfile_url": f"{lab.stub_url}/files/{RUN}",
        "nvidia_driver_runfile_sha256": lab.stub_sha256[RUN],
        "nvidia_driver_install_kernel_headers": False,
        "nvidia_driver_reboot": True,  # wanted, but never on a chroot connection
        **over,
    }


def test_runfile_driver_on_chroot_no_reboot_then_idempotent(
    chroot_target: ChrootTarget, nspawn_lab: NspawnLab
) -> None:
    ev = Events()
    host = chroot_target.host
    r = run_playbook(PLAYBOOKS / "one_role.yml", [host], extravars=_vars(nspawn_lab),
                     event_handler=ev)  # fmt: skip
    assert r.ok and r.hosts[host.name].changed >= 3, r.summary()
    facts = ev.facts(host.name)
    assert facts["gpu_facts_local_connection"] is True
    assert facts["nvidia_driver_changed"] is True
    assert facts["nvidia_driver_reboot_wanted"] is False
    assert ev.results("Reboot into the new driver") == []
    # no GPU seen -> the GPU steps were skipped by themselves (hardware_steps left at true)
    assert facts["gpu_facts_has_gpu"] is False
    assert ev.results("Query the loaded driver") == []
    root = chroot_target.path
    marker = (root / "var/lib/gpulab-stub/nvidia-runfile-installed").read_text()
    assert marker.startswith("580.95.05 --silent --dkms --no-questions")
    assert (root / "etc/modprobe.d/blacklist-nouveau.conf").read_text().count("nouveau") == 2
    again = run_playbook(PLAYBOOKS / "one_role.yml", [host], extravars=_vars(nspawn_lab))
    assert again.ok and again.hosts[host.name].changed == 0, again.summary()


def test_wrong_runfile_checksum_names_the_task(
    chroot_target: ChrootTarget, nspawn_lab: NspawnLab
) -> None:
    bad = _vars(nspawn_lab, nvidia_driver_runfile_sha256="0" * 64)
    with pytest.raises(PlaybookError) as exc:
        run_playbook(PLAYBOOKS / "one_role.yml", [chroot_target.host], extravars=bad)
    msg = str(exc.value)
    assert f"host '{chroot_target.host.name}' failed at task" in msg
    assert "Download the driver runfile (checksum verified)" in msg
    assert "checksum" in msg.lower()


def test_dgx_mocked_by_dmi_name_is_left_alone(
    chroot_target: ChrootTarget, nspawn_lab: NspawnLab
) -> None:
    ev = Events()
    extra = _vars(nspawn_lab, gpu_facts_dmi_product_name="NVIDIA DGX A100 (mock)")
    r = run_playbook(PLAYBOOKS / "one_role.yml", [chroot_target.host], extravars=extra,
                     event_handler=ev)  # fmt: skip
    assert r.ok and r.hosts[chroot_target.host.name].changed == 0
    assert ev.facts(chroot_target.host.name)["gpu_facts_is_dgx"] is True
    msgs = [res.get("msg", "") for res in ev.results("Leave the driver of DGX systems to DGX OS")]
    assert msgs and "DGX" in msgs[0]
    assert ev.results("Blacklist nouveau") == []


@pytest.mark.parametrize(
    ("mode", "driver", "expect"),
    [("operator", "present", "enabled: false"), ("operator", "absent", "enabled: true"),
     ("device-plugin", "present", "runtimeClassName: nvidia")],
)  # fmt: skip
def test_k8s_gpu_values(tmp_path: Path, mode: str, driver: str, expect: str) -> None:
    """Helm values only (k8s_gpu_apply false: no Kubernetes API here), written on the
    controller as site.yml runs the role (hosts: localhost, connection: local, no become);
    with a host driver the GPU Operator's driver container is disabled."""
    import subprocess
    import sys

    import yaml

    values = tmp_path / "values"
    play = [{
        "name": "k8s_gpu as site.yml runs it", "hosts": "localhost", "connection": "local",
        "become": False, "gather_facts": False,
        "roles": [{"role": "k8s_gpu", "k8s_gpu_apply": False, "k8s_gpu_enabled": True,
                   "k8s_gpu_mode": mode, "k8s_gpu_host_driver": driver,
                   "k8s_gpu_values_dir": str(values)}],
    }]  # fmt: skip
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    r = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), str(tmp_path / "play.yml")],
        capture_output=True, text=True, timeout=300, cwd=tmp_path,  # implicit localhost
        env=dict(os.environ, ANSIBLE_ROLES_PATH=str(ROLES),
                 ANSIBLE_NOCOLOR="1"),
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    text = (values / f"{mode}-values.yaml").read_text()
    head = text.split("toolkit:")[0] if mode == "operator" else text
    assert expect in head, text
    assert (values / "runtimeclass.yaml").stat().st_mode & 0o777 == 0o600


LSPCI_MOCK = (
    "0000:34:00.0 3D controller [0302]: NVIDIA Corporation GV100GL [Tesla V100 SXM2 32GB]"
    " [10de:1db5] (rev a1)\n"
    "0000:36:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA102 [RTX A6000]"
    " [10de:2230] (rev a1)\n"
    "0000:36:00.1 Audio device [0403]: NVIDIA Corporation GA102 High Definition Audio"
    " Controller [10de:1aef] (rev a1)\n"
)


def test_gpu_facts_parse_mocked_lspci(chroot_target: ChrootTarget) -> None:
    """gpu_facts on lspci output of two GPUs and an audio function (a hardware mock through
    gpu_facts_lspci_output; the sysfs-tree cases are in test_gpu_facts.py)."""
    ev = Events()
    extra = {"one_role": "gpu_facts", "gpu_facts_lspci_output": LSPCI_MOCK}
    r = run_playbook(PLAYBOOKS / "one_role.yml", [chroot_target.host], extravars=extra,
                     event_handler=ev)  # fmt: skip
    assert r.ok
    f = ev.facts(chroot_target.host.name)
    assert f["gpu_facts_gpu_count"] == 2 and f["gpu_facts_has_gpu"] is True
    assert f["gpu_facts_gpus"] == [
        {"pci": "0000:34:00.0", "class": "0302", "name": "GV100GL [Tesla V100 SXM2 32GB]",
         "device_id": "1db5", "numa_node": None},
        {"pci": "0000:36:00.0", "class": "0300", "name": "GA102 [RTX A6000]",
         "device_id": "2230", "numa_node": None},
    ]  # fmt: skip
    # the lspci text stands for the whole PCI scan; the chroot's sysfs has neither address
    assert f["gpu_facts_pci_source"] == "lspci_output"
    assert f["gpu_facts_is_dgx"] is False and f["gpu_facts_cuda_repo_distro"] == "debian12"


def test_gpu_steps_run_once_a_gpu_is_seen(
    chroot_target: ChrootTarget, nspawn_lab: NspawnLab
) -> None:
    """With a GPU in (mocked) lspci, nvidia_driver goes on to the GPU steps, which cannot pass
    without one: the failure names the persistence-daemon task."""
    extra = _vars(nspawn_lab, gpu_facts_lspci_output=LSPCI_MOCK)
    with pytest.raises(PlaybookError) as exc:
        run_playbook(PLAYBOOKS / "one_role.yml", [chroot_target.host], extravars=extra)
    assert "failed at task 'Enable the persistence daemon'" in str(exc.value)
