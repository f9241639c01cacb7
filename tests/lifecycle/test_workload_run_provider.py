"""WorkloadRun's provider methods driven for real as plain Python on localhost: the real
playbooks/workloads.yml (workload_run role, local connection) runs the real runner with
TensorFlow (or a tiny record-writing command) and fetches the records; the summary comes back
as the resource's outputs. A play that fails on one host keeps the other hosts' records."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from infra.dynamic.workload_run import (
    OUTPUTS,
    RUN_INPUTS,
    WorkloadRunError,
    WorkloadRunProvider,
    play_vars,
    results_dir_of,
    suite_file,
)
from infra.hosts import Host

REPO = Path(__file__).resolve().parents[2]
TINY_SUITE = """name: tiny
experiments:
  - experiment: tiny-mnist
    model: mnist_cnn
    batch: 32
    warmup: 1
    steps: 2
    repeats: 1
"""


# A stand-in for the runner (the workload_run role's workload_run_command): writes one record
# with the runner's own writer and exits with argv[1].
TINY = (
    "import os, socket, sys\n"
    "from workloads.records import RecordWriter, make_record\n"
    "e = os.environ\n"
    "with RecordWriter(e['GPULAB_RECORDS_OUT']) as w:\n"
    "    w.write(make_record(run_id=e['GPULAB_RUN_ID'], suite='tiny', experiment='tiny',\n"
    "        model='none', kind='job', elapsed_s=0.01, topology=e['GPULAB_TOPOLOGY'],\n"
    "        arm=e['GPULAB_ARM'], host=socket.gethostname()))\n"
    "sys.exit(int(sys.argv[1]))\n"
)


def tiny_host(name: str, tmp_path: Path, rc: int | None = 0) -> Host:
    """A local-connection host whose run is TINY exiting ``rc`` (None: a command that writes
    no record and fails)."""
    command = [sys.executable, "-c", TINY, str(rc)] if rc is not None else ["/bin/false"]
    return Host(
        name,
        "127.0.0.1",
        gpu_path="local",
        vars={
            "workload_run_command": command,
            "workload_run_python": sys.executable,
            "workload_run_dir": str(REPO),
            "workload_run_results_dir": str(tmp_path / "host-results" / name),
        },
    )


@pytest.fixture(autouse=True)
def results_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This machine's results root (what `gpulab up` hands the engine's provider host)."""
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path / "results"))
    return tmp_path / "results"


def props(tmp_path: Path, suite: str, **extra: Any) -> dict[str, Any]:
    p = {
        "hosts": [Host("localhost", "127.0.0.1", gpu_path="local").to_output()],
        "suite": suite,
        "suite_digest": None,
        "execution_env": "native",
        "arm": "native",
        "topology": "local",
        "lab": "wr-lab",
        "stack": "wr-test",
        # The runner from this checkout and venv (workload_env would install it at /opt/gpulab).
        "variables": {
            "workload_run_python": sys.executable,
            "workload_run_dir": str(REPO),
            "workload_run_results_dir": str(tmp_path / "host-results"),
        },
        "triggers": [],
    }
    p.update(extra)
    return p


def test_check_and_diff() -> None:
    p = WorkloadRunProvider()
    bad = p.check({}, {"hosts": [], "suite": "", "execution_env": "vm"})
    assert sorted(f.property for f in bad.failures) == ["execution_env", "hosts", "suite"]
    base = {"hosts": [{"name": "a"}], "suite": "smoke", "execution_env": "docker"}
    assert p.check({}, base).failures == []
    outs = dict(base, summary={}, run_id="r1", status="ok")
    assert p.diff("id", outs, dict(base)).changes is False
    assert p.diff("id", outs, dict(base, suite_digest="x")).changes is True
    assert p.diff("id", outs, dict(base, execution_env="native")).changes is True
    assert suite_file("smoke") == REPO / "workloads" / "suites" / "smoke.yaml"


def test_diff_sees_every_input_one_at_a_time() -> None:
    p = WorkloadRunProvider()
    news = {
        "hosts": [{"name": "a", "address": "192.0.2.1"}],
        "suite": "smoke",
        "suite_digest": "d1",
        "execution_env": "native",
        "arm": "native",
        "topology": "nova-pci",
        "lab": "lab",
        "variables": {"workload_run_timeout_s": 60},
        "machines": {"a": "m1"},
        "triggers": ["m1"],
    }
    assert set(news) == set(RUN_INPUTS)
    outs = dict(news, run_id="r1", records_dir="x", records=[], summary={}, status="ok")
    assert set(outs) - set(news) <= set(OUTPUTS)
    assert p.diff("id", outs, dict(news)).changes is False
    changed = {
        "hosts": [{"name": "b", "address": "192.0.2.2"}],
        "suite": "full",
        "suite_digest": "d2",
        "execution_env": "docker",
        "arm": "docker-2",
        "topology": "ironic-bm",
        "lab": "lab2",
        "variables": {"workload_run_timeout_s": 61},
        "machines": {"a": "m2"},  # the machine was provisioned again
        "triggers": ["m2"],
    }
    for key, value in changed.items():
        d = p.diff("id", outs, dict(news, **{key: value}))
        assert d.changes is True, key
        assert d.replaces == [], key  # re-measure in place
    # An input the provider does not know yet counts too.
    assert p.diff("id", outs, dict(news, future_input=1)).changes is True
    # Where the records go does not.
    stored = dict(outs, stack="s", results_dir="/home/other/checkout/results/s")
    assert p.diff("id", stored, dict(news, stack="s")).changes is False


def test_read_returns_the_stored_outputs() -> None:
    outs = {"hosts": [{"name": "a"}], "suite": "smoke", "run_id": "r1", "summary": {"x": 1}}
    r = WorkloadRunProvider().read("workloads-r1", outs)
    assert (r.id, r.outs) == ("workloads-r1", outs)


def test_records_go_under_the_stack_in_this_machines_results_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path / "root"))
    assert results_dir_of({"stack": "s1", "lab": "nova-lab"}) == tmp_path / "root" / "s1"
    assert results_dir_of({"lab": "nova-lab"}) == tmp_path / "root" / "nova-lab"
    # an older release's absolute path from another machine is ignored
    old = {"stack": "s1", "results_dir": "/home/someone/checkout/results/s1"}
    assert results_dir_of(old) == tmp_path / "root" / "s1"
    monkeypatch.delenv("GPULAB_RESULTS")
    monkeypatch.chdir(tmp_path)
    assert results_dir_of({"stack": "s"}) == tmp_path / "results" / "s"


@pytest.mark.slow
def test_a_failed_host_keeps_the_other_hosts_records(tmp_path: Path) -> None:
    hosts = [tiny_host("wr-ok", tmp_path), tiny_host("wr-bad", tmp_path, rc=None)]
    p = props(tmp_path, "smoke", hosts=[h.to_output() for h in hosts], variables={})
    with pytest.raises(WorkloadRunError) as err:
        WorkloadRunProvider().create(p)
    msg = str(err.value)
    assert "\n" not in msg
    assert "host 'wr-bad' failed at task 'Fail when the run failed" in msg
    assert "kept the finished records of wr-ok in" in msg
    [run_dir] = (tmp_path / "results" / "wr-test").iterdir()
    [kept] = (run_dir / "wr-ok").glob("*.jsonl")
    assert '"host"' in kept.read_text()
    assert not (run_dir / "wr-bad").exists()
    import json

    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "partial" and summary["failed_hosts"] == ["wr-bad"]
    assert summary["counts"]["ok"] == 1 and summary["error"] == msg


def test_play_vars_are_the_workload_run_roles() -> None:
    import yaml

    defaults = yaml.safe_load((REPO / "playbooks/roles/workload_run/defaults/main.yml").read_text())
    v = play_vars(
        {"suite": "smoke", "execution_env": "docker", "variables": {"x": 1}}, "r1", Path("/f")
    )
    assert {k for k in v if k.startswith("workload_run_")} <= set(defaults)
    assert v["workload_run_arm"] == "docker" and v["workload_run_fetch_dir"] == "/f"


@pytest.mark.slow
@pytest.mark.tf
def test_create_fetches_records_and_summarizes(tmp_path: Path) -> None:
    suite = tmp_path / "tiny.yaml"
    suite.write_text(TINY_SUITE)
    p = WorkloadRunProvider()
    created = p.create(props(tmp_path, str(suite)))
    outs = created.outs
    assert outs is not None
    assert created.id == f"workloads-{outs['run_id']}"
    assert outs["status"] == "ok" and outs["play_status"] == "successful"
    (records,) = outs["records"]
    path = Path(records)
    assert path.parent == tmp_path / "results" / "wr-test" / outs["run_id"] / "localhost"
    assert path.is_file()
    s = outs["summary"]
    assert s["counts"]["ok"] == 1 and s["arms"] == ["native"]
    (row,) = s["rows"]
    assert row["model"] == "mnist_cnn" and row["images_per_sec_median"] > 0
    p.delete(created.id, outs)
    assert path.is_file()  # delete keeps the results


@pytest.mark.tf
def test_failed_run_names_host_and_task(tmp_path: Path) -> None:
    from infra.ansible import PlaybookError

    suite = tmp_path / "bad.yaml"
    suite.write_text(TINY_SUITE.replace("mnist_cnn", "no_such_model"))
    with pytest.raises(PlaybookError, match=r"host 'localhost' failed at task") as err:
        WorkloadRunProvider().create(props(tmp_path, str(suite)))
    assert "no_such_model" in str(err.value)


@pytest.mark.integration
def test_secrets_reach_the_play_but_not_extravars_outputs_or_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docker execution environment with a docker double on PATH (tests.ansible.helpers):
    the role's login task hands the registry password to `docker login` on stdin, which the
    double keeps only as its sha256; then the tiny run goes on."""
    import json
    import os

    from tests.ansible.helpers import install_docker_double, stdin_sha256

    double = install_docker_double(tmp_path / "bin" / "docker")
    monkeypatch.setenv("PATH", f"{double.parent}:{os.environ['PATH']}")
    monkeypatch.setenv("GPULAB_DOCKER_DOUBLE_OUT", str(tmp_path / "docker"))
    secret = f"pw-{tmp_path.name}-s3cr3t"
    host = tiny_host("wr-secret", tmp_path)
    p = props(tmp_path, "smoke", hosts=[host.to_output()], execution_env="docker", arm="docker",
              variables={"workload_run_registry_user": "robot"})  # fmt: skip
    p["secrets"] = {"workload_run_registry_password": secret}
    assert secret not in json.dumps(play_vars(p, "r1", tmp_path / "f"))
    provider = WorkloadRunProvider()
    outs = provider.create(p).outs
    assert outs is not None and outs["status"] == "ok"
    # The play saw the value: docker login got it on stdin.
    assert (tmp_path / "docker.login.sha256").read_text().strip() == stdin_sha256(secret)
    assert (tmp_path / "docker.login.argv").read_text().split() == [
        "login", "--username", "robot", "--password-stdin"
    ]  # fmt: skip
    assert "secrets" not in outs
    assert secret not in json.dumps(outs, default=str)  # what goes into stack state
    assert outs["secrets_digest"] and outs["secrets_salt"]
    # A changed secret re-runs; the same one does not.
    assert provider.diff("id", outs, dict(p)).changes is False
    changed = dict(p, secrets={"workload_run_registry_password": secret + "-2"})
    assert provider.diff("id", outs, changed).changes is True
    assert provider.diff("id", outs, dict(p, secrets=None)).changes is True
    for f in (tmp_path / "results").rglob("*"):
        assert not f.is_file() or secret.encode() not in f.read_bytes(), f


FAKE_DOCKER = """#!/bin/sh
# docker double: records its argv and stdin
printf '%s\\n' "$@" > "$FAKE_DOCKER_OUT.argv"
cat > "$FAKE_DOCKER_OUT.stdin"
"""


@pytest.mark.parametrize(
    ("image", "registry"),
    [("registry.example:5000/lab/runner:1", ["registry.example:5000"]),
     ("lab/runner:1", []), ("localhost/runner", ["localhost"])],
)  # fmt: skip
@pytest.mark.integration
def test_registry_login_task_sends_the_password_on_stdin(
    tmp_path: Path, image: str, registry: list[str]
) -> None:
    """The role's own login task (from tasks/host.yml) run by ansible-playbook against a docker
    double (a script on PATH): user and registry on the command line, the password on stdin."""
    import os
    import subprocess

    import yaml

    tasks = yaml.safe_load((REPO / "playbooks/roles/workload_run/tasks/host.yml").read_text())
    (login,) = [t for t in tasks if t["name"] == "Log in to the image registry"]
    play = [{"hosts": "all", "gather_facts": False, "tasks": [login]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play))
    fake = tmp_path / "bin" / "docker"
    fake.parent.mkdir()
    fake.write_text(FAKE_DOCKER)
    fake.chmod(0o755)
    out = tmp_path / "docker"
    extra = {
        "workload_run_exec_env_name": "docker",
        "workload_run_docker_image": image,
        "workload_run_registry_user": "robot",
        "workload_run_registry_password": "pw-on-stdin",
        "ansible_python_interpreter": sys.executable,
    }
    env = dict(os.environ, PATH=f"{fake.parent}:{os.environ['PATH']}", FAKE_DOCKER_OUT=str(out))
    run = subprocess.run(
        [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
         "-e", json_arg(extra), str(tmp_path / "play.yml")],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    assert "pw-on-stdin" not in run.stdout + run.stderr  # no_log
    argv = (tmp_path / "docker.argv").read_text().split("\n")[:-1]
    assert argv == ["login", "--username", "robot", "--password-stdin", *registry]
    assert (tmp_path / "docker.stdin").read_text().strip() == "pw-on-stdin"


def json_arg(value: Any) -> str:
    import json

    return json.dumps(value)


def test_a_play_that_matched_no_host_fails_in_one_line(tmp_path: Path) -> None:
    """A k8s run handed GPU hosts only: its play targets the cluster's API host (k8s_control),
    Ansible skips the play and exits 0; the run fails naming the environment and the pattern,
    never an `empty` success (the real workloads.yml through ansible-runner)."""
    import json

    from infra.dynamic.workload_run import NoHostMatched

    hosts = [tiny_host("wr-gpu", tmp_path).to_output()]
    p = props(tmp_path, "smoke", hosts=hosts, execution_env="k8s", variables={})
    with pytest.raises(NoHostMatched) as err:
        WorkloadRunProvider().create(p)
    msg = str(err.value)
    assert msg == (
        "workloads.yml: execution environment k8s: no host matched k8s_control among the "
        "run's hosts (wr-gpu): nothing ran"
    )
    [run_dir] = (tmp_path / "results" / "wr-test").iterdir()  # <results root>/<stack>/<run>
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["status"] == "failed" and summary["error"] == msg


def test_each_run_gets_the_hosts_its_environment_starts_the_runner_on() -> None:
    """measure() hands a Job run the API host, an argv run the GPU hosts (runs_on)."""
    from infra.dynamic import matches, run_hosts

    api = Host("lab-k8s-api", "127.0.0.1", gpu_path="none", groups=["k8s_control"])
    gpu = Host("gpu-0", "10.0.0.5", gpu_path="whole-machine", groups=["gpu_hosts"])
    assert run_hosts("k8s", [api, gpu]) == [api]
    assert run_hosts("native", [api, gpu]) == [gpu]
    assert run_hosts("docker", [api]) == []  # none: measure() hands all, the run then fails
    assert matches("gpu_hosts:&gpu_path_whole_machine", gpu)
    assert not matches("all:!gpu_path_whole_machine", gpu)
