"""The keys of ``static``: the machines of the lab, listed (``gpulab:hosts``), and whether
``down`` removes what gpulab installed on them (``gpulab:cleanup_on_down``).

Each entry of ``gpulab:hosts`` is one machine that already exists::

    - name: gpu-a                 # inventory name, in every record (default <lab>-<index>)
      address: 10.0.0.11          # IP address or host name (required)
      machine: bare-metal         # what it is (required): bare-metal, vm-passthrough, vgpu
      user: ubuntu                # login user with passwordless sudo (default gpulab:ssh_user)
      port: 22                    # SSH port (default 22)
      key: ~/.ssh/lab_ed25519     # private key file (default gpulab:ssh_private_key_file)
      bastion: jump@192.0.2.10:22 # jump host, [user@]host[:port] or {host, user, port, key}
                                  # (default gpulab:bastion); false: reached directly

``machine`` is the setting the records state: bare-metal -> gpu_path ``whole-machine``
(virtualization none), vm-passthrough -> ``pci-passthrough`` (vm), vgpu -> ``vgpu`` (vm, GPU
shared by vGPU); :data:`MACHINES`. A machine listed twice (the same name, or the same address
and port) is refused.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, replace
from typing import Annotated as A  # the key tables' lines stay short
from typing import Any

# the inventory's own rules for a host name, a login and an address
from infra.ansible.inventory import HOST_NAME_RE, LOGIN_RE, is_host_address
from infra.keys.access import DEFAULT_PORT, Bastion, Route, bastion, key_file, port
from infra.keys.key import K
from infra.keys.lab import SSH_USER, LabArgs
from infra.keys.types import MAX_HOSTS, BadValue, Bool, Parsed, maybe_json

# What a listed machine is -> the gpu_path its records state (workloads.setting.HOST_SETTINGS
# says the setting of each: the same word).
MACHINES = {"bare-metal": "whole-machine", "vm-passthrough": "pci-passthrough", "vgpu": "vgpu"}
FIELDS = ("name", "address", "machine", "user", "port", "key", "bastion")
HOSTS_WHAT = (
    "a list of machines, each {name, address, machine: " + "|".join(MACHINES) + ", user, port, "
    "key, bastion} (address and machine required)"
)


@dataclass(frozen=True)
class StaticHost:
    """One listed machine; None takes the stack's default (``bastion`` False: no bastion)."""

    address: str
    machine: str
    name: str | None = None
    user: str | None = None
    port: int = DEFAULT_PORT
    key: str | None = None
    bastion: Bastion | bool | None = None

    @property
    def gpu_path(self) -> str:
        return MACHINES[self.machine]

    def __str__(self) -> str:
        jump = f" through {self.bastion}" if isinstance(self.bastion, Bastion) else ""
        return f"{self.name} {self.address}:{self.port} {self.machine}{jump}"


def _name(raw: Any) -> str:
    if not isinstance(raw, str) or not HOST_NAME_RE.match(raw):
        raise ValueError
    return raw


def _login(raw: Any) -> str:
    if not isinstance(raw, str) or not LOGIN_RE.match(raw):
        raise ValueError
    return raw


def _address(raw: Any) -> str:
    if not is_host_address(raw):
        raise ValueError
    return str(raw)


def _machine(raw: Any) -> str:
    if raw not in MACHINES:
        raise ValueError
    return str(raw)


def _bastion(raw: Any) -> Bastion | bool:
    if raw is False:
        return False
    return bastion(raw)


_PARSERS = {
    "name": (_name, "a host name of letters, digits, '.', '_' or '-'"),
    "address": (_address, "an IP address or a host name"),
    "machine": (_machine, "one of " + ", ".join(MACHINES)),
    "user": (_login, "a login name"),
    "port": (port, "1-65535"),
    "key": (key_file, "an absolute path (or ~/...) of a private key file"),
    "bastion": (_bastion, "[user@]host[:port], a mapping {host, user, port, key}, or false"),
}


def _entry(i: int, raw: Any) -> StaticHost:
    where = f"hosts[{i}]"
    if not isinstance(raw, dict):
        raise BadValue(f"{HOSTS_WHAT}; {where} is not a mapping")
    extra = sorted(str(k) for k in raw if k not in FIELDS)
    if extra:
        raise BadValue(f"{HOSTS_WHAT}; {where} has {', '.join(extra)}, which is not a field")
    missing = [k for k in ("address", "machine") if raw.get(k) is None]
    if missing:
        raise BadValue(f"{HOSTS_WHAT}; {where} has no {' and no '.join(missing)}")
    fields: dict[str, Any] = {}
    for key, value in raw.items():
        if value is None:
            continue
        parse, what = _PARSERS[key]
        try:
            fields[key] = parse(value)
        except BadValue as exc:
            raise BadValue(f"{HOSTS_WHAT}; {where}.{key} must be {exc}") from None
        except ValueError:
            raise BadValue(f"{HOSTS_WHAT}; {where}.{key} must be {what}") from None
    return StaticHost(**fields)


def parse_hosts(raw: Any) -> tuple[StaticHost, ...]:
    """``gpulab:hosts`` (YAML, or the engine's JSON text): every entry checked."""
    raw = maybe_json(raw)
    if not isinstance(raw, list | tuple) or not raw:
        raise BadValue(HOSTS_WHAT)
    if len(raw) > MAX_HOSTS:
        raise BadValue(f"{HOSTS_WHAT}; at most {MAX_HOSTS}")
    return tuple(_entry(i, h) for i, h in enumerate(raw))


def _same_machine(address: str, port_: int) -> tuple[str, int]:
    try:
        return str(ipaddress.ip_address(address)), port_
    except ValueError:
        return address.lower().rstrip("."), port_


def check_config(_raw: dict[str, Any], values: dict[str, Any], problems: list[str]) -> None:
    """Each listed machine once: its name (a missing one becomes ``<lab>-<index>``) and its
    address and port."""
    hosts = values.get("hosts")
    if not hosts:
        return
    lab = values.get("lab") or "static"
    named = tuple(h if h.name else replace(h, name=f"{lab}-{i}") for i, h in enumerate(hosts))
    values["hosts"] = named
    names: dict[str, int] = {}
    machines: dict[tuple[str, int], int] = {}
    for i, h in enumerate(named):
        assert h.name is not None
        first = names.setdefault(h.name, i)
        if first != i:
            problems.append(
                f"gpulab:hosts[{i}] is named {h.name} like gpulab:hosts[{first}]: list each "
                "machine once, each with its own name"
            )
        seen = machines.setdefault(_same_machine(h.address, h.port), i)
        if seen != i:
            problems.append(
                f"gpulab:hosts[{i}] ({h.name}, {h.address}:{h.port}) is the machine of "
                f"gpulab:hosts[{seen}] ({named[seen].name}) again: list each machine once"
            )


@dataclass(frozen=True, kw_only=True)
class StaticArgs(LabArgs):
    """What ``static`` takes."""

    # fmt: off
    ssh_user: A[str, SSH_USER.but(help="login user (passwordless sudo) on the listed machines "
                                  "that name none", default="ubuntu")] = "ubuntu"
    hosts: A[tuple[StaticHost, ...], K(Parsed(parse_hosts, HOSTS_WHAT, Any),
                                       "the machines of the lab: name, address, machine "
                                       "(bare-metal, vm-passthrough, vgpu), user, port, key, "
                                       "bastion (docs/topologies.md)", True)] = ()
    cleanup_on_down: A[bool, K(Bool, "gpulab down removes what gpulab installed in its own "
                                     "directories on the machines (the runner, its caches and "
                                     "records); false: the machines are left as they are",
                               default=False)] = False
    # fmt: on

    def routes(self) -> list[Route]:
        """One route per listed machine: its own user, key and bastion, else the stack's."""
        out = []
        for i, h in enumerate(self.hosts):
            own_key = h.key is not None
            jump: Bastion | None
            if isinstance(h.bastion, Bastion):
                jump, jump_from = h.bastion, f"gpulab:hosts[{i}].bastion"
            else:
                jump = None if h.bastion is False else self.bastion
                jump_from = "gpulab:bastion"
            out.append(
                Route(
                    host=h.name or f"{self.lab}-{i}",
                    user=h.user or self.ssh_user,
                    key=h.key if own_key else self.ssh_private_key_file,
                    key_from=f"gpulab:hosts[{i}].key" if own_key else "gpulab:ssh_private_key_file",
                    bastion=jump,
                    bastion_from=jump_from,
                    address=h.address,
                    port=h.port,
                    address_from=f"gpulab:hosts[{i}]",
                )
            )
        return out
