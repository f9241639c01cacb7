"""The kubeconfig of a Magnum cluster from Magnum's API (infra.clouds.magnum), against a mocked
Magnum API (tests/cloud/magnum_api.py: Magnum cannot run here) spoken to by the real
openstacksdk over HTTP."""

from __future__ import annotations

import base64
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cryptography import x509

from infra.clouds import magnum
from tests.cloud.magnum_api import Cluster, MagnumAPI, serve


@pytest.fixture
def api() -> Iterator[MagnumAPI]:
    with serve(MagnumAPI()) as running:
        running.add(Cluster("0c6f-uuid", "k8s-lab-k8s", api_address="https://192.0.2.10:6443"))
        yield running


def test_mocked_magnum_kubeconfig_has_the_ca_and_a_client_cert_it_signed(
    api: MagnumAPI, tmp_path: Path
) -> None:
    path = tmp_path / "home" / ".kube" / "gpulab-k8s-lab.yaml"
    server = magnum.fetch_kubeconfig(api.connection(), "k8s-lab-k8s", path)
    assert server == "https://192.0.2.10:6443"
    # the file and the directory it made are the operator's alone
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    cfg = yaml.safe_load(path.read_text())
    [cluster] = cfg["clusters"]
    assert cluster["cluster"]["server"] == "https://192.0.2.10:6443"
    ca = x509.load_pem_x509_certificate(
        base64.b64decode(cluster["cluster"]["certificate-authority-data"])
    )
    [user] = cfg["users"]
    cert = x509.load_pem_x509_certificate(base64.b64decode(user["user"]["client-certificate-data"]))
    cert.verify_directly_issued_by(ca)  # raises unless the cluster's CA signed it
    assert ca == api.clusters["0c6f-uuid"].ca.cert
    subject = {a.oid._name: a.value for a in cert.subject}
    assert subject == {"commonName": "admin", "organizationName": "system:masters"}
    assert base64.b64decode(user["user"]["client-key-data"]).startswith(b"-----BEGIN RSA")
    # by name, then the CA and the signature by the cluster's UUID (what the client sends)
    assert api.requests == [
        "GET /v1",
        "GET /v1/clusters/k8s-lab-k8s",
        "GET /v1/certificates/0c6f-uuid",
        "POST /v1/certificates",
    ]


def test_mocked_magnum_cluster_that_is_not_ready_is_one_line(api: MagnumAPI) -> None:
    api.clusters["0c6f-uuid"].status = "CREATE_IN_PROGRESS"
    with pytest.raises(magnum.KubeconfigError) as exc:
        magnum.cluster_kubeconfig(api.connection(), "k8s-lab-k8s")
    assert str(exc.value) == (
        "cluster k8s-lab-k8s: kubeconfig: find the cluster: status CREATE_IN_PROGRESS, "
        "not *_COMPLETE"
    )


def test_mocked_magnum_unknown_cluster_is_one_line(api: MagnumAPI) -> None:
    with pytest.raises(magnum.KubeconfigError) as exc:
        magnum.cluster_kubeconfig(api.connection(), "k8s-other")
    assert str(exc.value) == (
        "cluster k8s-other: kubeconfig: find the cluster: Magnum has no such cluster"
    )


def test_mocked_magnum_refused_signature_names_cluster_and_step(api: MagnumAPI) -> None:
    api.refuse_sign = True
    with pytest.raises(magnum.KubeconfigError) as exc:
        magnum.cluster_kubeconfig(api.connection(), "k8s-lab-k8s")
    msg = str(exc.value)
    assert msg.startswith("cluster k8s-lab-k8s: kubeconfig: sign the client certificate: ")
    assert "permission denied" in msg and "\n" not in msg


def test_mocked_magnum_certificate_from_another_ca_is_refused(api: MagnumAPI) -> None:
    api.sign_with_other_ca = True
    with pytest.raises(magnum.KubeconfigError) as exc:
        magnum.cluster_kubeconfig(api.connection(), "k8s-lab-k8s")
    assert "not issued by the cluster's CA" in str(exc.value) or "does not verify" in str(exc.value)


def test_kubeconfig_path_is_never_the_operators_default(tmp_path: Path) -> None:
    p = magnum.kubeconfig_path("dev/lab 1", home=tmp_path)
    assert p == tmp_path / ".kube" / "gpulab-dev_lab_1.yaml"
    assert p.name != "config"


def test_mocked_magnum_kubeconfig_resource_writes_refetches_a_lost_file_and_removes_it(
    api: MagnumAPI, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The MagnumKubeconfig provider as ``gpulab up``/``down`` drive it, connecting through a
    clouds.yaml as a user's would: the file lands at ~/.kube/gpulab-<stack>.yaml (0600); a file
    that is gone is fetched again by the next up (diff sees it); down removes it."""
    from infra.topologies.magnum_k8s.kubeconfig import MagnumKubeconfigProvider

    clouds = tmp_path / "clouds.yaml"
    clouds.write_text(
        yaml.safe_dump(
            {
                "clouds": {
                    "lab": {
                        "auth_type": "none",
                        "auth": {"endpoint": api.endpoint},
                        "container_infrastructure_management_endpoint_override": api.endpoint,
                    }
                }
            }
        )
    )
    monkeypatch.setenv("OS_CLIENT_CONFIG_FILE", str(clouds))
    path = magnum.kubeconfig_path("k8s-lab", home=tmp_path / "home")
    props = {"cluster": "0c6f-uuid", "path": str(path), "os_cloud": "lab", "os_password": None}
    provider = MagnumKubeconfigProvider()
    created = provider.create(dict(props))
    outs = created.outs
    assert outs is not None and outs["api_address"] == "https://192.0.2.10:6443"
    assert path.read_text() == outs["kubeconfig"] and "client-key-data" in outs["kubeconfig"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert provider.diff(created.id, outs, dict(props)).changes is False
    path.unlink()  # lost (or another machine's home): the next up fetches it again
    assert provider.diff(created.id, outs, dict(props)).changes is True
    updated = provider.update(created.id, outs, dict(props)).outs
    assert updated is not None and yaml.safe_load(path.read_text())["clusters"]
    provider.delete(created.id, updated)
    assert not path.exists()
