"""Syntax check and `ansible-lint --profile production` of every playbook and role."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ansible.helpers import PLAYBOOKS as TEST_PLAYBOOKS
from tests.parts import REPO

BIN = Path(sys.executable).parent
PLAYBOOKS = sorted((REPO / "playbooks").glob("*.yml"))
ENV = {
    **os.environ,
    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
    "ANSIBLE_ROLES_PATH": str(REPO / "playbooks" / "roles"),
    "ANSIBLE_NOCOLOR": "1",
}


def test_the_three_playbooks_exist() -> None:
    assert [p.name for p in PLAYBOOKS] == ["site.yml", "validate.yml", "workloads.yml"]


@pytest.mark.parametrize(
    "playbook",
    PLAYBOOKS + sorted(TEST_PLAYBOOKS.glob("*.yml")),
    ids=lambda p: p.name,
)
def test_syntax_check(playbook: Path) -> None:
    r = subprocess.run(
        [str(BIN / "ansible-playbook"), "--syntax-check", "-i", "localhost,",
         "-e", "one_role=gpu_facts", str(playbook)],
        capture_output=True, text=True, env=ENV, cwd=REPO, timeout=120, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout + r.stderr


@pytest.mark.slow
def test_ansible_lint_production_profile() -> None:
    lint = BIN / "ansible-lint"
    assert lint.exists(), "ansible-lint is a test dependency (pyproject [test])"
    r = subprocess.run(
        [str(lint), "--profile", "production", "--nocolor", "playbooks/"],
        capture_output=True, text=True, env=ENV, cwd=REPO, timeout=300, check=False,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert r.returncode == 0, out[-4000:]
    assert "Profile 'production' was required, and it passed" in out
