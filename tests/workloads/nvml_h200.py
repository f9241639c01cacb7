"""A test double of ``pynvml`` for one NVIDIA H200 in a passthrough guest (no NVIDIA driver
here), as strict as the library where the fingerprint's calls meet it: a bad handle is NVML's
"Invalid Argument". Used by the fingerprint and the NVML sampler tests."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


class NVMLError(Exception):
    pass


class H200Nvml:
    """Test double of pynvml for one H200 in a passthrough guest: NVML answers -1 for the NUMA
    node (as sysfs does there), CUDA 12.4 through the _v2 call, 700 W enforced limit."""

    def __init__(self, virt_mode: int = 1, numa: Any = -1, count: int = 1) -> None:
        self.virt_mode, self.numa, self.count = virt_mode, numa, count
        self.shutdowns = 0
        self.no_memory_or_mode = False

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shutdowns += 1

    def nvmlDeviceGetCount(self) -> int:
        return self.count

    def nvmlSystemGetDriverVersion(self) -> str:
        return "550.90.07"

    def nvmlSystemGetCudaDriverVersion_v2(self) -> int:
        return 12040

    def nvmlSystemGetCudaDriverVersion(self) -> int:
        return 11000

    def nvmlSystemGetNVMLVersion(self) -> bytes:
        return b"12.550.90.07"

    def nvmlDeviceGetHandleByIndex(self, i: int) -> tuple[str, int]:
        return ("h", i)

    @staticmethod
    def _check(h: Any) -> None:
        if not (isinstance(h, tuple) and h[0] == "h"):
            raise NVMLError("Invalid Argument")  # as NVML answers a bad handle

    def nvmlDeviceGetCurrPcieLinkGeneration(self, h: Any) -> int:
        self._check(h)
        return 4

    def nvmlDeviceGetMaxPcieLinkGeneration(self, h: Any) -> int:
        self._check(h)
        return 5

    def nvmlDeviceGetCurrPcieLinkWidth(self, h: Any) -> int:
        self._check(h)
        return 8

    def nvmlDeviceGetMaxPcieLinkWidth(self, h: Any) -> int:
        self._check(h)
        return 16

    def nvmlDeviceGetName(self, h: Any) -> str:
        return "NVIDIA H200"

    def nvmlDeviceGetUUID(self, h: Any) -> str:
        return "GPU-h200"

    def nvmlDeviceGetPciInfo(self, h: Any) -> SimpleNamespace:
        return SimpleNamespace(busId=b"00000000:1A:00.0")

    def nvmlDeviceGetMemoryInfo(self, h: Any) -> SimpleNamespace:
        if self.no_memory_or_mode:
            raise NVMLError("Not Supported")
        return SimpleNamespace(total=143771 * 1024 * 1024 + 5)

    def nvmlDeviceGetVirtualizationMode(self, h: Any) -> int:
        if self.no_memory_or_mode:
            raise NVMLError("Not Supported")
        return self.virt_mode

    def nvmlDeviceGetNumaNodeId(self, h: Any) -> Any:
        if isinstance(self.numa, Exception):
            raise self.numa
        return self.numa

    def nvmlDeviceGetMigMode(self, h: Any) -> list[int]:
        return [1, 0]

    def nvmlDeviceGetCudaComputeCapability(self, h: Any) -> tuple[int, int]:
        self._check(h)
        if self.no_memory_or_mode:
            raise NVMLError("Not Supported")
        return (9, 0)

    def nvmlDeviceGetEnforcedPowerLimit(self, h: Any) -> int:
        self._check(h)
        return 700_000

    def nvmlDeviceGetPersistenceMode(self, h: Any) -> int:
        self._check(h)
        return 1
