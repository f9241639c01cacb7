"""The keys every topology's builder takes (:class:`LabArgs`), and keys several take.

A topology's Args dataclass (``infra/topologies/<name>/args.py``) subclasses :class:`LabArgs`
and adds the keys it uses, each annotated with its :class:`~infra.keys.key.Key`; a key that
several topologies take is defined once here or in the shared package of their cloud
(``infra/topologies/openstack/args.py``) and named in each table that takes it.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated as A  # the key tables' lines stay short
from typing import Any

from infra.keys.access import EVERY_HOST, Bastion, BastionValue, KeyFile, Route
from infra.keys.key import K
from infra.keys.types import LAB_RE, NAME_RE, Count, Name, Text

# The login user of each image family's cloud image: the first prefix that the lowercased
# image (OpenStack) or template (vSphere) name starts with picks it; anything else is ubuntu.
SSH_USER_BY_IMAGE: tuple[tuple[tuple[str, ...], str], ...] = (
    (("ubuntu",), "ubuntu"),
    (("debian",), "debian"),
    (("rocky",), "rocky"),
    (("centos", "rhel"), "cloud-user"),
    (("fedora-coreos", "fcos"), "core"),
)


def default_ssh_user(image: str | None) -> str:
    """``gpulab:ssh_user`` when absent: the user of the image family ``image`` names."""
    name = (image or "").strip().lower()
    for prefixes, user in SSH_USER_BY_IMAGE:
        if name.startswith(prefixes):
            return user
    return "ubuntu"


def family_user(values: Mapping[str, Any]) -> str:
    """The login user of the stack's image (OpenStack) or template (vSphere)."""
    return default_ssh_user(values.get("image") or values.get("template"))


SSH_USER = K(Name, "login user on the lab hosts (default: the image family's, see "
             "docs/topologies.md)", default=family_user)  # fmt: skip
HOST_COUNT = K(Count, "number of GPU hosts", default=1)
SSH_PRIVATE_KEY_FILE = K(
    KeyFile, "private key file (on the machine that runs gpulab) that logs in to the lab hosts; "
    "default: ssh's own (~/.ssh/id_*, the agent)")  # fmt: skip
BASTION = K(
    BastionValue, "SSH jump host (ProxyJump) the lab hosts are reached through: "
    "[user@]host[:port] or {host, user, port, key}; user and key default to the lab hosts' "
    "own")  # fmt: skip


@dataclass(frozen=True, kw_only=True)
class LabArgs:
    """The keys of every topology: which one, the lab's name, how its hosts are reached (the
    login user, a private key file, a bastion)."""

    # fmt: off
    topology: A[str, K(Text(NAME_RE, "a topology name"), "which lab to build", True)]
    lab: A[str, K(Text(LAB_RE, "2-32 characters: lowercase letters, digits and '-', starting "
                       "with a letter"), "lab name; prefixes and tags every resource", True)]
    ssh_user: A[str, SSH_USER] = "ubuntu"
    ssh_private_key_file: A[str | None, SSH_PRIVATE_KEY_FILE] = None
    bastion: A[Bastion | None, BASTION] = None
    # fmt: on

    def routes(self) -> list[Route]:
        """How gpulab reaches the lab's hosts: one route for every host a cloud makes (a
        topology whose stack lists its machines gives one per machine)."""
        return [
            Route(
                host=EVERY_HOST,
                user=self.ssh_user,
                key=self.ssh_private_key_file,
                key_from="gpulab:ssh_private_key_file",
                bastion=self.bastion,
                bastion_from="gpulab:bastion",
            )
        ]
