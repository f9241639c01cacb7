"""The RHEL-family task branches run with the REAL dnf on a Debian rootfs whose facts say
Rocky Linux 9.4 -- not on RHEL or Rocky (no such rootfs is reachable here).

What is real: ansible-playbook over a chroot connection into an overlay of the test rootfs
(``scripts/parts/rootfs.sh``) plus a cached layer with Debian's dnf 4.14, python3-dnf,
dnf-plugins-core and rpm 4.18 (``tests/parts/rpm_stub_repo.py``); the roles' own tasks with
the real ``ansible.builtin.dnf`` (dnf4 backend), ``rpm_key``, ``yum_repository``, ``get_url``
and ``command`` modules; dnf resolving, verifying and installing from createrepo_c
repositories served over HTTP; NVIDIA's driver module stream (``@nvidia-driver:550-open``)
from a modules.yaml; package signatures checked by rpm against the imported key for the CUDA
and Docker repositories (gpgcheck=1); the signed repomd.xml of the libnvidia-container
repository checked by dnf (repo_gpgcheck=1, gpgcheck=0, as NVIDIA's nvidia-container-toolkit.repo
has it; a copy of that repository whose repomd.xml changed after signing is refused by dnf
under the role's repo file); ``dnf repolist --enabled`` and ``dnf config-manager
--set-enabled crb``, after nvidia_driver installed dnf-plugins-core (Rocky 9's container image,
rocky-linux/kickstarts Rocky-9-Container-Base.ks, has none: the chroot starts with Debian's
config-manager plugin turned off, and ``dnf config-manager`` is asserted to be no command before
the run). The other RHEL branches in the same converge, before nvidia_driver (a vGPU guest or
a Bitfusion client runs without it, so nothing has enabled EPEL yet): gpu_facts installs
pciutils with dnf and asks its lspci for the GPU's name, the GPU found in a copy of an H200
host's sysfs (``gpu_facts_sysfs_root``, tests/data/gpu_facts); nvidia_vgpu_guest enables EPEL,
installs gcc/make/dkms/elfutils-libelf-devel and the running kernel's headers, then the
vendor's driver RPM (nvidia-linux-grid-550, downloaded from the stub server by get_url with its
SHA-256, installed by dnf from the local file), writes gridd.conf and the client configuration
token, and enables nvidia-gridd (``systemctl enable`` works offline in a chroot; starting it
cannot and is left out by the module with a warning); bitfusion_client installs VMware's
client RPM the same way and writes its token files; workload_env installs python3.11,
python3.11-pip, python3-packaging and tar and makes its virtualenv with ``python3.11 -m venv``.
The two secrets (vGPU token, Bitfusion token) go in through ``run_playbook(secrets=...)`` and
must appear in no event of either run.

What is replaced, and why:

- The facts. ``gather_facts`` would report Debian, so the play runs ``setup`` and then sets
  the facts a Rocky 9.4 host reports (os_family RedHat, distribution Rocky, major version 9,
  pkg_mgr dnf, an EL9 kernel ``5.14.0-427.13.1.el9_4.x86_64``) with ``set_fact cacheable``;
  the roles read them from ``ansible_facts`` as usual (tests/data/rpm/rhel_converge.yml).
- The packages are STUBS (empty payloads with the real names, versions and dependencies; a
  few carry the files the roles read back: nvcc, nvidia-ctk, apptainer, bitfusion, the
  nvidia-gridd unit, the repo files of rocky-release and epel-release, an lspci that prints
  what the real one prints for the H200 sysfs copy, and dnf-plugins-core's
  config-manager.conf that turns Debian's plugin back on). python3.11 is Debian's interpreter,
  with Debian's python3.11-venv in the dnf layer for the ensurepip that Rocky's python3.11
  package includes. Rocky's BaseOS/AppStream, CRB and EPEL are stub
  repositories on the same server, unsigned (gpgcheck=0 in their repo files, where Rocky and
  EPEL sign theirs); the CUDA, libnvidia-container and Docker repositories use a stub key,
  pinned by fingerprint in the role variables in place of NVIDIA's and Docker's.
- ``rocky-release`` (which owns rocky.repo and tells dnf ``$releasever`` = 9) is installed
  with ``rpm -i`` before the first run, as a Rocky install already has it. Debian's rpm keeps
  its database in ``~/.rpmdb``; the layer sets ``%_dbpath /var/lib/rpm`` as on RHEL. Debian's
  /etc/os-release has no ``PLATFORM_ID``, which dnf's module filtering needs: dnf.conf gets
  ``module_platform_id=platform:el9`` (Rocky 9's value). Debian's dnf-plugins-core enables its
  "local" plugin (a copy of every installed package in a local repository), which Rocky does
  not ship: it is turned off; and its dnf.conf says ``skip_if_unavailable=True``, where RHEL 9's
  default is False: set to False.
- Tasks that cannot act on a chroot of a Debian rootfs, each left to the role's own guard:
  the initramfs handler (``dracut --force``, ``removes: /usr/bin/dracut``: no dracut here, so
  it is skipped), ``mokutil --sb-state`` (absent: read as Secure Boot off), the reboot (never
  on a chroot connection), the GPU steps (no GPU: nvidia-persistenced, nvidia-smi, CDI). No
  kernel module is built or loaded (dkms and the kmod packages are stubs).
- docker_engine: only its ``tasks/RedHat.yml`` (key, docker-ce.repo, packages); main.yml's
  start of dockerd and ``docker version`` need a booted systemd and are converged on the
  Debian nspawn hosts (test_nspawn_converge.py). Its restart handler (systemctl restart docker)
  cannot run without a booted systemd, so the play ends with ``meta: end_play`` right after
  the branch, before handlers run.
- workload_env's pip step is off (no packages): the same ``pip`` module on both families,
  converged with a stub index on the nspawn hosts. The license check (nvidia-smi -q) and
  ``bitfusion list_gpus`` need a vGPU and a Bitfusion server (``*_hardware_steps`` off).
- nvidia_container_toolkit's Docker/containerd configuration is off (no dockerd here); it is
  the same nvidia-ctk tasks on both families and converged on the nspawn hosts.

Converged twice: the second run must report changed=0. About 170 tasks a run (124 before the
vGPU, Bitfusion, workload_env and lspci branches were added); the test prints the seconds each
role's tasks took in each run.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from infra.ansible import run_playbook
from infra.hosts import Host
from tests.ansible.helpers import Events
from tests.ansible.test_gpu_facts import sysfs_tree
from tests.parts import REPO, need, need_command, need_root
from tests.parts import rpm_stub_repo as rpmrepo
from tests.parts.nspawn import ROOTFS, rootfs_key, rootfs_ready, stop_process, wait_for

pytestmark = [pytest.mark.slow]  # a chroot, no nspawn host: it may run beside the host tests

PLAYBOOK = REPO / "tests/data/rpm/rhel_converge.yml"
KERNEL_PLAYBOOK = REPO / "tests/data/rpm/rhel_kernel_headers.yml"
CUDA_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CUDA"
CTK_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-NVIDIA-CONTAINER-TOOLKIT"
DOCKER_KEY = "/etc/pki/rpm-gpg/RPM-GPG-KEY-DOCKER-CE"
SYSFS = "/var/lib/gpulab-test/sys"  # a copy of the H200 host's PCI files (gpu_facts_sysfs_root)
# Secrets handed in as run_playbook(secrets=...): they must appear in no event of the run.
TOKEN = "SENTINEL-rhel-vgpu-client-token-3f9a61c2"
BF_TOKEN = "SENTINEL-rhel-bitfusion-token-7be04d15"


@dataclass
class RhelTarget:
    root: Path
    host: Host
    url: str  # the stub server, as the target reaches it
    repos: Path

    def sh(self, cmd: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["chroot", str(self.root), "sh", "-c", cmd], capture_output=True,
                              text=True, check=False, timeout=120)  # fmt: skip

    def extravars(self) -> dict[str, Any]:
        u, fpr = self.url, (self.repos / "keys/stub.fpr").read_text().strip()
        key = f"{u}/keys/stub.asc"
        app = rpmrepo.APPTAINER_RPM
        return {
            "rhel_kernel": rpmrepo.EL9_KERNEL,
            "gpu_facts_install_pciutils": True,  # gpu_facts/tasks/RedHat.yml
            # nvidia_driver_open_modules stays auto: the H200 of the sysfs copy -> 580-open
            "nvidia_driver_cuda_repo_url": f"{u}/cuda/",
            "nvidia_driver_cuda_repo_key_url": key,
            "nvidia_driver_cuda_repo_key_fingerprint_rhel": fpr,
            "nvidia_driver_hardware_steps": False,
            "cuda_toolkit_repo_url": f"{u}/cuda/",
            "cuda_toolkit_repo_key_url": key,
            "cuda_toolkit_repo_key_fingerprint_rhel": fpr,
            "nvidia_container_toolkit_repo_url": f"{u}/libnvidia-container/",
            "nvidia_container_toolkit_repo_key_url": key,
            "nvidia_container_toolkit_repo_key_fingerprint": fpr,
            "nvidia_container_toolkit_docker": False,
            "nvidia_container_toolkit_containerd": False,
            "nvidia_container_toolkit_hardware_steps": False,
            "apptainer_package_url": f"{u}/files/{app}",
            "apptainer_package_sha256": rpmrepo.sha256sums(self.repos)[app],
            "docker_stub_repo": f"{u}/docker",
            "docker_engine_repo_key_url": key,
            "docker_engine_repo_key_fingerprint_rhel": fpr,
            "gpu_facts_sysfs_root": SYSFS,
            "nvidia_vgpu_guest_driver_url": f"{u}/files/{rpmrepo.GRID_RPM}",
            "nvidia_vgpu_guest_driver_sha256": rpmrepo.sha256sums(self.repos)[rpmrepo.GRID_RPM],
            "nvidia_vgpu_guest_hardware_steps": False,
            "bitfusion_client_package_url": f"{u}/files/{rpmrepo.BITFUSION_RPM}",
            "bitfusion_client_package_sha256": rpmrepo.sha256sums(self.repos)[
                rpmrepo.BITFUSION_RPM
            ],
            "bitfusion_client_version": rpmrepo.BITFUSION,
            "bitfusion_client_hardware_steps": False,
            "workload_env_tensorflow": "",  # pip's path is the same on both families
            "workload_env_pip_packages": [],
        }

    @staticmethod
    def secrets() -> dict[str, Any]:
        return {
            "nvidia_vgpu_guest_client_token": TOKEN,
            "bitfusion_client_token_files": {"client.yaml": f"token: {BF_TOKEN}\n"},
        }


def _stop_chroot_processes(root: Path) -> None:
    """SIGTERM, then SIGKILL, each process whose root is ``root``: what the run left behind
    there (dnf's gpg-agent, started for the repo_gpgcheck key import), one PID at a time."""
    pids = []
    for p in Path("/proc").iterdir():
        if p.name.isdigit():
            with contextlib.suppress(OSError):
                if os.readlink(p / "root") == str(root):
                    pids.append(int(p.name))
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + 5
        while pids and time.monotonic() < deadline:
            pids = [pid for pid in pids if Path(f"/proc/{pid}").exists()]
            time.sleep(0.1)


def _mount(*argv: str) -> None:
    subprocess.run(["mount", *argv], check=True, capture_output=True, text=True)


@pytest.fixture(scope="module")
def rhel_target(request: pytest.FixtureRequest) -> Iterator[RhelTarget]:
    need_root("the RHEL-family chroot")
    for cmd in (*rpmrepo.COMMANDS, "chroot", "mount"):
        need_command(cmd, "the stub RPM repositories (apt: rpm, createrepo-c)")
    need(
        rootfs_ready(),
        f"cached rootfs {ROOTFS} of recipe {rootfs_key()} (scripts/parts/rootfs.sh prepare)",
    )
    repos = rpmrepo.build()
    if not rpmrepo.dnf_layer_ready():  # apt from the rootfs's mirror, once
        rpmrepo.prepare_dnf_layer(None)
    work = Path(tempfile.mkdtemp(prefix="gpulab-rhel-"))
    root = work / "root"
    for d in ("upper", "work", "root"):
        (work / d).mkdir()
    mounts: list[Path] = []
    server: subprocess.Popen[bytes] | None = None
    try:
        opts = (
            f"lowerdir={rpmrepo.LAYER}:{ROOTFS},upperdir={work / 'upper'},workdir={work / 'work'}"
        )
        _mount("-t", "overlay", "overlay", "-o", opts, str(root))
        mounts.append(root)
        _mount("-t", "proc", "proc", str(root / "proc"))
        mounts.append(root / "proc")
        _mount("--bind", "/dev", str(root / "dev"))
        mounts.append(root / "dev")
        with socket.socket() as s:  # the chroot shares this machine's network
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory",
             str(repos), str(port)],
            stdout=(work / "http.log").open("wb"), stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

        def up() -> bool:
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_for(up, 15, "the stub RPM server")
        t = RhelTarget(root=root, url=f"http://127.0.0.1:{port}", repos=repos, host=Host(
            name="rocky-chroot", address=str(root), ssh_user="root", gpu_path="pci-passthrough",
            vars={"ansible_connection": "community.general.chroot",
                  "ansible_python_interpreter": "/usr/bin/python3",
                  "ansible_pipelining": True}))  # fmt: skip
        (root / "etc/dnf/vars").mkdir(parents=True, exist_ok=True)
        (root / "etc/dnf/vars/gpulabstub").write_text(f"127.0.0.1:{port}\n")
        with (root / "etc/dnf/dnf.conf").open("a") as f:  # Rocky's os-release PLATFORM_ID
            f.write("module_platform_id=platform:el9\n")
            f.write("skip_if_unavailable=False\n")  # RHEL 9's default (Debian's dnf.conf: True)
        # Debian's dnf-plugins-core turns on the "local" plugin, which Rocky does not install
        (root / "etc/dnf/plugins/local.conf").write_text("[main]\nenabled = false\n")
        # Rocky 9's container image has no dnf-plugins-core (rocky-linux/kickstarts,
        # Rocky-9-Container-Base.ks): Debian's config-manager plugin is off until the stub
        # dnf-plugins-core, installed by nvidia_driver, replaces this file with enabled=1.
        (root / "etc/dnf/plugins/config-manager.conf").write_text("[main]\nenabled=0\n")
        sysfs_tree(root / SYSFS.lstrip("/"), "sysfs_h200_vm.yaml")
        shutil.copy(repos / "files" / rpmrepo.RELEASE_RPM, root / "tmp")
        r = t.sh(f"rpm -i /tmp/{rpmrepo.RELEASE_RPM} && rm /tmp/{rpmrepo.RELEASE_RPM}")
        assert r.returncode == 0, r.stderr
        yield t
    finally:
        stop_process(server)
        _stop_chroot_processes(root)
        for m in reversed(mounts):
            subprocess.run(["umount", str(m)], capture_output=True, check=False)
        if not any(os.path.ismount(m) for m in mounts):  # never through /dev's bind mount
            shutil.rmtree(work, ignore_errors=True)


def _role_seconds(events: list[dict[str, Any]]) -> str:
    """Seconds of task time per role (ansible-runner's per-task durations), longest first."""
    per: dict[str, float] = {}
    for e in events:
        data = e.get("event_data") or {}
        if e.get("event", "").startswith("runner_on_") and "duration" in data:
            role = data.get("role") or "(play)"
            per[role] = per.get(role, 0.0) + float(data["duration"] or 0)
    return ", ".join(f"{r} {s:.1f}" for r, s in sorted(per.items(), key=lambda x: -x[1]))


def _mode(p: Path) -> str:
    return oct(p.stat().st_mode & 0o7777)


def _ini(text: str) -> dict[str, dict[str, str]]:
    out: dict[str, dict[str, str]] = {}
    section = ""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1]
            out[section] = {}
        elif "=" in line and section:
            k, v = line.split("=", 1)
            out[section][k.strip()] = v.strip()
    return out


def test_rhel_branches_real_dnf_on_debian_with_rocky_facts_converge_then_idempotent(
    rhel_target: RhelTarget,
) -> None:
    t, root = rhel_target, rhel_target.root
    # as on Rocky 9's container image: no config-manager before the role installs the plugins
    nocm = t.sh("dnf -q config-manager --help")
    assert nocm.returncode != 0 and "No such command: config-manager" in nocm.stdout + nocm.stderr
    ev = Events()
    t0 = time.monotonic()
    first = run_playbook(PLAYBOOK, [t.host], extravars=t.extravars(), secrets=t.secrets(),
                         event_handler=ev, check=False)  # fmt: skip
    assert first.ok, first.summary() + "\n" + first.stdout_tail[-4000:]
    said = json.dumps(ev.events)  # every event: the play's output and each task's result
    assert TOKEN not in said and BF_TOKEN not in said
    written = ev.results("Write the client configuration token")
    assert len(written) == 1 and "censored" in written[0], written  # it ran, under no_log
    facts = ev.facts(t.host.name)

    # gpu_facts: pciutils from the stub BaseOS (gpu_facts/tasks/RedHat.yml), whose lspci names
    # the GPU found in the sysfs tree
    assert [(g["pci"], g["device_id"], g["name"]) for g in facts["gpu_facts_gpus"]] == [
        ("0000:00:06.0", "2335", "GH100 [H200 SXM 141GB]")
    ]
    assert facts["gpu_facts_lspci_ok"] is True and facts["gpu_facts_pci_source"] == "sysfs"
    assert t.sh("rpm -qf --qf '%{NAME}' /usr/sbin/lspci").stdout == "pciutils"

    # nvidia_vgpu_guest ran before nvidia_driver: it enabled EPEL itself for dkms
    assert [r.get("changed") for r in ev.results("Enable EPEL (DKMS) (Rocky/RHEL)")] == [True]
    assert [r.get("changed") for r in ev.results("Enable EPEL (DKMS)")] == [False]
    assert facts["nvidia_vgpu_guest_changed"] is True
    assert facts["nvidia_vgpu_guest_reboot_wanted"] is False  # never on a chroot connection
    gridd = root / "etc/nvidia/gridd.conf"
    assert "FeatureType=4" in gridd.read_text().splitlines() and _mode(gridd) == "0o644"
    tok = root / "etc/nvidia/ClientConfigToken/client_configuration_token_gpulab.tok"
    assert tok.read_text() == TOKEN and _mode(tok) == "0o600"
    # systemctl enables offline in a chroot; it cannot start anything there
    assert (root / "etc/systemd/system/multi-user.target.wants/nvidia-gridd.service").is_symlink()
    bf = root / "etc/bitfusion/client.yaml"
    assert bf.read_text() == f"token: {BF_TOKEN}\n" and _mode(bf) == "0o640"
    # workload_env: RHEL's python3.11 (Debian's interpreter here) made the virtualenv
    venv = [r.get("cmd") for r in ev.results("Create the virtualenv")]
    assert venv == [["python3.11", "-m", "venv", "/opt/gpulab/venv"]], venv
    assert "version = 3.11" in (root / "opt/gpulab/venv/pyvenv.cfg").read_text()
    assert facts["workload_env_python_bin"] == "/opt/gpulab/venv/bin/python"
    assert facts["workload_env_schema_version"]

    # nvidia_driver installed dnf-plugins-core before `dnf config-manager`
    plugins = ev.results("Install dnf-plugins-core (dnf config-manager, for CRB/PowerTools)")
    assert [r.get("changed") for r in plugins] == [True]
    assert facts["gpu_facts_supported"] is True and facts["gpu_facts_cuda_repo_distro"] == "rhel9"
    assert facts["nvidia_driver_changed"] is True and facts["nvidia_driver_reboot_wanted"] is False
    # CRB was disabled (rocky.repo), so the role enabled it with the real config-manager
    crb = ev.results("Enable CRB (EL9) or PowerTools (EL8) for DKMS's build dependencies")
    assert [r.get("cmd") for r in crb] == [["dnf", "config-manager", "--set-enabled", "crb"]]
    assert _ini((root / "etc/yum.repos.d/rocky.repo").read_text())["crb"]["enabled"] in (
        "1",
        "True",
    )

    fpr = (t.repos / "keys/stub.fpr").read_text().strip()
    stub_key = (t.repos / "keys/stub.asc").read_text()
    for key in (CUDA_KEY, CTK_KEY, DOCKER_KEY):
        k = root / key.lstrip("/")
        assert k.read_text() == stub_key and _mode(k) == "0o644", key
    pubkeys = t.sh("rpm -q gpg-pubkey --qf '%{VERSION}\\n'").stdout.split()
    assert pubkeys == [fpr[-8:].lower()], pubkeys  # imported once, by rpm_key

    repos = {n: root / f"etc/yum.repos.d/{n}.repo" for n in
             ("cuda", "nvidia-container-toolkit", "docker-ce-stable", "epel")}  # fmt: skip
    for n, p in repos.items():
        assert _mode(p) == "0o644", n
    cuda = _ini(repos["cuda"].read_text())["cuda"]
    assert (cuda["baseurl"], cuda["enabled"], cuda["gpgcheck"], cuda["gpgkey"]) == (
        f"{t.url}/cuda/",
        "1",
        "1",
        f"file://{CUDA_KEY}",
    )
    ctk = _ini(repos["nvidia-container-toolkit"].read_text())["nvidia-container-toolkit"]
    # NVIDIA's nvidia-container-toolkit.repo: repo_gpgcheck=1, gpgcheck=0, sslverify=1
    assert (ctk["repo_gpgcheck"], ctk["gpgcheck"], ctk["sslverify"], ctk["enabled"]) == (
        "1",
        "0",
        "1",
        "1",
    )
    assert (
        ctk["gpgkey"] == f"file://{CTK_KEY}" and ctk["baseurl"] == f"{t.url}/libnvidia-container/"
    )
    dock = _ini(repos["docker-ce-stable"].read_text())["docker-ce-stable"]
    assert dock["baseurl"] == f"{t.url}/docker/$releasever/$basearch/stable"
    assert (dock["gpgcheck"], dock["gpgkey"]) == ("1", f"file://{DOCKER_KEY}")

    bl = root / "etc/modprobe.d/blacklist-nouveau.conf"
    assert _mode(bl) == "0o644"
    assert {"blacklist nouveau", "options nouveau modeset=0"} <= set(bl.read_text().splitlines())

    q = t.sh("rpm -q --qf '%{NAME}-%{VERSION}-%{RELEASE}\\n' kernel-devel kernel-headers dkms "
             "epel-release pciutils gnupg2 nvidia-driver kmod-nvidia-open-dkms "
             "cuda-toolkit-12-9 nvidia-container-toolkit nvidia-container-toolkit-base "
             "libnvidia-container-tools libnvidia-container1 apptainer docker-ce docker-ce-cli "
             "containerd.io docker-buildx-plugin dnf-plugins-core elfutils-libelf-devel "
             "nvidia-linux-grid-550 bitfusion-client python3.11 python3.11-pip "
             "python3-packaging")  # fmt: skip
    assert q.returncode == 0, q.stdout + q.stderr
    assert f"kernel-devel-{rpmrepo.EL9_KERNEL.rsplit('.', 1)[0]}" in q.stdout.split()
    assert f"nvidia-container-toolkit-{rpmrepo.CTK}-1" in q.stdout.split()
    assert t.sh("rpm -q kmod-nvidia-latest-dkms").returncode != 0  # the open stream only
    mods = t.sh("dnf -q -C module list --enabled nvidia-driver")
    assert "580-open [e]" in mods.stdout, mods.stdout + mods.stderr
    assert facts["nvidia_driver_branch_in_use"] == "580" and facts["nvidia_driver_use_open"] is True
    assert os.readlink(root / "usr/local/cuda") == "/usr/local/cuda-12.9"
    first_s = time.monotonic() - t0

    # The role's repo_gpgcheck is enforced: the same repo file pointed at a copy whose
    # repomd.xml changed after signing is refused by dnf; the signed original is accepted.
    tampered = root / "etc/yum.repos.d/ctk-tampered.repo"
    tampered.write_text(
        repos["nvidia-container-toolkit"]
        .read_text()
        .replace("[nvidia-container-toolkit]", "[ctk-tampered]")
        .replace(f"{t.url}/libnvidia-container/", f"{t.url}/libnvidia-container-tampered/")
    )
    # -y: dnf imports the role's key for the new repository id, then checks the signature
    bad = t.sh("dnf -y --disablerepo='*' --enablerepo=ctk-tampered makecache")
    tampered.unlink()
    said = bad.stdout + bad.stderr
    print("\ntampered repository: rc", bad.returncode, said.strip()[-300:])
    assert bad.returncode != 0 and "signature" in said.lower(), said
    assert list(root.glob("var/cache/dnf/ctk-tampered-*/pubring/pubring.kbx")), said  # key taken
    good = t.sh(
        "dnf -y --refresh --disablerepo='*' --enablerepo=nvidia-container-toolkit makecache"
    )
    assert good.returncode == 0, good.stdout + good.stderr

    t1 = time.monotonic()
    ev2 = Events()
    again = run_playbook(PLAYBOOK, [t.host], extravars=t.extravars(), secrets=t.secrets(),
                         event_handler=ev2, check=False)  # fmt: skip
    assert again.ok and again.hosts[t.host.name].changed == 0, (
        again.summary() + "\n" + again.stdout_tail[-4000:]
    )
    said = json.dumps(ev2.events)
    assert TOKEN not in said and BF_TOKEN not in said
    print(f"\nfirst converge {first_s:.1f} s: {_role_seconds(ev.events)}\n"
          f"second {time.monotonic() - t1:.1f} s: {_role_seconds(ev2.events)}\n"
          + again.stdout_tail[-600:])  # fmt: skip


def test_rhel_running_kernel_headers_gone_from_the_mirrors_stops_with_one_line(
    rhel_target: RhelTarget,
) -> None:
    """An older point-release image: the running kernel's kernel-devel is in no enabled
    repository (the stub BaseOS holds only the current one). nvidia_driver stops before DKMS with
    one line that names the package and says how to proceed."""
    old = "5.14.0-362.8.1.el9_3.x86_64"
    ev = Events()
    r = run_playbook(KERNEL_PLAYBOOK, [rhel_target.host],
                     extravars={**rhel_target.extravars(), "rhel_kernel": old},
                     event_handler=ev, check=False)  # fmt: skip
    assert not r.ok
    assert [(f.host, f.task) for f in r.failures] == [
        ("rocky-chroot", "Stop when the running kernel's headers are gone from the mirrors")
    ]
    msg = r.failures[0].msg
    assert f"kernel-devel-{old} (the headers of the running" in msg
    assert "update the kernel and reboot" in msg and "nvidia_driver_update_kernel: true" in msg
    assert ev.results("Install the headers of the running kernel and DKMS") == []
    # opted in: the kernel is updated, but a chroot cannot reboot into it: one line again
    r2 = run_playbook(KERNEL_PLAYBOOK, [rhel_target.host],
                      extravars={**rhel_target.extravars(), "rhel_kernel": old,
                                 "nvidia_driver_update_kernel": True}, check=False)  # fmt: skip
    assert [f.task for f in r2.failures] == ["Stop when the updated kernel is not running"], (
        r2.summary()
    )
