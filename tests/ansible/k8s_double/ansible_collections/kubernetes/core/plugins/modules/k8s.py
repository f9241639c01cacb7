#!/usr/bin/python
"""Test double of kubernetes.core.k8s: state=present of one Job from ``src`` (README.md)."""

from __future__ import annotations

import json
import os

import yaml
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.api import api_dir, job_path


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"default": "present", "choices": ["present"]},
            "src": {"type": "path", "required": True},
            "kubeconfig": {"type": "path", "required": True},
        }
    )
    api = api_dir(module)
    try:
        with open(module.params["src"], encoding="utf-8") as f:
            job = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as e:
        module.fail_json(msg=f"Error loading {module.params['src']}: {e}")
    if job.get("apiVersion") != "batch/v1" or job.get("kind") != "Job":
        module.fail_json(msg=f"the double creates batch/v1 Jobs only, not {job.get('kind')}")
    meta = job["metadata"]
    path = job_path(api, meta["namespace"], meta["name"])
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(job, f)
    module.exit_json(changed=True, result=job)


if __name__ == "__main__":
    main()
