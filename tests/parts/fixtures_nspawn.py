"""Real Ansible targets: systemd-nspawn hosts over real SSH, and a chroot target.

Session fixtures (all processes stopped by PID at session end, also on failure):

- ``nspawn_lab``: a :class:`tests.parts.nspawn.NspawnLab` with TWO hosts booted from the cached
  rootfs (``scripts/parts/rootfs.sh``) with ``--volatile=overlay`` on a private bridge:
  ``hosts[0]`` (``nspawn-a``) a GPU host (gpu_path ``pci-passthrough``, group ``gpu_hosts``),
  ``hosts[1]`` (``nspawn-b``) a CPU-only host (gpu_path ``none``, group ``cpu_hosts``; use
  ``dataclasses.replace(h.host, gpu_path=...)`` for another marking). Both log in like the
  Debian cloud image: user ``debian`` with passwordless sudo, keys only, no root login. The
  lab serves apt-cacher-ng (``lab.apt_proxy``), the stub NVIDIA repository (``lab.stub_url``,
  ``lab.stub_sha256``) and any directory (``lab.serve(directory) -> url``) on the bridge
  address only; ``lab.boot(n, gpu_path=...)`` boots more hosts.
- ``nspawn_host``: ``nspawn_lab.hosts[0]`` (an :class:`NspawnHost`); ``.host`` is an
  ``infra.hosts.Host`` (ssh_user ``debian``) to hand to ``infra.ansible.run_playbook``;
  ``.ssh(cmd)`` runs a command as root through ``sudo -n``, ``.ssh(cmd, as_user=True)`` as
  ``debian``, ``.ssh_as(user, cmd)`` as anyone else.
- ``chroot_target``: the cached rootfs under an overlay mount (with /proc and /dev), reachable
  through ``ansible_connection=community.general.chroot`` as root (no sudo: the inventory
  turns become off for a root login); ``.host`` as above.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from infra.hosts import Host
from tests.parts import need, need_command, need_root
from tests.parts.nspawn import (
    COMMANDS,
    ROOTFS,
    NspawnHost,
    NspawnLab,
    rootfs_key,
    rootfs_ready,
    start_lab,
)

__all__ = ["ChrootTarget", "NspawnHost", "NspawnLab"]


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True, text=True)


@dataclass
class ChrootTarget:
    path: Path
    host: Host


@pytest.fixture(scope="session")
def nspawn_lab() -> Iterator[NspawnLab]:
    need_root("nspawn test hosts")
    for cmd in COMMANDS:
        need_command(cmd, "nspawn test hosts")
    need(
        rootfs_ready(),
        f"cached rootfs {ROOTFS} of recipe {rootfs_key()} (scripts/parts/rootfs.sh prepare)",
    )
    lab = start_lab(("pci-passthrough", "none"))
    try:
        yield lab
    finally:
        lab.close()


@pytest.fixture(scope="session")
def nspawn_host(nspawn_lab: NspawnLab) -> NspawnHost:
    return nspawn_lab.hosts[0]


@pytest.fixture(scope="session")
def chroot_target() -> Iterator[ChrootTarget]:
    need_root("chroot target")
    need(
        rootfs_ready(),
        f"cached rootfs {ROOTFS} of recipe {rootfs_key()} (scripts/parts/rootfs.sh prepare)",
    )
    work = Path(tempfile.mkdtemp(prefix="gpulab-chroot-"))
    root = work / "root"
    for d in ("upper", "work", "root"):
        (work / d).mkdir()
    mounts: list[Path] = []
    try:
        opts = f"lowerdir={ROOTFS},upperdir={work / 'upper'},workdir={work / 'work'}"
        _run("mount", "-t", "overlay", "overlay", "-o", opts, str(root))
        mounts.append(root)
        _run("mount", "-t", "proc", "proc", str(root / "proc"))
        mounts.append(root / "proc")
        _run("mount", "--bind", "/dev", str(root / "dev"))
        mounts.append(root / "dev")
        host = Host(
            name="chroot-a", address=str(root), ssh_user="root", gpu_path="pci-passthrough",
            vars={"ansible_connection": "community.general.chroot",
                  "ansible_python_interpreter": "/usr/bin/python3"},
        )  # fmt: skip
        yield ChrootTarget(path=root, host=host)
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", str(m)], capture_output=True, check=False)
        # Never remove through a mount that is still there (/dev is the machine's own).
        if not any(os.path.ismount(m) for m in mounts):
            shutil.rmtree(work, ignore_errors=True)
