"""The Ansible runner's secret handling, checked where a mutant slipped past (infra.ansible.runner).

Real parts: ansible-playbook on this machine through a local connection. Nothing is mocked.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infra.ansible import run_playbook
from infra.ansible import runner as runner_mod
from infra.hosts import Host
from tests.ansible.helpers import PLAYBOOKS

SMOKE = PLAYBOOKS / "local_smoke.yml"
CTL = Host("ctl", "127.0.0.1")
SENTINEL = "SENTINEL-private-data-4b1d"


def _hits(root: Path, needle: str) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and not p.is_symlink() and needle.encode() in p.read_bytes()
    ]


@pytest.mark.integration
def test_secrets_never_reach_the_private_data_dir_while_the_play_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ansible-runner writes extravars, cmdline and env under its private data dir while the
    play runs (and removes them after): the secrets go only to the 0600 secrets file, so no file
    of that dir holds them at any event of the run."""
    monkeypatch.setattr(runner_mod.tempfile, "tempdir", str(tmp_path))
    target = tmp_path / "out.txt"
    found: list[str] = []
    checked = 0

    def during(event: dict[str, Any]) -> bool:
        nonlocal checked
        for d in tmp_path.glob("gpulab-ansible-*"):
            checked += 1
            found.extend(_hits(d, SENTINEL))
        return True

    r = run_playbook(
        SMOKE,
        [CTL],
        extravars={"smoke_marker": "plain"},
        secrets={"smoke_secret": SENTINEL, "smoke_secret_file": str(target)},
        event_handler=during,
    )
    assert r.ok and target.read_text() == SENTINEL  # the secret reached the play
    assert checked > 0 and found == []
    assert not list(tmp_path.glob("gpulab-secrets-*")) and not list(
        tmp_path.glob("gpulab-ansible-*")
    )


def test_secrets_file_holds_exactly_the_secrets_privately(tmp_path: Path) -> None:
    d, f = runner_mod._write_secrets({"a_token": "t", "n": 2})
    try:
        assert d.name.startswith(f"gpulab-secrets-{os.getpid()}-")
        assert stat.S_IMODE(f.stat().st_mode) == 0o600 and stat.S_IMODE(d.stat().st_mode) == 0o700
        # every string unsafe: a secret is data, never a template
        assert json.loads(f.read_text()) == {"a_token": {"__ansible_unsafe": "t"}, "n": 2}
    finally:
        f.unlink()
        d.rmdir()


def test_command_record_keeps_only_ansible_variables_and_path(tmp_path: Path) -> None:
    cmd = tmp_path / "command"
    cmd.write_text(
        json.dumps(
            {
                "command": ["ansible-playbook"],
                "env": {"OS_PASSWORD": "pw", "ANSIBLE_NOCOLOR": "1", "PATH": "/bin", "HOME": "/h"},
            }
        )
    )
    runner_mod._scrub_command_env(cmd)
    data = json.loads(cmd.read_text())
    assert data == {
        "command": ["ansible-playbook"],
        "env": {"ANSIBLE_NOCOLOR": "1", "PATH": "/bin"},
    }
    cmd.write_text("not json")
    runner_mod._scrub_command_env(cmd)
    assert not cmd.exists()  # unreadable: removed rather than kept with a password in it
    runner_mod._scrub_command_env(cmd)  # nothing there: nothing to do


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_secrets_dirs_of_dead_runs_are_removed_and_others_kept(tmp_path: Path) -> None:
    """Only directories named gpulab-secrets-<pid>-*, of this user, whose process is gone and
    that are older than this process, are removed."""
    dead = _dead_pid()
    old = time.time() - 10 * 24 * 3600
    names = {
        "dead": f"gpulab-secrets-{dead}-abc",
        "mine": f"gpulab-secrets-{os.getpid()}-abc",
        "alive": f"gpulab-secrets-{os.getppid()}-abc",
        "other": "gpulab-ansible-xyz",
        "new_dead": f"gpulab-secrets-{dead}-new",
    }
    for key, name in names.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "secrets.yml").write_text("x")
        if key != "new_dead":
            os.utime(tmp_path / name, (old, old))
    (tmp_path / f"gpulab-secrets-{dead}-file").write_text("a file, not a run's dir")
    os.utime(tmp_path / f"gpulab-secrets-{dead}-file", (old, old))
    removed = runner_mod.clean_stale_secrets(tmp_path)
    assert removed == [tmp_path / names["dead"]]
    assert not (tmp_path / names["dead"]).exists()
    for key in ("mine", "alive", "other", "new_dead"):
        assert (tmp_path / names[key]).is_dir(), key
    assert runner_mod.clean_stale_secrets(tmp_path / "missing") == []


def test_process_start_time_is_in_the_past_and_near_boot_plus_uptime() -> None:
    started = runner_mod._process_started()
    assert started <= time.time()
    assert time.time() - started < 24 * 3600 * 365  # a real time, not a tick count
    assert runner_mod._pid_alive(os.getpid()) and not runner_mod._pid_alive(_dead_pid())
