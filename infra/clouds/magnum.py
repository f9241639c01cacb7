"""A Magnum cluster's kubeconfig from Magnum's API, as ``openstack coe cluster config`` makes it.

The kubeconfig names the cluster's API (``api_address``), its CA (``GET /v1/certificates/
<cluster>``) and an ``admin`` client certificate (organization ``system:masters``) signed by
that CA through Magnum's certificate API (``POST /v1/certificates`` with a CSR whose key never
leaves this machine). Used by the ``MagnumKubeconfig`` dynamic resource
(:mod:`infra.topologies.magnum_k8s.kubeconfig`), which ``gpulab up`` runs.

The file is written whole, 0600, in a 0700 directory (:func:`write_kubeconfig`); its default
place is ``~/.kube/gpulab-<stack>.yaml`` (:func:`kubeconfig_path`), never the operator's
``~/.kube/config`` or ``$KUBECONFIG``.

Every failure is a :class:`KubeconfigError`: one line naming the cluster and the step (find
the cluster, read its CA, sign the client certificate, write the file), with no credential.
"""

from __future__ import annotations

import base64
import os
import re
from pathlib import Path
from typing import Any

import yaml

from infra.clouds import CloudError
from infra.clouds.openstack import describe_error

# Magnum's statuses of a cluster whose API answers (a finished create, update, resize...).
READY_SUFFIX = "_COMPLETE"
CLIENT_CN = "admin"
CLIENT_ORG = "system:masters"  # what `openstack coe cluster config` asks for
STACK_FILE_RE = re.compile(r"[^A-Za-z0-9_.-]")

Connection = Any  # openstack.connection.Connection, or one made against a test API


class KubeconfigError(CloudError):
    """The kubeconfig of a cluster could not be made: one line naming the cluster and step."""

    def __init__(self, cluster: str, step: str, reason: str) -> None:
        super().__init__(f"cluster {cluster}: kubeconfig: {step}: {reason}")
        self.cluster, self.step = cluster, step


def kubeconfig_path(stack: str, home: str | os.PathLike[str] | None = None) -> Path:
    """``~/.kube/gpulab-<stack>.yaml``: where a stack's kubeconfig is written."""
    base = Path(home) if home is not None else Path.home()
    return base / ".kube" / f"gpulab-{STACK_FILE_RE.sub('_', stack)}.yaml"


def _call(cluster: str, step: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
    from openstack import exceptions as sdk

    try:
        return fn(*args, **kwargs)
    except CloudError:
        raise
    except sdk.NotFoundException:
        raise KubeconfigError(cluster, step, "Magnum has no such cluster") from None
    except Exception as exc:
        raise KubeconfigError(cluster, step, describe_error("Magnum", exc)) from None


def csr_and_key(cn: str = CLIENT_CN, org: str = CLIENT_ORG) -> tuple[str, bytes]:
    """A new RSA key and a CSR for it (PEM): the request Magnum signs, the key that stays."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, cn),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, org),
        ]
    )
    csr = x509.CertificateSigningRequestBuilder().subject_name(subject).sign(key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    return csr.public_bytes(serialization.Encoding.PEM).decode(), key_pem


def check_signed(ca_pem: str, cert_pem: str, key_pem: bytes) -> str | None:
    """Why ``cert_pem`` is not a client certificate of ``key_pem`` signed by ``ca_pem`` (None
    when it is)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    try:
        ca = x509.load_pem_x509_certificate(ca_pem.encode())
        cert = x509.load_pem_x509_certificate(cert_pem.encode())
    except ValueError as exc:
        return f"not a PEM certificate ({exc})"
    key = serialization.load_pem_private_key(key_pem, password=None)
    if cert.public_key().public_numbers() != key.public_key().public_numbers():  # type: ignore[union-attr]
        return "the signed certificate is not for the key of the request"
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError) as exc:
        return f"the signed certificate is not issued by the cluster's CA ({exc})"
    except Exception as exc:  # cryptography's InvalidSignature
        return f"the signed certificate does not verify against the cluster's CA ({exc!r})"
    return None


def _b64(data: str | bytes) -> str:
    return base64.b64encode(data.encode() if isinstance(data, str) else data).decode()


def render_kubeconfig(name: str, server: str, ca_pem: str, cert_pem: str, key_pem: bytes) -> str:
    """The kubeconfig text ``openstack coe cluster config`` writes (certificates inline)."""
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": name,
                "cluster": {"server": server, "certificate-authority-data": _b64(ca_pem)},
            }
        ],
        "users": [
            {
                "name": CLIENT_CN,
                "user": {
                    "client-certificate-data": _b64(cert_pem),
                    "client-key-data": _b64(key_pem),
                },
            }
        ],
        "contexts": [{"name": "default", "context": {"cluster": name, "user": CLIENT_CN}}],
        "current-context": "default",
        "preferences": {},
    }
    return yaml.safe_dump(config, sort_keys=False)


def cluster_kubeconfig(conn: Connection, cluster: str) -> tuple[str, str]:
    """(kubeconfig text, API address) of ``cluster`` (a name or UUID) through Magnum's API."""
    coe = conn.container_infrastructure_management
    found = _call(cluster, "find the cluster", coe.find_cluster, cluster, ignore_missing=False)
    name = str(found.name or cluster)
    status = str(found.status or "")
    if not status.endswith(READY_SUFFIX) or status.startswith("DELETE"):
        raise KubeconfigError(
            name, "find the cluster", f"status {status or 'unknown'}, not *{READY_SUFFIX}"
        )
    if not found.api_address:
        raise KubeconfigError(name, "find the cluster", "Magnum reports no api_address yet")
    uuid = str(getattr(found, "uuid", None) or found.id)
    ca = _call(name, "read the CA", coe.get_cluster_certificate, uuid)
    if not ca.pem:
        raise KubeconfigError(name, "read the CA", "Magnum returned no CA certificate")
    csr, key = csr_and_key()
    signed = _call(
        name, "sign the client certificate", coe.create_cluster_certificate, cluster_uuid=uuid,
        csr=csr,
    )  # fmt: skip
    problem = check_signed(str(ca.pem), str(signed.pem or ""), key)
    if problem:
        raise KubeconfigError(name, "sign the client certificate", problem)
    text = render_kubeconfig(name, str(found.api_address), str(ca.pem), str(signed.pem), key)
    return text, str(found.api_address)


def write_kubeconfig(path: str | os.PathLike[str], text: str, cluster: str) -> Path:
    """Write ``text`` to ``path`` whole, 0600, its directory 0700 if this makes it."""
    from workloads import files

    target = Path(path)
    try:
        if not target.parent.exists():
            target.parent.mkdir(mode=0o700, parents=True)
        files.write_text(target, text, mode=0o600)
    except (OSError, files.OutputError) as exc:
        raise KubeconfigError(cluster, "write the file", str(exc)) from None
    return target


def fetch_kubeconfig(conn: Connection, cluster: str, path: str | os.PathLike[str]) -> str:
    """Fetch ``cluster``'s kubeconfig into ``path``; returns its API address."""
    text, api = cluster_kubeconfig(conn, cluster)
    write_kubeconfig(path, text, cluster)
    return api
