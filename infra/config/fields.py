"""The ``gpulab:*`` keys of a stack: one field of :class:`LabConfig` per key (the one table).

Each field's annotation carries a :class:`Key`: the pydantic type a present value is validated
as (bounds, patterns, parsers; its :class:`Allowed` text is what an error says is allowed),
its help, which topologies (and vSphere modes) use it, where it is required, its default when
absent, and whether it is a secret. :mod:`infra.config.model` validates a stack with them,
:mod:`infra.config.schema` writes the ``config:`` block of ``Pulumi.yaml`` from them.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, get_type_hints
from typing import Annotated as A  # the key table's lines stay short

import annotated_types as at
from pydantic import BeforeValidator, ConfigDict, StringConstraints
from pydantic.dataclasses import dataclass as model

from infra.config.roles import BadValue, maybe_json, p_labels, p_site, p_variables
from infra.specs import execenv as _execenv
from infra.specs import topology as _topology

TOPOLOGIES = _topology.names()  # one spec module per topology: infra/specs/topologies/
OPENSTACK = frozenset({"ironic-bm", "nova-pci", "magnum-k8s"})
VSPHERE_MODES = ("passthrough", "vgpu", "bitfusion")
VGPU_POLICIES = ("best-effort", "equal-share", "fixed-share")
EXECUTION_ENVS = _execenv.accepted()  # infra/specs/execenv.py: names, then aliases

LAB_RE = re.compile(r"^[a-z][a-z0-9-]{0,30}[a-z0-9]$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
RESOURCE_CLASS_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$")
TRAIT_RE = re.compile(r"^[A-Z][A-Z0-9_]{0,254}$")
ALIAS_COUNT_RE = re.compile(r"^(?P<alias>[A-Za-z0-9][A-Za-z0-9_.-]*):(?P<count>[0-9]+)$")
# NVIDIA vGPU profile names as vSphere lists them: grid_<board>-<fb GB><series>, MIG-backed
# A100/H100 profiles carry the slice count first (grid_a100-3-20c).
VGPU_PROFILE_RE = re.compile(r"^grid_[a-z0-9]+-(?:[1-8]-)?[0-9]{1,3}[abcq]$")
PCI_ADDRESS_RE = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
SSH_KEY_RE = re.compile(
    r"^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-[a-z0-9-]+@openssh\.com)"
    r" [A-Za-z0-9+/=]+( .*)?$"
)
MEASURE_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{0,64}$")

# Upper bounds of the numeric keys (documented in docs/limits.md): the
# largest value a real lab of that kind has, so a typo (1e20) is refused before anything runs.
MAX_HOSTS = 64  # host_count, node_count: GPU hosts of one lab
MAX_MASTERS = 7  # master_count: an etcd quorum larger than 7 only slows writes
MAX_VCPUS = 768  # vm_cpus, flavor_vcpus: vSphere 8's per-VM limit
MAX_MEMORY_MB = 24 * 1024 * 1024  # vm_memory_mb, flavor_ram_mb: 24 TiB, vSphere 8's per-VM limit
MAX_DISK_GB = 65536  # flavor_disk_gb, docker_volume_size: 64 TiB
MAX_NUMA_NODES = 16
MAX_GPUS = 16  # gpus_per_vm, pci_alias count: GPUs one host or VM can hold
MAX_BAR_GB = 1024  # gpu_bar_gb: BAR1 of one GPU
MAX_KW_VMS = 512  # knowledge-worker VMs of one arm (the VMware vGPU paper went to 96)
MAX_LIST = 256  # items of any list key
MAX_STR = 1024  # characters of any string key
MAX_INT_DIGITS = 20  # an integer written with more digits is refused before it is parsed


@dataclass(frozen=True)
class Allowed:
    """What a key allows, as error text: ``gpulab:<key> must be <text>, got ...``. ``above``:
    the text when a bound (an integer's maximum, a list's or name's length) is exceeded."""

    text: str
    above: str | None = None


@dataclass(frozen=True)
class SecretRef:
    """A secret present in a stack file but not decrypted (``secure: v1:...``).

    :func:`infra.config.load_stack_file` cannot decrypt without Pulumi; it records that the
    secret is there. It never holds the plaintext, and prints as a placeholder. ``placeholder``:
    the ciphertext is an example's placeholder, not a value ``pulumi config set --secret`` wrote.
    """

    key: str
    placeholder: bool = False

    def __repr__(self) -> str:
        return f"<secret gpulab:{self.key}>"

    __str__ = __repr__


# --- value types: pydantic types with the text of what they allow ---------------------------


def _int_input(raw: Any) -> int:
    if isinstance(raw, bool):  # YAML true is a bool (an int in Python): never the count 1
        raise ValueError
    if isinstance(raw, int):
        return raw
    text = raw.strip() if isinstance(raw, str) else ""
    if len(text) <= MAX_INT_DIGITS and re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    raise ValueError


def Int(lo: int, hi: int) -> Any:
    """An integer bounded on both sides; the engine's decimal strings are accepted."""
    return Annotated[
        int,
        BeforeValidator(_int_input),
        at.Interval(ge=lo, le=hi),
        Allowed(f"an integer >= {lo}", above=f"an integer from {lo} to {hi}"),
    ]


def _bool_input(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise ValueError


Bool = Annotated[bool, BeforeValidator(_bool_input), Allowed("true or false")]


def Text(pattern: re.Pattern[str], what: str, max_length: int = MAX_STR, **kw: Any) -> Any:
    """A string matching ``pattern``."""
    return Annotated[
        str, StringConstraints(pattern=pattern.pattern, max_length=max_length), Allowed(what, **kw)
    ]


def Parsed(parse: Callable[[Any], Any], what: str, typ: Any = str) -> Any:
    """A value a parser checks (its :class:`BadValue` text, else ``what``, is the error)."""
    return Annotated[typ, BeforeValidator(parse), Allowed(what)]


def OneOf(*allowed: str) -> Any:
    def check(raw: Any) -> str:
        if raw not in allowed:
            raise ValueError
        return str(raw)

    return Parsed(check, "one of " + ", ".join(allowed))


def List(item: Any, what: str) -> Any:
    """A list (YAML, or the engine's JSON text) of ``item``; any bad item: the list's text."""

    def json_list(raw: Any) -> Any:
        return maybe_json(raw)

    return Annotated[
        list[item],
        BeforeValidator(json_list),
        at.MaxLen(MAX_LIST),
        Allowed(f"a list of {what}", above=f"a list of at most {MAX_LIST} {what}"),
    ]


def _cidr(raw: Any) -> str:
    if not isinstance(raw, str) or "/" not in raw or len(raw) > 64:
        raise ValueError
    return str(ipaddress.ip_network(raw.strip(), strict=True))


def _ip(raw: Any) -> str:
    if not isinstance(raw, str | int) or isinstance(raw, bool) or len(str(raw)) > 64:
        raise ValueError
    return str(ipaddress.ip_address(str(raw)))


def _pci_address(raw: Any) -> str:
    if not isinstance(raw, str) or not PCI_ADDRESS_RE.match(raw.lower()):
        raise ValueError
    return raw.lower()


def _alias_count(raw: Any) -> str:
    m = ALIAS_COUNT_RE.match(raw) if isinstance(raw, str) and len(raw) <= 255 else None
    if m is None or int(m["count"].lstrip("0")[:MAX_INT_DIGITS] or "0") < 1:
        raise ValueError
    if len(m["count"]) > MAX_INT_DIGITS or int(m["count"]) > MAX_GPUS:
        raise BadValue(f"<alias>:<count> with a count from 1 to {MAX_GPUS}, e.g. a100:1")
    return m.string


def _ssh_key(raw: Any) -> str:
    if not isinstance(raw, str) or len(raw) > 16384 or not SSH_KEY_RE.match(raw.strip()):
        raise ValueError
    return raw.strip()


def _exec_env(raw: Any) -> str:
    """An execution environment of infra/specs/execenv.py, an alias resolved (the table is read
    on every call, so an entry added there is accepted here)."""
    try:
        return _execenv.canonical(raw if isinstance(raw, str) else repr(raw))
    except _execenv.UnknownExecEnv:
        raise ValueError from None


def _suite(raw: Any) -> str:
    """A suite shipped in workloads/suites/ (the runner reads suites by name on the hosts)."""
    from workloads.suites import list_suites

    names = list_suites()
    if not isinstance(raw, str) or raw not in names:
        raise BadValue("one of the suites in workloads/suites/: " + ", ".join(names))
    return raw


def _measure_id(raw: Any) -> str:
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str) or not MEASURE_ID_RE.match(raw):
        raise ValueError
    return raw


def _secret(raw: Any) -> Any:
    """Only a secret passes: a :class:`SecretRef`, or the program's ``require_secret`` Output."""
    if isinstance(raw, SecretRef):
        return raw
    try:
        import pulumi
    except ImportError:  # pragma: no cover - pulumi is a dependency
        raise ValueError from None
    if isinstance(raw, pulumi.Output):
        return raw
    raise ValueError


Name = Text(NAME_RE, "a name of letters, digits, '.', '_' or '-'", 255,
            above="a name of at most 255 characters")  # fmt: skip
_STR = f"a non-empty string of at most {MAX_STR} characters"
Str = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_STR),
                Allowed(_STR, above=_STR)]  # fmt: skip
Cidr = Parsed(
    _cidr, "an IPv4/IPv6 network in CIDR notation with host bits zero, e.g. 203.0.113.0/24"
)
Secret = Parsed(
    _secret, "a secret: set it with `pulumi config set --secret`, not as plain text", Any
)
Count = Int(1, MAX_HOSTS)

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
    # what the lab measures once its hosts are ready
    suite: A[str, K(Parsed(_suite, "a suite in workloads/suites/"),
                    "workload suite to run on the GPU hosts", ALL, default="smoke")] = "smoke"
    execution_envs: A[tuple[str, ...], K(
        List(Parsed(_exec_env, ""), ", ".join(EXECUTION_ENVS)),
        "execution environments to measure in (default: native; k8s on magnum-k8s; "
        "bitfusion on vsphere-gpu mode bitfusion)", ALL, default=())] = ()
    workload_variables: A[dict[str, Any], K(
        Parsed(p_variables, "a mapping of workload_run role inputs", dict[str, Any]),
        "extra workload_run role variables (e.g. workload_run_docker_image)", ALL,
        default={})] = field(default_factory=dict)
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
