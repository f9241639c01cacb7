"""How gpulab reaches a lab's hosts over SSH: the value types of a private key file and a
bastion (jump host), and :class:`Route`, what one host's (or, before a cloud made them, every
host's) connection is made of and which ``gpulab:*`` key said so.

The keys (:class:`infra.keys.lab.LabArgs`): ``gpulab:ssh_private_key_file`` and
``gpulab:bastion`` for every topology; the ``static`` topology also per host. A route is
checked before anything is built (:mod:`infra.access`: the key file exists and ssh would take
it, the bastion lets us in, a listed host answers) and reaches the inventory as checked host
variables (:mod:`infra.ansible.ssh_route`), never as text.
"""

from __future__ import annotations

import ipaddress
import os
import re
from dataclasses import dataclass
from typing import Any

# What the inventory writer allows: the same rules at the stack's edge and at Ansible's.
from infra.ansible.inventory import LOGIN_RE
from infra.ansible.inventory import PATH_RE as KEY_PATH_RE
from infra.ansible.inventory import is_host_address as is_address
from infra.ansible.ssh_route import BASTION_FIELDS
from infra.keys.types import BadValue, Parsed, maybe_json

DEFAULT_PORT = 22

KEY_FILE_WHAT = (
    "an absolute path (or ~/...) of a private key file on the machine that runs gpulab, of "
    "letters, digits and _ . @ + / -"
)
BASTION_WHAT = (
    "[user@]host[:port] (an IPv6 address in brackets to give a port), or a mapping "
    "{host: <IP address or host name>, user: <login name>, port: <1-65535, default 22>, "
    "key: <private key file>}"
)
# ``[user@]host[:port]``: split here, then each part checked as the mapping's field is.
_BASTION_TEXT_RE = re.compile(
    r"^(?:(?P<user>[^@]*)@)?(?:\[(?P<v6>[^\]]*)\]|(?P<host>[^:@\[\]]*))(?::(?P<port>[^:]*))?$"
)


def key_file(raw: Any) -> str:
    """A private key file's path: absolute, ``~/`` expanded for whoever runs gpulab."""
    if not isinstance(raw, str) or not raw.strip():
        raise ValueError
    path = raw.strip()
    if path.startswith("~/"):
        path = os.path.expanduser(path)
    if not KEY_PATH_RE.match(path):
        raise ValueError
    return os.path.normpath(path)


def port(raw: Any) -> int:
    if isinstance(raw, str) and raw.isascii() and raw.isdigit() and len(raw) <= 5:
        raw = int(raw)
    if isinstance(raw, int) and not isinstance(raw, bool) and 1 <= raw <= 65535:
        return raw
    raise ValueError


@dataclass(frozen=True)
class Bastion:
    """A jump host: ``user`` and ``key`` None take the lab host's login user and key."""

    host: str
    port: int = DEFAULT_PORT
    user: str | None = None
    key: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port}"


def _bastion_text(text: str) -> dict[str, Any]:
    """``[user@]host[:port]`` (an IPv6 address bare, or ``[addr]:port``) as the mapping's
    fields; the fields are checked by :func:`bastion` like a mapping's."""
    text = text.strip()
    try:
        if ipaddress.ip_address(text).version == 6:
            return {"host": text}  # a bare IPv6 address: its colons are not a port
    except ValueError:
        pass
    m = _BASTION_TEXT_RE.match(text)
    if m is None:
        raise BadValue(f"{BASTION_WHAT}; cannot read {text!r} as [user@]host[:port]")
    out: dict[str, Any] = {"host": m["v6"] if m["v6"] is not None else m["host"]}
    if m["user"] is not None:
        out["user"] = m["user"]
    if m["port"] is not None:
        out["port"] = m["port"]
    return out


def bastion(raw: Any) -> Bastion:
    """A bastion: ``[user@]host[:port]`` text or a mapping (YAML, or the engine's JSON text),
    each field checked; the :class:`BadValue` names the bad field."""
    raw = maybe_json(raw)
    if isinstance(raw, Bastion):
        return raw
    if isinstance(raw, str) and raw.strip():
        raw = _bastion_text(raw)
    if not isinstance(raw, dict):
        raise ValueError
    extra = sorted(str(k) for k in raw if k not in BASTION_FIELDS)
    if extra:
        raise BadValue(f"{BASTION_WHAT}; {', '.join(extra)} is not one of its fields")
    if not is_address(raw.get("host")):
        raise BadValue(f"{BASTION_WHAT}; host must be an IP address or a host name")
    user = raw.get("user")
    if user is not None and not (isinstance(user, str) and LOGIN_RE.match(user)):
        raise BadValue(f"{BASTION_WHAT}; user must be a login name")
    try:
        number = port(raw.get("port", DEFAULT_PORT))
    except ValueError:
        raise BadValue(f"{BASTION_WHAT}; port must be 1-65535") from None
    key = raw.get("key")
    if key is not None:
        try:
            key = key_file(key)
        except ValueError:
            raise BadValue(f"{BASTION_WHAT}; key must be {KEY_FILE_WHAT}") from None
    return Bastion(host=str(raw["host"]), port=number, user=user, key=key)


KeyFile = Parsed(key_file, KEY_FILE_WHAT)
BastionValue = Parsed(bastion, BASTION_WHAT, Any)

# The lab hosts a shared route stands for (their addresses come from the cloud).
EVERY_HOST = "*"


@dataclass(frozen=True)
class Route:
    """How gpulab reaches ``host`` (:data:`EVERY_HOST`: each host of a lab whose addresses a
    cloud gives), and the ``gpulab:*`` key each part came from, for the one-line errors."""

    host: str
    user: str
    key: str | None
    key_from: str
    bastion: Bastion | None
    bastion_from: str
    address: str | None = None  # known before the build: a listed machine
    port: int = DEFAULT_PORT
    address_from: str = ""

    @property
    def label(self) -> str:
        return "the lab's hosts" if self.host == EVERY_HOST else f"host {self.host}"

    def bastion_vars(self) -> dict[str, Any] | None:
        """The host variable ``gpulab_bastion`` (:mod:`infra.ansible.ssh_route`): the jump
        host with its user and key resolved (default: the lab host's)."""
        b = self.bastion
        if b is None:
            return None
        user, key = b.user or self.user, b.key or self.key
        return {"host": b.host, "user": user, "port": b.port, "key": key}
