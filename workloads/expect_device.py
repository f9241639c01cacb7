"""Expected device: a host marked as a GPU host must not train on the CPU silently.

The lab knows which hosts have a GPU (their ``gpu_path``); the ``workload_run`` role passes it
as ``GPULAB_EXPECT_DEVICE``:

- ``gpu``  (every GPU path): the measurement fails, with a record saying that no GPU is visible
  to the framework and naming the host, when the framework sees no GPU;
- ``cpu``  (gpu_path ``none``): runs on whatever is there, records it;
- ``auto`` (``local``, and the default when unset): runs on whatever is there, records it.

Every record carries the device really used in ``params.device``:
``{"expected": ..., "used": "gpu"|"cpu", "gpus": [...], "framework": "tensorflow 2.21.0"}``.
"""

from __future__ import annotations

import importlib
import os
import socket
from collections.abc import Mapping
from typing import Any

from workloads.errors import InputError

ENV = "GPULAB_EXPECT_DEVICE"
CHOICES = ("gpu", "cpu", "auto")


class DeviceMissing(Exception):
    """A GPU was expected and the framework sees none; ``device`` is the record's device info."""

    def __init__(self, message: str, device: dict[str, Any]) -> None:
        super().__init__(message)
        self.device = device


def expected_device(environ: Mapping[str, str] | None = None) -> str:
    """The expected device from ``GPULAB_EXPECT_DEVICE`` (``auto`` when unset or empty)."""
    env = os.environ if environ is None else environ
    value = env.get(ENV, "").strip().lower() or "auto"
    if value not in CHOICES:
        raise InputError(f"{ENV}={env.get(ENV)!r} is not one of {', '.join(CHOICES)}")
    return value


def framework_label(backend: str) -> str:
    """``"tensorflow 2.21.0"``: the framework that computes for the Keras backend."""
    try:
        mod = importlib.import_module(backend)
        return f"{backend} {getattr(mod, '__version__', '?')}"
    except Exception:
        return backend


def visible_gpus(backend: str) -> list[str]:
    """GPUs that the backend's framework can compute on (empty when none or not importable)."""
    try:
        if backend == "tensorflow":
            import tensorflow as tf

            return [d.name for d in tf.config.list_physical_devices("GPU")]
        if backend == "jax":
            import jax

            return [str(d) for d in jax.devices() if d.platform in ("gpu", "cuda", "rocm")]
        if backend == "torch":
            import torch

            if not torch.cuda.is_available():
                return []
            return [
                f"cuda:{i} {torch.cuda.get_device_name(i)}"
                for i in range(torch.cuda.device_count())
            ]
    except Exception:
        return []
    return []


def check(
    backend: str, environ: Mapping[str, str] | None = None, host: str | None = None
) -> dict[str, Any]:
    """The device info of this measurement; raises :class:`DeviceMissing` when a GPU is
    expected and the framework sees none (no silent fall-back to the CPU)."""
    expected = expected_device(environ)
    gpus = visible_gpus(backend)
    device: dict[str, Any] = {
        "expected": expected,
        "used": "gpu" if gpus else "cpu",
        "gpus": gpus,
        "framework": framework_label(backend),
    }
    if expected == "gpu" and not gpus:
        name = host or socket.gethostname()
        raise DeviceMissing(
            f"host {name}: no GPU is visible to {device['framework']} (Keras backend "
            f"{backend}) but the host is a GPU host ({ENV}=gpu); not falling back to the CPU",
            device,
        )
    return device
