"""The host contract between topologies, Ansible and the workload runs.

A topology builds resources and returns a list of :class:`Host` (plain values or Pulumi
Outputs inside a Pulumi program); everything downstream (inventory, workload runs, the
``hosts`` stack output) speaks this shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from workloads import setting

# How a host reaches its GPU: the runner's vocabulary (workloads.setting.HOST_SETTINGS), and
# "none" for hosts that carry no GPU (k8s API endpoint, Bitfusion server record).
GPU_PATHS = (*setting.GPU_PATHS, setting.NO_GPU)


@dataclass
class Host:
    name: str
    address: Any  # str, or a pulumi.Output[str] inside a program
    ssh_user: str = "root"
    groups: list[str] = field(default_factory=list)
    gpu_path: str = "local"
    ssh_port: int = 22
    vars: dict[str, Any] = field(default_factory=dict)
    # What identifies the machine in its cloud (Nova instance id, vSphere VM UUID, Magnum
    # cluster id): another value means another machine, which the site run provisions again.
    identity: Any = None

    def __post_init__(self) -> None:
        if self.gpu_path not in GPU_PATHS:
            raise ValueError(f"gpu_path {self.gpu_path!r} is not one of {GPU_PATHS}")

    def to_output(self) -> dict[str, Any]:
        """The shape of one entry of the ``hosts`` stack output.

        A shallow copy: inside a Pulumi program values may be Outputs, which refuse the deep
        copy ``dataclasses.asdict`` makes.
        """
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, list):
                value = list(value)
            elif isinstance(value, dict):
                value = dict(value)
            out[f.name] = value
        return out

    @classmethod
    def from_output(cls, data: dict[str, Any]) -> Host:
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)
