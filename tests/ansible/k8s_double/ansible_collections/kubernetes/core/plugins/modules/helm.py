#!/usr/bin/python
"""Test double of kubernetes.core.helm: installs a chart of an added repository at a version
that repository publishes (module_utils/charts.py), reading the values files; the namespace
must exist unless create_namespace. A GPU chart makes the nodes' GPUs allocatable."""

from __future__ import annotations

import os

import yaml
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.api import (
    api_dir,
    namespace_exists,
    read_json,
    require_namespace,
    write_json,
)
from ansible_collections.kubernetes.core.plugins.module_utils.charts import REPOS, repo_config


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "name": {"required": True},
            "chart_ref": {"required": True},
            "chart_version": {},
            "release_namespace": {"required": True},
            "create_namespace": {"type": "bool", "default": False},
            "kubeconfig": {"type": "path", "required": True},
            "values_files": {"type": "list", "elements": "str", "default": []},
            "wait": {"type": "bool", "default": False},
        }
    )
    p = module.params
    api = api_dir(module)
    repo, _, chart = p["chart_ref"].partition("/")
    url = read_json(repo_config(), {}).get(repo)
    if url is None:
        module.fail_json(msg=f"Error: repo {repo} not found")
    versions = REPOS[url].get(chart)
    if versions is None or (p["chart_version"] and p["chart_version"] not in versions):
        module.fail_json(
            msg=f'Error: chart "{chart}" version "{p["chart_version"]}" not found in {url} '
            "repository"
        )
    values = {}
    for vf in p["values_files"]:
        try:
            with open(vf, encoding="utf-8") as f:
                values.update(yaml.safe_load(f) or {})
        except (OSError, yaml.YAMLError) as e:
            module.fail_json(msg=f"Error: failed to parse {vf}: {e}")
    ns = p["release_namespace"]
    if p["create_namespace"] and not namespace_exists(api, ns):
        os.makedirs(os.path.join(api, "namespaces"), exist_ok=True)
        open(os.path.join(api, "namespaces", ns), "w").close()
    require_namespace(module, api, ns)
    release = {
        "name": p["name"],
        "chart": p["chart_ref"],
        "version": p["chart_version"],
        "values": values,
    }
    path = os.path.join(api, "helm", "releases", ns, p["name"] + ".json")
    changed = read_json(path) != release
    write_json(path, release)
    open(os.path.join(api, "gpu_stack"), "w").close()
    module.exit_json(
        changed=changed, status={"status": "deployed", "chart": f"{chart}-{p['chart_version']}"}
    )


if __name__ == "__main__":
    main()
