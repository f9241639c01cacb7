"""The ``gpulab:*`` keys of a stack: one field of :class:`LabConfig` per key (the one table).

Each field's annotation carries a :class:`Key`: the pydantic type a present value is validated
as (bounds, patterns, parsers; its :class:`Allowed` text is what an error says is allowed),
its help, which topologies (and vSphere modes) use it, where it is required, its default when
absent, and whether it is a secret. :mod:`infra.config.model` validates a stack with them,
:mod:`infra.config.schema` writes the ``config:`` block of ``Pulumi.yaml`` from them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated as A  # the key table's lines stay short
from typing import Any, get_type_hints

from pydantic import ConfigDict
from pydantic.dataclasses import dataclass as model

from infra.config.roles import p_labels, p_site, p_variables, p_workload_secrets
from infra.config.types import (
    LAB_RE,
    MAX_BAR_GB,
    MAX_DISK_GB,
    MAX_GPUS,
    MAX_HOSTS,
    MAX_INT_DIGITS,
    MAX_KW_VMS,
    MAX_LIST,
    MAX_MASTERS,
    MAX_MEMORY_MB,
    MAX_NUMA_NODES,
    MAX_STR,
    MAX_VCPUS,
    RESOURCE_CLASS_RE,
    TRAIT_RE,
    VGPU_PROFILE_RE,
    Allowed,
    Bool,
    Cidr,
    Count,
    Int,
    List,
    Name,
    OneOf,
    Parsed,
    Secret,
    SecretRef,
    Str,
    Text,
    _alias_count,
    _exec_env,
    _ip,
    _measure_id,
    _pci_address,
    _ssh_key,
    _suite,
)
from infra.specs import execenv as _execenv
from infra.specs import topology as _topology

TOPOLOGIES = _topology.names()  # one spec module per topology: infra/specs/topologies/
OPENSTACK = frozenset({"ironic-bm", "nova-pci", "magnum-k8s"})
VSPHERE_MODES = ("passthrough", "vgpu", "bitfusion")
VGPU_POLICIES = ("best-effort", "equal-share", "fixed-share")
EXECUTION_ENVS = _execenv.accepted()  # infra/specs/execenv.py: names, then aliases

# --- the keys ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Key:
    """One ``gpulab:<key>``: ``value`` (the pydantic type a present value is validated as),
    ``help``, ``topologies`` where it may appear, ``required``: topologies where it must,
    ``default``: its value when absent (a callable gets the topology name), ``modes``: for
    vsphere-gpu keys, the ``gpulab:mode`` values that use it (empty: all), ``secret``."""

    value: Any
    help: str
    topologies: frozenset[str]
    required: frozenset[str] = frozenset()
    default: Any = None
    modes: frozenset[str] = frozenset()
    secret: bool = False
    key: str = ""  # the field's name, set when the table is read

    @property
    def allowed(self) -> Allowed:
        return next(m for m in reversed(self.value.__metadata__) if isinstance(m, Allowed))


__all__ = [  # the table, and the value types' names other modules take from here
    "BY_KEY", "EXECUTION_ENVS", "FIELDS", "MAX_BAR_GB", "MAX_DISK_GB", "MAX_GPUS", "MAX_HOSTS",
    "MAX_INT_DIGITS", "MAX_KW_VMS", "MAX_LIST", "MAX_MASTERS", "MAX_MEMORY_MB", "MAX_NUMA_NODES",
    "MAX_STR", "MAX_VCPUS", "MODE_REQUIRED", "OPENSTACK", "SSH_USER_BY_IMAGE", "TOPOLOGIES",
    "VGPU_POLICIES", "VGPU_PROFILE_RE", "VSPHERE_MODES", "Key", "LabConfig", "SecretRef",
    "by_topology", "default_ssh_user",
]  # fmt: skip

ALL = frozenset(TOPOLOGIES)
IRONIC, NOVA, MAGNUM, VSPHERE = (
    frozenset({"ironic-bm"}),
    frozenset({"nova-pci"}),
    frozenset({"magnum-k8s"}),
    frozenset({"vsphere-gpu"}),
)
INSTANCES = frozenset({"ironic-bm", "nova-pci", "vsphere-gpu"})
SERVERS = frozenset({"ironic-bm", "nova-pci"})
PASSTHROUGH, VGPU, BITFUSION = (frozenset({m}) for m in VSPHERE_MODES)


def by_topology(key: str) -> Callable[[str], Any]:
    """A key's default from the topology's own defaults (its spec's ``defaults``), else None."""
    return lambda topology: _topology.get(topology).defaults.get(key)


# The login user of each image family's cloud image: the first prefix that the lowercased
# image (OpenStack) or template (vSphere) name starts with picks it; anything else is ubuntu.
SSH_USER_BY_IMAGE: tuple[tuple[tuple[str, ...], str], ...] = (
    (("ubuntu",), "ubuntu"),
    (("debian",), "debian"),
    (("rocky",), "rocky"),
    (("centos", "rhel"), "cloud-user"),
    (("fedora-coreos", "fcos"), "core"),
)


def default_ssh_user(topology: str, image: str | None) -> str:
    """``gpulab:ssh_user`` when absent: root for local, else the image family's user."""
    own = _topology.get(topology).defaults.get("ssh_user")
    if own:
        return str(own)
    name = (image or "").strip().lower()
    for prefixes, user in SSH_USER_BY_IMAGE:
        if name.startswith(prefixes):
            return user
    return "ubuntu"


def _family_user(topology: str) -> str:
    return default_ssh_user(topology, None)


def K(value: Any, help: str, where: frozenset[str], required: Any = False, **kw: Any) -> Key:
    """A :class:`Key`; ``required=True`` means required wherever it is used."""
    return Key(value, help, where, where if required is True else (required or frozenset()), **kw)


_CFG = ConfigDict(arbitrary_types_allowed=True)


@model(frozen=True, config=_CFG)
class LabConfig:
    """A lab's validated ``gpulab:*`` config. Every key is an attribute of the same name.

    Keys a topology does not use are ``None`` (or their empty default). Secrets are a
    ``pulumi.Output[str]`` (from :func:`infra.config.from_pulumi_config`, made with
    ``require_secret``) or a :class:`SecretRef` placeholder (from
    :func:`infra.config.load_stack_file`, which cannot decrypt); never plaintext. Each key's
    type, help, topologies and default are in its :class:`Key` below (``docs/topologies.md``).
    """

    # fmt: off
    topology: A[str, K(OneOf(*TOPOLOGIES), "which lab to build", ALL, True)]
    lab: A[str, K(Text(LAB_RE, "2-32 characters: lowercase letters, digits and '-', starting "
                       "with a letter"), "lab name; prefixes and tags every resource", ALL, True)]
    ssh_user: A[str, K(Name, "login user on the lab hosts (default: the image family's, see "
                       "docs/topologies.md; root for local)", ALL,
                       default=_family_user)] = "ubuntu"
    ssh_public_key: A[str | None, K(Parsed(_ssh_key, "an OpenSSH public key line (ssh-ed25519 "
                                           "AAAA... comment)"),
                                    "public key installed on OpenStack hosts", OPENSTACK,
                                    True)] = None
    host_count: A[int | None, K(Count, "number of GPU hosts", INSTANCES, default=1)] = None
    host_wait_s: A[int, K(Int(10, 86400), "seconds to wait for each host to answer SSH and for "
                          "cloud-init to finish, after the cloud reports it ready; changes no "
                          "diff", ALL, default=600)] = 600
    # what the lab measures once its hosts are ready
    suite: A[str, K(Parsed(_suite, "a suite in workloads/suites/"),
                    "workload suite to run on the GPU hosts", ALL, default="smoke")] = "smoke"
    execution_envs: A[tuple[str, ...], K(
        List(Parsed(_exec_env, ""), ", ".join(EXECUTION_ENVS)),
        "execution environments the site prepares and, unless measure_envs says fewer, "
        "measures in (default: native; k8s on magnum-k8s; bitfusion on vsphere-gpu mode "
        "bitfusion)", ALL, default=())] = ()
    measure_envs: A[tuple[str, ...], K(
        List(Parsed(_exec_env, ""), ", ".join(EXECUTION_ENVS)),
        "execution environments the workload runs measure in, a subset of execution_envs "
        "(default: all of them); changing it re-runs no site play", ALL, default=())] = ()
    workload_variables: A[dict[str, Any], K(
        Parsed(p_variables, "a mapping of workload_run role inputs", dict[str, Any]),
        "extra workload_run role variables (e.g. workload_run_docker_image)", ALL,
        default={})] = field(default_factory=dict)
    workload_secrets: A[Any, K(
        Parsed(p_workload_secrets, "a mapping of secret workload_run role inputs", Any),
        "secret workload_run role inputs (no_log: true in its meta/argument_specs.yml, e.g. "
        "workload_run_registry_password), each set with `pulumi config set --secret --path "
        "'gpulab:workload_secrets.<name>' VALUE`", ALL, secret=True)] = None
    site: A[dict[str, Any], K(
        Parsed(p_site, "a mapping of role inputs", dict[str, Any]),
        "role inputs of the site Ansible run (<role>_* or gpulab_* variables, "
        "e.g. nvidia_driver_cuda_repo_url, workload_env_pip_index_url)", ALL,
        default={})] = field(default_factory=dict)
    measure_id: A[str, K(Parsed(_measure_id, "up to 64 letters, digits, '.', '_', ':' or '-' "
                                "(gpulab measure sets it)"),
                         "a change re-runs only the workload runs (gpulab measure sets it)", ALL,
                         default="")] = ""
    # OpenStack, shared
    os_cloud: A[str | None, K(Name, "clouds.yaml entry; empty: OS_* environment",
                              OPENSTACK)] = None
    os_password: A[Any, K(Secret, "overrides the clouds.yaml password", OPENSTACK,
                          secret=True)] = None
    external_network: A[str | None, K(Name, "provider network the lab router uplinks to",
                                      OPENSTACK, True)] = None
    admin_cidr: A[str | None, K(Cidr, "only source allowed to SSH into the lab", OPENSTACK,
                                True)] = None
    allow_world: A[bool, K(Bool, "let admin_cidr be the whole internet (0.0.0.0/0 or ::/0)",
                           OPENSTACK, default=False)] = False
    lab_cidr: A[str | None, K(Cidr, "lab subnet", OPENSTACK, default="10.42.0.0/24")] = None
    dns_nameservers: A[tuple[str, ...], K(List(Parsed(_ip, ""), "IP addresses"),
                                          "lab subnet DNS servers", OPENSTACK, default=())] = ()
    image: A[str | None, K(Name, "Glance image name", OPENSTACK, True)] = None
    availability_zone: A[str | None, K(Name, "Nova availability zone", SERVERS)] = None
    # ironic-bm
    resource_class: A[str | None, K(Text(RESOURCE_CLASS_RE, "an Ironic resource class of "
                                         "letters, digits, '.', '_' or '-'"),
                                    "Ironic nodes' resource_class", IRONIC, True)] = None
    required_traits: A[tuple[str, ...], K(List(Text(TRAIT_RE, ""), "trait names"),
                                          "traits the node must have", IRONIC,
                                          default=())] = ()
    # flavors (display-only sizes for bare metal)
    flavor_vcpus: A[int | None, K(Int(1, MAX_VCPUS), "flavor vCPUs", SERVERS, NOVA,
                                  default=by_topology("flavor_vcpus"))] = None
    flavor_ram_mb: A[int | None, K(Int(1, MAX_MEMORY_MB), "flavor RAM in MiB", SERVERS, NOVA,
                                   default=by_topology("flavor_ram_mb"))] = None
    flavor_disk_gb: A[int | None, K(Int(0, MAX_DISK_GB), "flavor root disk in GB", SERVERS,
                                    NOVA, default=by_topology("flavor_disk_gb"))] = None
    # nova-pci
    pci_alias: A[str | None, K(Parsed(_alias_count, "<alias>:<count> with a nova.conf [pci] "
                                      "alias name and a count >= 1, e.g. a100:1"),
                               "GPU alias and count per VM", NOVA, True)] = None
    cpu_pinning: A[bool, K(Bool, "hw:cpu_policy=dedicated", NOVA, default=False)] = False
    numa_nodes: A[int | None, K(Int(1, MAX_NUMA_NODES), "hw:numa_nodes", NOVA)] = None
    anti_affinity: A[bool, K(Bool, "spread VMs over hypervisors", NOVA, default=False)] = False
    # magnum-k8s
    server_type: A[str | None, K(OneOf("vm", "bm"), "Magnum node kind", MAGNUM, True)] = None
    master_flavor: A[str | None, K(Name, "control-plane flavor", MAGNUM, True)] = None
    node_flavor: A[str | None, K(Name, "GPU worker flavor", MAGNUM, True)] = None
    master_count: A[int | None, K(Int(1, MAX_MASTERS), "control-plane nodes", MAGNUM,
                                  default=1)] = None
    node_count: A[int | None, K(Count, "GPU worker nodes", MAGNUM, default=1)] = None
    network_driver: A[str | None, K(OneOf("calico", "flannel"), "Kubernetes CNI", MAGNUM,
                                    default="calico")] = None
    docker_volume_size: A[int | None, K(Int(1, MAX_DISK_GB), "per-node Cinder volume for "
                                        "images (GB, vm only)", MAGNUM)] = None
    labels: A[dict[str, str], K(Parsed(p_labels, "a mapping of label names to string values",
                                       dict[str, str]), "Magnum cluster labels", MAGNUM,
                                default={})] = field(default_factory=dict)
    # vsphere-gpu
    vsphere_server: A[str | None, K(Str, "vCenter address", VSPHERE, True)] = None
    vsphere_user: A[str | None, K(Str, "vCenter user", VSPHERE, True)] = None
    vsphere_password: A[Any, K(Secret, "vCenter password", VSPHERE, True, secret=True)] = None
    vsphere_insecure: A[bool, K(Bool, "skip TLS verification", VSPHERE, default=False)] = False
    datacenter: A[str | None, K(Str, "vSphere datacenter", VSPHERE, True)] = None
    cluster: A[str | None, K(Str, "compute cluster", VSPHERE, True)] = None
    datastore: A[str | None, K(Str, "datastore for the VMs", VSPHERE, True)] = None
    network: A[str | None, K(Str, "port group for the VMs", VSPHERE, True)] = None
    template: A[str | None, K(Str, "VM template to clone", VSPHERE, True)] = None
    folder: A[str | None, K(Str, "VM folder", VSPHERE)] = None
    domain: A[str | None, K(Name, "guest customization domain", VSPHERE,
                            default="gpulab.local")] = None
    mode: A[str | None, K(OneOf(*VSPHERE_MODES), "how VMs reach GPUs", VSPHERE, True)] = None
    vm_cpus: A[int | None, K(Int(1, MAX_VCPUS), "vCPUs per VM", VSPHERE, default=8)] = None
    vm_memory_mb: A[int | None, K(Int(1, MAX_MEMORY_MB), "memory per VM in MiB", VSPHERE,
                                  default=32768)] = None
    gpu_host: A[str | None, K(Str, "ESXi host holding the passthrough GPUs", VSPHERE,
                              modes=PASSTHROUGH)] = None
    pci_device_ids: A[tuple[str, ...], K(
        List(Parsed(_pci_address, ""), "PCI addresses like 0000:3b:00.0"),
        "GPU PCI addresses on gpu_host, gpus_per_vm per VM in order", VSPHERE,
        modes=PASSTHROUGH)] = ()
    gpus_per_vm: A[int | None, K(Int(1, MAX_GPUS), "passthrough GPUs per VM", VSPHERE,
                                 default=1, modes=PASSTHROUGH)] = None
    gpu_bar_gb: A[int | None, K(Int(1, MAX_BAR_GB), "BAR1 size of one GPU in GB (e.g. 16 for "
                                "P100/V100-16GB)", VSPHERE, modes=PASSTHROUGH)] = None
    vgpu_profile: A[str | None, K(Text(VGPU_PROFILE_RE, "an NVIDIA vGPU profile name like "
                                       "grid_p100-4q, grid_t4-8c or grid_a100-3-20c"),
                                  "vGPU profile", VSPHERE, modes=VGPU)] = None
    vgpu_license_token: A[Any, K(Secret, "NVIDIA license client token (Ansible gridd)",
                                 VSPHERE, modes=VGPU, secret=True)] = None
    bitfusion_server: A[str | None, K(Str, "Bitfusion server address", VSPHERE,
                                      modes=BITFUSION)] = None
    # vsphere-gpu study factors (the VMware vGPU paper): the vGPU scheduling policy set on the
    # ESXi hosts, the VMs each GPU holds with the arm's profile, CPU-only knowledge-worker VMs.
    vgpu_policy: A[str | None, K(OneOf(*VGPU_POLICIES), "vGPU scheduling policy on the ESXi "
                                 "hosts (RmPVMRL; see docs/topologies.md)", VSPHERE,
                                 modes=VGPU)] = None
    vgpu_policy_apply: A[bool, K(Bool, "set vgpu_policy on the hosts' nvidia module (else only "
                                 "record the esxcli command)", VSPHERE, default=False,
                                 modes=VGPU)] = False
    vgpu_vms_per_gpu: A[int | None, K(Int(1, 32), "VMs one GPU holds with vgpu_profile "
                                      "(checked against the hosts' profiles)", VSPHERE,
                                      modes=VGPU)] = None
    kw_vm_count: A[int, K(Int(0, MAX_KW_VMS), "CPU-only knowledge-worker VMs", VSPHERE,
                          default=0)] = 0
    kw_vm_cpus: A[int | None, K(Int(1, MAX_VCPUS), "vCPUs per knowledge-worker VM", VSPHERE,
                                default=2)] = None
    kw_vm_memory_mb: A[int | None, K(Int(256, MAX_MEMORY_MB), "memory per knowledge-worker VM "
                                     "in MiB", VSPHERE, default=4096)] = None
    # fmt: on

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


def _keys() -> tuple[Key, ...]:
    hints = get_type_hints(LabConfig, include_extras=True)
    return tuple(
        replace(next(m for m in hint.__metadata__ if isinstance(m, Key)), key=name)
        for name, hint in hints.items()
    )


FIELDS: tuple[Key, ...] = _keys()
BY_KEY = {f.key: f for f in FIELDS}
# Keys a vsphere-gpu mode must have (beyond the topology's required keys).
MODE_REQUIRED = {
    "passthrough": ("gpu_host", "pci_device_ids", "gpu_bar_gb"),
    "vgpu": ("vgpu_profile",),
    "bitfusion": ("bitfusion_server",),
}
