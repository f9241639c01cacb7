"""The GPU roles ask the vendors' repositories only for what they publish, on every supported
distribution: each role's own ``<role>_vendor_packages`` (vars/main.yml), rendered by Ansible's
templating from the role's defaults and the facts of Ubuntu 22.04 / 24.04, Debian 12 and
Rocky 9 (and, for nvidia_driver, a GPU of each generation of its table), checked against the
package lists in infra/vendor_packages. The old defaults fail the same check: CUDA 12.4 is not
in NVIDIA's ubuntu2404 repository, container toolkit 1.17.3 is below the CVE-2025-23266 fix."""

from __future__ import annotations

import datetime as dt

import pytest

from infra.config.vendor_check import (
    VENDOR_ROLES,
    gpu_scenarios,
    role_packages,
    role_problems,
    stack_distros,
)
from infra.vendor_packages import DISTROS, REQUIRED, all_lists, problem, vendor_list

VENDORS = ("nvidia-cuda", "nvidia-container-toolkit", "docker", "apptainer")


def test_every_list_names_its_source_and_date_and_every_distro_has_each_vendor() -> None:
    lists = all_lists()
    assert len(lists) >= 12
    for vl in lists:
        for key in REQUIRED:
            assert vl.header[key], (vl.shown, key)
        assert dt.date.fromisoformat(vl.header["retrieved"]) <= dt.date.today()
        assert vl.header["coverage"].startswith(("full index", "full file listing", "derived"))
        assert vl.packages, vl.shown
    for distro in DISTROS:
        assert [v for v in VENDORS if vendor_list(v, distro) is None] == [], distro


def test_the_full_index_lists_are_the_container_toolkit_and_say_so() -> None:
    full = {vl.vendor for vl in all_lists() if not vl.header["coverage"].startswith("derived")}
    assert full == {"nvidia-container-toolkit"}
    deb = vendor_list("nvidia-container-toolkit", "ubuntu2404")
    assert deb is not None and "69f4ab797b0c6df3892f9136f7c734dac72d67fe" in deb.header["source"]
    assert deb.packages["nvidia-container-toolkit"][0] == "1.14.0-1"
    assert "1.17.8-1" in deb.packages["nvidia-container-toolkit"]


@pytest.mark.parametrize("distro", list(DISTROS))
@pytest.mark.parametrize("role", list(VENDOR_ROLES))
def test_role_defaults_are_published_on_every_distribution(role: str, distro: str) -> None:
    assert role_problems(role, distro) == []
    for scenario, ids in gpu_scenarios(role):
        pkgs = role_packages(role, distro, None, ids)
        assert pkgs, (scenario, distro)  # the role installs something from its vendor here
        assert {p["vendor"] for p in pkgs} <= set(VENDORS)


def test_what_the_defaults_install() -> None:
    """The packages themselves, so a change of default shows up here, not only as 'no problem'."""
    names = {d: {r: [f"{p['name']} {p['version']}".strip() for p in role_packages(r, d)]
                 for r in VENDOR_ROLES} for d in ("ubuntu2404", "rhel9")}  # fmt: skip
    assert names["ubuntu2404"]["cuda_toolkit"] == ["cuda-toolkit-12-9"]
    assert names["ubuntu2404"]["nvidia_driver"] == ["cuda-drivers-580"]  # no GPU seen
    assert names["rhel9"]["nvidia_driver"] == ["@nvidia-driver:580-dkms"]
    assert names["rhel9"]["nvidia_container_toolkit"][0] == "nvidia-container-toolkit 1.17.8-1"
    assert names["rhel9"]["apptainer"] == ["apptainer 1.3.4-1"]
    assert names["ubuntu2404"]["apptainer"] == ["apptainer 1.3.4"]


@pytest.mark.parametrize(
    ("device_id", "deb", "rpm"),
    [
        ("15f8", "cuda-drivers-580", "@nvidia-driver:580-dkms"),  # Tesla P100 (Pascal)
        ("1db4", "cuda-drivers-580", "@nvidia-driver:580-dkms"),  # Tesla V100 (Volta)
        ("20b0", "nvidia-open-580", "@nvidia-driver:580-open"),  # A100 (Ampere)
        ("2335", "nvidia-open-580", "@nvidia-driver:580-open"),  # H200 (Hopper)
        ("2901", "nvidia-open-580", "@nvidia-driver:580-open"),  # B200 (Blackwell: open only)
    ],
)
def test_driver_branch_and_modules_follow_the_gpu_generation(
    device_id: str, deb: str, rpm: str
) -> None:
    assert [p["name"] for p in role_packages("nvidia_driver", "debian12", None, (device_id,))] == [
        deb
    ]
    assert [p["name"] for p in role_packages("nvidia_driver", "rhel9", None, (device_id,))] == [rpm]


def test_old_cuda_default_fails_on_ubuntu_2404_only() -> None:
    old = {"cuda_toolkit_version": "12.4"}
    assert role_problems("cuda_toolkit", "ubuntu2404", old) == [
        (
            "no GPU seen",
            "cuda-toolkit-12-4 is not in the nvidia-cuda repository for ubuntu2404 "
            "(infra/vendor_packages/nvidia-cuda/ubuntu2404.txt)",
        )
    ]
    for distro in ("ubuntu2204", "debian12", "rhel9"):
        assert role_problems("cuda_toolkit", distro, old) == []


@pytest.mark.parametrize("distro", list(DISTROS))
def test_old_container_toolkit_default_fails_the_cve_floor(distro: str) -> None:
    found = role_problems(
        "nvidia_container_toolkit", distro, {"nvidia_container_toolkit_version": "1.17.3-1"}
    )
    assert [text.split(" is older")[0] for _, text in found] == [
        "nvidia-container-toolkit 1.17.3-1",
        "nvidia-container-toolkit-base 1.17.3-1",
    ]
    assert all("1.17.8: CVE-2025-23266" in text for _, text in found)
    for fixed in ("1.17.8-1", "1.18.2-1", ""):
        assert (
            role_problems(
                "nvidia_container_toolkit", distro, {"nvidia_container_toolkit_version": fixed}
            )
            == []
        ), fixed


def test_old_driver_branch_is_not_in_ubuntu_2404() -> None:
    found = role_problems("nvidia_driver", "ubuntu2404", {"nvidia_driver_branch": "550"})
    assert ("no GPU seen", "cuda-drivers-550 is not in the nvidia-cuda repository for "
            "ubuntu2404 (infra/vendor_packages/nvidia-cuda/ubuntu2404.txt)") in found  # fmt: skip
    assert role_problems("nvidia_driver", "ubuntu2204", {"nvidia_driver_branch": "550"}) == []


def test_versions_are_matched_as_apt_and_dnf_match_them() -> None:
    assert problem("nvidia-cuda", "rhel9", "nvidia-driver", "580.95.05") is None  # dnf: no release
    assert problem("nvidia-cuda", "ubuntu2404", "cuda-drivers-580", "580.95.05") is not None
    assert problem("nvidia-cuda", "ubuntu2404", "cuda-drivers-580", "580.95.05-1") is None
    assert "records no versions" in str(
        problem("nvidia-cuda", "rhel9", "@nvidia-driver:580-open", "1")
    )


def test_site_values_are_data_never_templates() -> None:
    found = role_problems("cuda_toolkit", "debian12", {"cuda_toolkit_version": "{{ 6 * 2 }}.9"})
    assert found and "cuda-toolkit-{{ 6 * 2 }}-9 is not in" in found[0][1]


@pytest.mark.parametrize(
    ("image", "distros"),
    [
        ("ubuntu-24.04-server-cloudimg", ["ubuntu2404"]),
        ("Ubuntu 22.04 LTS", ["ubuntu2204"]),
        ("jammy-gpu", ["ubuntu2204"]),
        ("debian-12-genericcloud-amd64", ["debian12"]),
        ("Rocky-9-GenericCloud-Base-9.4", ["rhel9"]),
        ("rhel-9.4-x86_64-kvm", ["rhel9"]),
        ("Rocky-8-GenericCloud", []),  # a release with no lists: not checked
        ("gpu-golden-image", list(DISTROS)),  # says nothing: every supported one
    ],
)
def test_the_stack_image_names_its_distribution(image: str, distros: list[str]) -> None:
    assert stack_distros("nova-pci", image)[0] == distros
