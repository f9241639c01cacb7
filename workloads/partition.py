"""GPU partitioning for concurrent jobs (the ``sharing`` scenario's ``partition`` option).

"25 % of a GPU" means nothing without a mechanism; this module chooses one, tells the jobs, and
each job records what it really applied (``params.partition``):

- ``wrapper``: the argv prefix (Bitfusion: ``bitfusion run -n 1 -p 0.25 --``), from the
  ``wrapper`` option or ``$GPULAB_SHARING_WRAPPER``.
- ``mps``: ``CUDA_MPS_ACTIVE_THREAD_PERCENTAGE`` = share x 100 for each job, when an MPS control
  daemon is running (its pipe directory, ``$CUDA_MPS_PIPE_DIRECTORY`` or ``/tmp/nvidia-mps``,
  has a ``control`` pipe). Plus the memory cap below.
- ``memory``: a per-process GPU memory cap of share x the GPU's memory: TensorFlow a logical
  device with ``memory_limit``; JAX ``XLA_PYTHON_CLIENT_MEM_FRACTION`` (and no preallocation
  beyond it); PyTorch ``torch.cuda.set_per_process_memory_fraction``. Memory only: compute is
  still time-sliced, and the record says so.
- ``auto``: ``wrapper`` if one is given, else ``mps`` if available, else ``memory``.
- ``none``: plain time-slicing, no cap.

The parent passes ``GPULAB_GPU_SHARE`` (the fraction) and ``GPULAB_PARTITION`` (the mechanism)
to each job; :func:`apply_in_child` runs in the job before the framework allocates memory.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

MECHANISMS = ("auto", "none", "memory", "mps", "wrapper")
SHARE_ENV, MECHANISM_ENV = "GPULAB_GPU_SHARE", "GPULAB_PARTITION"


def mps_available() -> bool:
    pipe = Path(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"))
    return (pipe / "control").exists()


def choose(mechanism: str, share: float, wrapper: list[str] | None) -> tuple[str, dict[str, str]]:
    """(mechanism used, environment for each concurrent job). ValueError when the named
    mechanism cannot be had here (the scenario records it as skipped with that reason)."""
    if mechanism == "auto":
        mechanism = "wrapper" if wrapper else "mps" if mps_available() else "memory"
    if mechanism == "none":
        return "none", {}
    if mechanism == "wrapper":
        if not wrapper:
            raise ValueError(
                "partition 'wrapper' needs a wrapper (option wrapper or $GPULAB_SHARING_WRAPPER)"
            )
        return "wrapper", {}
    env = {SHARE_ENV: f"{share:g}", MECHANISM_ENV: mechanism}
    env["XLA_PYTHON_CLIENT_MEM_FRACTION"] = f"{share:.3f}"
    if mechanism == "mps":
        if not mps_available():
            raise ValueError(
                "partition 'mps' needs a running MPS control daemon (nvidia-cuda-mps-control -d; "
                "no control pipe under $CUDA_MPS_PIPE_DIRECTORY or /tmp/nvidia-mps)"
            )
        env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = str(max(1, round(share * 100)))
    return mechanism, env


def _gpu_memory_mib() -> list[int]:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            n = pynvml.nvmlDeviceGetCount()
            return [
                int(pynvml.nvmlDeviceGetMemoryInfo(pynvml.nvmlDeviceGetHandleByIndex(i)).total)
                // 2**20
                for i in range(n)
            ]
        finally:
            pynvml.nvmlShutdown()
    except Exception:
        return []


def apply_in_child(backend: str) -> dict[str, Any] | None:
    """Apply the memory cap the parent asked for (before any GPU allocation); what was applied,
    for ``params.partition``; None when no partition was asked."""
    share_text = os.environ.get(SHARE_ENV)
    if not share_text:
        return None
    share = float(share_text)
    info: dict[str, Any] = {
        "mechanism": os.environ.get(MECHANISM_ENV, "memory"),
        "share": share,
        "mps_active_thread_percentage": os.environ.get("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"),
    }
    totals = _gpu_memory_mib()
    if not totals:
        info.update(memory_cap="not applied: no GPU visible")
        return info
    caps = [int(t * share) for t in totals]
    if backend == "tensorflow":
        import tensorflow as tf

        for gpu, cap in zip(tf.config.list_physical_devices("GPU"), caps, strict=False):
            tf.config.set_logical_device_configuration(
                gpu, [tf.config.LogicalDeviceConfiguration(memory_limit=cap)]
            )
        info.update(memory_cap="tensorflow logical device memory_limit", cap_mib=caps)
    elif backend == "jax":
        info.update(memory_cap="XLA_PYTHON_CLIENT_MEM_FRACTION", cap_mib=caps)
    elif backend == "torch":
        import torch

        for i in range(torch.cuda.device_count()):
            torch.cuda.set_per_process_memory_fraction(share, i)
        info.update(memory_cap="torch set_per_process_memory_fraction", cap_mib=caps)
    return info
