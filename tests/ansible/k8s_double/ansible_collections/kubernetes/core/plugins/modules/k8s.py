#!/usr/bin/python
"""Test double of kubernetes.core.k8s: state=present of a Namespace, Secret, RuntimeClass or
Job, from ``src`` or ``definition`` (README.md); a namespaced object in a namespace that does
not exist is refused as the API refuses it."""

from __future__ import annotations

import os

import yaml
from ansible.module_utils.basic import AnsibleModule
from ansible_collections.kubernetes.core.plugins.module_utils.api import (
    CLUSTER_SCOPED,
    api_dir,
    object_path,
    read_json,
    require_namespace,
    write_json,
)

KINDS = {"Namespace": "v1", "Secret": "v1", "RuntimeClass": "node.k8s.io/v1", "Job": "batch/v1"}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "state": {"default": "present", "choices": ["present"]},
            "src": {"type": "path"},
            "definition": {"type": "raw"},
            "kubeconfig": {"type": "path", "required": True},
        },
        required_one_of=[("src", "definition")],
    )
    api = api_dir(module)
    obj = module.params["definition"]
    if module.params["src"]:
        try:
            with open(module.params["src"], encoding="utf-8") as f:
                obj = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            module.fail_json(msg=f"Error loading {module.params['src']}: {e}")
    if isinstance(obj, str):
        obj = yaml.safe_load(obj)
    kind = obj.get("kind")
    if KINDS.get(kind) != obj.get("apiVersion"):
        module.fail_json(
            msg=f"the double knows {sorted(KINDS)} only, not {obj.get('apiVersion')} {kind}"
        )
    meta = obj["metadata"]
    namespace = None if kind in CLUSTER_SCOPED else (meta.get("namespace") or "default")
    if namespace is not None:
        require_namespace(module, api, namespace)
    path = object_path(api, kind, namespace, meta["name"])
    changed = read_json(path) != obj
    if changed and kind == "Job" and os.path.exists(path):
        module.fail_json(
            msg=f'Job.batch "{meta["name"]}" is invalid: spec.template: field is immutable'
        )
    write_json(path, obj)
    if kind == "Namespace":
        os.makedirs(os.path.join(api, "namespaces"), exist_ok=True)
        open(os.path.join(api, "namespaces", meta["name"]), "w").close()
    shown = dict(obj)
    if kind == "Secret":
        shown["data"] = {k: "VALUE_SPECIFIED_IN_NO_LOG_PARAMETER" for k in obj.get("data", {})}
    module.exit_json(changed=changed, result=shown)


if __name__ == "__main__":
    main()
