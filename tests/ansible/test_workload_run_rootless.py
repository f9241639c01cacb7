"""workloads.yml for a Kubernetes Job, run for real by ansible-playbook on this machine as a
user that is not root and has no sudo (``nobody`` through ``setpriv`` when the tests run as
root, keeping only the capability to read the checkout, else the tests' own user): the play
must not become root there (``gpulab_exec_env_become``), and the Job manifest, the records
and their fetched copy belong to that user.

Mocked: the Kubernetes API. ``kubernetes.core`` is replaced by the double in
``tests/ansible/k8s_double`` (the real modules need the Kubernetes Python client and a
cluster): it reads the kubeconfig and the manifest as the calling user, refuses a Job in a
namespace that does not exist or whose image the registry double does not hold (the test
makes both, as the site run's k8s_gpu would), stores the Job, and answers with the pod log and
outcome the test wrote. Everything else (the play, the role, the generated vars, the fetch) is
the real one.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.parts import REPO

ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")
DOUBLE = Path(__file__).resolve().parent / "k8s_double"
RUN_ID = "r1"
RECORD = {"schema": 1, "suite": "smoke", "execution_env": "k8s"}
IMAGE = "registry.lab.test:5000/gpulab/gpulab-workloads:0123abcd4567"  # pushed by k8s_gpu


@pytest.fixture
def user_dir() -> Iterator[tuple[Path, int]]:
    """A directory owned by the controller user the run uses, and that user's uid."""
    uid = pwd.getpwnam("nobody").pw_uid if os.geteuid() == 0 else os.geteuid()
    d = Path(tempfile.mkdtemp(prefix="gpulab-rootless-"))
    os.chmod(d, 0o755)
    os.chown(d, uid, -1)
    try:
        yield d, uid
    finally:
        shutil.rmtree(d)


def _as_user(uid: int, argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    # As root: become the user with setpriv, keeping only CAP_DAC_READ_SEARCH (ambient) so it can
    # read the checkout and its venv wherever they are cloned (a clone under root's 0700 home,
    # say); it still cannot write, chown or sudo anything that is not its own.
    prefix = (
        []
        if os.geteuid() == uid
        else [
            "setpriv", f"--reuid={uid}", f"--regid={pwd.getpwuid(uid).pw_gid}",
            "--clear-groups", "--inh-caps=+dac_read_search",
            "--ambient-caps=+dac_read_search", "--",
        ]
    )  # fmt: skip
    envs = [f"{k}={v}" for k, v in env.items()]
    return subprocess.run(
        [*prefix, "env", "-i", *envs, *argv],
        cwd=REPO / "playbooks", capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip


def _python_for(uid: int) -> tuple[str, dict[str, str]]:
    """An interpreter the user can run with this venv's packages, and the environment it needs:
    the venv's own, or (where it lives under root's private home, as a pyenv in /root does)
    the system's python of the same version with the venv's site-packages on PYTHONPATH."""
    site = sysconfig.get_paths()["purelib"]
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    for python, env in ((sys.executable, {}), (f"/usr/bin/python{version}", {"PYTHONPATH": site})):
        probe = _as_user(uid, [python, "-c", "import ansible, yaml"], env)
        if probe.returncode == 0:
            return python, env
    pytest.fail(f"uid {uid} can run neither {sys.executable} nor a python{version} with {site}")


def _write_as(uid: int, path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    os.chown(path.parent, uid, -1)
    path.write_text(text)
    os.chmod(path, mode)
    os.chown(path, uid, -1)


@pytest.mark.integration
def test_k8s_job_runs_as_the_controller_user_without_sudo(user_dir: tuple[Path, int]) -> None:
    d, uid = user_dir
    home, api, fetched, registry = d / "home", d / "api", d / "fetched", d / "registry"
    for p in (home, api, registry):
        p.mkdir()
        os.chown(p, uid, -1)
    kubeconfig = home / ".kube" / "lab.yaml"  # the user's own, 0600 as pulumi writes it
    _write_as(uid, kubeconfig, yaml.safe_dump({"clusters": [{"cluster": {"server": f"file://{api}"}}]}),
              0o600)  # fmt: skip
    begin, end = (f"--- gpulab records {w} {RUN_ID} ---" for w in ("begin", "end"))
    _write_as(uid, api / "pod.log", f"bench output\n{begin}\n{json.dumps(RECORD)}\n{end}\n")
    _write_as(uid, api / "outcome", "succeeded\n")
    # what the site run's k8s_gpu made: the namespace, and the Job image in the lab's registry
    _write_as(uid, api / "namespaces" / "gpulab", "")
    _write_as(uid, registry / "registries.json", json.dumps({IMAGE.split("/")[0]: {}}))
    _write_as(uid, registry / "images" / IMAGE.replace("/", "%2F"), "")
    python, python_env = _python_for(uid)
    inventory = {"k8s_control": {"hosts": {"lab-k8s-api": {
        "ansible_connection": "local", "ansible_python_interpreter": python}}}}  # fmt: skip
    _write_as(uid, d / "inventory.yml", yaml.safe_dump({"all": {"children": inventory}}))
    extra = {
        "workload_run_exec_env": "k8s",
        "workload_run_id": RUN_ID,
        "workload_run_topology": "magnum-k8s",
        "workload_run_fetch_dir": str(fetched),
        "workload_run_k8s_kubeconfig": str(kubeconfig),
        "workload_run_k8s_image": IMAGE,
        "workload_run_timeout_s": 60,
    }
    _write_as(uid, d / "extra.json", json.dumps(extra))
    env = {
        **python_env,
        "HOME": str(home),
        "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
        "ANSIBLE_COLLECTIONS_PATH": str(DOUBLE),
        "GPULAB_TEST_REGISTRY": str(registry),
        # nobody's passwd home is /nonexistent; a real user's is their HOME
        "ANSIBLE_REMOTE_TEMP": str(home / ".ansible" / "tmp"),
        "ANSIBLE_LOCAL_TEMP": str(home / ".ansible" / "tmp"),
        "ANSIBLE_NOCOLOR": "1",
    }
    r = _as_user(uid, [python, ANSIBLE_PLAYBOOK, "-i", str(d / "inventory.yml"), "-e",
                       f"@{d / 'extra.json'}", "workloads.yml"], env)  # fmt: skip
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]

    run_dir = home / ".cache" / "gpulab" / "results" / RUN_ID  # the controller user's results
    job_file = run_dir / "job.yaml"
    records = run_dir / "magnum-k8s-k8s-lab-k8s-api.jsonl"
    copy = fetched / "lab-k8s-api" / records.name
    for p in (run_dir, job_file, records, copy):
        st = p.stat()
        assert st.st_uid == uid, f"{p} is owned by uid {st.st_uid}"
    for p in (job_file, records):
        assert stat.S_IMODE(p.stat().st_mode) == 0o644, p
    assert json.loads(records.read_text()) == RECORD
    assert copy.read_text() == records.read_text()
    # the API got the Job the role rendered (the double stored it)
    job = yaml.safe_load(job_file.read_text())
    stored = json.loads((api / "jobs" / "gpulab" / f"{job['metadata']['name']}.json").read_text())
    assert stored == job and job["kind"] == "Job"
    # nothing the run left belongs to root
    rooted = [str(p) for p in d.rglob("*") if p.lstat().st_uid != uid]
    assert rooted == []


@pytest.fixture
def become_user() -> Iterator[pwd.struct_passwd]:
    """A throwaway user the play becomes (created and removed here; needs root)."""
    if os.geteuid() != 0:
        pytest.fail("creating the user the play becomes needs root (useradd)")
    name = f"gpulabfetch{os.getpid() % 100000}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/bin/sh", name], check=True)
    try:
        yield pwd.getpwnam(name)
    finally:
        subprocess.run(["userdel", name], check=True)


@pytest.mark.integration
def test_host_launch_records_are_fetched_as_the_controller_user(
    become_user: pwd.struct_passwd, user_dir: tuple[Path, int]
) -> None:
    """A host launch (native) under become: the runner's file on the host belongs to the user
    the play becomes, the fetched copy to the user running ansible-playbook (fetch reads on the
    host through become and writes on the controller as its own process).

    Mocked: root and sudo. On a lab the play becomes root through the login user's sudo and
    the controller user is not root; here the controller is root and the play becomes a
    throwaway user through su (no sudo on this machine, and a non-root user cannot become root
    without it). The direction is reversed, the semantics checked are the same."""
    d, _ = user_dir
    host_side = d / "host"
    host_side.mkdir()
    os.chown(host_side, become_user.pw_uid, become_user.pw_gid)
    # The modules run as the user the play becomes, with no capability: a python it can run
    # (the system's, as on a lab host; the venv may sit under root's private home).
    target_python = next(
        (py for py in ("/usr/bin/python3", sys.executable)
         if subprocess.run(["runuser", "-u", become_user.pw_name, "--", py, "-c", "import json"],
                           capture_output=True, check=False).returncode == 0),
        None,
    )  # fmt: skip
    if target_python is None:
        pytest.fail(f"{become_user.pw_name} can run neither /usr/bin/python3 nor {sys.executable}")
    inventory = {"gpu_hosts": {"hosts": {"gpu-0": {
        "ansible_connection": "local", "ansible_python_interpreter": target_python,
        "ansible_become_method": "su", "ansible_become_user": become_user.pw_name}}}}  # fmt: skip
    (d / "inventory.yml").write_text(yaml.safe_dump({"all": {"children": inventory}}))
    fetched = d / "fetched"
    extra = {
        "workload_run_exec_env": "native",
        "workload_run_id": RUN_ID,
        "workload_run_topology": "t",
        "workload_run_fetch_dir": str(fetched),
        "workload_run_dir": str(host_side),
        "workload_run_results_dir": str(host_side / "results"),
        "workload_run_command": ["sh", "-c", f"echo '{json.dumps(RECORD)}' >$GPULAB_RECORDS_OUT"],
        "workload_run_timeout_s": 60,
    }
    (d / "extra.json").write_text(json.dumps(extra))
    env = {"HOME": str(d), "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin",
           "ANSIBLE_REMOTE_TEMP": "/tmp", "ANSIBLE_NOCOLOR": "1"}  # fmt: skip
    r = _as_user(0, [sys.executable, ANSIBLE_PLAYBOOK, "-i", str(d / "inventory.yml"), "-e",
                     f"@{d / 'extra.json'}", "workloads.yml"], env)  # fmt: skip
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    on_host = host_side / "results" / RUN_ID / "t-native-gpu-0.jsonl"
    copy = fetched / "gpu-0" / on_host.name
    assert on_host.stat().st_uid == become_user.pw_uid  # written by the user the play became
    assert copy.stat().st_uid == os.geteuid()  # the controller's process wrote the copy
    assert (fetched / "gpu-0").stat().st_uid == os.geteuid()
    assert json.loads(copy.read_text()) == RECORD
