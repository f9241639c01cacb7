#!/usr/bin/python
"""Test double of kubernetes.core.k8s_log for kind Job (README.md): <api>/pod.log of a created
Job; a Job that was not created fails as the API's 404 does."""

from __future__ import annotations

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
    if not os.path.exists(job_path(api, p["namespace"], p["name"])):
        module.fail_json(msg=f'jobs.batch "{p["name"]}" not found')
    with open(os.path.join(api, "pod.log"), encoding="utf-8") as f:
        log = f.read()
    module.exit_json(changed=False, log=log, log_lines=log.splitlines())


if __name__ == "__main__":
    main()
