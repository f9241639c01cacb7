"""The double's API: the directory the kubeconfig's ``server: file:///...`` names."""

from __future__ import annotations

import os

import yaml
from ansible.module_utils.basic import AnsibleModule


def api_dir(module: AnsibleModule) -> str:
    """The directory the kubeconfig's server names (file:///...), read as the calling user."""
    try:
        with open(module.params["kubeconfig"], encoding="utf-8") as f:
            cfg = yaml.safe_load(f)
        server = str(cfg["clusters"][0]["cluster"]["server"])
    except (OSError, KeyError, IndexError, TypeError, yaml.YAMLError) as e:
        module.fail_json(msg=f"Failed to load kubeconfig due to {e}")
    if not server.startswith("file://"):
        module.fail_json(msg=f"the double serves file:// APIs only, not {server}")
    return server.removeprefix("file://")


# The arguments the Job reading modules (k8s_info, k8s_log) take in the roles' calls.
JOB_ARGS = {
    "kind": {"required": True, "choices": ["Job"]},
    "name": {"required": True},
    "namespace": {"required": True},
    "kubeconfig": {"type": "path", "required": True},
}


def job_path(api: str, namespace: str, name: str) -> str:
    """Where the double keeps a created Job."""
    return os.path.join(api, "jobs", namespace, name + ".json")
