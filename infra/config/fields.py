"""The ``gpulab:*`` keys of a stack: one :class:`Field` per key, with its parser.

Every parser takes the raw value (a YAML value from a stack file, or the string the Pulumi
engine hands the program) and returns the typed value or raises :class:`BadValue` whose text
says what is allowed. Which topology (and vSphere mode) may use which key is part of the table,
so a key that a stack does not use is reported instead of silently ignored.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.specs import execenv as _execenv
from infra.specs import topology as _topology

TOPOLOGIES = _topology.names()  # one spec module per topology: infra/specs/topologies/
OPENSTACK = frozenset({"ironic-bm", "nova-pci", "magnum-k8s"})
VSPHERE_MODES = ("passthrough", "vgpu", "bitfusion")
SERVER_TYPES = ("vm", "bm")
NETWORK_DRIVERS = ("calico", "flannel")
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
LABEL_KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class BadValue(ValueError):
    """Raised by a parser; the text says what is allowed."""


@dataclass(frozen=True)
class SecretRef:
    """A secret present in a stack file but not decrypted (``secure: v1:...``).

    :func:`infra.config.load_stack_file` cannot decrypt without Pulumi; it records that the
    secret is there. It never holds the plaintext, and prints as a placeholder.
    """

    key: str

    def __repr__(self) -> str:
        return f"<secret gpulab:{self.key}>"

    __str__ = __repr__


def _maybe_json(raw: Any) -> Any:
    """The engine hands structured config to the program as JSON text."""
    if isinstance(raw, str) and raw[:1] in "[{":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def p_str(raw: Any) -> str:
    if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_STR:
        raise BadValue(f"a non-empty string of at most {MAX_STR} characters")
    return raw.strip()


def p_name(raw: Any) -> str:
    if not isinstance(raw, str) or not NAME_RE.match(raw):
        raise BadValue("a name of letters, digits, '.', '_' or '-'")
    if len(raw) > 255:
        raise BadValue("a name of at most 255 characters")
    return raw


def p_lab(raw: Any) -> str:
    if not isinstance(raw, str) or not LAB_RE.match(raw):
        raise BadValue("2-32 characters: lowercase letters, digits and '-', starting with a letter")
    return raw


def p_bool(raw: Any) -> bool:
    if isinstance(raw, bool):
        return raw
    if isinstance(raw, str) and raw.lower() in ("true", "false"):
        return raw.lower() == "true"
    raise BadValue("true or false")


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
MAX_LIST = 256  # items of any list key
MAX_STR = 1024  # characters of any string key
MAX_INT_DIGITS = 20  # an integer written with more digits is refused before it is parsed


def _int(raw: Any, minimum: int, maximum: int) -> int:
    what = f"an integer >= {minimum}"
    if isinstance(raw, bool):
        raise BadValue(what)
    if isinstance(raw, int):
        value = raw
    elif (
        isinstance(raw, str)
        and len(raw.strip()) <= MAX_INT_DIGITS
        and re.fullmatch(r"-?[0-9]+", raw.strip())
    ):
        value = int(raw)
    else:
        raise BadValue(what)
    if value < minimum:
        raise BadValue(what)
    if value > maximum:
        raise BadValue(f"an integer from {minimum} to {maximum}")
    return value


def p_int(minimum: int, maximum: int) -> Callable[[Any], int]:
    """An integer parser bounded on both sides (the bounds are in its error text)."""

    def parse(raw: Any) -> int:
        return _int(raw, minimum, maximum)

    parse.maximum = maximum  # type: ignore[attr-defined]
    return parse


p_count = p_int(1, MAX_HOSTS)
p_size0 = p_int(0, MAX_DISK_GB)


def p_cidr(raw: Any) -> str:
    try:
        if not isinstance(raw, str) or "/" not in raw or len(raw) > 64:
            raise ValueError
        return str(ipaddress.ip_network(raw.strip(), strict=True))
    except ValueError:
        raise BadValue(
            "an IPv4/IPv6 network in CIDR notation with host bits zero, e.g. 203.0.113.0/24"
        ) from None


def p_enum(*allowed: str) -> Callable[[Any], str]:
    def parse(raw: Any) -> str:
        if raw not in allowed:
            raise BadValue("one of " + ", ".join(allowed))
        return str(raw)

    parse.allowed = allowed  # type: ignore[attr-defined]
    return parse


def p_list(item: Callable[[Any], Any], what: str) -> Callable[[Any], list[Any]]:
    def parse(raw: Any) -> list[Any]:
        raw = _maybe_json(raw)
        if not isinstance(raw, list):
            raise BadValue(f"a list of {what}")
        if len(raw) > MAX_LIST:
            raise BadValue(f"a list of at most {MAX_LIST} {what}")
        try:
            return [item(x) for x in raw]
        except BadValue:
            raise BadValue(f"a list of {what}") from None

    return parse


def p_ip(raw: Any) -> str:
    try:
        if not isinstance(raw, str | int) or isinstance(raw, bool) or len(str(raw)) > 64:
            raise ValueError
        return str(ipaddress.ip_address(str(raw)))
    except ValueError:
        raise BadValue("an IP address") from None


def p_trait(raw: Any) -> str:
    if not isinstance(raw, str) or not TRAIT_RE.match(raw):
        raise BadValue("Placement trait names (uppercase letters, digits, '_')")
    return raw


def p_pci_address(raw: Any) -> str:
    if not isinstance(raw, str) or not PCI_ADDRESS_RE.match(raw.lower()):
        raise BadValue('PCI addresses like "0000:3b:00.0" (quoted in YAML)')
    return raw.lower()


def p_resource_class(raw: Any) -> str:
    if not isinstance(raw, str) or not RESOURCE_CLASS_RE.match(raw):
        raise BadValue("an Ironic resource class of letters, digits, '.', '_' or '-'")
    return raw


def p_alias_count(raw: Any) -> str:
    m = ALIAS_COUNT_RE.match(raw) if isinstance(raw, str) and len(raw) <= 255 else None
    if m is None or int(m["count"].lstrip("0")[:MAX_INT_DIGITS] or "0") < 1:
        raise BadValue(
            "<alias>:<count> with a nova.conf [pci] alias name and a count >= 1, e.g. a100:1"
        )
    if len(m["count"]) > MAX_INT_DIGITS or int(m["count"]) > MAX_GPUS:
        raise BadValue(f"<alias>:<count> with a count from 1 to {MAX_GPUS}, e.g. a100:1")
    return m.string


def p_vgpu_profile(raw: Any) -> str:
    if not isinstance(raw, str) or not VGPU_PROFILE_RE.match(raw):
        raise BadValue(
            "an NVIDIA vGPU profile name like grid_p100-4q, grid_t4-8c or grid_a100-3-20c"
        )
    return raw


def p_ssh_key(raw: Any) -> str:
    if not isinstance(raw, str) or len(raw) > 16384 or not SSH_KEY_RE.match(raw.strip()):
        raise BadValue("an OpenSSH public key line (ssh-ed25519 AAAA... comment)")
    return raw.strip()


def p_labels(raw: Any) -> dict[str, str]:
    raw = _maybe_json(raw)
    if not isinstance(raw, dict) or not all(
        isinstance(k, str) and LABEL_KEY_RE.match(k) and isinstance(v, str | int | bool)
        for k, v in raw.items()
    ):
        raise BadValue("a mapping of label names to string values")
    if len(raw) > SITE_MAX_KEYS or any(
        len(k) > 255 or len(str(v)) > MAX_STR for k, v in raw.items()
    ):
        raise BadValue(
            f"a mapping of at most {SITE_MAX_KEYS} label names to string values "
            f"of up to {MAX_STR} characters"
        )
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in raw.items()}


def p_exec_env(raw: Any) -> str:
    """An execution environment of infra/specs/execenv.py, an alias resolved (the table is read
    on every call, so an entry added there is accepted here)."""
    try:
        return _execenv.canonical(raw) if isinstance(raw, str) else _execenv.canonical(repr(raw))
    except _execenv.UnknownExecEnv:
        raise BadValue("one of " + ", ".join(_execenv.accepted())) from None


def by_topology(key: str) -> Callable[[str], Any]:
    """A key's default from the topology's own defaults (its spec's ``defaults``), else None."""
    return lambda topology: _topology.get(topology).defaults.get(key)


def p_suite(raw: Any) -> str:
    """A suite shipped in workloads/suites/ (the runner reads suites by name on the hosts)."""
    from workloads.suites import list_suites

    names = list_suites()
    if not isinstance(raw, str) or raw not in names:
        raise BadValue("one of the suites in workloads/suites/: " + ", ".join(names))
    return raw


ROLES_DIR = Path(__file__).resolve().parents[2] / "playbooks" / "roles"


def role_inputs(role: str) -> frozenset[str]:
    """The variables a role takes as inputs: the options its meta/argument_specs.yml lists."""
    import yaml

    spec = ROLES_DIR / role / "meta" / "argument_specs.yml"
    try:
        doc = yaml.safe_load(spec.read_text(encoding="utf-8")) or {}
        specs = doc.get("argument_specs") or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError, AttributeError):
        return frozenset()
    names: set[str] = set()
    for entry in specs.values():
        if isinstance(entry, dict) and isinstance(entry.get("options"), dict):
            names.update(str(k) for k in entry["options"])
    return frozenset(names)


def p_variables(raw: Any) -> dict[str, Any]:
    """Extra inputs of the workload_run role: only the options its argument_specs.yml lists
    (no ansible_* connection variables, no role-internal names), plain values, bounded."""
    raw = _maybe_json(raw)
    what = (
        "a mapping of Ansible variable names to values: workload_run role inputs "
        "(its meta/argument_specs.yml lists them)"
    )
    if not isinstance(raw, dict):
        raise BadValue(what)
    if len(raw) > SITE_MAX_KEYS:
        raise BadValue(f"{what}; at most {SITE_MAX_KEYS} keys")
    allowed = role_inputs("workload_run")
    for key, value in raw.items():
        if not isinstance(key, str) or not ANSIBLE_VAR_RE.match(key):
            raise BadValue(f"{what}; {str(key)[:60]!r} is not an Ansible variable name")
        if key.startswith("ansible_"):
            raise BadValue(f"{what}; {key!r}: ansible_* connection variables are not role inputs")
        if key not in allowed:
            raise BadValue(f"{what}; {key!r} is not one of its inputs")
        if not _plain_yaml(value):
            raise BadValue(
                f"{what}; {key!r} is not a plain value (secrets: `pulumi config set --secret`)"
            )
    if len(json.dumps(raw, default=str)) > SITE_MAX_CHARS:
        raise BadValue(f"{what}; at most {SITE_MAX_CHARS} characters as JSON")
    return dict(raw)


ANSIBLE_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SITE_MAX_KEYS = 64
SITE_MAX_CHARS = 16384
MEASURE_ID_RE = re.compile(r"^[A-Za-z0-9._:-]{0,64}$")


def _site_prefixes() -> tuple[str, ...]:
    roles = sorted(d.name for d in ROLES_DIR.iterdir() if d.is_dir()) if ROLES_DIR.is_dir() else []
    return (*(f"{r}_" for r in roles), "gpulab_")


def _plain_yaml(value: Any, depth: int = 0) -> bool:
    if depth > 8:
        return False
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list):
        return all(_plain_yaml(v, depth + 1) for v in value)
    if isinstance(value, dict):
        if set(value) == {"secure"}:  # an encrypted value: secrets do not go here
            return False
        return all(isinstance(k, str) and _plain_yaml(v, depth + 1) for k, v in value.items())
    return False


def p_site(raw: Any) -> dict[str, Any]:
    """Role inputs of the site run: ``<role>_*`` (a role under playbooks/roles/) or
    ``gpulab_*`` Ansible variables, plain YAML values, bounded in size."""
    raw = _maybe_json(raw)
    prefixes = _site_prefixes()
    what = (
        "a mapping of role inputs named <role>_... (a role under playbooks/roles/: "
        + ", ".join(p.rstrip("_") for p in prefixes[:-1])
        + ") or gpulab_..., with plain YAML values"
    )
    if not isinstance(raw, dict):
        raise BadValue(what)
    if len(raw) > SITE_MAX_KEYS:
        raise BadValue(f"{what}; at most {SITE_MAX_KEYS} keys")
    for key, value in raw.items():
        if not isinstance(key, str) or not ANSIBLE_VAR_RE.match(key):
            raise BadValue(f"{what}; {key!r} is not an Ansible variable name")
        if key.startswith("ansible_"):
            raise BadValue(f"{what}; {key!r}: ansible_* connection variables are not role inputs")
        if not key.startswith(prefixes):
            raise BadValue(f"{what}; {key!r} names no role")
        if not _plain_yaml(value):
            raise BadValue(
                f"{what}; {key!r} is not a plain value (secrets: `pulumi config set --secret`)"
            )
        role = next((p[:-1] for p in prefixes[:-1] if key.startswith(p)), None)
        if role is not None and key not in role_inputs(role):
            raise BadValue(
                f"{what}; {key!r} is not an input of role {role} "
                "(its meta/argument_specs.yml lists them)"
            )
    if len(json.dumps(raw, default=str)) > SITE_MAX_CHARS:
        raise BadValue(f"{what}; at most {SITE_MAX_CHARS} characters as JSON")
    return dict(raw)


def p_measure_id(raw: Any) -> str:
    if isinstance(raw, int) and not isinstance(raw, bool):
        raw = str(raw)
    if not isinstance(raw, str) or not MEASURE_ID_RE.match(raw):
        raise BadValue("up to 64 letters, digits, '.', '_', ':' or '-' (gpulab measure sets it)")
    return raw


def p_secret(raw: Any) -> Any:
    # Only reached for plaintext values: secrets must be stored encrypted.
    raise BadValue("a secret: set it with `pulumi config set --secret`, not as plain text")


@dataclass(frozen=True)
class Field:
    """One ``gpulab:<key>``.

    ``topologies``: where the key may appear. ``required``: topologies where it must appear.
    ``modes``: for vsphere-gpu keys, the ``gpulab:mode`` values that use it (empty: all).
    ``default``: value when absent (a callable gets the topology name).
    """

    key: str
    parse: Callable[[Any], Any]
    help: str
    topologies: frozenset[str]
    required: frozenset[str] = frozenset()
    default: Any = None
    modes: frozenset[str] = frozenset()
    secret: bool = False


ALL = frozenset(TOPOLOGIES)
IRONIC, NOVA, MAGNUM, VSPHERE = (
    frozenset({"ironic-bm"}),
    frozenset({"nova-pci"}),
    frozenset({"magnum-k8s"}),
    frozenset({"vsphere-gpu"}),
)
INSTANCES = frozenset({"ironic-bm", "nova-pci", "vsphere-gpu"})
SERVERS = frozenset({"ironic-bm", "nova-pci"})


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


def _f(key: str, parse: Callable[[Any], Any], help: str, where: frozenset[str], **kw: Any) -> Field:
    req = kw.pop("required", False)
    return Field(key, parse, help, where, where if req is True else (req or frozenset()), **kw)


FIELDS: tuple[Field, ...] = (
    _f("topology", p_enum(*TOPOLOGIES), "which lab to build", ALL, required=True),
    _f("lab", p_lab, "lab name; prefixes and tags every resource", ALL, required=True),
    _f(
        "ssh_user",
        p_name,
        "login user on the lab hosts (default: the image family's, see "
        "docs/topologies.md; root for local)",
        ALL,
        default=lambda t: default_ssh_user(t, None),
    ),
    _f(
        "ssh_public_key",
        p_ssh_key,
        "public key installed on OpenStack hosts",
        OPENSTACK,
        required=True,
    ),
    _f("host_count", p_int(1, MAX_HOSTS), "number of GPU hosts", INSTANCES, default=1),
    # what the lab measures once its hosts are ready
    _f("suite", p_suite, "workload suite to run on the GPU hosts", ALL, default="smoke"),
    _f(
        "execution_envs",
        p_list(p_exec_env, ", ".join(EXECUTION_ENVS)),
        "execution environments to measure in (default: native; k8s on magnum-k8s; "
        "bitfusion on vsphere-gpu mode bitfusion)",
        ALL,
        default=(),
    ),
    _f(
        "workload_variables",
        p_variables,
        "extra workload_run role variables (e.g. workload_run_docker_image)",
        ALL,
        default={},
    ),
    _f(
        "site",
        p_site,
        "role inputs of the site Ansible run (<role>_* or gpulab_* variables, "
        "e.g. nvidia_driver_cuda_repo_url, workload_env_pip_index_url)",
        ALL,
        default={},
    ),
    _f(
        "measure_id",
        p_measure_id,
        "a change re-runs only the workload runs (gpulab measure sets it)",
        ALL,
        default="",
    ),
    # OpenStack, shared
    _f("os_cloud", p_name, "clouds.yaml entry; empty: OS_* environment", OPENSTACK),
    _f("os_password", p_secret, "overrides the clouds.yaml password", OPENSTACK, secret=True),
    _f(
        "external_network",
        p_name,
        "provider network the lab router uplinks to",
        OPENSTACK,
        required=True,
    ),
    _f("admin_cidr", p_cidr, "only source allowed to SSH into the lab", OPENSTACK, required=True),
    _f(
        "allow_world",
        p_bool,
        "let admin_cidr be the whole internet (0.0.0.0/0 or ::/0)",
        OPENSTACK,
        default=False,
    ),
    _f("lab_cidr", p_cidr, "lab subnet", OPENSTACK, default="10.42.0.0/24"),
    _f(
        "dns_nameservers",
        p_list(p_ip, "IP addresses"),
        "lab subnet DNS servers",
        OPENSTACK,
        default=(),
    ),
    _f("image", p_name, "Glance image name", OPENSTACK, required=True),
    _f("availability_zone", p_name, "Nova availability zone", SERVERS),
    # ironic-bm
    _f("resource_class", p_resource_class, "Ironic nodes' resource_class", IRONIC, required=True),
    _f(
        "required_traits",
        p_list(p_trait, "trait names"),
        "traits the node must have",
        IRONIC,
        default=(),
    ),
    # flavors (display-only sizes for bare metal)
    _f(
        "flavor_vcpus",
        p_int(1, MAX_VCPUS),
        "flavor vCPUs",
        SERVERS,
        required=NOVA,
        default=by_topology("flavor_vcpus"),
    ),
    _f(
        "flavor_ram_mb",
        p_int(1, MAX_MEMORY_MB),
        "flavor RAM in MiB",
        SERVERS,
        required=NOVA,
        default=by_topology("flavor_ram_mb"),
    ),
    _f(
        "flavor_disk_gb",
        p_int(0, MAX_DISK_GB),
        "flavor root disk in GB",
        SERVERS,
        required=NOVA,
        default=by_topology("flavor_disk_gb"),
    ),
    # nova-pci
    _f("pci_alias", p_alias_count, "GPU alias and count per VM", NOVA, required=True),
    _f("cpu_pinning", p_bool, "hw:cpu_policy=dedicated", NOVA, default=False),
    _f("numa_nodes", p_int(1, MAX_NUMA_NODES), "hw:numa_nodes", NOVA),
    _f("anti_affinity", p_bool, "spread VMs over hypervisors", NOVA, default=False),
    # magnum-k8s
    _f("server_type", p_enum(*SERVER_TYPES), "Magnum node kind", MAGNUM, required=True),
    _f("master_flavor", p_name, "control-plane flavor", MAGNUM, required=True),
    _f("node_flavor", p_name, "GPU worker flavor", MAGNUM, required=True),
    _f("master_count", p_int(1, MAX_MASTERS), "control-plane nodes", MAGNUM, default=1),
    _f("node_count", p_int(1, MAX_HOSTS), "GPU worker nodes", MAGNUM, default=1),
    _f("network_driver", p_enum(*NETWORK_DRIVERS), "Kubernetes CNI", MAGNUM, default="calico"),
    _f(
        "docker_volume_size",
        p_int(1, MAX_DISK_GB),
        "per-node Cinder volume for images (GB, vm only)",
        MAGNUM,
    ),
    _f("labels", p_labels, "Magnum cluster labels", MAGNUM, default={}),
    # vsphere-gpu
    _f("vsphere_server", p_str, "vCenter address", VSPHERE, required=True),
    _f("vsphere_user", p_str, "vCenter user", VSPHERE, required=True),
    _f("vsphere_password", p_secret, "vCenter password", VSPHERE, required=True, secret=True),
    _f("vsphere_insecure", p_bool, "skip TLS verification", VSPHERE, default=False),
    _f("datacenter", p_str, "vSphere datacenter", VSPHERE, required=True),
    _f("cluster", p_str, "compute cluster", VSPHERE, required=True),
    _f("datastore", p_str, "datastore for the VMs", VSPHERE, required=True),
    _f("network", p_str, "port group for the VMs", VSPHERE, required=True),
    _f("template", p_str, "VM template to clone", VSPHERE, required=True),
    _f("folder", p_str, "VM folder", VSPHERE),
    _f("domain", p_name, "guest customization domain", VSPHERE, default="gpulab.local"),
    _f("mode", p_enum(*VSPHERE_MODES), "how VMs reach GPUs", VSPHERE, required=True),
    _f("vm_cpus", p_int(1, MAX_VCPUS), "vCPUs per VM", VSPHERE, default=8),
    _f("vm_memory_mb", p_int(1, MAX_MEMORY_MB), "memory per VM in MiB", VSPHERE, default=32768),
    _f(
        "gpu_host",
        p_str,
        "ESXi host holding the passthrough GPUs",
        VSPHERE,
        modes=frozenset({"passthrough"}),
    ),
    _f(
        "pci_device_ids",
        p_list(p_pci_address, "PCI addresses like 0000:3b:00.0"),
        "GPU PCI addresses on gpu_host, gpus_per_vm per VM in order",
        VSPHERE,
        modes=frozenset({"passthrough"}),
    ),
    _f(
        "gpus_per_vm",
        p_int(1, MAX_GPUS),
        "passthrough GPUs per VM",
        VSPHERE,
        default=1,
        modes=frozenset({"passthrough"}),
    ),
    _f(
        "gpu_bar_gb",
        p_int(1, MAX_BAR_GB),
        "BAR1 size of one GPU in GB (e.g. 16 for P100/V100-16GB)",
        VSPHERE,
        modes=frozenset({"passthrough"}),
    ),
    _f("vgpu_profile", p_vgpu_profile, "vGPU profile", VSPHERE, modes=frozenset({"vgpu"})),
    _f(
        "vgpu_license_token",
        p_secret,
        "NVIDIA license client token (Ansible gridd)",
        VSPHERE,
        modes=frozenset({"vgpu"}),
        secret=True,
    ),
    _f(
        "bitfusion_server",
        p_str,
        "Bitfusion server address",
        VSPHERE,
        modes=frozenset({"bitfusion"}),
    ),
)

BY_KEY = {f.key: f for f in FIELDS}
# Keys a vsphere-gpu mode must have (beyond the topology's required keys).
MODE_REQUIRED = {
    "passthrough": ("gpu_host", "pci_device_ids", "gpu_bar_gb"),
    "vgpu": ("vgpu_profile",),
    "bitfusion": ("bitfusion_server",),
}

# vsphere-gpu study factors (the VMware vGPU paper): the vGPU scheduling policy set on the ESXi
# hosts, the VMs each GPU holds with the arm's profile, and CPU-only knowledge-worker VMs.
VGPU_POLICIES = ("best-effort", "equal-share", "fixed-share")
MAX_KW_VMS = 512  # knowledge-worker VMs of one arm (the paper went to 96)
_VGPU_ONLY = frozenset({"vgpu"})
_STUDY_FIELDS = (
    _f(
        "vgpu_policy",
        p_enum(*VGPU_POLICIES),
        "vGPU scheduling policy on the ESXi hosts (RmPVMRL; see docs/topologies.md)",
        VSPHERE,
        modes=_VGPU_ONLY,
    ),
    _f(
        "vgpu_policy_apply",
        p_bool,
        "set vgpu_policy on the hosts' nvidia module (else only record the esxcli command)",
        VSPHERE,
        default=False,
        modes=_VGPU_ONLY,
    ),
    _f(
        "vgpu_vms_per_gpu",
        p_int(1, 32),
        "VMs one GPU holds with vgpu_profile (checked against the hosts' profiles)",
        VSPHERE,
        modes=_VGPU_ONLY,
    ),
    _f("kw_vm_count", p_int(0, MAX_KW_VMS), "CPU-only knowledge-worker VMs", VSPHERE, default=0),
    _f("kw_vm_cpus", p_int(1, MAX_VCPUS), "vCPUs per knowledge-worker VM", VSPHERE, default=2),
    _f(
        "kw_vm_memory_mb",
        p_int(256, MAX_MEMORY_MB),
        "memory per knowledge-worker VM in MiB",
        VSPHERE,
        default=4096,
    ),
)
FIELDS = FIELDS + _STUDY_FIELDS
BY_KEY.update({f.key: f for f in _STUDY_FIELDS})
