"""The Python side (infra.ansible) against this machine through a local connection: inventory
shape, per-host summary, errors naming host and task, unreachable hosts, secrets handling, and
the roles' argument_specs rejecting bad variables before any role task runs."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
import yaml

from infra.ansible import InventoryError, PlaybookError, build_inventory, run_playbook
from infra.ansible import runner as runner_mod
from infra.hosts import Host
from tests.ansible.helpers import PLAYBOOKS

SMOKE = PLAYBOOKS / "local_smoke.yml"
ONE_ROLE = PLAYBOOKS / "one_role.yml"
CTL = Host("ctl", "127.0.0.1")  # gpu_path local on 127.0.0.1 -> ansible_connection=local
SENTINEL = "SENTINEL-vgpu-token-7f3a9c1e"


def _grep_tree(root: Path, needle: str) -> list[str]:
    hits = []
    for p in root.rglob("*"):
        if p.is_file() and needle.encode() in p.read_bytes():
            hits.append(str(p.relative_to(root)))
    return hits


# ---------------------------------------------------------------- inventory


def test_inventory_groups_vars_and_connection() -> None:
    hosts = [
        Host("gpu-0", "10.0.0.5", ssh_user="ubuntu", groups=["gpu-hosts", "k8s_control"],
             gpu_path="pci-passthrough", ssh_port=2222, vars={"gpulab_exec_envs": ["docker"]}),
        Host("me", "127.0.0.1"),
        Host("ch", "/srv/root", gpu_path="none",
             vars={"ansible_connection": "community.general.chroot"}),
    ]  # fmt: skip
    inv = build_inventory(hosts, {"ansible_ssh_private_key_file": "/k"})
    all_ = inv["all"]
    assert all_["vars"] == {"ansible_ssh_private_key_file": "/k"}
    gpu0 = all_["hosts"]["gpu-0"]
    assert gpu0["ansible_host"] == "10.0.0.5"
    assert gpu0["ansible_user"] == "ubuntu"
    assert gpu0["ansible_port"] == 2222
    assert gpu0["gpulab_gpu_path"] == "pci-passthrough"
    assert gpu0["gpulab_exec_envs"] == ["docker"]
    assert "ansible_connection" not in gpu0
    assert all_["hosts"]["me"]["ansible_connection"] == "local"
    assert all_["hosts"]["ch"]["ansible_connection"] == "community.general.chroot"
    children = all_["children"]
    assert set(children["gpu_hosts"]["hosts"]) == {"gpu-0"}  # sanitized from gpu-hosts
    assert set(children["k8s_control"]["hosts"]) == {"gpu-0"}
    assert set(children["gpu_path_pci_passthrough"]["hosts"]) == {"gpu-0"}
    assert set(children["gpu_path_local"]["hosts"]) == {"me"}
    assert set(children["gpu_path_none"]["hosts"]) == {"ch"}


@pytest.mark.parametrize(
    ("hosts", "needle"),
    [
        ([Host("a", "1.1.1.1"), Host("a", "1.1.1.2")], "'a' appears twice"),
        ([Host("b", "")], "host 'b': address"),
        ([Host("c", object())], "host 'c': address"),
        ([], "no hosts"),
        ([Host("gpu_hosts", "1.1.1.1", groups=["gpu_hosts"])], "both as host and group"),
    ],
)
def test_inventory_rejects_bad_hosts(hosts: list[Host], needle: str) -> None:
    with pytest.raises(InventoryError, match=needle):
        build_inventory(hosts)


# ---------------------------------------------------------------- runner


@pytest.mark.integration
def test_summary_counts_ok_changed_skipped(tmp_path: Path) -> None:
    target = tmp_path / "secret.txt"
    r = run_playbook(SMOKE, [CTL], secrets={"smoke_secret": "s3", "smoke_secret_file": str(target)})
    h = r.hosts["ctl"]
    assert (h.ok, h.changed, h.failed, h.unreachable, h.skipped) == (3, 2, 0, 0, 1)
    assert r.ok and r.status == "successful" and r.rc == 0 and r.failures == []
    assert target.read_text() == "s3"
    assert "ctl: ok=3 changed=2 failed=0" in r.summary()


def test_failure_raises_naming_host_and_task() -> None:
    with pytest.raises(PlaybookError) as exc:
        run_playbook(SMOKE, [CTL], extravars={"smoke_fail": True, "smoke_fail_marker": "m1"})
    msg = str(exc.value)
    assert "host 'ctl' failed at task 'Fail on request': requested failure m1" in msg
    assert exc.value.result.hosts["ctl"].failed == 1


@pytest.mark.integration
def test_check_false_returns_the_failed_result() -> None:
    r = run_playbook(SMOKE, [CTL], extravars={"smoke_fail": True}, check=False)
    assert not r.ok and r.status == "failed"
    assert [(f.host, f.task, f.unreachable) for f in r.failures] == [
        ("ctl", "Fail on request", False)
    ]


@pytest.mark.integration
def test_unreachable_host_is_named() -> None:
    ghost = Host("ghost", "127.0.0.1", ssh_port=1, gpu_path="none")  # nothing listens on :1
    with pytest.raises(PlaybookError) as exc:
        run_playbook(SMOKE, [CTL, ghost], timeout_s=120)
    r = exc.value.result
    assert r.hosts["ghost"].unreachable == 1
    assert r.hosts["ctl"].failed == 0 and r.hosts["ctl"].ok == 2
    assert "host 'ghost' unreachable at task 'An ok task'" in str(exc.value)


def test_sudo_password_failure_names_the_user() -> None:
    """The message become gives when sudo asks for a password, on the host's login user (the
    real one comes from an nspawn host in test_nspawn_login.py)."""
    failures = [
        runner_mod.TaskFailure("gpu-0", "Install pciutils", "Task failed: Missing sudo password"),
        runner_mod.TaskFailure("gpu-1", "Install pciutils", "requested failure"),
    ]
    inv = build_inventory([Host("gpu-0", "10.0.0.5", ssh_user="rocky", gpu_path="none"),
                           Host("gpu-1", "10.0.0.6", gpu_path="none")])  # fmt: skip
    runner_mod._explain_sudo(failures, inv)
    assert str(failures[0]) == (
        "host 'gpu-0' failed at task 'Install pciutils': sudo as user 'rocky' needs a password "
        "(Task failed: Missing sudo password); give 'rocky' passwordless sudo (NOPASSWD), as "
        "cloud images do, or log in as a user that has it"
    )
    assert failures[1].msg == "requested failure"


def test_missing_playbook_is_a_clear_error() -> None:
    with pytest.raises(FileNotFoundError, match=r"no-such\.yml"):
        run_playbook("no-such.yml", [CTL])


@pytest.mark.integration
def test_secret_never_in_artifacts_or_stdout(tmp_path: Path) -> None:
    """The sentinel goes in as a secret and is used (written to a file) by a no_log task; a
    control marker printed by a failing task shows the artifact grep does find values."""
    art = tmp_path / "artifacts"
    target = tmp_path / "used.txt"
    r = run_playbook(
        SMOKE,
        [CTL],
        extravars={"smoke_fail": True, "smoke_fail_marker": "CONTROL-MARKER-42"},
        secrets={"smoke_secret": SENTINEL, "smoke_secret_file": str(target)},
        keep_artifacts=art,
        check=False,
    )
    assert target.read_text() == SENTINEL  # the secret reached the play
    assert _grep_tree(art, "CONTROL-MARKER-42")  # the grep works on these artifacts
    assert _grep_tree(art, SENTINEL) == []
    assert SENTINEL not in r.stdout_tail and SENTINEL not in r.summary()
    command = (art / "command").read_text()
    assert "secrets.yml" in command and "OS_PASSWORD" not in command


@pytest.mark.integration
def test_secrets_file_is_private_and_removed_fresh_data_dirs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[tuple[Path, int, int]] = []
    data_dirs: list[Path] = []
    real_write = runner_mod._write_secrets
    real_mkdtemp = runner_mod.tempfile.mkdtemp

    def spy_write(secrets):  # type: ignore[no-untyped-def]
        d, f = real_write(secrets)
        seen.append((f, stat.S_IMODE(f.stat().st_mode), stat.S_IMODE(d.stat().st_mode)))
        return d, f

    def spy_mkdtemp(*a, **k):  # type: ignore[no-untyped-def]
        p = real_mkdtemp(*a, **k)
        if "gpulab-ansible-" in str(k.get("prefix", "")):
            data_dirs.append(Path(p))
        return p

    monkeypatch.setattr(runner_mod, "_write_secrets", spy_write)
    monkeypatch.setattr(runner_mod.tempfile, "mkdtemp", spy_mkdtemp)
    for _ in range(2):
        run_playbook(SMOKE, [CTL], secrets={"smoke_secret": "x"})
    assert len(seen) == 2
    for f, fmode, dmode in seen:
        assert (fmode, dmode) == (0o600, 0o700)
        assert not f.exists() and not f.parent.exists()
    assert len(data_dirs) == 2 and data_dirs[0] != data_dirs[1]
    assert not any(d.exists() for d in data_dirs)


# ---------------------------------------------------------------- argument_specs

GOOD_SHA = "ab" * 32


@pytest.mark.parametrize(
    ("role", "bad", "names"),
    [
        ("nvidia_driver", {"nvidia_driver_source": "ppa"}, "nvidia_driver_source"),
        ("nvidia_driver", {"nvidia_driver_open_modules": "maybe"}, "nvidia_driver_open_modules"),
        ("nvidia_vgpu_guest", {"nvidia_vgpu_guest_driver_sha256": GOOD_SHA},
         "nvidia_vgpu_guest_driver_url"),
        ("nvidia_vgpu_guest", {"nvidia_vgpu_guest_driver_url": "http://x/d.deb",
                               "nvidia_vgpu_guest_driver_sha256": GOOD_SHA,
                               "nvidia_vgpu_guest_feature_type": 3},
         "nvidia_vgpu_guest_feature_type"),
        ("apptainer", {}, "apptainer_package_sha256"),
        ("cuda_toolkit", {"cuda_toolkit_set_default": "perhaps"}, "cuda_toolkit_set_default"),
        ("k8s_gpu", {"k8s_gpu_mode": "daemonset"}, "k8s_gpu_mode"),
        ("workload_run", {"workload_run_bitfusion_gpus": "two"}, "workload_run_bitfusion_gpus"),
    ],
)  # fmt: skip
def test_argument_specs_reject_before_any_role_task(
    role: str, bad: dict[str, object], names: str, tmp_path: Path
) -> None:
    art = tmp_path / "art"
    with pytest.raises(PlaybookError) as exc:
        run_playbook(
            ONE_ROLE,
            [CTL],
            extravars={"one_role": role, "gpu_facts_install_pciutils": False, **bad},
            # a secret riding along must not show up in the rejection
            secrets={"nvidia_vgpu_guest_client_token": SENTINEL},
            keep_artifacts=art,
            check_mode=True,  # should validation ever let a role through: change nothing here
        )
    msg = str(exc.value)
    assert "host 'ctl' failed at task" in msg
    assert "argument" in msg.lower() and names in msg
    assert exc.value.result.hosts["ctl"].changed == 0
    assert SENTINEL not in msg and _grep_tree(art, SENTINEL) == []
    # no task of the role itself ran (only its gpu_facts dependency may have)
    own = [
        p for p in (art / "job_events").glob("*.json")
        if f'"role": "{role}"' in p.read_text() and '"runner_on_ok"' in p.read_text()
    ]  # fmt: skip
    assert own == []


def test_an_unknown_execution_environment_stops_before_the_run(tmp_path: Path) -> None:
    """The execution environments come from the ExecEnv table (workloads/execenv.py, generated
    into the role's vars): an unknown name fails the role's first task, naming the allowed ones."""
    art = tmp_path / "art"
    with pytest.raises(PlaybookError) as exc:
        run_playbook(
            ONE_ROLE,
            [CTL],
            extravars={"one_role": "workload_run", "gpu_facts_install_pciutils": False,
                       "workload_run_exec_env": "podman"},
            keep_artifacts=art,
            check_mode=True,
        )  # fmt: skip
    msg = str(exc.value)
    assert "host 'ctl' failed at task 'Check the execution environment'" in msg
    assert "workload_run_exec_env podman is not one of" in msg
    for name in ("native", "docker", "apptainer", "singularity", "k8s", "bitfusion"):
        assert name in msg
    assert exc.value.result.hosts["ctl"].changed == 0
    ran = [
        p for p in (art / "job_events").glob("*.json")
        if '"task": "Run the workloads"' in p.read_text()
    ]  # fmt: skip
    assert ran == []


def test_workload_run_interface_matches_callers() -> None:
    """infra/dynamic/workload_run.py passes these extravars; the role must declare them."""
    spec = yaml.safe_load(
        (runner_mod.PLAYBOOKS / "roles/workload_run/meta/argument_specs.yml").read_text()
    )["argument_specs"]["main"]["options"]
    for name in ("workload_run_suite", "workload_run_exec_env", "workload_run_arm",
                 "workload_run_topology", "workload_run_id", "workload_run_fetch_dir"):  # fmt: skip
        assert name in spec, name
    # its accepted names are the ExecEnv table's, generated into the role's vars (checked in
    # tests/specs), not a second list in argument_specs
    assert "choices" not in spec["workload_run_exec_env"]


@pytest.mark.integration
def test_k8s_job_template_renders_a_gpu_job(tmp_path: Path) -> None:
    dest = tmp_path / "job.yaml"
    env = {"GPULAB_DATA_DIR": "/data/inet", "GPULAB_DIST_BASE_PORT": 2300}
    run_playbook(
        PLAYBOOKS / "render_job.yml",
        [CTL],
        extravars={"render_dest": str(dest), "workload_run_environment": env},
    )
    job = yaml.safe_load(dest.read_text())
    assert job["kind"] == "Job" and job["spec"]["backoffLimit"] == 0
    assert job["spec"]["activeDeadlineSeconds"] == 600
    c = job["spec"]["template"]["spec"]["containers"][0]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == 2
    assert c["image"] == "registry.local/gpulab/workloads:1"
    assert c["env"] == [
        {"name": "GPULAB_DATA_DIR", "value": "/data/inet"},
        {"name": "GPULAB_DIST_BASE_PORT", "value": "2300"},
        {"name": "GPULAB_EXEC_ENV", "value": "k8s"},
        {"name": "GPULAB_EXPECT_DEVICE", "value": "gpu"},  # the pod requests a GPU
        {"name": "GPULAB_GPU_PATH", "value": "container-vm"},  # no container-bm hosts
        {"name": "GPULAB_SHARING", "value": ""},
    ]
    script = c["args"][0]
    assert "python3 -m workloads bench --suite smoke" in script
    assert "--arm 'k8s it'\"'\"'s'" in script  # shell-quoted
    assert script.index("records begin r1") < script.index("cat ") < script.index("records end")
    assert os.access(dest, os.R_OK)
