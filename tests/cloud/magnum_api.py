"""A double of Magnum's REST API (Magnum cannot run here), served over HTTP on 127.0.0.1 so
the real openstacksdk talks to it: version discovery (``/`` and ``/v1``), ``GET
/v1/clusters/<uuid or name>``, ``GET /v1/certificates/<cluster uuid>`` (the cluster's CA) and
``POST /v1/certificates`` (sign a CSR with that CA, as Magnum's conductor does).

No friendlier than Magnum: an unknown cluster is a 404, a body that is not a CSR a 400, a
cluster whose certificate is asked before it exists a 404; ``refuse_sign`` answers the POST
with 403 (a project whose role lacks it), ``sign_with_other_ca`` signs with a CA that is not
the cluster's (what a client must catch).
"""

from __future__ import annotations

import datetime
import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID


@dataclass
class CA:
    """A cluster CA: key and self-signed certificate."""

    key: rsa.RSAPrivateKey
    cert: x509.Certificate

    @classmethod
    def new(cls, name: str) -> CA:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=3650))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256())
        )
        return cls(key, cert)

    @property
    def pem(self) -> str:
        return self.cert.public_bytes(serialization.Encoding.PEM).decode()

    def sign(self, csr: x509.CertificateSigningRequest) -> str:
        now = datetime.datetime.now(datetime.UTC)
        cert = (
            x509.CertificateBuilder()
            .subject_name(csr.subject)
            .issuer_name(self.cert.subject)
            .public_key(csr.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=365))
            .add_extension(
                x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False
            )
            .sign(self.key, hashes.SHA256())
        )
        return cert.public_bytes(serialization.Encoding.PEM).decode()


@dataclass
class Cluster:
    uuid: str
    name: str
    status: str = "CREATE_COMPLETE"
    api_address: str | None = "https://127.0.0.1:6443"
    ca: CA = field(default_factory=lambda: CA.new("kubernetes"))


@dataclass
class MagnumAPI:
    clusters: dict[str, Cluster] = field(default_factory=dict)
    refuse_sign: bool = False
    sign_with_other_ca: bool = False
    requests: list[str] = field(default_factory=list)
    port: int = 0

    def add(self, cluster: Cluster) -> Cluster:
        self.clusters[cluster.uuid] = cluster
        return cluster

    def find(self, ident: str) -> Cluster | None:
        return self.clusters.get(ident) or next(
            (c for c in self.clusters.values() if c.name == ident), None
        )

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def connection(self) -> Any:
        """A real openstacksdk connection to this API (no Keystone: auth_type none)."""
        import openstack

        return openstack.connect(
            auth_type="none",
            auth={"endpoint": self.endpoint},
            container_infrastructure_management_endpoint_override=self.endpoint,
            load_yaml_config=False,
            load_envvars=False,
        )


def _handler(api: MagnumAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *_args: Any) -> None:
            api.requests.append(f"{self.command} {self.path}")

        def _send(self, code: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _error(self, code: int, detail: str) -> None:
            self._send(code, {"errors": [{"status": code, "title": detail, "detail": detail}]})

        def do_GET(self) -> None:
            base = f"http://127.0.0.1:{api.port}"
            path = self.path.rstrip("/")
            version = {
                "id": "v1",
                "status": "CURRENT",
                "min_version": "1.1",
                "max_version": "1.11",
                "links": [{"href": f"{base}/v1/", "rel": "self"}],
            }
            if path == "":
                return self._send(200, {"versions": [version]})
            if path == "/v1":
                return self._send(200, version)
            parts = path.split("/")
            if len(parts) == 4 and parts[2] == "clusters":
                c = api.find(parts[3])
                if c is None:
                    return self._error(404, f"Cluster {parts[3]} could not be found.")
                return self._send(
                    200,
                    {
                        "uuid": c.uuid,
                        "name": c.name,
                        "status": c.status,
                        "api_address": c.api_address,
                    },
                )
            if len(parts) == 4 and parts[2] == "certificates":
                c = api.clusters.get(parts[3])  # by UUID only, as Magnum's client asks
                if c is None:
                    return self._error(404, f"Cluster {parts[3]} could not be found.")
                return self._send(200, {"cluster_uuid": c.uuid, "pem": c.ca.pem})
            return self._error(404, "The resource could not be found.")

        def do_POST(self) -> None:
            if self.path.rstrip("/") != "/v1/certificates":
                return self._error(404, "The resource could not be found.")
            length = int(self.headers.get("Content-Length") or 0)
            try:
                body = json.loads(self.rfile.read(length))
                csr = x509.load_pem_x509_csr(str(body["csr"]).encode())
            except (ValueError, KeyError, TypeError):
                return self._error(400, "Invalid input for field/attribute csr.")
            c = api.clusters.get(str(body.get("cluster_uuid")))
            if c is None:
                return self._error(404, f"Cluster {body.get('cluster_uuid')} could not be found.")
            if api.refuse_sign:
                return self._error(403, "Policy doesn't allow certificate:create to be performed.")
            ca = CA.new("another") if api.sign_with_other_ca else c.ca
            return self._send(
                201, {"cluster_uuid": c.uuid, "csr": body["csr"], "pem": ca.sign(csr)}
            )

    return Handler


@contextmanager
def serve(api: MagnumAPI) -> Iterator[MagnumAPI]:
    """Serve ``api`` on 127.0.0.1 (a free port) for the block."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(api))
    api.port = server.server_port
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield api
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
