"""A named double of the openstacksdk connection for the services that cannot run here
(Nova, Glance, Neutron, Cinder, Magnum). It answers the same calls infra.clouds makes, with
resources built from plain attributes; a call listed in ``errors`` raises the given real
openstacksdk exception, so the error mapping is exercised too. Ironic is never doubled: the
tests hand the real standalone Ironic in as the bare-metal connection.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any


def res(**attrs: Any) -> SimpleNamespace:
    base = {
        "id": f"{attrs.get('name') or 'x'}-id",
        "name": None,
        "tags": [],
        "metadata": {},
        "labels": {},
        "status": None,
    }
    base.update(attrs)
    return SimpleNamespace(**base)


class _Service:
    def __init__(self, owner: OpenStackDouble, prefix: str) -> None:
        self._owner, self._prefix = owner, prefix

    def _call(self, method: str) -> None:
        self._owner.calls.append(f"{self._prefix}.{method}")
        err = self._owner.errors.get(f"{self._prefix}.{method}")
        if err is not None:
            raise err


class _Image(_Service):
    def find_image(self, name: str, ignore_missing: bool = True) -> Any:
        self._call("find_image")
        return next((i for i in self._owner.images if i.name == name), None)


class _Compute(_Service):
    def find_flavor(
        self, name: str, ignore_missing: bool = True, *, get_extra_specs: bool = False
    ) -> Any:
        self._call("find_flavor")
        return next((f for f in self._owner.flavors if f.name == name), None)

    def flavors(self, details: bool = True, get_extra_specs: bool = False) -> list[Any]:
        self._call("flavors")
        return list(self._owner.flavors)

    def get_limits(self) -> Any:
        self._call("get_limits")
        return SimpleNamespace(absolute=SimpleNamespace(**self._owner.limits))

    def servers(self, details: bool = True) -> list[Any]:
        self._call("servers")
        return list(self._owner.servers)

    def keypairs(self) -> list[Any]:
        self._call("keypairs")
        return list(self._owner.keypairs)

    def server_groups(self) -> list[Any]:
        self._call("server_groups")
        return list(self._owner.server_groups)


class _Network(_Service):
    def find_network(self, name: str, ignore_missing: bool = True) -> Any:
        self._call("find_network")
        return next((n for n in self._owner.networks if n.name == name), None)

    def get_quota(self, project: str, details: bool = False) -> Any:
        self._call("get_quota")
        return SimpleNamespace(floating_ips=dict(self._owner.fip_quota))

    def ips(self) -> list[Any]:
        self._call("ips")
        return list(self._owner.floating_ips)

    def ports(self) -> list[Any]:
        self._call("ports")
        return list(self._owner.ports)

    def routers(self) -> list[Any]:
        self._call("routers")
        return list(self._owner.routers)

    def networks(self) -> list[Any]:
        self._call("networks")
        return list(self._owner.networks)

    def subnets(self) -> list[Any]:
        self._call("subnets")
        return list(self._owner.subnets)

    def security_groups(self) -> list[Any]:
        self._call("security_groups")
        return list(self._owner.security_groups)


class _BlockStorage(_Service):
    def volumes(self, details: bool = True) -> list[Any]:
        self._call("volumes")
        return list(self._owner.volumes)


class _Magnum(_Service):
    def services(self) -> list[Any]:
        self._call("services")
        return list(self._owner.magnum_services)

    def create_cluster_template(self, **attrs: Any) -> Any:
        self._call("create_cluster_template")
        # Magnum resolves the template's distro from the image's os_distro property.
        image = next((i for i in self._owner.images if i.name == attrs.get("image_id")), None)
        t = res(cluster_distro=getattr(image, "os_distro", None), **attrs)
        self._owner.cluster_templates.append(t)
        self._owner.templates_created.append(attrs)
        return t

    def delete_cluster_template(self, template: Any) -> None:
        self._call("delete_cluster_template")
        self._owner.cluster_templates.remove(template)

    def cluster_templates(self) -> list[Any]:
        self._call("cluster_templates")
        return list(self._owner.cluster_templates)

    def clusters(self) -> list[Any]:
        self._call("clusters")
        return list(self._owner.clusters)


class OpenStackDouble:
    """Double of ``openstack.connection.Connection`` (no baremetal: use the real Ironic)."""

    current_project_id = "project-1"

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.errors: dict[str, Exception] = {}
        self.images: list[Any] = []
        self.flavors: list[Any] = []
        self.networks: list[Any] = []
        self.limits: dict[str, int] = {
            "instances": 10,
            "instances_used": 0,
            "total_cores": 100,
            "total_cores_used": 0,
            "total_ram": 1048576,
            "total_ram_used": 0,
        }
        self.fip_quota: dict[str, int] = {"limit": 10, "used": 0, "reserved": 0}
        self.servers: list[Any] = []
        self.floating_ips: list[Any] = []
        self.ports: list[Any] = []
        self.routers: list[Any] = []
        self.subnets: list[Any] = []
        self.keypairs: list[Any] = []
        self.server_groups: list[Any] = []
        self.security_groups: list[Any] = []
        self.volumes: list[Any] = []
        self.magnum_services: list[Any] = []
        self.cluster_templates: list[Any] = []
        self.clusters: list[Any] = []
        self.templates_created: list[dict[str, Any]] = []
        self.image = _Image(self, "image")
        self.compute = _Compute(self, "compute")
        self.network = _Network(self, "network")
        self.block_storage = _BlockStorage(self, "block_storage")
        self.container_infrastructure_management = _Magnum(self, "magnum")

    @property
    def baremetal(self) -> Any:
        raise AssertionError("the double has no baremetal: pass the real Ironic as bm_conn")
