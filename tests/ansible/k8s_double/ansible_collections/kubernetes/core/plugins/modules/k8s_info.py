#!/usr/bin/python
"""Test double of kubernetes.core.k8s_info for kind Job (README.md): the created Job with the
status the test wrote to <api>/outcome (succeeded or failed)."""

from __future__ import annotations

import json
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.api import (
    JOB_ARGS,
    api_dir,
    job_path,
)


def main() -> None:
    module = AnsibleModule(argument_spec=dict(JOB_ARGS), supports_check_mode=True)
    api = api_dir(module)
    p = module.params
    path = job_path(api, p["namespace"], p["name"])
    if not os.path.exists(path):
        module.exit_json(changed=False, api_found=True, resources=[])
    with open(path, encoding="utf-8") as f:
        job = json.load(f)
    with open(os.path.join(api, "outcome"), encoding="utf-8") as f:
        job["status"] = {f.read().strip(): 1}
    module.exit_json(changed=False, api_found=True, resources=[job])


if __name__ == "__main__":
    main()
