"""Where a measurement ran, as the lab states it: the setting a record carries.

The lab knows four facts for certain and hands them to the runner (``python -m workloads bench``
options, or the ``GPULAB_*`` environment the ``workload_run`` role and ``gpulab run local``
set):

  gpu_path        how the host reaches its GPU (infra/hosts.py GPU_PATHS): whole-machine,
                  pci-passthrough, container-vm, container-bm, vgpu, bitfusion, local
  exec_env        the execution environment the runner was launched in: native, docker,
                  apptainer (``singularity`` is accepted on input and recorded as apptainer),
                  k8s, bitfusion
  sharing         how the GPU is shared: exclusive, vgpu, bitfusion, time-slicing, mps, mig,
                  optionally with a detail after a colon (``vgpu:grid_v100-8q``,
                  ``bitfusion:0.5``); default from gpu_path (vgpu -> vgpu, bitfusion ->
                  bitfusion, else exclusive)
  virtualization  derived here from gpu_path and exec_env, never from the fingerprint:

                  ==================================  ================  ===============
                  gpu_path                            native/bitfusion  docker/apptainer/k8s
                  ==================================  ================  ===============
                  whole-machine, container-bm, local  none              container
                  pci-passthrough, vgpu, container-vm vm                container-in-vm
                  bitfusion (vSphere client VMs)
                  ==================================  ================  ===============

``local`` is the controller's own machine; the lab states it as bare metal, and when it is in
fact a VM the fingerprint cross-check (:mod:`workloads.fingerprint.crosscheck`) flags it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workloads.errors import InputError

EXEC_ENVS = ("native", "docker", "apptainer", "k8s", "bitfusion")
EXEC_ENV_ALIASES = {"singularity": "apptainer"}
CONTAINER_ENVS = frozenset({"docker", "apptainer", "k8s"})
BARE_GPU_PATHS = ("whole-machine", "container-bm", "local")
VM_GPU_PATHS = ("pci-passthrough", "vgpu", "container-vm", "bitfusion")
GPU_PATHS = BARE_GPU_PATHS + VM_GPU_PATHS
VIRTUALIZATIONS = ("none", "container", "vm", "container-in-vm")
SHARING_KINDS = ("exclusive", "vgpu", "bitfusion", "time-slicing", "mps", "mig")
_SHARING = re.compile(r"^([a-z-]+)(?::([A-Za-z0-9._-]{1,64}))?$")

# The record fields of a setting (besides ``topology``, which records always had).
FIELDS = ("gpu_path", "exec_env", "virtualization", "sharing")
ENV_VARS = {
    "topology": "GPULAB_TOPOLOGY",
    "arm": "GPULAB_ARM",
    "gpu_path": "GPULAB_GPU_PATH",
    "exec_env": "GPULAB_EXEC_ENV",
    "sharing": "GPULAB_SHARING",
}


@dataclass(frozen=True)
class Setting:
    gpu_path: str
    exec_env: str
    virtualization: str
    sharing: str

    def fields(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in FIELDS}


def exec_env_name(name: str) -> str:
    """The one recorded name of an execution environment (``singularity`` -> ``apptainer``)."""
    return EXEC_ENV_ALIASES.get(name, name)


def virtualization_of(gpu_path: str, exec_env: str) -> str:
    container = exec_env_name(exec_env) in CONTAINER_ENVS
    if gpu_path in BARE_GPU_PATHS:
        return "container" if container else "none"
    if gpu_path in VM_GPU_PATHS:
        return "container-in-vm" if container else "vm"
    raise InputError(f"gpu_path {gpu_path!r} is not one of {', '.join(GPU_PATHS)}")


def default_sharing(gpu_path: str) -> str:
    return gpu_path if gpu_path in ("vgpu", "bitfusion") else "exclusive"


def make_setting(gpu_path: str, exec_env: str, sharing: str | None = None) -> Setting:
    """The setting of a run from the lab's facts; InputError (one line) on a bad value."""
    env = exec_env_name(exec_env)
    if env not in EXEC_ENVS:
        raise InputError(
            f"exec_env {exec_env!r} is not one of {', '.join(EXEC_ENVS)} (or singularity)"
        )
    virt = virtualization_of(gpu_path, env)
    share = sharing or default_sharing(gpu_path)
    m = _SHARING.match(share)
    if not m or m.group(1) not in SHARING_KINDS:
        raise InputError(
            f"sharing {share!r} is not one of {', '.join(SHARING_KINDS)} (optionally KIND:DETAIL)"
        )
    return Setting(gpu_path, env, virt, share)


def setting_from_options(
    gpu_path: str | None, exec_env: str | None, sharing: str | None
) -> Setting | None:
    """The setting of ``python -m workloads bench``: None when the lab gave no gpu_path.

    ``--gpu-path`` (GPULAB_GPU_PATH) is required for a setting: without it the records carry
    none and are reported under "unknown setting" (nothing is assumed). exec_env defaults to
    ``native``, sharing to the gpu_path's.
    """
    if not gpu_path:
        return None
    return make_setting(gpu_path, exec_env or "native", sharing or None)


# ``gpulab bench`` runs the runner natively on the machine it is started on
LOCAL_NATIVE = ("local", "native")


def record_setting(rec: Mapping[str, Any]) -> dict[str, str] | None:
    """The setting fields a record carries, or None when it lacks any (an older record)."""
    if not all(isinstance(rec.get(k), str) and rec.get(k) for k in FIELDS):
        return None
    return {k: str(rec[k]) for k in FIELDS}


def setting_record_fields(
    setting: Setting | None, fingerprint: Mapping[str, Any] | None
) -> dict[str, Any]:
    """The record fields of ``setting`` with its cross-check flags; {} without a setting."""
    if setting is None:
        return {}
    from workloads.fingerprint.crosscheck import setting_flags

    fields: dict[str, Any] = dict(setting.fields())
    fields["setting_flags"] = setting_flags(fields, fingerprint)
    return fields
