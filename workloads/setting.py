"""Where a measurement ran, as the lab states it: the setting a record carries.

The lab knows four facts for certain and hands them to the runner (``python -m workloads bench``
options, or the ``GPULAB_*`` environment the ``workload_run`` role and ``gpulab run local``
set):

  gpu_path        how the host reaches its GPU (:data:`HOST_SETTINGS`): whole-machine,
                  pci-passthrough, container-vm, container-bm, vgpu, bitfusion, local
  exec_env        the execution environment the runner was launched in, a name of
                  :mod:`workloads.execenv` (an alias such as ``singularity`` is accepted on
                  input and recorded as the name it stands for, apptainer)
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

This module and :mod:`workloads.execenv` are the vocabulary the lab and the runner share:
``infra/`` imports them (a topology names the gpu_paths of its hosts, and what the lab states
about a run is :func:`make_setting`'s), so there is no second copy to hold in step.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from workloads import execenv
from workloads.errors import InputError

# The setting of a host, and what it says about virtualization and GPU sharing.
SETTINGS: dict[str, dict[str, str]] = {
    "bare-metal": {"virtualization": "none", "sharing": "exclusive"},
    "vm-passthrough": {"virtualization": "vm", "sharing": "exclusive"},
    "vgpu": {"virtualization": "vm", "sharing": "vgpu"},
    "remote-gpu": {"virtualization": "vm", "sharing": "bitfusion"},
    "container-on-vm": {"virtualization": "container-in-vm", "sharing": "exclusive"},
    "container-on-bm": {"virtualization": "container", "sharing": "exclusive"},
}
# How a host reaches its GPU (its gpu_path, infra.hosts.Host) -> the setting of such a host.
HOST_SETTINGS: dict[str, str] = {
    "whole-machine": "bare-metal",
    "container-bm": "bare-metal",  # a Kubernetes node on bare metal
    "local": "bare-metal",  # the machine itself; the fingerprint says if it is a VM
    "pci-passthrough": "vm-passthrough",
    "vgpu": "vgpu",
    "container-vm": "vm-passthrough",  # a Kubernetes node VM
    "bitfusion": "remote-gpu",
}
GPU_PATHS = tuple(HOST_SETTINGS)
NO_GPU = "none"  # gpu_path of hosts that measure nothing (k8s API host, Bitfusion server)
# A container execution environment on a host of this setting runs in that one.
CONTAINER_ON = {
    "bare-metal": "container-on-bm",
    "vm-passthrough": "container-on-vm",
    "vgpu": "container-on-vm",
}
IN_CONTAINER = {"none": "container", "vm": "container-in-vm"}  # virtualization plus a container
VIRTUALIZATIONS = ("none", "container", "vm", "container-in-vm")
SHARING_KINDS = ("exclusive", "vgpu", "bitfusion", "time-slicing", "mps", "mig")
_SHARING = re.compile(r"^([a-z-]+)(?::([A-Za-z0-9._-]{1,64}))?$")

# The record fields of a setting (besides ``topology``, which records always had).
FIELDS = ("gpu_path", "exec_env", "virtualization", "sharing")


@dataclass(frozen=True)
class Setting:
    gpu_path: str
    exec_env: str
    virtualization: str
    sharing: str

    def fields(self) -> dict[str, str]:
        return {k: getattr(self, k) for k in FIELDS}


def host_setting(gpu_path: str) -> str:
    """The setting of a host that reaches its GPU by ``gpu_path``; InputError (one line)."""
    try:
        return HOST_SETTINGS[gpu_path]
    except KeyError:
        raise InputError(f"gpu_path {gpu_path!r} is not one of {', '.join(GPU_PATHS)}") from None


def where(host: str, exec_env: str) -> str:
    """The setting of a run in ``exec_env`` (a name of :mod:`workloads.execenv`) on a host of
    setting ``host``: a container on bare metal or in a VM is a setting of its own."""
    return CONTAINER_ON.get(host, host) if execenv.get(exec_env).container else host


def virtualization_of(gpu_path: str, exec_env: str) -> str:
    virtualization = SETTINGS[host_setting(gpu_path)]["virtualization"]
    if execenv.get(exec_env).container:
        return IN_CONTAINER.get(virtualization, virtualization)
    return virtualization


def default_sharing(gpu_path: str) -> str:
    """The GPU sharing a host of ``gpu_path`` has: its setting's (a container shares no more)."""
    return SETTINGS[host_setting(gpu_path)]["sharing"]


def make_setting(gpu_path: str, exec_env: str, sharing: str | None = None) -> Setting:
    """The setting of a run from the lab's facts; InputError (one line) on a bad value.

    ``exec_env`` may be an alias (``singularity``): the runner's command line is an edge of
    its own, so the name is checked and resolved here, against the one table."""
    try:
        env = execenv.canonical(exec_env)
    except execenv.UnknownExecEnv:
        raise InputError(
            f"exec_env {exec_env!r} is not one of {', '.join(execenv.names())} "
            f"(or {', '.join(execenv.aliases())})"
        ) from None
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
    # lazily: workloads.fingerprint loads its collectors, which the lab side never needs
    from workloads.fingerprint.crosscheck import setting_flags

    fields: dict[str, Any] = dict(setting.fields())
    fields["setting_flags"] = setting_flags(fields, fingerprint)
    return fields
