"""The execution-environment table as Ansible variables, in the files the playbooks read.

- ``playbooks/roles/workload_run/vars/main.yml``: ``workload_run_launchers`` (execution
  environment -> its launch argv template, :func:`workloads.execenv.lab_launch_argv`),
  ``workload_run_job_envs`` (those started as a Kubernetes Job),
  ``workload_run_container_envs``, ``workload_run_root_envs`` (those launched as root, the
  others as the controller's user), ``workload_run_exec_env_aliases`` and
  ``workload_run_exec_env_name`` (the alias resolved). The role flattens a template once (its
  ``--env=NAME`` entry is one expression that renders to a list) and appends the runner's argv.
- ``playbooks/vars/exec_envs.yml``: ``gpulab_exec_env_roles`` (execution environment or alias
  -> the roles that prepare a host for it), ``gpulab_exec_env_role_order`` (every role once,
  in the order site.yml applies them), ``gpulab_exec_env_names`` (name or alias -> the
  name), ``gpulab_exec_env_hosts`` (name or alias -> the inventory pattern its runner starts
  on: ``workloads.yml``'s hosts), ``gpulab_exec_env_become`` (name or alias -> whether
  ``workloads.yml`` becomes root there, :attr:`~workloads.execenv.ExecEnv.launch_needs_root`)
  and ``gpulab_exec_env_validate`` (name -> ``validate.yml``'s
  check argv), read by ``site.yml``, ``workloads.yml`` and ``validate.yml`` through
  ``vars_files``.

``python -m infra.specs.ansible_vars`` writes them; ``tests/specs/test_execenv.py`` fails when a
file differs from the table, so the table stays the one place to edit.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from infra.paths import PROJECT
from workloads import execenv
from workloads.files import make_dirs, write_text

HEADER = (
    "---\n"
    "# Generated from workloads/execenv.py by `python -m infra.specs.ansible_vars`.\n"
    "# Do not edit: change the table, run that command (tests/specs/test_execenv.py checks).\n"
)


def workload_run_vars() -> dict[str, Any]:
    return {
        "workload_run_launchers": {
            name: execenv.lab_launch_argv(name)
            for name, env in execenv.ENVS.items()
            if env.launch is not None
        },
        "workload_run_job_envs": [n for n, e in execenv.ENVS.items() if e.job is not None],
        "workload_run_container_envs": list(execenv.containers()),
        # those whose launch runs as root on its host (the rest: as the controller's user)
        "workload_run_root_envs": [n for n, e in execenv.ENVS.items() if e.launch_needs_root],
        "workload_run_exec_env_aliases": execenv.aliases(),
        # the name records carry: an alias (singularity) resolved
        "workload_run_exec_env_name": (
            "{{ workload_run_exec_env_aliases[workload_run_exec_env]"
            " | default(workload_run_exec_env) }}"
        ),
    }


def site_vars() -> dict[str, Any]:
    return {
        "gpulab_exec_env_roles": {
            name: list(execenv.get(name).roles) for name in execenv.accepted()
        },
        # site.yml applies the selected roles in this order (each entry's order kept)
        "gpulab_exec_env_role_order": execenv.role_order(),
        "gpulab_exec_env_names": {name: execenv.canonical(name) for name in execenv.accepted()},
        "gpulab_exec_env_hosts": {name: execenv.get(name).runs_on for name in execenv.accepted()},
        # workloads.yml's become: root on a GPU host; none for a Job from the controller
        "gpulab_exec_env_become": {
            name: execenv.get(name).launch_needs_root for name in execenv.accepted()
        },
        "gpulab_exec_env_validate": {
            name: list(env.validate_argv) for name, env in execenv.ENVS.items() if env.validate_argv
        },
    }


FILES: dict[str, Callable[[], dict[str, Any]]] = {
    "playbooks/roles/workload_run/vars/main.yml": workload_run_vars,
    "playbooks/vars/exec_envs.yml": site_vars,
}


def render(rel: str) -> str:
    class Dumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)  # lists indented under their key

    body = yaml.dump(
        FILES[rel](), Dumper=Dumper, sort_keys=False, default_flow_style=False, width=1000
    )
    return HEADER + body


def write(root: Path = PROJECT) -> list[Path]:
    written = []
    for rel in FILES:
        path = root / rel
        make_dirs(path.parent)
        write_text(path, render(rel))
        written.append(path)
    return written


if __name__ == "__main__":
    args = sys.argv[1:]
    if len(args) > 1 or (args and (args[0].startswith("-") or not Path(args[0]).is_dir())):
        sys.exit(
            "usage: python -m infra.specs.ansible_vars [REPO_DIR]  (writes the generated "
            "Ansible vars under REPO_DIR, default this checkout)"
        )
    for p in write(Path(args[0]) if args else PROJECT):
        print(p)
