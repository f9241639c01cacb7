#!/usr/bin/python
"""Test double of kubernetes.core.k8s_info (README.md): a created Job with the status its pod
gives it, the Job's pods (label_selectors ``job-name=<job>``), the nodes (``<api>/nodes.json``
with ``nvidia.com/gpu`` allocatable once a GPU chart is installed)."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.api import (
    api_dir,
    job_path,
    job_status,
    pod_of,
    read_json,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "kind": {"required": True, "choices": ["Job", "Pod", "Node"]},
            "name": {},
            "namespace": {},
            "label_selectors": {"type": "list", "elements": "str", "default": []},
            "kubeconfig": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    api = api_dir(module)
    p = module.params
    if p["kind"] == "Node":
        gpus = os.path.exists(os.path.join(api, "gpu_stack"))
        nodes = [
            {
                "kind": "Node",
                "metadata": {"name": n["name"]},
                "status": {
                    "allocatable": {
                        "cpu": "8",
                        **({"nvidia.com/gpu": str(n["gpus"])} if gpus else {}),
                    }
                },
            }
            for n in read_json(os.path.join(api, "nodes.json"), [])
        ]
        module.exit_json(changed=False, api_found=True, resources=nodes)
    if p["kind"] == "Pod":
        selectors = dict(s.split("=", 1) for s in p["label_selectors"])
        pod = pod_of(api, p["namespace"], selectors.get("job-name", ""))
        module.exit_json(changed=False, api_found=True, resources=[pod] if pod else [])
    path = job_path(api, p["namespace"], p["name"])
    job = read_json(path)
    if job is None:
        module.exit_json(changed=False, api_found=True, resources=[])
    job["status"] = job_status(api, p["namespace"], p["name"])
    module.exit_json(changed=False, api_found=True, resources=[job])


if __name__ == "__main__":
    main()
