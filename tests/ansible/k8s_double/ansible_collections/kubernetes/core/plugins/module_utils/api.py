"""The double's API: a directory that stands for one cluster's API server (README.md).

No friendlier than the API it stands for: a namespaced object in a namespace that does not
exist is refused (404 ``namespaces "<ns>" not found``), a Job's pod pulls its image from the
test registry (``$GPULAB_TEST_REGISTRY``, the registry double ``bin/docker`` pushes to) and
stays ``Pending`` with ``ErrImagePull`` when the image is not there or the pull secret's
credentials are not the registry's, as a kubelet does (the Job never fails by itself), and a
kubeconfig whose CA is not the cluster's or whose client certificate that CA did not sign is
refused (401), when the cluster has a CA (``<api>/ca.pem``).
"""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import yaml
from ansible.module_utils.basic import AnsibleModule

# The namespaces every cluster starts with.
BUILTIN_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
CLUSTER_SCOPED = ("Namespace", "Node", "RuntimeClass")
PULL_ERRORS = ("ErrImagePull", "ImagePullBackOff")


def _load_kubeconfig(module: AnsibleModule) -> dict[str, Any]:
    try:
        with open(module.params["kubeconfig"], encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        cfg["clusters"][0]["cluster"]["server"]
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError) as e:
        module.fail_json(msg=f"Failed to load kubeconfig due to {e}")
    return dict(cfg)


def _check_credentials(module: AnsibleModule, api: str, cfg: dict[str, Any]) -> None:
    """As the API server's TLS does: the kubeconfig's CA is the cluster's, and the cluster's
    CA signed its client certificate."""
    ca_file = os.path.join(api, "ca.pem")
    if not os.path.exists(ca_file):
        return
    from cryptography import x509

    with open(ca_file, "rb") as f:
        ca = x509.load_pem_x509_certificate(f.read())
    try:
        cluster = cfg["clusters"][0]["cluster"]
        theirs = x509.load_pem_x509_certificate(
            base64.b64decode(cluster["certificate-authority-data"])
        )
        user = cfg["users"][0]["user"]
        cert = x509.load_pem_x509_certificate(base64.b64decode(user["client-certificate-data"]))
        if theirs != ca:
            raise ValueError("certificate signed by unknown authority")
        cert.verify_directly_issued_by(ca)
    except Exception as e:
        module.fail_json(msg=f"Unauthorized: the API refused the kubeconfig's credentials ({e})")


def api_dir(module: AnsibleModule) -> str:
    """The directory the kubeconfig's server names, read as the calling user: ``file:///dir``,
    or ``https://host:port`` -> ``$GPULAB_TEST_K8S/<host>_<port>``."""
    cfg = _load_kubeconfig(module)
    server = str(cfg["clusters"][0]["cluster"]["server"])
    if server.startswith("file://"):
        api = server.removeprefix("file://")
    elif server.startswith("https://") and os.environ.get("GPULAB_TEST_K8S"):
        hostport = server.removeprefix("https://").rstrip("/").replace(":", "_")
        api = os.path.join(os.environ["GPULAB_TEST_K8S"], hostport)
    else:
        module.fail_json(msg=f"Failed to connect to {server}: no cluster answers there")
    if not os.path.isdir(api):
        module.fail_json(msg=f"Failed to connect to {server}: no cluster answers there")
    _check_credentials(module, api, cfg)
    return api


def namespace_exists(api: str, namespace: str) -> bool:
    return namespace in BUILTIN_NAMESPACES or os.path.exists(
        os.path.join(api, "namespaces", namespace)
    )


def require_namespace(module: AnsibleModule, api: str, namespace: str) -> None:
    if not namespace_exists(api, namespace):
        module.fail_json(
            msg=f'Failed to create object: b\'{{"kind":"Status","status":"Failure",'
            f'"message":"namespaces \\"{namespace}\\" not found","reason":"NotFound",'
            f'"code":404}}\'',
            status=404,
            reason="Not Found",
        )


def object_path(api: str, kind: str, namespace: str | None, name: str) -> str:
    """Where the double keeps an object (Jobs where the first double kept them)."""
    if kind == "Job":
        return job_path(api, namespace or "default", name)
    return os.path.join(api, "objects", kind, namespace or "_", name + ".json")


def job_path(api: str, namespace: str, name: str) -> str:
    return os.path.join(api, "jobs", namespace, name + ".json")


def read_json(path: str, default: Any = None) -> Any:
    if not os.path.exists(path):
        return default
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def write_json(path: str, data: Any) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)


# ---- the test registry (the kubelet's pull) ----------------------------------------------


def registry_dir() -> str | None:
    return os.environ.get("GPULAB_TEST_REGISTRY")


def _pull_credentials(api: str, namespace: str, job: dict[str, Any], host: str) -> Any:
    for ref in job["spec"]["template"]["spec"].get("imagePullSecrets") or []:
        secret = read_json(object_path(api, "Secret", namespace, ref["name"]))
        if not secret:
            continue
        raw = secret.get("data", {}).get(".dockerconfigjson", "")
        auths = json.loads(base64.b64decode(raw)).get("auths", {})
        if host in auths:
            return auths[host]
    return None


def pull_error(api: str, namespace: str, job: dict[str, Any]) -> str | None:
    """Why the kubelet cannot pull the Job's image (None when it can)."""
    image = job["spec"]["template"]["spec"]["containers"][0]["image"]
    host = image.split("/")[0]
    reg = registry_dir()
    registries = read_json(os.path.join(reg, "registries.json"), {}) if reg else {}
    if host not in registries:
        return f'failed to resolve reference "{image}": dial tcp: lookup {host}: no such host'
    users = registries[host].get("users")
    if users is not None:
        creds = _pull_credentials(api, namespace, job, host)
        if not creds or users.get(creds.get("username")) != creds.get("password"):
            return (
                f'failed to authorize: failed to fetch anonymous token: "{image}": 401 Unauthorized'
            )
    if not os.path.exists(os.path.join(reg or "", "images", image.replace("/", "%2F"))):
        return f'failed to resolve reference "{image}": {image}: not found'
    return None


def pod_of(api: str, namespace: str, name: str) -> dict[str, Any] | None:
    """The Job's pod as the API lists it: Pending with ErrImagePull when its image cannot be
    pulled, else Succeeded or Failed as ``<api>/outcome`` says; None without a Job or when no
    node has a GPU for it (the scheduler leaves it Pending: no container status)."""
    job = read_json(job_path(api, namespace, name))
    if job is None:
        return None
    meta = {"name": f"{name}-x7k2p", "namespace": namespace, "labels": {"job-name": name}}
    error = pull_error(api, namespace, job)
    if error is not None:
        state = {"waiting": {"reason": "ErrImagePull", "message": error}}
        status = {"phase": "Pending", "containerStatuses": [{"name": "workloads", "state": state}]}
        return {"kind": "Pod", "metadata": meta, "status": status}
    with open(os.path.join(api, "outcome"), encoding="utf-8") as f:
        outcome = f.read().strip()
    phase = "Succeeded" if outcome == "succeeded" else "Failed"
    code = 0 if phase == "Succeeded" else 1
    state = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0 else "Error"}}
    status = {"phase": phase, "containerStatuses": [{"name": "workloads", "state": state}]}
    return {"kind": "Pod", "metadata": meta, "status": status}


def job_status(api: str, namespace: str, name: str) -> dict[str, int]:
    pod = pod_of(api, namespace, name)
    phase = (pod or {}).get("status", {}).get("phase")
    if phase == "Succeeded":
        return {"succeeded": 1}
    if phase == "Failed":
        return {"failed": 1}
    return {"active": 1}
