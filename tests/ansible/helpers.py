"""Shared pieces of the Ansible tests: stub-repository variables and an event recorder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.parts import REPO

HERE = Path(__file__).resolve().parent
PLAYBOOKS = HERE / "playbooks"

ALL_ROLES = [
    "gpu_facts",
    "nvidia_driver",
    "cuda_toolkit",
    "docker_engine",
    "nvidia_container_toolkit",
    "nvidia_vgpu_guest",
    "apptainer",
    "bitfusion_client",
    "k8s_gpu",
    "workload_env",
    "workload_image",
]

# GPU-hardware steps, excluded on test hosts (no GPU): each role's *_hardware_steps switch.
NO_HARDWARE = {
    "nvidia_driver_hardware_steps": False,  # nvidia-persistenced, nvidia-smi driver check
    "nvidia_vgpu_guest_hardware_steps": False,  # nvidia-smi -q license state
    "nvidia_container_toolkit_hardware_steps": False,  # nvidia-ctk cdi generate
    "bitfusion_client_hardware_steps": False,  # bitfusion list_gpus (needs a server)
    "k8s_gpu_apply": False,  # helm install + allocatable wait (needs a Kubernetes API)
}


def stub_key_fingerprint() -> str:
    """Fingerprint of the stub repository's signing key (scripts/parts/nvidia-stub-repo.sh)."""
    return (REPO / ".cache/nvidia-stub-repo/keys/stub.fpr").read_text().strip()


def stub_vars(stub_url: str, sums: dict[str, str], distro: str = "debian12") -> dict[str, Any]:
    """Role variables that point every repository and download at the stub repository of
    ``distro`` (the test hosts are Debian 12); its signed apt repositories are trusted through
    its own key, pinned by fingerprint."""
    files = f"{stub_url}/files"
    key, fpr = f"{stub_url}/keys/stub.asc", stub_key_fingerprint()
    grid = "nvidia-linux-grid-550_550.127.05_amd64.deb"
    app = "apptainer_1.3.4_amd64.deb"
    bf = "bitfusion-client-ubuntu2204_4.5.4-1_amd64.deb"
    return {
        **NO_HARDWARE,
        "nvidia_driver_cuda_repo_url": f"{stub_url}/{distro}/cuda/",
        "nvidia_driver_cuda_repo_key_url": key,
        "nvidia_driver_cuda_repo_key_fingerprint": fpr,
        "nvidia_driver_install_kernel_headers": False,  # nspawn runs the machine's kernel
        "nvidia_driver_reboot": False,  # a reboot would end the nspawn container
        "cuda_toolkit_repo_url": f"{stub_url}/{distro}/cuda/",
        "cuda_toolkit_repo_key_url": key,
        "cuda_toolkit_repo_key_fingerprint": fpr,
        "nvidia_container_toolkit_repo_url": f"{stub_url}/libnvidia-container/",
        "nvidia_container_toolkit_repo_key_url": key,
        "nvidia_container_toolkit_repo_key_fingerprint": fpr,
        "nvidia_vgpu_guest_driver_url": f"{files}/{grid}",
        "nvidia_vgpu_guest_driver_sha256": sums[grid],
        "nvidia_vgpu_guest_install_kernel_headers": False,  # nspawn runs the machine's kernel
        "nvidia_vgpu_guest_reboot": False,  # a reboot would end the nspawn container
        # a small stand-in for build-essential + dkms (about 150 MB), to keep the suite short:
        # the prerequisite step itself runs for real
        "nvidia_vgpu_guest_build_packages": ["make"],
        "apptainer_package_url": f"{files}/{app}",
        "apptainer_package_sha256": sums[app],
        "bitfusion_client_package_url": f"{files}/{bf}",
        "bitfusion_client_package_sha256": sums[bf],
        "k8s_gpu_mode": "operator",
        # Docker's repository is unreachable here: Debian's docker.io through apt-cacher-ng.
        "docker_engine_source": "distro",
        # No registry and no container can run inside the nspawn host (its cgroups are
        # read-only), so the image is built FROM scratch without RUN steps: the build, tags,
        # label and id-based idempotence run for real, the pinned CUDA/TensorFlow layers not.
        "workload_image_base": "scratch",
        "workload_image_apt_packages": [],
        "workload_image_pip_packages": [],
        "workload_image_venv": "",
        # no route to PyPI from the test namespace: the stub index's one package, pinned, and
        # no TensorFlow (its wheels are resolved against the real index in test_workload_env_pip)
        "workload_env_tensorflow": "",
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


# A docker double for the workload_run role's docker launch (nothing is pulled, no container
# runs): `login` keeps its argv and the sha256 of its stdin (the registry password is never
# stored), `run` keeps its argv and runs what follows `--entrypoint= IMAGE` as itself, in the
# environment the role gave docker. Files: $GPULAB_DOCKER_DOUBLE_OUT.{login.argv,
# login.sha256, run.argv} (default /var/tmp/gpulab-docker-double).
DOCKER_DOUBLE = """#!/bin/sh
out=${GPULAB_DOCKER_DOUBLE_OUT:-/var/tmp/gpulab-docker-double}
case "$1" in
  login) printf '%s\\n' "$@" > "$out.login.argv"
         sha256sum | cut -d' ' -f1 > "$out.login.sha256" ;;
  run) printf '%s\\n' "$@" > "$out.run.argv"
       while [ $# -gt 0 ] && [ "${1#--entrypoint=}" = "$1" ]; do shift; done
       shift 2
       exec "$@" ;;
  *) echo "docker double: unsupported: $1" >&2; exit 2 ;;
esac
"""


def install_docker_double(path: Path) -> Path:
    """Write :data:`DOCKER_DOUBLE` as an executable ``path`` (e.g. ``<dir>/docker``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DOCKER_DOUBLE)
    path.chmod(0o755)
    return path


def stdin_sha256(text: str) -> str:
    """What the double keeps of a `docker login --password-stdin`: the command module ends its
    stdin with a newline (``stdin_add_newline``)."""
    import hashlib

    return hashlib.sha256((text + "\n").encode()).hexdigest()
