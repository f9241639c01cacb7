"""The login user: ``gpulab:ssh_user``, else the image family's default (docs/topologies.md),
carried by every host a topology builds into the inventory as ``ansible_user``; and become off
only where the login is already root. Topologies run under Pulumi's MOCK runtime (engine and
cloud providers are test doubles)."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from infra.ansible import build_inventory
from infra.config import validate
from infra.hosts import Host
from tests.pulumi.helpers import check, resolve, run_stack, settle
from tests.pulumi.mocks import STACKS, LabMocks, stack_raw


@pytest.mark.parametrize(
    ("image", "user"),
    [
        ("ubuntu-22.04", "ubuntu"),
        ("Ubuntu-24.04-GPU", "ubuntu"),
        ("debian-12-genericcloud", "debian"),
        ("Rocky-9-GenericCloud", "rocky"),
        ("CentOS-Stream-9", "cloud-user"),
        ("rhel-9.4-x86_64", "cloud-user"),
        ("fedora-coreos-38", "core"),
        ("fcos-40", "core"),
        ("my-golden-image", "ubuntu"),
    ],
)
def test_default_login_user_follows_the_image_family(image: str, user: str) -> None:
    raw = stack_raw("nova-pci", image=image, ssh_user=None)
    assert validate(raw).ssh_user == user
    vs = stack_raw("vsphere-gpu", template=image, ssh_user=None)  # templates likewise
    assert validate(vs).ssh_user == user


def test_explicit_ssh_user_wins_and_local_is_root() -> None:
    assert validate(stack_raw("nova-pci", image="rocky-9", ssh_user="admin")).ssh_user == "admin"
    assert validate(stack_raw("local", ssh_user=None)).ssh_user == "root"


def _mock_hosts(topology: str, **overrides: Any) -> Any:
    @pulumi.runtime.test
    def body() -> Any:
        _, _, hosts = run_stack(topology, **overrides)

        async def go() -> None:
            await settle()
            resolved = []
            for h in hosts:
                addr, _ = await resolve(h.address)
                resolved.append(Host(h.name, addr, h.ssh_user, h.groups, h.gpu_path))
            inv = build_inventory(resolved)["all"]["hosts"]
            users = {name: hv["ansible_user"] for name, hv in inv.items()}
            become = {name: hv.get("ansible_become", True) for name, hv in inv.items()}
            RESULT[topology] = (users, become)

        return check(go())

    body()
    return RESULT.pop(topology)


RESULT: dict[str, Any] = {}


@pytest.mark.parametrize(
    ("topology", "key", "image", "user"),
    [
        ("nova-pci", "image", "rocky-9-genericcloud", "rocky"),
        ("ironic-bm", "image", "ubuntu-22.04-baremetal", "ubuntu"),
        ("magnum-k8s", "image", "fedora-coreos-38", "core"),
        ("vsphere-gpu", "template", "rhel-9-template", "cloud-user"),
    ],
)
def test_login_user_reaches_the_inventory(
    pulumi_mocks: LabMocks, topology: str, key: str, image: str, user: str
) -> None:
    """MOCK engine: every host of the topology is an ``ansible_user`` of the image family, and
    the plays' become stays on (a sudo user)."""
    users, become = _mock_hosts(topology, ssh_user=None, **{key: image})
    assert users and set(users.values()) == {user}, users
    assert set(become.values()) == {True}


def test_root_login_turns_become_off() -> None:
    inv = build_inventory(
        [
            Host("r", "10.0.0.1", ssh_user="root", gpu_path="none"),
            Host("u", "10.0.0.2", ssh_user="ubuntu", gpu_path="none"),
            Host("c", "/srv/root", ssh_user="root", vars={"ansible_connection": "chroot"}),
        ]
    )["all"]["hosts"]
    assert inv["r"]["ansible_become"] is False and inv["c"]["ansible_become"] is False
    assert "ansible_become" not in inv["u"]


def test_all_example_stacks_are_covered() -> None:
    assert {"nova-pci", "ironic-bm", "magnum-k8s", "vsphere-gpu", "local"} == set(STACKS)


@pytest.fixture()
def pulumi_mocks() -> LabMocks:
    mocks = LabMocks()
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack="test", preview=False)
    return mocks
