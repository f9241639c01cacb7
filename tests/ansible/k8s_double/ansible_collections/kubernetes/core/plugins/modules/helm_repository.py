#!/usr/bin/python
"""Test double of kubernetes.core.helm_repository: only the chart repositories NVIDIA
publishes (module_utils/charts.py) can be added; it needs no cluster (as helm repo add)."""

from __future__ import annotations

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.api import read_json, write_json
from ansible_collections.kubernetes.core.plugins.module_utils.charts import REPOS, repo_config


def main() -> None:
    module = AnsibleModule(
        argument_spec={"name": {"required": True}, "repo_url": {"required": True}}
    )
    url = module.params["repo_url"].rstrip("/")
    if url not in REPOS:
        module.fail_json(
            msg=f'Error: looks like "{url}" is not a valid chart repository or cannot be reached'
        )
    path = repo_config()
    repos = read_json(path, {})
    changed = repos.get(module.params["name"]) != url
    repos[module.params["name"]] = url
    write_json(path, repos)
    module.exit_json(changed=changed, repo_name=module.params["name"])


if __name__ == "__main__":
    main()
