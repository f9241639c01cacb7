"""Sentinel secrets: a marker planted in every secret input of a playbook run is found
nowhere it should not be, after a normal run, a SIGTERM and a SIGKILL.

Real parts: ansible-playbook against this machine through a local connection (gpu_path
``local`` on 127.0.0.1), and the AnsibleRun provider's create (its play in a spawned
interpreter, as the engine's provider host runs it). Nothing is mocked.

Places searched after a normal run: the AnsibleRun outputs that go into stack state (JSON),
the PlaybookResult (summary, failures, stdout tail), every ansible-runner event, the kept
Ansible artifacts (stdout, job_events, command, env), every file left under TMPDIR (the
runner's private data dirs and secrets dirs), ``~/.ansible/tmp``, and the command line of
every process seen while the play ran (``/proc/*/cmdline`` sampled every 50 ms).

The workload secret (``gpulab:workload_secrets``, handed to WorkloadRun as ``secrets``) is
planted too, and a WorkloadRun provider create runs the real playbooks/workloads.yml with it.
Searched: the WorkloadRun outputs (stack state), its extravars, the fetched records and the
``summary.json`` beside them, the hosts' record files, every file under TMPDIR (the runner's
private data dir), and the command lines sampled during that run.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from infra.ansible import run_playbook
from infra.dynamic.ansible_run import AnsibleRunProvider
from infra.dynamic.workload_run import WorkloadRunProvider, play_vars
from infra.hosts import Host
from tests.ansible.helpers import install_docker_double, stdin_sha256

REPO = Path(__file__).resolve().parents[2]
CTL = Host("ctl", "127.0.0.1")  # gpu_path local on 127.0.0.1 -> ansible_connection=local
SENTINEL = f"SENTINEL-{uuid.uuid4().hex}"

PLAY = """\
- name: Uses the secrets under no_log
  hosts: all
  gather_facts: false
  tasks:
    - name: Use the token
      ansible.builtin.set_fact:
        sentinel_len: >-
          {{ (nvidia_vgpu_guest_client_token | length) + (gpulab_os_password | length) }}
      no_log: true
    - name: Take a moment (the process table is sampled meanwhile)
      ansible.builtin.command: sleep {{ sentinel_sleep | default(1) }}
      changed_when: false
"""


def secrets() -> dict[str, str]:
    return {"nvidia_vgpu_guest_client_token": SENTINEL, "gpulab_os_password": SENTINEL + "-pw"}


def _grep(root: Path, needle: str = SENTINEL) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink() and needle.encode() in p.read_bytes():
                hits.append(str(p))
        except OSError:
            continue
    return hits


class CmdlineWatch:
    """Samples every process's command line while a run goes on."""

    def __init__(self) -> None:
        self.hits: set[str] = set()
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for p in Path("/proc").glob("[0-9]*/cmdline"):
                try:
                    cmd = p.read_bytes()
                except OSError:
                    continue
                if SENTINEL.encode() in cmd:
                    self.hits.add(cmd.replace(b"\0", b" ").decode(errors="replace"))
            self.samples += 1
            time.sleep(0.05)

    def __enter__(self) -> CmdlineWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@pytest.fixture()
def tmpdir_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    monkeypatch.setenv("OS_PASSWORD", SENTINEL + "-env")  # a cloud password in the environment
    return tmp


def keep(events: list[dict[str, Any]]) -> Any:
    def handler(event: dict[str, Any]) -> bool:
        events.append(event)
        return True

    return handler


@pytest.mark.integration
def test_sentinel_is_nowhere_after_a_normal_run(tmp_path: Path, tmpdir_env: Path) -> None:
    play = tmp_path / "play.yml"
    play.write_text(PLAY)
    events: list[dict[str, Any]] = []
    ansible_tmp = Path.home() / ".ansible" / "tmp"
    with CmdlineWatch() as watch:
        result = run_playbook(
            play, [CTL], secrets=secrets(), keep_artifacts=tmp_path / "artifacts",
            event_handler=keep(events),
        )  # fmt: skip
        outs = AnsibleRunProvider().create(
            {"hosts": [CTL.to_output()], "playbook": str(play), "variables": {},
             "secrets": secrets(), "triggers": []}
        ).outs  # fmt: skip
    assert outs is not None
    assert result.ok and outs["status"] == "successful"
    assert watch.samples > 10
    assert watch.hits == set()  # process command lines
    state = json.dumps(outs, default=str)
    assert SENTINEL not in state  # what goes into stack state
    assert outs["secrets_digest"] and outs["secrets_salt"]  # a salted digest, not the secret
    assert SENTINEL not in result.summary() + result.stdout_tail + str(result.failures)
    assert SENTINEL not in json.dumps(events, default=str)
    artifacts = tmp_path / "artifacts"
    assert (artifacts / "stdout").is_file() and _grep(artifacts) == []
    assert _grep(tmpdir_env) == []  # every file left under TMPDIR
    assert not list(tmpdir_env.glob("gpulab-secrets-*"))
    assert not ansible_tmp.is_dir() or _grep(ansible_tmp) == []


SLOW_RUN = """\
import sys
from infra.ansible import run_playbook
from infra.hosts import Host
run_playbook(sys.argv[1], [Host("ctl", "127.0.0.1")], {"sentinel_sleep": int(sys.argv[2])},
             secrets={"nvidia_vgpu_guest_client_token": sys.argv[3]})
"""


def _start_run(play: Path, sleep_s: int, tmp: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN, str(play), str(sleep_s), SENTINEL],
        cwd=REPO, env=dict(os.environ, TMPDIR=str(tmp)), start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _wait_for_secrets_dir(tmp: Path, proc: subprocess.Popen[str]) -> Path:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        found = [
            d for d in tmp.glob(f"gpulab-secrets-{proc.pid}-*") if (d / "secrets.yml").exists()
        ]
        if found and list(tmp.glob("gpulab-ansible-*/artifacts/*/stdout")):
            time.sleep(1.0)  # the play is under way
            return found[0]
        assert proc.poll() is None, proc.communicate()[0]
        time.sleep(0.1)
    raise AssertionError("the run never wrote its secrets dir")


def _kill_group(proc: subprocess.Popen[str]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.mark.integration
def test_secrets_dir_gone_after_sigkill_and_the_next_start(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    play = tmp_path / "play.yml"
    play.write_text(PLAY.replace("gpulab_os_password | length", "0"))
    proc = _start_run(play, 60, tmp)
    try:
        left = _wait_for_secrets_dir(tmp, proc)
    finally:
        _kill_group(proc)  # SIGKILL: no handler runs
    assert left.is_dir() and SENTINEL in (left / "secrets.yml").read_text()  # left behind
    nxt = _start_run(play, 0, tmp)  # the next start, without secrets of its own to wait for
    try:
        out, _ = nxt.communicate(timeout=180)
    finally:
        _kill_group(nxt)
    assert nxt.returncode == 0, out
    assert not left.exists()
    assert _grep(tmp) == []


@pytest.mark.integration
def test_secrets_dir_gone_after_sigterm(tmp_path: Path) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    play = tmp_path / "play.yml"
    play.write_text(PLAY.replace("gpulab_os_password | length", "0"))
    proc = _start_run(play, 60, tmp)
    try:
        left = _wait_for_secrets_dir(tmp, proc)
        proc.send_signal(signal.SIGTERM)  # the python process only, as `kill PID` does
        proc.wait(timeout=60)
    finally:
        _kill_group(proc)  # whatever of the play's processes is left
    assert proc.returncode == 143, proc.communicate()[0]
    assert not left.exists()
    assert _grep(tmp) == []
    # the play was stopped too: no process still runs it
    time.sleep(1)
    alive = [p for p in Path("/proc").glob("[0-9]*/cmdline") if _reads(p, str(play))]
    assert alive == []


def _reads(cmdline: Path, needle: str) -> bool:
    try:
        return needle.encode() in cmdline.read_bytes()
    except OSError:
        return False


# A stand-in for the runner: writes one record.
SEEN_RUNNER = (
    "import os, sys\n"
    "from workloads.records import RecordWriter, make_record\n"
    "e = os.environ\n"
    "with RecordWriter(e['GPULAB_RECORDS_OUT']) as w:\n"
    "    w.write(make_record(run_id=e['GPULAB_RUN_ID'], suite='tiny', experiment='tiny',\n"
    "        model='none', kind='job', elapsed_s=0.01, topology=e['GPULAB_TOPOLOGY'],\n"
    "        arm=e['GPULAB_ARM'], host='ctl'))\n"
)


@pytest.mark.integration
def test_workload_secret_is_nowhere_after_a_workload_run(
    tmp_path: Path, tmpdir_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docker execution environment with a docker double on PATH: the role's own login
    task hands the password to `docker login` on stdin (the double keeps only its sha256:
    proof that the play had it), then runs the runner stand-in."""
    planted = SENTINEL + "-workload"
    double = install_docker_double(tmp_path / "bin" / "docker")
    monkeypatch.setenv("PATH", f"{double.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("GPULAB_DOCKER_DOUBLE_OUT", str(tmp_path / "docker"))
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path / "results"))  # records: results/sentinel/
    host = Host(
        "ctl", "127.0.0.1", gpu_path="local",
        vars={
            "workload_run_command": [sys.executable, "-c", SEEN_RUNNER],
            "workload_run_python": sys.executable,
            "workload_run_dir": str(REPO),
            "workload_run_results_dir": str(tmp_path / "host-results"),
        },
    )  # fmt: skip
    props = {
        "hosts": [host.to_output()], "suite": "smoke", "suite_digest": None,
        "execution_env": "docker", "arm": "docker", "topology": "local", "lab": "sentinel",
        "variables": {"workload_run_registry_user": "robot"},
        "stack": "sentinel", "triggers": [],
        "secrets": {"workload_run_registry_password": planted},
    }  # fmt: skip
    with CmdlineWatch() as watch:
        outs = WorkloadRunProvider().create(props).outs
    assert outs is not None and outs["status"] == "ok"
    # the play had the secret: docker login got it on stdin
    assert (tmp_path / "docker.login.sha256").read_text().strip() == stdin_sha256(planted)
    assert SENTINEL not in (tmp_path / "docker.login.argv").read_text()  # never an argument
    assert watch.samples > 10
    assert watch.hits == set()  # process command lines
    assert SENTINEL not in json.dumps(outs, default=str)  # outputs: stack state
    assert outs["secrets_digest"] and outs["secrets_salt"]
    assert SENTINEL not in json.dumps(play_vars(props, "r", tmp_path), default=str)  # extravars
    records = list((tmp_path / "results").rglob("*.jsonl"))
    assert records and _grep(tmp_path / "results") == []  # fetched records, summary
    assert _grep(tmp_path / "host-results") == []  # the hosts' record files
    assert _grep(tmpdir_env) == []  # the runner's private data dir, secrets dir
    assert not list(tmpdir_env.glob("gpulab-secrets-*"))
