"""The OpenStack cloud of the end-to-end lab, as a cloud behaves (Nova and Neutron cannot run
here; the machines are real systemd-nspawn hosts).

- ``getImage`` (by name, ``most_recent``) answers the newest image of that name;
  :meth:`NspawnCloud.publish_image` uploads a newer one under the same name.
- A **port** takes an address on the lab bridge when it is made (its fixed IP); the **floating
  IP** bound to it answers on that address.
- A **server** refuses a port another server still holds (Nova's ``PortInUse``, HTTP 409). It
  boots an nspawn host at its port's address from a NoCloud seed (cloud-init creates the login
  user and installs the key; the host name is the server's name, as Nova's metadata gives it)
  and is reported ACTIVE at once, while the host still boots: sshd answers only after
  cloud-init has finished, ``sshd_delay_s`` later (``None``: never). :attr:`Server.active_at`
  is when Nova said ACTIVE.
- Deleting a server shuts its host down and frees its port. :meth:`NspawnCloud.rebuild` is
  ``openstack server rebuild``: the same server (same id, port and address) on a new machine.
"""

from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from tests.parts.nspawn import NspawnHost, NspawnLab

IMAGE = "openstack:images/getImage:getImage"
PORT = "openstack:networking/port:Port"
FIP = "openstack:networking/floatingIp:FloatingIp"
SERVER = "openstack:compute/instance:Instance"


class CloudError(RuntimeError):
    """What the cloud API answers to a request it refuses."""


@dataclass
class Server:
    name: str
    id: str
    port: str
    address: str
    host: NspawnHost
    active_at: float  # time.time() when the create call returned ACTIVE
    image_id: str = ""


@dataclass
class NspawnCloud:
    lab: NspawnLab
    sshd_delay_s: float | None = 0.0
    servers: dict[str, Server] = field(default_factory=dict)  # by server id
    gone: list[Server] = field(default_factory=list)  # deleted servers, oldest first
    ports: dict[str, str] = field(default_factory=dict)  # port id -> address
    images: dict[str, list[str]] = field(default_factory=dict)  # name -> ids, oldest first
    gives_addresses = frozenset({PORT, FIP, SERVER})
    _lock: threading.Lock = field(default_factory=threading.Lock)

    # -- invokes ---------------------------------------------------------------------------

    def call(self, token: str, args: dict[str, Any]) -> dict[str, Any] | None:
        if token != IMAGE:
            return None
        name = str(args.get("name"))
        with self._lock:
            ids = self.images.setdefault(name, [f"img-{uuid.uuid4().hex[:12]}"])
            return {**args, "id": ids[-1], "name": name}

    def publish_image(self, name: str) -> str:
        """A newer image under ``name`` (what ``most_recent=True`` finds next); its id."""
        new = f"img-{uuid.uuid4().hex[:12]}"
        with self._lock:
            self.images.setdefault(name, []).append(new)
        return new

    # -- resources ---------------------------------------------------------------------------

    def create(
        self, typ: str, name: str, inputs: dict[str, Any], outs: dict[str, Any], rid: str = ""
    ) -> None:
        if typ == PORT:
            address = self.lab.reserve_address()
            with self._lock:
                self.ports[rid] = address
            outs["allFixedIps"] = [address]
        elif typ == FIP:
            outs["address"] = self._port_address(str(inputs.get("portId")), name)
        elif typ == SERVER:
            port = str((inputs.get("networks") or [{}])[0].get("port"))
            address = self._port_address(port, name)
            with self._lock:
                holder = next((s for s in self.servers.values() if s.port == port), None)
                if holder is not None:
                    raise CloudError(
                        f"Nova: Port {port} is still in use by server {holder.name} "
                        f"({holder.id}) (HTTP 409 PortInUse)"
                    )
            host = self.lab.start_host(
                address=address, sshd_delay_s=self.sshd_delay_s, hostname=name
            )
            server = Server(name, rid, port, address, host, time.time(), inputs.get("imageId", ""))
            with self._lock:
                self.servers[rid] = server
            outs["accessIpV4"] = address

    def delete(self, res: Any) -> None:
        if res.typ == SERVER:
            with self._lock:
                server = self.servers.pop(res.id, None)
            if server is not None:
                self.lab.stop([server.host])
                self.gone.append(server)
        elif res.typ == PORT:
            with self._lock:
                self.ports.pop(res.id, None)

    def rebuild(self, server_id: str) -> Server:
        """``openstack server rebuild``: the same server on a new machine (a fresh disk, a new
        machine id); returns at once, while the host boots."""
        old = self.servers[server_id]
        self.lab.stop([old.host])
        host = self.lab.start_host(
            address=old.address, sshd_delay_s=self.sshd_delay_s, hostname=old.name
        )
        new = Server(old.name, old.id, old.port, old.address, host, time.time(), old.image_id)
        with self._lock:
            self.servers[server_id] = new
        return new

    def by_name(self, name: str) -> Server:
        return next(s for s in self.servers.values() if s.name == name)

    def _port_address(self, port: str, what: str) -> str:
        with self._lock:
            address = self.ports.get(port)
        if address is None:
            raise CloudError(f"Neutron: {what}: port {port} not found (HTTP 404)")
        return address
