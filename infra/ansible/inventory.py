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
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

from infra.hosts import Host

LOCAL_ADDRESSES = ("localhost", "127.0.0.1", "::1")

_BAD = re.compile(r"[^A-Za-z0-9_]")


class InventoryError(ValueError):
    """A host list that cannot become an inventory; the message names the host and field."""


def group_name(name: str) -> str:
    """An Ansible-valid group name: non-word characters become ``_``, no leading digit."""
    clean = _BAD.sub("_", name.strip())
    if not clean:
        raise InventoryError(f"group name {name!r} is empty after sanitizing")
    if clean[0].isdigit():
        clean = "g_" + clean
    return clean


def host_vars(host: Host) -> dict[str, Any]:
    """The inventory variables of one host (see the module docstring)."""
    if not isinstance(host.address, str) or not host.address:
        raise InventoryError(
            f"host {host.name!r}: address must be a resolved non-empty string, "
            f"got {host.address!r} (resolve Pulumi Outputs before building an inventory)"
        )
    hv: dict[str, Any] = {
        "ansible_host": host.address,
        "ansible_user": host.ssh_user,
        "ansible_port": int(host.ssh_port),
        "gpulab_gpu_path": host.gpu_path,
    }
    local = host.gpu_path == "local" and host.address in LOCAL_ADDRESSES
    if local:
        hv["ansible_connection"] = "local"
        hv["ansible_python_interpreter"] = "{{ ansible_playbook_python }}"
    # A local connection runs as the controller's user, whatever ssh_user says.
    if (os.geteuid() == 0) if local else host.ssh_user == "root":
        hv["ansible_become"] = False
    hv.update(host.vars)
    return hv


def build_inventory(
    hosts: Iterable[Host], common_vars: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The inventory dict for ``hosts``; ``common_vars`` go to ``all.vars``."""
    all_hosts: dict[str, dict[str, Any]] = {}
    children: dict[str, dict[str, Any]] = {}
    unmanaged: dict[str, dict[str, Any]] = {}
    for host in hosts:
        if not host.name or not isinstance(host.name, str):
            raise InventoryError(f"host name must be a non-empty string, got {host.name!r}")
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
