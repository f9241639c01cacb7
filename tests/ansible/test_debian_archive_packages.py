"""The distribution packages the roles install by name on Debian 12 are in Debian 12's archive:
every literal package name of an ``ansible.builtin.apt`` task of every role, and docker.io (the
``distro`` source of docker_engine), looked up with ``apt-cache`` in this machine's own Debian 12
package lists (the archive is reachable here; the vendors' repositories are not, see
test_vendor_packages.py). Names computed from facts (``linux-headers-<kernel>``) or from vendor
lists are checked elsewhere."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config.roles import ROLES_DIR
from infra.vendor_packages import DISTROS
from tests.parts import need, need_command

DISTRO_ONLY = ("docker.io",)  # docker_engine_source: distro


def literal_apt_names() -> dict[str, list[str]]:
    """package name -> the task files that install it by that literal name."""
    found: dict[str, list[str]] = {}

    def walk(tasks: Any, where: str) -> None:
        for task in tasks or []:
            if not isinstance(task, dict):
                continue
            for key in ("block", "rescue", "always"):
                walk(task.get(key), where)
            args = task.get("ansible.builtin.apt")
            names = args.get("name") if isinstance(args, dict) else None
            for name in [names] if isinstance(names, str) else (names or []):
                if isinstance(name, str) and "{{" not in name:
                    found.setdefault(name, []).append(where)

    for f in sorted(ROLES_DIR.glob("*/tasks/*.yml")):
        walk(yaml.safe_load(f.read_text()), str(f.relative_to(ROLES_DIR)))
    for name in DISTRO_ONLY:
        found.setdefault(name, []).append("docker_engine (docker_engine_source: distro)")
    return found


def this_machine_is_debian_12() -> bool:
    text = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    return "ID=debian" in text and 'VERSION_ID="12"' in text


def test_the_roles_install_literal_debian_packages() -> None:
    names = literal_apt_names()
    assert {"pciutils", "python3-venv", "python3-packaging", "docker.io"} <= set(names), names


@pytest.fixture(scope="module")
def debian_12_package_lists() -> None:
    """This machine is Debian 12 with its apt package lists (looked at once per file)."""
    need_command("apt-cache", "the Debian archive lookup")
    need(this_machine_is_debian_12(), f"this machine to be {DISTROS['debian12'].title}")
    probe = subprocess.run(["apt-cache", "policy", "python3"], capture_output=True, text=True,
                           check=False)  # fmt: skip
    need("Candidate: (none)" not in probe.stdout and "Candidate:" in probe.stdout,
         "this machine's apt package lists (apt-get update)")  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize("name", sorted(literal_apt_names()))
@pytest.mark.usefixtures("debian_12_package_lists")
def test_each_is_in_debian_12s_archive(name: str) -> None:
    r = subprocess.run(["apt-cache", "show", "--no-all-versions", name], capture_output=True,
                       text=True, check=False)  # fmt: skip
    assert r.returncode == 0 and f"Package: {name}\n" in r.stdout, (name, r.stderr)
    assert (
        "Candidate: (none)"
        not in subprocess.run(
            ["apt-cache", "policy", name], capture_output=True, text=True, check=False
        ).stdout
    ), name
