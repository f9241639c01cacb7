"""A lab image: the test rootfs with the runner's Python environment already in it, as a lab
bakes its own image (diskimage-builder, Packer) so that a new server does not download and
unpack TensorFlow again.

The end-to-end tests boot many servers, and on each the site play's ``workload_env`` role
installed TensorFlow from the served wheelhouse: about 14 s of CPU a host (pip unpacking the
wheels and byte-compiling every module), a third of an ``up`` on 2 cores. :func:`lab_image`
builds, once per content key, a copy of the rootfs (``scripts/parts/rootfs.sh``) in which one
boot ran the REAL ``workload_env`` role (tests/ansible/playbooks/one_role.yml) over SSH with
the lab's own variables, then shut down and was cleaned as an image is before it is uploaded
(``cloud-init clean --logs --seed``; the rootfs's empty machine id back; the build's login key
and the boot's mount points removed). Hosts booted from it are still new machines: their own
instance id, cloud-init run, login key, late sshd; the site play still runs every role, and
``workload_env`` finds its virtualenv and the runner's files as they should be (``ok``).

What is NOT baked in: the NVIDIA driver, CUDA, Docker, the container toolkit, Singularity, the
vGPU and Bitfusion clients -- every role whose first run the end-to-end tests look at (changes,
reboots, secrets) runs on the server as on a blank image. The first converge of the whole
site play on a blank host is tests/ansible/test_nspawn_converge.py's.

The key covers what the venv is made of: the rootfs recipe, the role and the playbook, the
runner's sources (``workloads/``, copied to the host) and the wheelhouse's requirements; a
change to any of them builds a new image (older ones are removed).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from tests.parts import CACHE, REPO, build_lock
from tests.parts.nspawn import (
    LOGIN_USER,
    ROOTFS,
    SEED_DIR,
    SSH_DROPIN,
    NspawnLab,
    rootfs_key,
    wait_for,
)

IMAGES = CACHE / "rootfs" / "lab-image"
ONE_ROLE = REPO / "tests" / "ansible" / "playbooks" / "one_role.yml"
# Where nspawn made mount points for the boot's bind mounts (they stay behind, empty).
BOOT_MOUNTS = (SEED_DIR, SSH_DROPIN, "/etc/apt/apt.conf.d/01gpulab-proxy")


def _tree(root: Path) -> Iterator[Path]:
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc":
            yield p


def image_key(requirements: Path) -> str:
    """What the image's virtualenv is made of, hashed."""
    h = hashlib.sha256()
    h.update(rootfs_key().encode())
    sources = [
        REPO / "playbooks" / "roles" / "workload_env",
        REPO / "playbooks" / "roles" / "gpu_facts",
        REPO / "workloads",
    ]
    for f in [ONE_ROLE, requirements, *(p for d in sources for p in _tree(d))]:
        h.update(str(f.relative_to(REPO) if f.is_relative_to(REPO) else f.name).encode())
        h.update(b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def lab_image(lab: NspawnLab, site: Mapping[str, Any], requirements: Path) -> Path:
    """The image for ``site`` (the lab's variables for ``workload_env``), built now on ``lab``
    when missing; returns its root directory (boot it as :attr:`NspawnLab.rootfs`)."""
    key = image_key(requirements)
    image = IMAGES / key
    ready = IMAGES / f"{key}.ready"
    with build_lock(IMAGES):  # two workers (or clones) never build one image twice
        if ready.is_file() and (image / "usr/bin/python3").exists():
            return image
        IMAGES.mkdir(parents=True, exist_ok=True)
        for old in IMAGES.iterdir():  # older keys and any half-built one
            if old.is_dir():
                shutil.rmtree(old)
            else:
                old.unlink()
        t0 = time.monotonic()
        tmp = IMAGES / f"{key}.tmp"
        subprocess.run(["cp", "-a", "--reflink=auto", str(ROOTFS), str(tmp)], check=True)
        _bake(lab, tmp, site)
        tmp.rename(image)
        ready.write_text(f"{key} built in {time.monotonic() - t0:.1f} s\n")
        return image


def _bake(lab: NspawnLab, root: Path, site: Mapping[str, Any]) -> None:
    from infra.ansible import run_playbook

    nh = lab.start_host(persistent=root, sshd_delay_s=0.0)
    try:
        wait_for(nh.answers_ssh, 120, f"ssh to the image build host {nh.name}")
        run_playbook(
            ONE_ROLE,
            [nh.host],
            extravars={**site, "one_role": "workload_env"},
            timeout_s=1200,
        )
    finally:
        lab.stop([nh])
    # As an image is cleaned before it is uploaded: no instance state, machine id or logs of
    # the build's boot (the next boot is a new instance), no login key of the build's lab.
    subprocess.run(
        ["chroot", str(root), "cloud-init", "clean", "--logs", "--seed"],
        check=True,
        capture_output=True,
    )
    # the rootfs's machine id, as it was (empty: not a first boot, so systemd applies no
    # presets; a missing one would enable systemd-networkd-wait-online, 6 s a boot)
    shutil.copy2(ROOTFS / "etc" / "machine-id", root / "etc" / "machine-id")
    (root / "home" / LOGIN_USER / ".ssh" / "authorized_keys").unlink(missing_ok=True)
    for mount in BOOT_MOUNTS:
        _unmade(root, Path(mount.lstrip("/")))


def _unmade(root: Path, rel: Path) -> None:
    """Remove ``rel`` and its parents from ``root`` where the rootfs has none of them (mount
    points nspawn made for the build's bind mounts)."""
    for path in [rel, *rel.parents[:-1]]:
        made = root / path
        if (ROOTFS / path).exists() or not made.exists():
            return
        if made.is_dir() and not made.is_symlink():
            if any(made.iterdir()) and path != rel:
                return
            shutil.rmtree(made)
        else:
            made.unlink()
