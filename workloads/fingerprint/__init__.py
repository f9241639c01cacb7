"""Environment fingerprint carried by every record: where a measurement ran.

``collect()`` = host facts (:mod:`.system`: OS, kernel, CPU, NUMA, VM and container detection),
GPUs through NVML (:mod:`.nvml`, "no GPU" recorded cleanly without a driver) and software
(:mod:`.software`: framework, backend and library versions, git revision).
"""

from __future__ import annotations

from typing import Any

from workloads.fingerprint.nvml import gpu_info
from workloads.fingerprint.software import collect_software
from workloads.fingerprint.system import collect_system


def collect(nvml: Any = None, **system_kwargs: Any) -> dict[str, Any]:
    out = collect_system(**system_kwargs)
    out["gpu"] = gpu_info(nvml)
    out["software"] = collect_software()
    return out


__all__ = ["collect", "collect_software", "collect_system", "gpu_info"]
