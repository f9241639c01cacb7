"""Every role converged on a real systemd-nspawn host over real SSH as the image's sudo user
(``debian``, passwordless sudo, root login refused, as on the Debian cloud image; the plays
become root), packages installed for real through apt-cacher-ng and from the stub NVIDIA
repository; then a second converge with changed=0, site.yml on the same host, workload runs,
and validate.yml failing where only a GPU can pass.

GPU-hardware steps are excluded (helpers.NO_HARDWARE): nvidia-persistenced and the nvidia-smi
driver check (nvidia_driver), the vGPU license state (nvidia_vgpu_guest), CDI generation
(nvidia_container_toolkit), `bitfusion list_gpus`, the Helm install and allocatable wait
(k8s_gpu), and the reboot (it would end the nspawn container; never on local/chroot either).
There is no GPU here: no driver is loaded, nvidia-smi does not exist, persistence mode cannot be
set. The stub packages only have the real names.
"""

from __future__ import annotations

import json
import shutil
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest

from infra.ansible import PlaybookError, PlaybookResult, run_playbook
from tests.ansible.helpers import ALL_ROLES, PLAYBOOKS, Events, stub_key_fingerprint, stub_vars
from tests.parts import REPO
from tests.parts.fixtures_nspawn import NspawnHost, NspawnLab
from workloads.records import SCHEMA_VERSION, read_records

pytestmark = [pytest.mark.nspawn, pytest.mark.slow]

TOKEN = "SENTINEL-vgpu-client-token-5d2e8b71"
BF_TOKEN = "SENTINEL-bitfusion-token-90c4aa3f"
SECRETS = {
    "nvidia_vgpu_guest_client_token": TOKEN,
    "bitfusion_client_token_files": {"client.yaml": f"token: {BF_TOKEN}\n"},
}
DAEMON_JSON = {
    "log-driver": "journald",
    "data-root": "/srv/docker",
    "runtimes": {"runsc": {"path": "/usr/bin/runsc"}},
}
CONTAINERD = (
    'version = 2\n[plugins."io.containerd.grpc.v1.cri"]\n'
    '  sandbox_image = "registry.k8s.io/pause:3.9"\n'
)
TIMINGS: dict[str, float] = {}
# Other work edits workloads/ while tests run; the hosts get a snapshot taken once.
SNAPSHOT: dict[str, str] = {}


def _vars(lab: NspawnLab) -> dict[str, Any]:
    return {**stub_vars(lab.stub_url, lab.stub_sha256), **SNAPSHOT}


def _converge(
    lab: NspawnLab, host: NspawnHost, roles: list[str] = ALL_ROLES, **kw: Any
) -> tuple[PlaybookResult, Events]:
    ev = Events()
    extra = {**_vars(lab), "converge_roles": roles}
    r = run_playbook(
        PLAYBOOKS / "converge.yml",
        [host.host],
        extravars=extra,
        secrets=SECRETS,
        event_handler=ev,
        timeout_s=1500,  # under load 10-16 on 2 cores the first converge took over 600 s
        **kw,
    )
    return r, ev


def _grep_tree(root: Path, needle: str) -> list[str]:
    return [
        str(p.relative_to(root))
        for p in root.rglob("*")
        if p.is_file() and needle.encode() in p.read_bytes()
    ]


@pytest.fixture(scope="module")
def first(
    nspawn_lab: NspawnLab, nspawn_host: NspawnHost, tmp_path_factory: pytest.TempPathFactory
) -> tuple[PlaybookResult, Events, Path]:
    host = nspawn_host
    src = tmp_path_factory.mktemp("src") / "workloads"
    shutil.copytree(REPO / "workloads", src, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    SNAPSHOT["workload_env_src"] = str(src)
    host.ssh(
        "mkdir -p /etc/docker /etc/containerd && "
        f"echo '{json.dumps(DAEMON_JSON)}' > /etc/docker/daemon.json && "
        f"printf '%s' '{CONTAINERD}' > /etc/containerd/config.toml"
    )
    art = tmp_path_factory.mktemp("converge1") / "artifacts"
    t0 = time.monotonic()
    r, ev = _converge(nspawn_lab, host, keep_artifacts=art)
    TIMINGS["boot_s"] = nspawn_lab.boot_s
    TIMINGS["converge1_s"] = time.monotonic() - t0
    return r, ev, art


def test_first_converge_installs_and_configures(first, nspawn_host: NspawnHost) -> None:  # type: ignore[no-untyped-def]
    r, ev, _ = first
    h = r.hosts["nspawn-a"]
    assert r.ok and h.failed == 0 and h.unreachable == 0
    assert h.changed >= 15, r.summary()
    ssh = nspawn_host.ssh
    pk = ssh(
        "dpkg-query -W -f='${Package} ${Version}\\n' cuda-drivers-580 cuda-toolkit-12-9 "
        "nvidia-container-toolkit nvidia-container-toolkit-base libnvidia-container-tools "
        "libnvidia-container1 nvidia-linux-grid-550 apptainer bitfusion-client python3-venv"
    ).stdout
    # the newest the Debian 12 lists hold of the branch the role chose (no GPU seen: its default
    # branch, proprietary modules), the container toolkit pinned at the CVE-2025-23266 fix
    assert "cuda-drivers-580 580.95.05-1" in pk and "nvidia-container-toolkit 1.17.8-1" in pk
    assert "cuda-toolkit-12-9 12.9.1-1" in pk
    assert "python3-venv " in pk  # a real Debian package, through apt-cacher-ng
    assert "blacklist nouveau" in ssh("cat /etc/modprobe.d/blacklist-nouveau.conf").stdout
    # repository keys: the stub's key, accepted because its fingerprint is the pinned one, and
    # apt verified the signed repositories with it (no trusted=yes anywhere)
    stub_key = (REPO / ".cache/nvidia-stub-repo/keys/stub.asc").read_text()
    for key in ("nvidia-cuda.asc", "nvidia-container-toolkit.asc"):
        assert ssh(f"stat -c '%a %U:%G' /etc/apt/keyrings/{key}").stdout.split() == [
            "644",
            "root:root",
        ]
        assert ssh(f"cat /etc/apt/keyrings/{key}").stdout == stub_key
    cuda_list = ssh("cat /etc/apt/sources.list.d/nvidia-cuda.list").stdout
    assert "signed-by=/etc/apt/keyrings/nvidia-cuda.asc" in cuda_list
    assert "/debian12/cuda/ /" in cuda_list
    assert "trusted=yes" not in ssh("cat /etc/apt/sources.list.d/*.list").stdout
    # driver facts: changed, but no reboot (disabled here) and no GPU seen
    facts = ev.facts("nspawn-a")
    assert facts["nvidia_driver_changed"] is True
    assert facts["nvidia_driver_reboot_wanted"] is False
    assert facts["gpu_facts_has_gpu"] is False and facts["gpu_facts_driver_loaded"] is False
    assert facts["cuda_toolkit_installed_version"] == "12.9"
    assert (
        facts["nvidia_driver_branch_in_use"] == "580" and facts["nvidia_driver_use_open"] is False
    )
    # CUDA toolkit pinned and on PATH
    assert ssh("readlink /usr/local/cuda").stdout.strip() == "/usr/local/cuda-12.9"
    assert "release 12.9, V12.9.1" in ssh("bash -lc 'nvcc --version'").stdout
    # Docker engine (Debian's docker.io here), started; the login user is not in group docker
    assert ssh("systemctl is-active docker").stdout.strip() == "active"
    assert ssh("systemctl is-enabled docker").stdout.strip() == "enabled"
    assert facts["docker_engine_server_version"].startswith("20.10.")
    assert "docker" not in ssh("id -nG debian").stdout.split()
    # container toolkit through `nvidia-ctk runtime configure --runtime=docker`, docker
    # restarted by its handler; docker's other keys kept, containerd gets the runtime
    ctk = ev.results("Add the nvidia runtime to Docker")
    assert ctk and ctk[0]["cmd"][:4] == ["nvidia-ctk", "runtime", "configure", "--runtime=docker"]
    assert any(e.get("event") == "runner_on_ok" and e["event_data"].get("task") == "Restart docker"
               for e in ev.events)  # fmt: skip
    assert ssh("stat -c '%a %U:%G' /etc/docker/daemon.json").stdout.split() == ["644", "root:root"]
    daemon = json.loads(ssh("cat /etc/docker/daemon.json").stdout)
    assert daemon["log-driver"] == "journald" and daemon["data-root"] == "/srv/docker"
    assert daemon["runtimes"]["runsc"] == {"path": "/usr/bin/runsc"}
    assert daemon["runtimes"]["nvidia"]["path"] == "nvidia-container-runtime"
    toml = ssh("cat /etc/containerd/config.toml").stdout
    assert "sandbox_image" in toml and "containerd.runtimes.nvidia]" in toml
    # vGPU guest: gridd.conf, token (NVIDIA's documented mode 744), nvidia-gridd restarted by
    # its handler after gridd.conf was written
    # this host's gpu_path is pci-passthrough: a physical GPU, so the product's FeatureType (4,
    # vCS); prerequisites first (make stands in for build-essential + dkms), reboot disabled
    assert "FeatureType=4" in ssh("cat /etc/nvidia/gridd.conf").stdout
    assert ssh("stat -c '%a %U:%G' /etc/nvidia/gridd.conf").stdout.split() == ["644", "root:root"]
    assert ssh("dpkg-query -W -f='${Status}' make").stdout == "install ok installed"
    assert facts["nvidia_vgpu_guest_changed"] is True
    assert facts["nvidia_vgpu_guest_reboot_wanted"] is False
    tok = "/etc/nvidia/ClientConfigToken/client_configuration_token_gpulab.tok"
    assert ssh(f"cat {tok}").stdout == TOKEN
    assert ssh(f"stat -c %a {tok}").stdout.strip() == "600"
    assert ssh("systemctl is-active nvidia-gridd").stdout.strip() == "active"
    assert "started with FeatureType=4" in ssh("journalctl -u nvidia-gridd --no-pager").stdout
    # the workloads image, built on the host from templates/Dockerfile.j2, labelled with the
    # project version and tagged as workload_run's default; the SIF from the same image
    ctx = "/var/lib/gpulab/image"
    files = f"{ctx}/Dockerfile {ctx}/workloads.def {ctx}/workloads.tar /opt/gpulab/workloads.sif"
    assert ssh(f"stat -c '%a %U:%G' {files}.source").stdout.split() == ["644", "root:root"] * 4
    dockerfile = ssh(f"cat {ctx}/Dockerfile").stdout
    version = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    assert dockerfile.startswith("# gpulab workloads image") and "FROM scratch\n" in dockerfile
    assert f'org.opencontainers.image.version="{version}"' in dockerfile
    assert "ADD workloads.tar /opt/gpulab/" in dockerfile
    assert "Bootstrap: docker\nFrom: scratch\n" in ssh(f"cat {ctx}/workloads.def").stdout
    fmt = '{{ index .Config.Labels "org.opencontainers.image.version" }}'
    for tag in ("gpulab/workloads:latest", f"gpulab/workloads:{version}"):
        assert ssh(f"docker image inspect --format '{fmt}' {tag}").stdout.strip() == version
    image_id = ssh("docker image inspect --format '{{.Id}}' gpulab/workloads:latest").stdout
    assert facts["workload_image_docker_id"] == image_id.strip()
    sif = ssh("cat /opt/gpulab/workloads.sif").stdout  # the stub apptainer writes its source
    assert sif == "gpulab STUB SIF built from docker-daemon://gpulab/workloads:latest\n"
    # apptainer pinned, --nv via nvliblist.conf
    assert "use nvidia-container-cli = no" in ssh("cat /etc/apptainer/apptainer.conf").stdout
    # bitfusion token files, readable by root's group only
    assert ssh("cat /etc/bitfusion/client.yaml").stdout == f"token: {BF_TOKEN}\n"
    assert ssh("stat -c %a /etc/bitfusion/client.yaml").stdout.strip() == "640"
    # workload_env: the repo's workloads/ importable from the venv
    out = ssh("cd /opt/gpulab && venv/bin/python -c 'import workloads.records as r; "
              "print(r.SCHEMA_VERSION)'").stdout  # fmt: skip
    assert out.strip() == str(SCHEMA_VERSION)
    probe = "import gpulab_probe; print(gpulab_probe.VERSION)"  # pip through the index URL
    assert ssh(f"/opt/gpulab/venv/bin/python -c '{probe}'").stdout.strip() == "1.0"
    # as the sudo user: the system files belong to root, nothing of root's in debian's home,
    # and the login user can use what was installed
    owners = ssh("stat -c '%U:%G' /opt/gpulab /opt/gpulab/venv/bin/python3 /opt/gpulab/workloads "
                 "/etc/nvidia/gridd.conf /etc/docker/daemon.json").stdout.split()  # fmt: skip
    assert set(owners) == {"root:root"}, owners
    assert ssh("find /home/debian -user root").stdout == ""
    user_probe = nspawn_host.ssh(f"/opt/gpulab/venv/bin/python -c '{probe}'", as_user=True)
    assert user_probe.stdout.strip() == "1.0"


def test_hardware_steps_did_not_run(first) -> None:  # type: ignore[no-untyped-def]
    _, ev, _ = first
    for task in (
        "Enable the persistence daemon",
        "Query the loaded driver",
        "Query the vGPU license state",
        "Generate the CDI spec (needs a GPU)",
        "List the Bitfusion server's GPUs (needs a server)",
        "Install the release",
        "Reboot into the new driver",
    ):
        assert ev.results(task) == [], task


def test_secrets_never_in_artifacts_events_or_stdout(first) -> None:  # type: ignore[no-untyped-def]
    r, ev, art = first
    assert art.is_dir() and any(art.rglob("*.json"))
    for secret in (TOKEN, BF_TOKEN):
        assert _grep_tree(art, secret) == [], secret
        assert secret not in json.dumps(ev.events, default=str)
        assert secret not in r.stdout_tail


def _changed_tasks(ev: Events) -> list[str]:
    return [
        f"{(e['event_data'] or {}).get('role')}: {(e['event_data'] or {}).get('task')}"
        for e in ev.events
        if e.get("event") == "runner_on_ok" and (e["event_data"].get("res") or {}).get("changed")
    ]


SITE_ROLES = {"lab_network", "gpu_facts", "nvidia_driver", "cuda_toolkit", "repo_key",
              "docker_engine", "nvidia_container_toolkit", "apptainer", "workload_env",
              "workload_image"}  # fmt: skip


def test_second_converge_changes_nothing(
    first, nspawn_lab: NspawnLab, nspawn_host: NspawnHost
) -> None:  # type: ignore[no-untyped-def]
    """Second pass over every role, changed=0: site.yml (roles picked by the host's group
    gpu_path_pci_passthrough and gpulab_exec_envs) plus converge.yml for the roles site.yml
    gives other groups (vGPU guests, Bitfusion clients, k8s_control)."""
    t0 = time.monotonic()
    ev = Events()
    stub = _vars(nspawn_lab)
    r = run_playbook(
        "site.yml",
        [nspawn_host.host],
        extravars={**stub, "gpulab_exec_envs": ["native", "docker", "singularity"]},
        event_handler=ev,
        timeout_s=600,
    )
    print(f"\nsite.yml second pass: {r.summary()}")
    assert r.ok and r.hosts["nspawn-a"].changed == 0, _changed_tasks(ev)
    ran = {  # on this host (k8s_gpu runs on the controller, localhost)
        (e["event_data"] or {}).get("role")
        for e in ev.events
        if e.get("event") == "runner_on_ok" and (e["event_data"] or {}).get("host") == "nspawn-a"
    }
    assert ran - {None} == SITE_ROLES
    rest = [role for role in ALL_ROLES if role not in SITE_ROLES]
    assert rest == ["nvidia_vgpu_guest", "bitfusion_client", "k8s_gpu"]
    r2, ev2 = _converge(nspawn_lab, nspawn_host, roles=rest)
    assert r2.ok and r2.hosts["nspawn-a"].changed == 0, _changed_tasks(ev2)
    TIMINGS["converge2_s"] = time.monotonic() - t0
    print(f"\nnspawn timings: {json.dumps({k: round(v, 1) for k, v in TIMINGS.items()})}")


TINY = (
    "import os, socket, sys\n"
    "from workloads.records import RecordWriter, make_record\n"
    "e = os.environ\n"
    "with RecordWriter(e['GPULAB_RECORDS_OUT']) as w:\n"
    "    w.write(make_record(run_id=e['GPULAB_RUN_ID'], suite='tiny', experiment='tiny',\n"
    "        model='none', kind='job', elapsed_s=0.01, topology=e['GPULAB_TOPOLOGY'],\n"
    "        arm=e['GPULAB_ARM'], host=socket.gethostname(),\n"
    "        params={'data_dir': e.get('GPULAB_DATA_DIR', '')}))\n"
    "sys.exit(int(sys.argv[1]))\n"
)


def _workload(lab: NspawnLab, host: NspawnHost, fetch: Path, env: str, rc: int = 0, **kw: Any):  # type: ignore[no-untyped-def]
    ev = Events()
    extra = {
        "workload_run_exec_env": env,
        "workload_run_topology": "nspawn-test",
        "workload_run_id": f"t-{env}-{rc}",
        "workload_run_fetch_dir": str(fetch),
        "workload_run_command": ["/opt/gpulab/venv/bin/python", "-c", TINY, str(rc)],
        **kw,
    }  # fmt: skip
    r = run_playbook("workloads.yml", [host.host], extravars=extra, event_handler=ev, check=False)
    return r, ev


@pytest.mark.parametrize("env", ["native", "bitfusion"])
def test_workload_run_fetches_records(first, nspawn_lab, nspawn_host, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    """native for real; bitfusion through the stub `bitfusion run -n 1 -p 1.0 --` (runs locally)."""
    r, ev = _workload(
        nspawn_lab,
        nspawn_host,
        tmp_path,
        env,
        workload_run_environment={"GPULAB_DATA_DIR": "/data/inet"},
    )
    assert r.ok, r.summary()
    files = sorted(tmp_path.rglob("*.jsonl"))
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        f"nspawn-a/nspawn-test-{env}-nspawn-a.jsonl"
    ]
    recs = read_records(files)
    assert len(recs) == 1 and recs[0]["arm"] == env and recs[0]["topology"] == "nspawn-test"
    assert recs[0]["run_id"] == f"t-{env}-0"
    assert recs[0]["host"] == nspawn_host.name
    assert recs[0]["params"]["data_dir"] == "/data/inet"  # workload_run_environment reached it
    argv = ev.results("Run the workloads")[0]["cmd"]
    if env == "bitfusion":
        assert argv[3:10] == ["bitfusion", "run", "-n", "1", "-p", "1.0", "--"]
    else:
        assert argv[3] == "/opt/gpulab/venv/bin/python"


def test_workload_run_failure_names_host_and_keeps_records(
    first, nspawn_lab, nspawn_host, tmp_path
) -> None:  # type: ignore[no-untyped-def]
    r, _ = _workload(nspawn_lab, nspawn_host, tmp_path, "native", rc=3)
    assert not r.ok
    assert [(f.host, f.task) for f in r.failures] == [
        ("nspawn-a", "Fail when the run failed (its records are fetched)")
    ]
    assert "native run exited with 3" in r.failures[0].msg
    assert len(read_records(sorted(tmp_path.rglob("*.jsonl")))) == 1  # fetched anyway


@pytest.mark.parametrize("env", ["docker", "singularity"])
def test_container_wrappers(first, nspawn_lab, nspawn_host, tmp_path, env) -> None:  # type: ignore[no-untyped-def]
    """The docker / Apptainer command lines for real on the host; neither can run a container
    here (the nspawn host's cgroups are read-only and it has no GPU for --gpus; the Apptainer
    stub refuses), so the run fails with the host and task named."""
    ev = Events()
    r = run_playbook(
        "workloads.yml",
        [nspawn_host.host],
        extravars={"workload_run_exec_env": env, "workload_run_fetch_dir": str(tmp_path),
                   "workload_run_id": f"w-{env}", "workload_run_topology": "t",
                   "workload_run_environment": {"GPULAB_DATA_DIR": "/data/inet"}},
        event_handler=ev,
        check=False,
    )  # fmt: skip
    argv = ev.results("Run the workloads")[0]["cmd"]
    runner = ["python3", "-m", "workloads", "bench", "--suite", "smoke", "--out",
              f"/var/lib/gpulab/results/w-{env}/t-{env}-nspawn-a.jsonl",
              "--topology", "t", "--arm", env]  # fmt: skip
    assert argv[-len(runner) :] == runner
    if env == "docker":
        # The one docker launcher (workloads/execenv.py), the same as gpulab run local's.
        assert argv[3:11] == [
            "docker", "run", "--rm", f"--name=gpulab-w-{env}-{env}", "--gpus=all", "--ipc=host",
            "--network=host", "--user=0:0",
        ]  # fmt: skip
        for name in ("GPULAB_DATA_DIR", "GPULAB_GPU_PATH", "GPULAB_EXEC_ENV", "GPULAB_SHARING"):
            assert f"--env={name}" in argv
        assert "--volume=/opt/gpulab/workloads:/opt/gpulab/workloads:ro" in argv
        assert argv[argv.index("gpulab/workloads:latest") - 1] == "--entrypoint="
    else:  # singularity: accepted as the alias of apptainer
        assert argv[3:6] == ["apptainer", "exec", "--nv"]
        assert "/opt/gpulab/workloads.sif" in argv
    assert [(f.host, f.task) for f in r.failures] == [
        ("nspawn-a", "Fail when the run failed (its records are fetched)")
    ]


def test_validate_needs_a_gpu(first, nspawn_host: NspawnHost) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PlaybookError) as exc:
        run_playbook("validate.yml", [nspawn_host.host])
    assert "host 'nspawn-a' failed at task 'List the GPUs with nvidia-smi'" in str(exc.value)


def test_reboot_only_when_the_driver_changes_over_ssh(first, nspawn_lab, nspawn_host) -> None:  # type: ignore[no-untyped-def]
    """nvidia_driver_reboot on, over real SSH: unchanged driver -> no reboot; a driver change
    (open modules, shown in check mode so the container is not rebooted) -> the reboot task
    is reached. The start time of the container's PID 1 proves the host never rebooted."""
    started = nspawn_host.ssh("ps -o lstart= -p 1").stdout
    base = {**_vars(nspawn_lab), "one_role": "nvidia_driver", "nvidia_driver_reboot": True,
            "nvidia_driver_reboot_timeout": 60}  # fmt: skip
    ev = Events()
    r = run_playbook(PLAYBOOKS / "one_role.yml", [nspawn_host.host], extravars=base,
                     event_handler=ev)  # fmt: skip
    assert r.ok and r.hosts["nspawn-a"].changed == 0
    assert ev.facts("nspawn-a")["nvidia_driver_reboot_wanted"] is False
    assert ev.results("Reboot into the new driver") == []
    ev2 = Events()
    r2 = run_playbook(PLAYBOOKS / "one_role.yml", [nspawn_host.host],
                      extravars={**base, "nvidia_driver_open_modules": True},
                      check_mode=True, event_handler=ev2)  # fmt: skip
    assert r2.ok, r2.summary()
    assert ev2.facts("nspawn-a")["nvidia_driver_reboot_wanted"] is True
    reboot = ev2.results("Reboot into the new driver")
    assert len(reboot) == 1 and reboot[0].get("changed") is True
    assert nspawn_host.ssh("ps -o lstart= -p 1").stdout == started


def test_repository_key_with_another_fingerprint_fails_the_play(
    first, nspawn_lab, nspawn_host
) -> None:  # type: ignore[no-untyped-def]
    """The stub repository's key against a pin that is not its fingerprint (NVIDIA's real one):
    the play stops at the check, naming the variable, the URL and both fingerprints, and the
    installed key is left as it was."""
    before = nspawn_host.ssh("sha256sum /etc/apt/keyrings/nvidia-container-toolkit.asc").stdout
    pin = "C95B 321B 61E8 8C18 09C4  F759 DDCA E044 F796 ECB0"
    with pytest.raises(PlaybookError) as exc:
        run_playbook(PLAYBOOKS / "one_role.yml", [nspawn_host.host],
                     extravars={**_vars(nspawn_lab), "one_role": "nvidia_container_toolkit",
                                "nvidia_container_toolkit_repo_key_fingerprint": pin})  # fmt: skip
    msg = str(exc.value)
    assert "host 'nspawn-a' failed at task 'Refuse a key that is not the pinned one'" in msg
    assert f"{nspawn_lab.stub_url}/keys/stub.asc" in msg
    assert stub_key_fingerprint() in msg and "C95B321B61E88C1809C4F759DDCAE044F796ECB0" in msg
    assert "(nvidia_container_toolkit_repo_key_fingerprint)" in msg
    after = nspawn_host.ssh("sha256sum /etc/apt/keyrings/nvidia-container-toolkit.asc").stdout
    assert after == before


def test_secure_boot_stops_unless_the_module_is_signed(first, nspawn_lab, nspawn_host) -> None:  # type: ignore[no-untyped-def]
    """Secure Boot through a mokutil DOUBLE on the host (the firmware state cannot be set in a
    container): nvidia_driver stops before touching the driver, naming the host; with
    nvidia_driver_secure_boot_sign and an enrolled MOK's files it configures DKMS to sign."""
    ssh = nspawn_host.ssh
    ssh("printf '#!/bin/sh\\necho SecureBoot enabled\\n' > /usr/local/bin/mokutil && "
        "chmod 0755 /usr/local/bin/mokutil && mkdir -p /root/mok && "
        "echo key > /root/mok/MOK.priv && echo cert > /root/mok/MOK.der")  # fmt: skip
    base = {**_vars(nspawn_lab), "one_role": "nvidia_driver"}
    try:
        assert ssh("mokutil --sb-state").stdout == "SecureBoot enabled\n"
        with pytest.raises(PlaybookError) as exc:
            run_playbook(PLAYBOOKS / "one_role.yml", [nspawn_host.host], extravars=base)
        msg = str(exc.value)
        assert "failed at task 'Stop on Secure Boot unless the module is signed'" in msg
        assert "nspawn-a: Secure Boot is enabled (mokutil --sb-state)" in msg
        assert "nvidia_driver_secure_boot_sign" in msg
        ev = Events()
        signed = {**base, "nvidia_driver_secure_boot_sign": True,
                  "nvidia_driver_mok_key": "/root/mok/MOK.priv",
                  "nvidia_driver_mok_cert": "/root/mok/MOK.der"}  # fmt: skip
        r = run_playbook(PLAYBOOKS / "one_role.yml", [nspawn_host.host], extravars=signed,
                         event_handler=ev)  # fmt: skip
        assert r.ok and ev.facts("nspawn-a")["nvidia_driver_secure_boot"] is True
        conf = "/etc/dkms/framework.conf"
        assert ssh(f"stat -c '%a %U:%G' {conf}").stdout.split() == ["644", "root:root"]
        assert ssh(f"cat {conf}").stdout == (
            'mok_signing_key="/root/mok/MOK.priv"\nmok_certificate="/root/mok/MOK.der"\n'
        )
    finally:
        ssh("rm -rf /usr/local/bin/mokutil /root/mok /etc/dkms/framework.conf")
