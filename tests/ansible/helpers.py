"""Shared pieces of the Ansible tests: stub-repository variables and an event recorder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PLAYBOOKS = HERE / "playbooks"

ALL_ROLES = [
    "gpu_facts",
    "nvidia_driver",
    "cuda_toolkit",
    "nvidia_container_toolkit",
    "nvidia_vgpu_guest",
    "apptainer",
    "bitfusion_client",
    "k8s_gpu",
    "workload_env",
]

# GPU-hardware steps, excluded on test hosts (no GPU): each role's *_hardware_steps switch.
NO_HARDWARE = {
    "nvidia_driver_hardware_steps": False,  # nvidia-persistenced, nvidia-smi driver check
    "nvidia_vgpu_guest_hardware_steps": False,  # nvidia-smi -q license state
    "nvidia_container_toolkit_hardware_steps": False,  # nvidia-ctk cdi generate
    "bitfusion_client_hardware_steps": False,  # bitfusion list_gpus (needs a server)
    "k8s_gpu_apply": False,  # helm install + allocatable wait (needs a Kubernetes API)
}


def stub_vars(stub_url: str, sums: dict[str, str]) -> dict[str, Any]:
    """Role variables that point every repository and download at the stub repository."""
    files = f"{stub_url}/files"
    grid = "nvidia-linux-grid-550_550.127.05_amd64.deb"
    app = "apptainer_1.3.4_amd64.deb"
    bf = "bitfusion-client-ubuntu2204_4.5.4-1_amd64.deb"
    return {
        **NO_HARDWARE,
        "nvidia_driver_cuda_repo_url": f"{stub_url}/cuda/",
        "nvidia_driver_cuda_repo_trusted": True,
        "nvidia_driver_install_kernel_headers": False,  # nspawn runs the machine's kernel
        "nvidia_driver_reboot": False,  # a reboot would end the nspawn container
        "cuda_toolkit_repo_url": f"{stub_url}/cuda/",
        "cuda_toolkit_repo_trusted": True,
        "nvidia_container_toolkit_repo_url": f"{stub_url}/libnvidia-container/",
        "nvidia_container_toolkit_repo_trusted": True,
        "nvidia_vgpu_guest_driver_url": f"{files}/{grid}",
        "nvidia_vgpu_guest_driver_sha256": sums[grid],
        "apptainer_package_url": f"{files}/{app}",
        "apptainer_package_sha256": sums[app],
        "bitfusion_client_package_url": f"{files}/{bf}",
        "bitfusion_client_package_sha256": sums[bf],
        "k8s_gpu_mode": "operator",
        # no route to PyPI from the test namespace: the stub index's one package, pinned
        "workload_env_pip_packages": ["gpulab-probe==1.0"],
        "workload_env_pip_index_url": f"{stub_url}/pypi/simple/",
        "workload_env_pip_extra_args": f"--trusted-host {stub_url.split('//')[1].split(':')[0]}",
    }


class Events:
    """ansible-runner event handler keeping every event (for facts and task results)."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []

    def __call__(self, event: dict[str, Any]) -> bool:
        self.events.append(event)
        return True

    def facts(self, host: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for ev in self.events:
            data = ev.get("event_data") or {}
            if ev.get("event") == "runner_on_ok" and data.get("host") == host:
                out.update((data.get("res") or {}).get("ansible_facts") or {})
        return out

    def results(self, task: str) -> list[dict[str, Any]]:
        return [
            (ev.get("event_data") or {}).get("res") or {}
            for ev in self.events
            if ev.get("event") in ("runner_on_ok", "runner_on_failed")
            and (ev.get("event_data") or {}).get("task") == task
        ]
