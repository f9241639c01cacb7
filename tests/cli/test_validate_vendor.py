"""``gpulab validate`` refuses a ``gpulab:site`` role input that makes a GPU role ask the
vendor's repository of the stack's distribution for a version it does not publish: one line
naming the key, the version and the distribution, exit 2, no traceback (run the way a user
runs it, the console script on a stack file)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

Run = Callable[..., subprocess.CompletedProcess[str]]

STACK = """\
config:
  gpulab:topology: nova-pci
  gpulab:lab: vendorcheck
  gpulab:ssh_public_key: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKeyForTheVendorCheckTest k
  gpulab:external_network: public
  gpulab:admin_cidr: 203.0.113.0/24
  gpulab:image: {image}
  gpulab:flavor_vcpus: 8
  gpulab:flavor_ram_mb: 65536
  gpulab:flavor_disk_gb: 100
  gpulab:pci_alias: h100:1
  gpulab:site:
{site}
"""


def stack(tmp_path: Path, image: str, **site: str) -> Path:
    lines = "\n".join(f"    {k}: {v!r}" for k, v in site.items())
    path = tmp_path / "Pulumi.vendorcheck.yaml"
    path.write_text(STACK.format(image=image, site=lines))
    return path


def one_line(r: subprocess.CompletedProcess[str]) -> str:
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, r.stderr
    return lines[0]


def test_cuda_12_4_is_refused_on_ubuntu_2404_naming_key_version_and_distro(
    gpulab: Run, tmp_path: Path
) -> None:
    line = one_line(gpulab("validate", str(stack(tmp_path, "ubuntu-24.04-server",
                                                 cuda_toolkit_version="12.4"))))  # fmt: skip
    assert "gpulab:site cuda_toolkit_version='12.4'" in line
    assert "cuda-toolkit-12-4 is not in the nvidia-cuda repository for ubuntu2404" in line
    assert "image 'ubuntu-24.04-server' is Ubuntu 24.04" in line


def test_the_same_version_passes_where_the_repository_has_it(gpulab: Run, tmp_path: Path) -> None:
    r = gpulab("validate", str(stack(tmp_path, "ubuntu-22.04-server", cuda_toolkit_version="12.4")))
    assert r.returncode == 0, r.stderr
    assert "cuda_toolkit_version=12.4" in r.stdout


def test_an_unnamed_image_is_checked_against_every_distribution(
    gpulab: Run, tmp_path: Path
) -> None:
    line = one_line(gpulab("validate", str(stack(tmp_path, "gpu-golden",
                                                 cuda_toolkit_version="12.4"))))  # fmt: skip
    assert "names no supported distribution, so each is checked" in line
    assert "missing on ubuntu2404;" in line


@pytest.mark.parametrize("image", ["ubuntu-22.04", "Rocky-9-GenericCloud"])
def test_a_container_toolkit_before_the_cve_fix_is_refused(
    gpulab: Run, tmp_path: Path, image: str
) -> None:
    r = gpulab("validate", str(stack(tmp_path, image, nvidia_container_toolkit_version="1.17.3-1")))
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "nvidia_container_toolkit_version='1.17.3-1'" in r.stderr
    assert "is older than 1.17.8: CVE-2025-23266" in r.stderr


def test_a_driver_version_the_branch_never_had_is_refused(gpulab: Run, tmp_path: Path) -> None:
    line = one_line(gpulab("validate", str(stack(tmp_path, "debian-12-genericcloud",
                                                 nvidia_driver_version="580.1.1-1"))))  # fmt: skip
    assert "cuda-drivers-580 580.1.1-1 is not in the nvidia-cuda repository for debian12" in line
