"""The lab image the end-to-end hosts boot (tests/parts/lab_image.py) is an image, not a used
machine: each host booted from it is a new instance with its own identity and only its own
lab's login key, and the runner's virtualenv is in it already."""

from __future__ import annotations

import pytest

from tests.parts.lab_image import IMAGES
from tests.parts.nspawn import LOGIN_USER, ROOTFS, NspawnHost

pytestmark = [pytest.mark.nspawn, pytest.mark.slow]


def test_each_host_of_the_image_is_a_new_instance_with_the_runner_env(
    image_hosts: list[NspawnHost],
) -> None:
    (image,) = [p for p in IMAGES.iterdir() if p.is_dir()]
    # cleaned as an image is: no instance state, logs or login key of the build's boot, and
    # the rootfs's machine id (empty)
    assert not (image / "var/lib/cloud/instances").exists()
    assert not (image / "var/log/cloud-init.log").exists()
    assert not (image / "home" / LOGIN_USER / ".ssh/authorized_keys").exists()
    assert (image / "etc/machine-id").read_bytes() == (ROOTFS / "etc/machine-id").read_bytes()
    assert (image / "opt/gpulab/venv/bin/python").exists()

    ids, machine_ids = set(), set()
    for nh in image_hosts:
        # this boot's own instance, from this boot's seed
        seed = nh.ssh("cat /var/lib/cloud/seed/nocloud/meta-data").stdout
        instance = nh.ssh("cat /var/lib/cloud/data/instance-id").stdout.strip()
        assert f"instance-id: {instance}\n" in seed, (seed, instance)
        ids.add(instance)
        machine_ids.add(nh.ssh("cat /etc/machine-id").stdout.strip())
        # only this lab's key lets the login user in
        keys = nh.ssh(f"cat /home/{LOGIN_USER}/.ssh/authorized_keys").stdout.split("\n")
        pub = nh.key.with_name(nh.key.name + ".pub").read_text().strip()
        assert [k for k in keys if k.strip()] == [pub]
        # the runner's virtualenv imports the runner
        r = nh.ssh("cd /opt/gpulab && venv/bin/python -c 'import workloads.records'")
        assert r.returncode == 0
    assert len(ids) == len(machine_ids) == len(image_hosts) == 2
