"""The validated lab configuration and the validator that builds it."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from typing import Any

from infra.config.fields import (
    BY_KEY,
    FIELDS,
    TOPOLOGIES,
    BadValue,
    SecretRef,
    default_ssh_user,
)
from infra.errors import UsageError
from infra.specs.topology import get as topology_spec


class ConfigError(UsageError):
    """The stack config is invalid. ``problems`` holds one line per bad ``gpulab:<key>``."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


@dataclass(frozen=True)
class LabConfig:
    """A lab's validated ``gpulab:*`` config. Every key is an attribute of the same name.

    Keys a topology does not use are ``None`` (or their empty default). Secrets are a
    ``pulumi.Output[str]`` (from :func:`infra.config.from_pulumi_config`, made with
    ``require_secret``) or a :class:`SecretRef` placeholder (from
    :func:`infra.config.load_stack_file`, which cannot decrypt); never plaintext.

    All topologies
        topology: str          ironic-bm | nova-pci | magnum-k8s | vsphere-gpu | local
        lab: str               lab name; every resource is named ``<lab>-...`` and tagged with it
        ssh_user: str          login user on the hosts (default: the image's family, see
                               fields.SSH_USER_BY_IMAGE; root for local)
        host_count: int|None   GPU hosts to build (ironic-bm, nova-pci, vsphere-gpu; default 1)
        suite: str             workload suite (workloads/suites/<suite>.yaml; default smoke)
        execution_envs: tuple[str, ...]  native|docker|singularity|k8s|bitfusion (empty: the
                               topology's default, see infra.dynamic.execution_envs)
        workload_variables: dict[str, Any]  extra variables for the workload_run role
        site: dict[str, Any]   role inputs of the site run (``<role>_*``/``gpulab_*`` variables)
        measure_id: str        in every workload run's triggers (``gpulab measure`` sets it)
    OpenStack (ironic-bm, nova-pci, magnum-k8s)
        os_cloud: str|None     clouds.yaml entry (None: OS_* environment variables)
        os_password: secret|None  overrides the clouds.yaml password
        ssh_public_key: str    installed through a Nova keypair
        external_network: str  provider network for the lab router
        admin_cidr: str        the only source allowed to SSH in (0.0.0.0/0 or ::/0 only with
                               allow_world: true)
        allow_world: bool      admin_cidr may be the whole internet (default false)
        lab_cidr: str          lab subnet (default 10.42.0.0/24)
        dns_nameservers: tuple[str, ...]
        image: str             Glance image name
        availability_zone: str|None  (ironic-bm, nova-pci)
        flavor_vcpus, flavor_ram_mb, flavor_disk_gb: int  flavor sizes (ironic-bm, nova-pci)
    ironic-bm
        resource_class: str    Ironic node resource class; see :attr:`resource_class_spec`
        required_traits: tuple[str, ...]
    nova-pci
        pci_alias: str         ``<alias>:<count>``; see :attr:`pci_alias_name`/``_count``
        cpu_pinning: bool; numa_nodes: int|None; anti_affinity: bool
    magnum-k8s
        server_type: vm|bm; master_flavor, node_flavor: str; master_count, node_count: int;
        network_driver: calico|flannel; docker_volume_size: int|None (vm only);
        labels: dict[str, str]
    vsphere-gpu
        vsphere_server, vsphere_user: str; vsphere_password: secret; vsphere_insecure: bool;
        datacenter, cluster, datastore, network, template: str; folder: str|None;
        domain: str; vm_cpus, vm_memory_mb: int; mode: passthrough|vgpu|bitfusion
        passthrough: gpu_host: str; pci_device_ids: tuple[str, ...]; gpus_per_vm: int;
                     gpu_bar_gb: int
        vgpu: vgpu_profile: str; vgpu_license_token: secret|None
        bitfusion: bitfusion_server: str
    """

    topology: str
    lab: str
    ssh_user: str = "ubuntu"
    ssh_public_key: str | None = None
    host_count: int | None = None
    suite: str = "smoke"
    execution_envs: tuple[str, ...] = ()
    workload_variables: dict[str, Any] = field(default_factory=dict)
    site: dict[str, Any] = field(default_factory=dict)
    measure_id: str = ""
    os_cloud: str | None = None
    os_password: Any = None
    external_network: str | None = None
    admin_cidr: str | None = None
    allow_world: bool = False
    lab_cidr: str | None = None
    dns_nameservers: tuple[str, ...] = ()
    image: str | None = None
    availability_zone: str | None = None
    resource_class: str | None = None
    required_traits: tuple[str, ...] = ()
    flavor_vcpus: int | None = None
    flavor_ram_mb: int | None = None
    flavor_disk_gb: int | None = None
    pci_alias: str | None = None
    cpu_pinning: bool = False
    numa_nodes: int | None = None
    anti_affinity: bool = False
    server_type: str | None = None
    master_flavor: str | None = None
    node_flavor: str | None = None
    master_count: int | None = None
    node_count: int | None = None
    network_driver: str | None = None
    docker_volume_size: int | None = None
    labels: dict[str, str] = field(default_factory=dict)
    vsphere_server: str | None = None
    vsphere_user: str | None = None
    vsphere_password: Any = None
    vsphere_insecure: bool = False
    datacenter: str | None = None
    cluster: str | None = None
    datastore: str | None = None
    network: str | None = None
    template: str | None = None
    folder: str | None = None
    domain: str | None = None
    mode: str | None = None
    vm_cpus: int | None = None
    vm_memory_mb: int | None = None
    gpu_host: str | None = None
    pci_device_ids: tuple[str, ...] = ()
    gpus_per_vm: int | None = None
    gpu_bar_gb: int | None = None
    vgpu_profile: str | None = None
    vgpu_license_token: Any = None
    bitfusion_server: str | None = None
    vgpu_policy: str | None = None
    vgpu_policy_apply: bool = False
    vgpu_vms_per_gpu: int | None = None
    kw_vm_count: int = 0
    kw_vm_cpus: int | None = None
    kw_vm_memory_mb: int | None = None

    @property
    def resource_class_spec(self) -> str:
        """Nova's normalized custom resource class: ``baremetal.gpu-p100`` ->
        ``CUSTOM_BAREMETAL_GPU_P100``."""
        assert self.resource_class is not None
        norm = re.sub(r"[^A-Z0-9_]", "_", self.resource_class.upper())
        return norm if norm.startswith("CUSTOM_") else f"CUSTOM_{norm}"

    @property
    def pci_alias_name(self) -> str:
        assert self.pci_alias is not None
        return self.pci_alias.rsplit(":", 1)[0]

    @property
    def pci_alias_count(self) -> int:
        assert self.pci_alias is not None
        return int(self.pci_alias.rsplit(":", 1)[1])


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _is_secret_value(value: Any) -> bool:
    if isinstance(value, SecretRef):
        return True
    try:
        import pulumi
    except ImportError:  # pragma: no cover - pulumi is a dependency
        return False
    return isinstance(value, pulumi.Output)


def validate(raw: dict[str, Any]) -> LabConfig:
    """Check ``raw`` (keys without the ``gpulab:`` prefix) and build a :class:`LabConfig`.

    Raises :class:`ConfigError` listing every problem; nothing is created before this passes.
    """
    problems: list[str] = []
    topology = raw.get("topology")
    if topology is None:
        problems.append("gpulab:topology is required: one of " + ", ".join(TOPOLOGIES))
    elif topology not in TOPOLOGIES:
        problems.append(
            f"gpulab:topology must be one of {', '.join(TOPOLOGIES)}, got {_show(topology)}"
        )
        topology = None

    for key in raw:
        if key in BY_KEY:
            if topology and topology not in BY_KEY[key].topologies:
                users = ", ".join(t for t in TOPOLOGIES if t in BY_KEY[key].topologies)
                problems.append(
                    f"gpulab:{key} is not used by topology {topology} (only by {users})"
                )
            continue
        near = difflib.get_close_matches(key, list(BY_KEY), n=1)
        hint = f" (did you mean gpulab:{near[0]}?)" if near else ""
        allowed = sorted(f.key for f in FIELDS if not topology or topology in f.topologies)
        problems.append(
            f"gpulab:{key} is not a known key{hint}; allowed"
            + (f" for {topology}" if topology else "")
            + ": "
            + ", ".join(allowed)
        )
    if topology is None:
        raise ConfigError(problems)

    values: dict[str, Any] = {}
    for f in FIELDS:
        if topology not in f.topologies:
            continue
        if f.key not in raw or raw[f.key] is None:
            if topology in f.required:
                problems.append(f"gpulab:{f.key} is required for {topology}: {f.help}")
            default = f.default(topology) if callable(f.default) else f.default
            if default is not None:
                values[f.key] = default
            continue
        value = raw[f.key]
        if f.secret and _is_secret_value(value):
            values[f.key] = value
            continue
        try:
            values[f.key] = f.parse(value)
        except BadValue as exc:
            got = "" if f.secret else f", got {_show(value)}"
            problems.append(f"gpulab:{f.key} must be {exc}{got}")

    if raw.get("ssh_user") is None:  # the login user of the image (template) family
        values["ssh_user"] = default_ssh_user(
            topology, values.get("image") or values.get("template")
        )
    # the topology's own checks across keys (vsphere-gpu modes, magnum-k8s bare metal)
    topology_spec(topology).check_config(raw, values, problems)
    cidr = values.get("admin_cidr")
    if isinstance(cidr, str) and cidr.endswith("/0") and not values.get("allow_world"):
        problems.append(
            f"gpulab:admin_cidr {cidr} opens SSH to the whole internet: name your network, "
            "or set gpulab:allow_world: true to mean it"
        )
    if problems:
        raise ConfigError(problems)
    for key in ("dns_nameservers", "required_traits", "pci_device_ids", "execution_envs"):
        if key in values:
            values[key] = tuple(values[key])
    return LabConfig(**values)
