"""CleanupRun's provider driven as plain Python (no engine): ``down`` of a static lab runs the
cleanup play only when the stack asked for it. The play is real Ansible; the host here is a
closed port of this machine, so a cleanup that runs says so by failing on it, one line naming
the host (the nspawn end-to-end test, tests/e2e/test_static_e2e.py, cleans real machines)."""

from __future__ import annotations

import socket

import pytest

from infra.ansible.runner import PlaybookError
from infra.dynamic.cleanup_run import CleanupRunProvider
from infra.hosts import Host


def closed_host() -> dict[str, object]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return Host("own-a", "127.0.0.1", ssh_user="nobody", gpu_path="whole-machine",
                ssh_port=port).to_output()  # fmt: skip


def test_create_and_update_run_nothing_and_keep_the_inputs() -> None:
    p = CleanupRunProvider()
    props = {"hosts": [closed_host()], "enabled": True, "variables": {}}
    made = p.create(props)
    assert made.id.startswith("cleanup-") and made.outs == props
    assert p.update(made.id, made.outs, dict(props, enabled=False)).outs["enabled"] is False
    assert p.check({}, {"hosts": [], "enabled": "yes"}).failures


def test_down_without_cleanup_on_down_touches_nothing() -> None:
    # the host cannot be reached: had anything run, delete would fail
    assert CleanupRunProvider().delete("id", {"hosts": [closed_host()], "enabled": False}) is None


@pytest.mark.integration
def test_down_with_cleanup_on_down_runs_the_play_and_names_a_host_it_cannot_reach() -> None:
    with pytest.raises(PlaybookError) as err:
        CleanupRunProvider().delete("id", {"hosts": [closed_host()], "enabled": True})
    line = str(err.value)
    assert line.startswith("cleanup.yml: host 'own-a' ") and "\n" not in line
    assert "Remove gpulab's directories" in line and "Connection refused" in line
