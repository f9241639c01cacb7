"""The value types of the ``gpulab:*`` keys: pydantic types (bounds, patterns, parsers), each
with the :class:`Allowed` text that an error says, and the bounds documented in docs/limits.md.
Every key table (the shared keys, each topology's Args) gives each key one of them.
"""

from __future__ import annotations

import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

import annotated_types as at
from pydantic import BeforeValidator, StringConstraints

from workloads import execenv

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


class BadValue(ValueError):
    """Raised by a parser; the text says what is allowed. ``hide_value``: the error must not
    show the value it got (it holds a secret)."""

    def __init__(self, text: str, *, hide_value: bool = False) -> None:
        super().__init__(text)
        self.hide_value = hide_value


def maybe_json(raw: Any) -> Any:
    """The engine hands structured config to the program as JSON text."""
    if isinstance(raw, str) and raw[:1] in "[{":
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


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
    """A list (YAML, or the engine's JSON text) of ``item``, kept as a tuple; any bad item:
    the list's text."""

    def json_list(raw: Any) -> Any:
        return maybe_json(raw)

    return Annotated[
        tuple[item, ...],
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
    """An execution environment of workloads/execenv.py, an alias resolved (the table is read
    on every call, so an entry added there is accepted here)."""
    try:
        return execenv.canonical(raw if isinstance(raw, str) else repr(raw))
    except execenv.UnknownExecEnv:
        raise ValueError from None


def _suite(raw: Any) -> str:
    """A suite shipped in workloads/suites/ (the runner reads suites by name on the hosts)."""
    # lazily: the suites module loads the scenario registry, which a stack without a suite
    # key (most) never needs
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
        import pulumi  # lazily: a stack file's secrets are SecretRefs, read without Pulumi
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
