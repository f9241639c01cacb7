"""The SSH route to a lab host: a private key file and a bastion (jump host), as checked fields.

A bastion reaches the inventory as the host variable ``gpulab_bastion``, a mapping of four
fields (``host``: an IP address or a host name, ``user``: a login name, ``port``: 1-65535,
``key``: an absolute path or none), never as text: the inventory writer checks each field
(:func:`infra.ansible.inventory.check_bastion`), then :func:`common_args` writes the
``ansible_ssh_common_args`` that Ansible's ssh connection gets: OpenSSH's ProxyJump spelled
out as the command it stands for (ProxyJump itself cannot name the jump host's key)::

    -o 'ProxyCommand=ssh -o BatchMode=yes ... -l USER -p PORT -i KEY -W [%h]:%p HOST'

Every field is checked to be plain characters before it is quoted, so no value can add an
option or a shell word; ``%h`` and ``%p`` are ssh's own tokens for the lab host. The same
route is what :func:`login_argv` runs to check a host before a lab is built
(:mod:`infra.access`).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

BASTION_VAR = "gpulab_bastion"
BASTION_FIELDS = ("host", "user", "port", "key")
CONNECT_TIMEOUT_S = 10
# What every ssh that gpulab starts says: no prompt, lab hosts' keys are not pinned (a lab is
# rebuilt with new host keys: the same as ANSIBLE_SSH_ARGS of infra.ansible.runner).
SSH_OPTIONS = (
    "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
    "-o", "LogLevel=ERROR", "-o", f"ConnectTimeout={CONNECT_TIMEOUT_S}",
)  # fmt: skip


def jump_argv(bastion: Mapping[str, Any]) -> list[str]:
    """The ssh that carries a connection through ``bastion`` (a checked mapping): ``-W`` to
    ssh's ``%h``/``%p`` of the lab host."""
    argv = ["ssh", *SSH_OPTIONS, "-l", bastion["user"], "-p", str(bastion["port"])]
    if bastion.get("key"):
        argv += ["-i", bastion["key"], "-o", "IdentitiesOnly=yes"]
    return [*argv, "-W", "[%h]:%p", bastion["host"]]


def common_args(bastion: Mapping[str, Any]) -> str:
    """``ansible_ssh_common_args`` for a route through ``bastion`` (a checked mapping)."""
    command = " ".join(shlex.quote(a) for a in jump_argv(bastion))
    return "-o " + shlex.quote(f"ProxyCommand={command}")


def login_argv(
    address: str,
    port: int,
    user: str,
    key: str | None,
    bastion: Mapping[str, Any] | None,
    command: str = "true",
) -> list[str]:
    """``ssh`` that logs in to ``address`` as Ansible will (the key, the bastion) and runs
    ``command`` (fixed text of gpulab's own: ``true``, ``sudo -n true``)."""
    argv = ["ssh", *SSH_OPTIONS, "-l", user, "-p", str(port)]
    if key:
        argv += ["-i", key]
    if bastion is not None:
        command_text = " ".join(shlex.quote(a) for a in jump_argv(bastion))
        argv += ["-o", f"ProxyCommand={command_text}"]
    return [*argv, "--", address, command]
