"""The nspawn test hosts log in like cloud images, and a sudo that asks for a password fails
clearly: real systemd-nspawn hosts, real sshd, real sudo, real cloud-init.

- every host of the lab: login user ``debian`` made by cloud-init from the NoCloud seed, with
  passwordless sudo, root login refused, password authentication off, only the distribution's
  Python; cloud-init finished before sshd answered, each host its own machine id;
- both hosts (a GPU host and a CPU-only one) reach apt-cacher-ng, the stub NVIDIA repository
  and a directory the lab serves, and take one playbook run together as the sudo user;
- a login user whose sudo asks for a password makes the run fail with one line naming the host
  and the user.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from infra.ansible import PlaybookError, run_playbook
from tests.ansible.helpers import PLAYBOOKS, Events
from tests.parts.fixtures_nspawn import NspawnLab

pytestmark = [pytest.mark.nspawn, pytest.mark.slow]

FETCH = "import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1]).read().decode())"


def test_two_hosts_gpu_and_cpu_only(nspawn_lab: NspawnLab) -> None:
    a, b = nspawn_lab.hosts[:2]
    assert (a.host.name, a.host.gpu_path, a.host.groups) == (
        "nspawn-a",
        "pci-passthrough",
        ["gpu_hosts"],
    )
    assert (b.host.name, b.host.gpu_path, b.host.groups) == ("nspawn-b", "none", ["cpu_hosts"])
    assert a.address != b.address and a.host_side == b.host_side == nspawn_lab.host_side
    assert {h.host.ssh_user for h in nspawn_lab.hosts} == {"debian"}


@pytest.mark.parametrize("i", [0, 1])
def test_logs_in_like_a_cloud_image(nspawn_lab: NspawnLab, i: int) -> None:
    h = nspawn_lab.hosts[i]
    assert h.ssh("id -un", as_user=True).stdout.strip() == "debian"
    assert h.ssh("id -un").stdout.strip() == "root"  # sudo -n: no password asked
    root = h.ssh_as("root", "true", check=False)
    assert root.returncode == 255 and "Permission denied (publickey)" in root.stderr
    cfg = h.ssh("sshd -T").stdout.splitlines()
    for line in ("permitrootlogin no", "passwordauthentication no", "pubkeyauthentication yes"):
        assert line in cfg, line
    assert "NOPASSWD:ALL" in h.ssh("cat /etc/sudoers.d/90-cloud-init-users").stdout
    # cloud-init (disable_root) leaves root only keys that print "Please login as ..." and exit
    root_keys = h.ssh("cat /root/.ssh/authorized_keys 2>/dev/null || true").stdout.splitlines()
    assert all("Please login as the user" in k for k in root_keys if k.strip()), root_keys
    assert h.ssh("passwd -S debian").stdout.split()[1] == "L"  # password locked
    # only the distribution's Python: every python on PATH belongs to a Debian package
    pys = h.ssh("ls /usr/local/bin /usr/bin | grep -x 'python[0-9.]*' | sort -u").stdout.split()
    assert pys and set(pys) <= {"python3", "python3.11"}
    assert h.ssh("ls /usr/local/bin").stdout.strip() == ""
    assert h.ssh("dpkg -S /usr/bin/python3.11").returncode == 0
    # cloud-init made the user from the seed, and sshd started only after cloud-init finished
    assert h.ssh("cloud-init status", as_user=True).stdout.strip() == "status: done"
    done = float(h.ssh("date -r /run/cloud-init/result.json +%s.%N").stdout)
    sshd = h.ssh("systemctl show -p ExecMainStartTimestamp --value ssh.service").stdout.strip()
    assert float(h.ssh(f"date -d '{sshd}' +%s.%N").stdout) >= done - 1.0  # second resolution
    ids = {x.ssh("cat /etc/machine-id").stdout.strip() for x in nspawn_lab.hosts[:2]}
    assert len(ids) == 2, ids  # each host its own machine id


def test_hosts_reach_the_lab_services(nspawn_lab: NspawnLab, tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("wheelhouse-ok\n")
    url = nspawn_lab.serve(tmp_path)
    assert url.startswith(f"http://{nspawn_lab.host_side}:")
    for h in nspawn_lab.hosts[:2]:
        got = h.ssh(f"python3 -c '{FETCH}' {url}/hello.txt", as_user=True).stdout
        assert got.strip() == "wheelhouse-ok", h.name
        sums = h.ssh(f"python3 -c '{FETCH}' {nspawn_lab.stub_url}/SHA256SUMS", as_user=True)
        assert "cuda" in sums.stdout or ".deb" in sums.stdout
        proxy = h.ssh("cat /etc/apt/apt.conf.d/01gpulab-proxy").stdout
        assert nspawn_lab.apt_proxy in proxy
        release = "http://deb.debian.org/debian/dists/bookworm/Release"
        rel = h.ssh(f"http_proxy={nspawn_lab.apt_proxy} python3 -c '{FETCH}' {release}",
                    as_user=True)  # fmt: skip
        assert "Codename: bookworm" in rel.stdout, h.name


def test_one_run_on_both_hosts_as_the_sudo_user(nspawn_lab: NspawnLab) -> None:
    """gpu_facts (pciutils through apt, as root by sudo) on both hosts in one run."""
    hosts = [h.host for h in nspawn_lab.hosts[:2]]
    ev = Events()
    r = run_playbook(PLAYBOOKS / "one_role.yml", hosts, extravars={"one_role": "gpu_facts"},
                     event_handler=ev)  # fmt: skip
    assert r.ok and set(r.hosts) == {"nspawn-a", "nspawn-b"}
    for name in ("nspawn-a", "nspawn-b"):
        assert r.hosts[name].failed == 0 and r.hosts[name].unreachable == 0
        assert ev.facts(name)["gpu_facts_has_gpu"] is False
    # the plays ran as root through sudo, the connection as debian: nothing in debian's home
    # belongs to root
    for h in nspawn_lab.hosts[:2]:
        assert h.ssh("find /home/debian -user root").stdout == "", h.name


@pytest.mark.parametrize("strategy", ["mitogen_linear", "linear"])
def test_mitogen_keeps_one_interpreter_per_host_for_the_run(
    nspawn_lab: NspawnLab, strategy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The runs use Mitogen's strategy (infra/ansible/strategy.py): the commands of three
    tasks on a host are children of one interpreter, kept for the run; with
    GPULAB_ANSIBLE_STRATEGY=linear (Ansible's own) each task has an interpreter of its own."""
    monkeypatch.setenv("GPULAB_ANSIBLE_STRATEGY", strategy)
    hosts = [nspawn_lab.hosts[0].host]
    ev = Events()
    r = run_playbook(PLAYBOOKS / "interpreters.yml", hosts, event_handler=ev)
    assert r.ok
    (res,) = ev.results("Read the module's own pid, three times")
    parents = {item["stdout"].strip() for item in res["results"]}
    assert len(parents) == (1 if strategy == "mitogen_linear" else 3), parents


@pytest.fixture()
def password_sudo_user(nspawn_lab: NspawnLab):  # type: ignore[no-untyped-def]
    """A second login user on the CPU-only host whose sudo rule asks for a password (the
    session key authorized); removed afterwards."""
    h = nspawn_lab.hosts[1]
    h.ssh(
        "useradd -m -s /bin/bash ops && install -d -o ops -g ops -m 0700 /home/ops/.ssh && "
        "install -o ops -g ops -m 0600 /home/debian/.ssh/authorized_keys /home/ops/.ssh/ && "
        "echo 'ops:correct-horse' | chpasswd && "
        "echo 'ops ALL=(ALL) ALL' > /etc/sudoers.d/91-ops && chmod 0440 /etc/sudoers.d/91-ops"
    )
    try:
        yield dataclasses.replace(h.host, ssh_user="ops")
    finally:
        h.ssh("rm -f /etc/sudoers.d/91-ops; userdel -r ops", check=False)


def test_sudo_asking_for_a_password_names_host_and_user(password_sudo_user) -> None:  # type: ignore[no-untyped-def]
    host = password_sudo_user
    with pytest.raises(PlaybookError) as exc:
        run_playbook("site.yml", [host], timeout_s=300)
    msg = str(exc.value)
    assert len(msg.splitlines()) == 1, msg
    assert "host 'nspawn-b'" in msg and "sudo as user 'ops' needs a password" in msg, msg
    # Mitogen's strategy (the default) words it so; Ansible's own says "Missing sudo password"
    assert "sudo password is required" in msg and "NOPASSWD" in msg, msg
    assert "correct-horse" not in json.dumps(exc.value.result.failures, default=str)
