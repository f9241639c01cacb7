#!/usr/bin/python
"""Test double of kubernetes.core.k8s_log for kind Job (README.md): <api>/pod.log of a Job
whose pod ran (``{run_id}`` in it: the Job's run id); a Job that was not created fails as the
API's 404 does, a pod that never started (its image not pulled) as the API's 400 does."""

from __future__ import annotations

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.api import (
    api_dir,
    job_path,
    pod_of,
    read_json,
)


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "kind": {"required": True, "choices": ["Job"]},
            "name": {"required": True},
            "namespace": {"required": True},
            "kubeconfig": {"type": "path", "required": True},
        },
        supports_check_mode=True,
    )
    api = api_dir(module)
    p = module.params
    if not os.path.exists(job_path(api, p["namespace"], p["name"])):
        module.fail_json(msg=f'jobs.batch "{p["name"]}" not found')
    pod = pod_of(api, p["namespace"], p["name"]) or {}
    if pod.get("status", {}).get("phase") == "Pending":
        module.fail_json(
            msg=f'container "workloads" in pod "{pod["metadata"]["name"]}" is waiting to start: '
            "trying and failing to pull image"
        )
    with open(os.path.join(api, "pod.log"), encoding="utf-8") as f:
        log = f.read()
    # the test writes the log before the run id exists: {run_id} is the Job's label
    job = read_json(job_path(api, p["namespace"], p["name"]))
    log = log.replace("{run_id}", job["metadata"]["labels"].get("gpulab/run-id", ""))
    module.exit_json(changed=False, log=log, log_lines=log.splitlines())


if __name__ == "__main__":
    main()
