"""Static guard, no host needed: a task that hands a secret to a module is ``no_log``.

A secret variable is one the role's ``meta/argument_specs.yml`` marks ``no_log: true``, or
whose name says token, password or secret. Any task whose module arguments (or ``loop``, or
``vars``) mention one must carry ``no_log: true`` itself or inherit it from its block; otherwise
Ansible prints the value in its output, its events and ansible-runner's artifacts. Conditions
(``when``, ``changed_when``, ``failed_when``) and the task's name are not output, so they may
mention a secret.

A task whose *name* says token, password or secret handles one even when its arguments reach
it through another variable (a registered result, a fact): it must be ``no_log`` too, unless its
module only manages a path (``file``, ``stat``: a directory for tokens holds no token).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

PLAYBOOKS = Path(__file__).resolve().parents[2] / "playbooks"
ROLES = sorted(p for p in (PLAYBOOKS / "roles").iterdir() if (p / "tasks").is_dir())
SECRET_WORDS = re.compile(r"token|password|passwd|secret", re.IGNORECASE)
# Names about a secret rather than holding one (where it lives, who owns it).
ABOUT_A_SECRET = re.compile(r"_(dir|path|mode|owner|group|name|url)$")
# Keys of a task that Ansible never prints.
NOT_OUTPUT = {
    "name", "when", "changed_when", "failed_when", "until", "tags", "register", "no_log",
    "become", "become_user", "delegate_to", "run_once", "notify", "listen", "retries", "delay",
    "ignore_errors", "check_mode", "environment_note",
}  # fmt: skip
BLOCK_KEYS = ("block", "rescue", "always")
# Modules that manage a path and carry no value: a task named for a secret may use them freely.
PATH_ONLY_MODULES = {"ansible.builtin.file", "ansible.builtin.stat"}


def is_secret_name(name: str) -> bool:
    return bool(SECRET_WORDS.search(name)) and not ABOUT_A_SECRET.search(name)


def secret_vars(role: Path) -> set[str]:
    """Variables of the role that are secrets: marked no_log, or named like one."""
    names: set[str] = set()
    spec = role / "meta" / "argument_specs.yml"
    if spec.is_file():
        doc = yaml.safe_load(spec.read_text()) or {}
        for entry in (doc.get("argument_specs") or {}).values():
            for name, opt in ((entry or {}).get("options") or {}).items():
                if (opt or {}).get("no_log") or is_secret_name(name):
                    names.add(name)
    for f in (role / "defaults").glob("*.yml"):
        names |= {k for k in (yaml.safe_load(f.read_text()) or {}) if is_secret_name(k)}
    return names


def tasks_of(items: Any, inherited: bool = False) -> Iterator[tuple[dict[str, Any], bool]]:
    """Every task under ``items`` with whether a block around it sets no_log."""
    for task in items or []:
        if not isinstance(task, dict):
            continue
        no_log = inherited or task.get("no_log") is True
        if any(k in task for k in BLOCK_KEYS):
            for key in BLOCK_KEYS:
                yield from tasks_of(task.get(key), no_log)
            continue
        yield task, no_log


def leaks(task: dict[str, Any], secrets: set[str]) -> set[str]:
    """The secret variables the task's printed parts mention."""
    printed = yaml.safe_dump({k: v for k, v in task.items() if k not in NOT_OUTPUT})
    return {s for s in secrets if re.search(rf"\b{re.escape(s)}\b", printed)}


def violations(role: Path) -> list[str]:
    secrets = secret_vars(role)
    out = []
    for f in sorted([*(role / "tasks").glob("*.yml"), *(role / "handlers").glob("*.yml")]):
        for task, no_log in tasks_of(yaml.safe_load(f.read_text())):
            found = leaks(task, secrets)
            where = f"{f.relative_to(PLAYBOOKS)}: {task.get('name')!r}"
            if found and not no_log:
                out.append(f"{where} uses {sorted(found)}")
            elif named_for_a_secret(task) and not no_log:
                out.append(f"{where} is named for a secret")
    return out


def named_for_a_secret(task: dict[str, Any]) -> bool:
    """The task's name says token/password/secret and its module carries a value."""
    modules = {k for k in task if "." in k}
    return bool(SECRET_WORDS.search(str(task.get("name", "")))) and not (
        modules and modules <= PATH_ONLY_MODULES
    )


@pytest.mark.parametrize("role", ROLES, ids=[r.name for r in ROLES])
def test_tasks_that_use_a_secret_are_no_log(role: Path) -> None:
    assert violations(role) == []


def test_roles_with_secrets_are_covered() -> None:
    """The guard knows the secret inputs the roles declare (else it would pass vacuously)."""
    names = {r.name: secret_vars(r) for r in ROLES}
    assert "nvidia_vgpu_guest_client_token" in names["nvidia_vgpu_guest"]
    assert any("token" in n for n in names["bitfusion_client"])


def test_the_guard_fails_a_task_without_no_log(tmp_path: Path) -> None:
    """The same check on a role whose token task lost its no_log: reported, naming it."""
    role = tmp_path / "demo"
    (role / "tasks").mkdir(parents=True)
    (role / "meta").mkdir()
    (role / "meta" / "argument_specs.yml").write_text(
        yaml.safe_dump(
            {"argument_specs": {"main": {"options": {"demo_key": {"type": "str", "no_log": True}}}}}
        )
    )
    (role / "tasks" / "main.yml").write_text(
        yaml.safe_dump(
            [
                {
                    "name": "Hidden",
                    "ansible.builtin.copy": {"content": "{{ demo_key }}"},
                    "no_log": True,
                },
                {
                    "name": "In a hidden block",
                    "no_log": True,
                    "block": [
                        {"name": "Inner", "ansible.builtin.copy": {"content": "{{ demo_key }}"}}
                    ],
                },
                {
                    "name": "Only a condition",
                    "ansible.builtin.debug": {"msg": "set"},
                    "when": "demo_key | length > 0",
                },
                {
                    "name": "Leaks",
                    "ansible.builtin.copy": {"content": "{{ demo_key }}", "dest": "/x"},
                },
                {
                    "name": "Create the token directory",
                    "ansible.builtin.file": {"path": "/etc/demo", "state": "directory"},
                },
                {
                    "name": "Write the registered token",
                    "ansible.builtin.copy": {"content": "{{ fetched.content }}", "dest": "/y"},
                },
            ]
        )
    )
    global PLAYBOOKS
    saved = PLAYBOOKS
    PLAYBOOKS = tmp_path
    try:
        assert violations(role) == [
            "demo/tasks/main.yml: 'Leaks' uses ['demo_key']",
            "demo/tasks/main.yml: 'Write the registered token' is named for a secret",
        ]
    finally:
        PLAYBOOKS = saved
