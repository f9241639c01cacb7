"""Build an Ansible inventory (the dict form ansible-runner accepts) from ``infra.hosts.Host``.

Shape::

    {"all": {"hosts": {NAME: HOSTVARS, ...},
             "vars": {...common vars...},
             "children": {GROUP: {"hosts": {NAME: {}, ...}}, ...}}}

Host vars per host:
  ansible_host / ansible_user / ansible_port  from address, ssh_user, ssh_port
  gpulab_gpu_path                             from gpu_path (the roles branch on it)
  ansible_connection=local                    for gpu_path "local" on localhost/127.0.0.1
                                              (with the controller's own Python)
  ansible_become=false                        when the login is already root (ssh_user root,
                                              or a local connection run by root): the plays
                                              say ``become: true`` for the images' sudo users,
                                              and root needs no sudo (chroot targets, minimal
                                              images without sudo)
  everything in ``Host.vars``                 last, so a host can override any of the above
                                              (``ansible_connection: community.general.chroot``)

Group names are sanitized to Ansible's rules (``gpu-hosts`` -> ``gpu_hosts``); every host is
also in the group named after its gpu_path (``gpu_path_vgpu`` ...).

Hosts the lab does not manage (``vars.managed_by_gpulab`` false: the Bitfusion server, an
appliance gpulab neither builds nor configures) are not inventory hosts at all, so no play
(``hosts: all`` included) reaches them; they are listed for reference in
``all.vars.gpulab_unmanaged_hosts`` (name -> address, groups, gpu_path, vars).

Every field is checked first (:func:`check_host`), because the hosts come from stack outputs
and saved outputs files, which a cloud or a hand edit fills: the name is a plain inventory
name (no leading ``-``, no space, no newline), the address an IP address or a host name (an
absolute path for a chroot connection), the user a login name, the port 1-65535, every var
name an Ansible variable name, and of the ``ansible_*`` variables only those that say which
connection to use (:data:`CONNECTION_VARS`: ``ansible_connection``,
``ansible_python_interpreter``, ``ansible_become``, ``ansible_pipelining``,
``ansible_ssh_private_key_file``, each with a checked value): ``ansible_ssh_common_args`` (a
``ProxyCommand``), ``ansible_ssh_executable`` and the rest would let data choose a command.
A bad field raises :class:`InventoryError`, one line naming the host and the field.

A bastion (jump host) is the structured var ``gpulab_bastion`` (``host``, ``user``, ``port``,
``key``; None: reached directly), each field checked (:func:`check_bastion`); the writer then
sets ``ansible_ssh_common_args`` itself, a ProxyCommand made from those fields alone
(:func:`infra.ansible.ssh_route.common_args`). No text of a host's reaches that option.

The values are data: whoever writes the inventory for Ansible marks every string unsafe
(:mod:`infra.ansible.untrusted`); the only templates are the fixed expressions this module
writes itself (:data:`TRUSTED_HOST_TEMPLATES`), as :class:`~infra.ansible.untrusted.Template`.
"""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from infra.ansible.ssh_route import BASTION_FIELDS, BASTION_VAR, common_args
from infra.ansible.untrusted import Template
from infra.hosts import Host

LOCAL_ADDRESSES = ("localhost", "127.0.0.1", "::1")

_BAD = re.compile(r"[^A-Za-z0-9_]")
# An inventory host name: what Ansible and a shell read as one plain word.
HOST_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}$")
# A login name (useradd's rule, with upper case, '.' and a leading digit, as Debian allows).
LOGIN_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,31}$")
# One label of a DNS name (RFC 1123; '_' as internal zones use it).
_LABEL_RE = re.compile(r"^[A-Za-z0-9_](?:[A-Za-z0-9_-]{0,61}[A-Za-z0-9_])?$")
# An absolute path of plain characters: a chroot directory, a key file, a Python.
PATH_RE = re.compile(r"^/[A-Za-z0-9_.@+/-]{0,4095}$")
VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
CHROOT_CONNECTIONS = frozenset({"community.general.chroot", "chroot"})
CONNECTIONS = frozenset({"ssh", "ansible.builtin.ssh", "local", "ansible.builtin.local"})
CONNECTIONS |= CHROOT_CONNECTIONS

# The only templates a host's vars may carry, each a fixed expression that reads the
# controller (magnum-k8s's controller host: infra/topologies/magnum_k8s/build.py
# CONTROLLER_VARS).
TRUSTED_HOST_TEMPLATES: dict[str, str] = {
    "ansible_python_interpreter": "{{ ansible_playbook_python }}",
}


class InventoryError(ValueError):
    """A host list that cannot become an inventory; the message names the host and field."""


def group_name(name: str) -> str:
    """An Ansible-valid group name: non-word characters become ``_``, no leading digit."""
    if not isinstance(name, str):
        raise InventoryError(f"group name must be a string, got {_show(name)}")
    clean = _BAD.sub("_", name.strip())
    if not clean:
        raise InventoryError(f"group name {name!r} is empty after sanitizing")
    if clean[0].isdigit():
        clean = "g_" + clean
    return clean


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def is_host_address(value: Any) -> bool:
    """An IP address or a DNS host name (no leading '-', no space, no newline)."""
    if not isinstance(value, str) or not value:
        return False
    try:
        ipaddress.ip_address(value)
        return True
    except ValueError:
        pass
    name = value[:-1] if value.endswith(".") else value
    if len(name) > 253 or name.startswith("-"):
        return False
    return all(_LABEL_RE.match(label) for label in name.split("."))


def _connection_ok(value: Any) -> bool:
    return isinstance(value, str) and value in CONNECTIONS


def _interpreter_ok(value: Any) -> bool:
    trusted = TRUSTED_HOST_TEMPLATES["ansible_python_interpreter"]
    return isinstance(value, str) and (value == trusted or bool(PATH_RE.match(value)))


def _path_ok(value: Any) -> bool:
    return isinstance(value, str) and bool(PATH_RE.match(value))


# ansible_* variables a host may set, each with the check of its value and what it allows.
CONNECTION_VARS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "ansible_connection": (_connection_ok, "one of " + ", ".join(sorted(CONNECTIONS))),
    "ansible_python_interpreter": (_interpreter_ok, "an absolute path"),
    "ansible_become": (lambda v: isinstance(v, bool), "true or false"),
    "ansible_pipelining": (lambda v: isinstance(v, bool), "true or false"),
    "ansible_ssh_private_key_file": (_path_ok, "an absolute path"),
}


def _port(value: Any) -> int | None:
    """A TCP port (an int, or the engine's double or decimal string of one), else None."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)  # the engine hands numbers over gRPC as doubles (a Struct): 22.0
    elif isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 65535:
        return value
    return None


def check_bastion(value: Any, where: str) -> dict[str, Any] | None:
    """``value`` (a host's ``gpulab_bastion``) as a checked mapping: ``host`` an IP address or
    a host name, ``user`` a login name, ``port`` 1-65535 (default 22), ``key`` an absolute path
    or None, nothing else; None stays None (reached directly). Else an :class:`InventoryError`
    naming ``where`` and the field."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InventoryError(
            f"{where}: {BASTION_VAR} must be a mapping of {', '.join(BASTION_FIELDS)}, "
            f"got {_show(value)}"
        )
    extra = sorted(str(k) for k in value if k not in BASTION_FIELDS)
    if extra:
        raise InventoryError(
            f"{where}: {BASTION_VAR} has {', '.join(extra)}: only {', '.join(BASTION_FIELDS)}"
        )
    host, user, key = value.get("host"), value.get("user"), value.get("key")
    port = _port(value.get("port", 22))
    if not is_host_address(host):
        raise InventoryError(
            f"{where}: {BASTION_VAR}.host must be an IP address or a host name, got {_show(host)}"
        )
    if not isinstance(user, str) or not LOGIN_RE.match(user):
        raise InventoryError(f"{where}: {BASTION_VAR}.user must be a login name, got {_show(user)}")
    if port is None:
        raise InventoryError(
            f"{where}: {BASTION_VAR}.port must be 1-65535, got {_show(value.get('port'))}"
        )
    if key is not None and not _path_ok(key):
        raise InventoryError(
            f"{where}: {BASTION_VAR}.key must be an absolute path, got {_show(key)}"
        )
    return {"host": host, "user": user, "port": port, "key": key}


def check_vars(vars_: Any, where: str) -> None:
    """Variable names are Ansible's; ``ansible_*`` only those of :data:`CONNECTION_VARS`."""
    if not isinstance(vars_, Mapping):
        raise InventoryError(f"{where}: vars must be a mapping, got {_show(vars_)}")
    for key, value in vars_.items():
        if not isinstance(key, str) or not VAR_RE.match(key):
            raise InventoryError(f"{where}: {_show(key)} is not an Ansible variable name")
        if key.startswith("ansible_"):
            check = CONNECTION_VARS.get(key)
            if check is None:
                raise InventoryError(
                    f"{where}: variable {key!r} is not allowed (of the ansible_* variables "
                    f"only {', '.join(CONNECTION_VARS)} may be set)"
                )
            if not check[0](value):
                raise InventoryError(f"{where}: {key} must be {check[1]}, got {_show(value)}")
        elif key == BASTION_VAR:
            check_bastion(value, where)


def check_host(host: Host) -> None:
    """Every field of ``host`` is what it claims to be (see the module docstring), else an
    :class:`InventoryError` naming the host and the field."""
    name = host.name
    if not isinstance(name, str) or not HOST_NAME_RE.match(name):
        raise InventoryError(
            f"host name must be letters, digits, '.', '_' or '-' (not first), up to 253 "
            f"characters, got {_show(name)}"
        )
    where = f"host {name!r}"
    check_vars(host.vars, where)
    chroot = host.vars.get("ansible_connection") in CHROOT_CONNECTIONS
    if not isinstance(host.address, str) or not host.address:
        raise InventoryError(
            f"{where}: address must be a resolved non-empty string, got {_show(host.address)} "
            "(resolve Pulumi Outputs before building an inventory)"
        )
    if not (_path_ok(host.address) if chroot else is_host_address(host.address)):
        what = "an absolute path (chroot)" if chroot else "an IP address or a host name"
        raise InventoryError(f"{where}: address must be {what}, got {_show(host.address)}")
    if not isinstance(host.ssh_user, str) or not LOGIN_RE.match(host.ssh_user):
        raise InventoryError(
            f"{where}: ssh_user must be a login name (letters, digits, '_', '.', '-', not "
            f"first, up to 32), got {_show(host.ssh_user)}"
        )
    if _port(host.ssh_port) is None:
        raise InventoryError(f"{where}: ssh_port must be 1-65535, got {_show(host.ssh_port)}")
    if not isinstance(host.groups, list | tuple):
        raise InventoryError(f"{where}: groups must be a list, got {_show(host.groups)}")
    for g in host.groups:
        group_name(g)


def _trusted(key: str, value: Any) -> Any:
    """A host var that is one of :data:`TRUSTED_HOST_TEMPLATES` stays a template."""
    if TRUSTED_HOST_TEMPLATES.get(key) == value:
        return Template(value)
    return value


def host_vars(host: Host) -> dict[str, Any]:
    """The inventory variables of one host (see the module docstring)."""
    check_host(host)
    hv: dict[str, Any] = {
        "ansible_host": host.address,
        "ansible_user": host.ssh_user,
        "ansible_port": int(host.ssh_port),
        "gpulab_gpu_path": host.gpu_path,
    }
    local = host.gpu_path == "local" and host.address in LOCAL_ADDRESSES
    if local:
        hv["ansible_connection"] = "local"
        hv["ansible_python_interpreter"] = Template(
            TRUSTED_HOST_TEMPLATES["ansible_python_interpreter"]
        )
    # A local connection runs as the controller's user, whatever ssh_user says.
    if (os.geteuid() == 0) if local else host.ssh_user == "root":
        hv["ansible_become"] = False
    hv.update({k: _trusted(k, v) for k, v in host.vars.items()})
    bastion = check_bastion(host.vars.get(BASTION_VAR), f"host {host.name!r}")
    if bastion is not None:
        hv[BASTION_VAR] = bastion
        hv["ansible_ssh_common_args"] = common_args(bastion)
    return hv


def build_inventory(
    hosts: Iterable[Host], common_vars: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The inventory dict for ``hosts``; ``common_vars`` go to ``all.vars``."""
    all_hosts: dict[str, dict[str, Any]] = {}
    children: dict[str, dict[str, Any]] = {}
    unmanaged: dict[str, dict[str, Any]] = {}
    if common_vars:
        check_vars(common_vars, "common vars")
    for host in hosts:
        check_host(host)
        if host.name in all_hosts or host.name in unmanaged:
            raise InventoryError(f"host {host.name!r} appears twice")
        if host.vars.get("managed_by_gpulab") is False:
            unmanaged[host.name] = {
                "address": host.address,
                "groups": [group_name(g) for g in host.groups],
                "gpu_path": host.gpu_path,
                "vars": {k: v for k, v in host.vars.items() if k != "managed_by_gpulab"},
            }
            continue
        all_hosts[host.name] = host_vars(host)
        for g in [*host.groups, f"gpu_path_{host.gpu_path}"]:
            gname = group_name(g)
            if gname in ("all", "ungrouped"):
                continue
            children.setdefault(gname, {"hosts": {}})["hosts"][host.name] = {}
    if not all_hosts:
        raise InventoryError("no hosts: the inventory would be empty")
    clash = set(children) & set(all_hosts)
    if clash:
        raise InventoryError(f"names used both as host and group: {sorted(clash)}")
    inv: dict[str, Any] = {"all": {"hosts": all_hosts, "children": children}}
    if common_vars or unmanaged:
        inv["all"]["vars"] = dict(common_vars or {})
    if unmanaged:
        inv["all"]["vars"]["gpulab_unmanaged_hosts"] = unmanaged
    return inv
