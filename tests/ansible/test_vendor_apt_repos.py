"""The stub apt repositories hold what the vendors publish for each distribution and nothing
else: apt itself (an isolated apt configuration over file: sources, signatures checked with the
stub key) resolves everything the role defaults install on Ubuntu 22.04, Ubuntu 24.04 and
Debian 12 (``infra.config.vendor_check``), and refuses what the vendor lacks, as on a lab:
cuda-toolkit-12-4 on Ubuntu 24.04, a container toolkit version NVIDIA never published. No host is
booted: ``apt-get install --simulate`` against a dpkg status that holds python3 only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from infra.config.vendor_check import VENDOR_ROLES, role_packages
from infra.vendor_packages import vendor_list
from tests.parts import need_command
from tests.parts.nspawn import STUB_REPO, prepare_stub_repo

DEB_DISTROS = ("ubuntu2204", "ubuntu2404", "debian12")


@pytest.fixture(scope="module")
def stub() -> Path:
    for cmd in ("dpkg-deb", "dpkg-scanpackages", "gpg", "apt-get"):
        need_command(cmd, "the stub apt repositories")
    prepare_stub_repo()
    return STUB_REPO


def apt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    opts = ["-o", f"Dir={root}", "-o", f"Dir::State::status={root}/var/lib/dpkg/status",
            "-o", "APT::Architecture=amd64", "-o", "Debug::NoLocking=1",
            "-o", "APT::Get::List-Cleanup=0", "-o", "Acquire::Languages=none",
            "-o", "APT::Sandbox::User=root"]  # fmt: skip
    return subprocess.run(["apt-get", "-q", *opts, *args], capture_output=True, text=True,
                          check=False, timeout=120)  # fmt: skip


@pytest.fixture(scope="module", params=DEB_DISTROS)
def apt_root(request: pytest.FixtureRequest, stub: Path, tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    distro = request.param
    root = tmp_path_factory.mktemp(f"apt-{distro}")
    for d in (
        "etc/apt/sources.list.d",
        "etc/apt/preferences.d",
        "etc/apt/apt.conf.d",
        "var/lib/apt/lists/partial",
        "var/cache/apt/archives/partial",
        "var/lib/dpkg",
    ):
        (root / d).mkdir(parents=True)  # fmt: skip
    # the base system: python3 only (Ansible needs it; the stub nvidia-ctk is a Python script)
    (root / "var/lib/dpkg/status").write_text(
        "Package: python3\nStatus: install ok installed\nVersion: 3.11.2-1\n"
        "Architecture: amd64\nMaintainer: stub <stub@localhost>\nDescription: python3\n\n"
    )
    key = stub / "keys/stub.asc"
    docker = vendor_list("docker", distro)
    assert docker is not None
    codename = docker.header["repository"].split()[1]
    (root / "etc/apt/sources.list").write_text(
        f"deb [signed-by={key}] file:{stub}/{distro}/cuda/ /\n"
        f"deb [signed-by={key}] file:{stub}/libnvidia-container/ /\n"
        f"deb [arch=amd64 signed-by={key}] file:{stub}/{distro}/docker {codename} stable\n"
    )
    r = apt(root, "update")
    assert r.returncode == 0 and "W:" not in r.stdout + r.stderr, r.stdout + r.stderr
    return distro, root


def test_everything_the_defaults_install_resolves(apt_root: tuple[str, Path]) -> None:
    distro, root = apt_root
    wanted = [f"{p['name']}={p['version']}" if p["version"] else p["name"]
              for role in VENDOR_ROLES if role != "apptainer"  # a release asset, not apt
              for p in role_packages(role, distro)]  # fmt: skip
    assert "cuda-toolkit-12-9" in wanted and "nvidia-container-toolkit=1.17.8-1" in wanted
    r = apt(root, "install", "--simulate", "--no-install-recommends", *wanted)
    assert r.returncode == 0, r.stdout + r.stderr
    for spec in wanted:
        name = spec.split("=")[0]
        assert f"Inst {name} " in r.stdout, (spec, r.stdout)


def test_what_the_vendor_lacks_fails_as_on_a_lab(apt_root: tuple[str, Path]) -> None:
    distro, root = apt_root
    old_cuda = apt(root, "install", "--simulate", "cuda-toolkit-12-4")
    if distro == "ubuntu2404":  # NVIDIA's ubuntu2404 repository starts at CUDA 12.5
        assert old_cuda.returncode != 0
        assert "Unable to locate package cuda-toolkit-12-4" in old_cuda.stderr
    else:
        assert old_cuda.returncode == 0, old_cuda.stderr
    never = apt(root, "install", "--simulate", "nvidia-container-toolkit=1.17.10-1")
    assert never.returncode != 0
    assert "Version '1.17.10-1' for 'nvidia-container-toolkit' was not found" in never.stderr
    made_up = apt(root, "install", "--simulate", "cuda-drivers-999")
    assert made_up.returncode != 0 and "Unable to locate package cuda-drivers-999" in made_up.stderr
