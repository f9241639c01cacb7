"""`gpulab inventory STACK --out FILE` writes the inventory the lab's Ansible runs use, read by
the real `ansible-inventory`: every value arrives as Ansible's unsafe text."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from infra.ansible.inventory import build_inventory
from infra.hosts import Host

ANSIBLE_INVENTORY = str(Path(sys.executable).parent / "ansible-inventory")


class UnsafeLoader(yaml.SafeLoader):
    """Reads ``!unsafe`` strings as plain strings (what Ansible keeps as unsafe text)."""


UnsafeLoader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))


def plain(value: object) -> object:
    """``ansible-inventory --list`` shows unsafe text as ``{"__ansible_unsafe": s}``: s."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def _outputs(tmp_path: Path) -> Path:
    hosts = [
        Host("bm-0", "10.0.0.5", ssh_user="ubuntu", gpu_path="whole-machine", groups=["gpu"]),
        Host("api", "10.0.0.9", ssh_user="ubuntu", gpu_path="none", groups=["k8s_control"]),
    ]
    path = tmp_path / "outputs.json"  # the shape of `gpulab outputs` (and of results/*/outputs-*)
    path.write_text(json.dumps({"topology": "local", "hosts": [h.to_output() for h in hosts]}))
    return path


def test_inventory_reads_the_envelope_of_outputs_json(gpulab, tmp_path: Path) -> None:
    """`gpulab outputs mylab --json > outputs.json`, then --outputs outputs.json: the hosts
    are the envelope's data."""
    outputs = json.loads(_outputs(tmp_path).read_text())
    saved = tmp_path / "enveloped.json"
    saved.write_text(json.dumps({"ok": True, "command": "outputs", "data": outputs,
                                 "error": None}))  # fmt: skip
    r = gpulab("inventory", "local", "--outputs", str(saved))
    assert r.returncode == 0, r.stderr
    assert "bm-0:" in r.stdout and "api:" in r.stdout


def test_inventory_file_is_what_ansible_reads(gpulab, tmp_path: Path) -> None:
    out = tmp_path / "inv" / "lab.yml"
    r = gpulab("inventory", "local", "--outputs", str(_outputs(tmp_path)), "--out", str(out))
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and "wrote" in r.stderr
    listed = subprocess.run([ANSIBLE_INVENTORY, "-i", str(out), "--list"], capture_output=True,
                            text=True, timeout=120, check=True)  # fmt: skip
    inv = json.loads(listed.stdout)
    assert sorted(inv["gpu_path_whole_machine"]["hosts"]) == ["bm-0"]
    assert inv["k8s_control"]["hosts"] == ["api"] and inv["gpu_path_none"]["hosts"] == ["api"]
    raw_bm = inv["_meta"]["hostvars"]["bm-0"]
    assert raw_bm["ansible_host"] == {"__ansible_unsafe": "10.0.0.5"}  # data, not a template
    assert raw_bm["gpulab_exec_envs"] == [{"__ansible_unsafe": "native"}]
    bm = plain(raw_bm)
    assert isinstance(bm, dict)
    assert bm["ansible_host"] == "10.0.0.5" and bm["ansible_user"] == "ubuntu"
    assert bm["gpulab_gpu_path"] == "whole-machine"
    assert bm["gpulab_exec_envs"] == ["native"] and bm["gpulab_topology"] == "local"
    # the same inventory the lab's runs build (infra.ansible.inventory), plus the site vars
    data = yaml.load(out.read_text(), Loader=UnsafeLoader)  # a SafeLoader
    built = build_inventory([Host.from_output(h) for h in json.loads(
        (tmp_path / "outputs.json").read_text())["hosts"]])  # fmt: skip
    assert data["all"]["hosts"] == built["all"]["hosts"]


def test_inventory_to_stdout_and_bad_outputs(gpulab, tmp_path: Path) -> None:
    r = gpulab("inventory", "-s", "local", "--outputs", str(_outputs(tmp_path)))
    assert r.returncode == 0 and yaml.load(r.stdout, Loader=UnsafeLoader)["all"]["hosts"]["bm-0"]
    bad = tmp_path / "bad.json"
    bad.write_text('{"topology": "local"}')
    r = gpulab("inventory", "local", "--outputs", str(bad))
    assert r.returncode == 2 and r.stderr.count("\n") == 1
    assert "has no 'hosts' list" in r.stderr


# ---------------------------------------------------------------- hostile host fields


def _one_host_outputs(tmp_path: Path, **fields: object) -> Path:
    host = {
        "name": "gpu-0",
        "address": "10.0.0.5",
        "ssh_user": "ubuntu",
        "gpu_path": "pci-passthrough",
        "ssh_port": 22,
        "groups": ["gpu_hosts"],
        "vars": {},
    }
    host.update(fields)
    path = tmp_path / "outputs.json"
    path.write_text(json.dumps({"hosts": [host]}))
    return path


PROXY = "-oProxyCommand=sh -c 'touch /tmp/PWNED-inventory'"
BAD_HOST_FIELDS = [
    ({"name": PROXY}, "host name must be"),
    ({"name": "gpu-0\nevil ansible_host=1.2.3.4"}, "host name must be"),
    ({"name": "{{ lookup('pipe', 'id') }}"}, "host name must be"),
    ({"address": PROXY}, "host 'gpu-0': address must be an IP address or a host name"),
    ({"address": "10.0.0.5 -oProxyCommand=id"}, "host 'gpu-0': address must be"),
    ({"address": "10.0.0.5\nansible_ssh_common_args: -oProxyCommand=id"},
     "host 'gpu-0': address must be"),
    ({"address": "/srv/root"}, "host 'gpu-0': address must be an IP address or a host name"),
    ({"ssh_user": "-oProxyCommand=id"}, "host 'gpu-0': ssh_user must be a login name"),
    ({"ssh_user": "ubuntu -oProxyCommand=id"}, "host 'gpu-0': ssh_user must be a login name"),
    ({"ssh_user": "ubuntu\nroot"}, "host 'gpu-0': ssh_user must be a login name"),
    ({"ssh_port": "22 -oProxyCommand=id"}, "host 'gpu-0': ssh_port must be 1-65535"),
    ({"ssh_port": 0}, "host 'gpu-0': ssh_port must be 1-65535"),
    ({"ssh_port": True}, "host 'gpu-0': ssh_port must be 1-65535"),
    ({"vars": {"ansible_ssh_common_args": "-o ProxyCommand='touch /tmp/PWNED'"}},
     "host 'gpu-0': variable 'ansible_ssh_common_args' is not allowed"),
    ({"vars": {"ansible_ssh_extra_args": "-oProxyCommand=id"}},
     "variable 'ansible_ssh_extra_args' is not allowed"),
    ({"vars": {"ansible_ssh_executable": "/tmp/evil"}},
     "variable 'ansible_ssh_executable' is not allowed"),
    ({"vars": {"ansible_become_exe": "/tmp/evil"}}, "variable 'ansible_become_exe' is not allowed"),
    ({"vars": {"ansible_connection": "community.docker.docker"}},
     "host 'gpu-0': ansible_connection must be one of"),
    ({"vars": {"ansible_python_interpreter": "/usr/bin/python3 -c 'import os'"}},
     "host 'gpu-0': ansible_python_interpreter must be an absolute path"),
    ({"vars": {"ansible_ssh_private_key_file": "-oProxyCommand=id"}},
     "ansible_ssh_private_key_file must be an absolute path"),
    ({"vars": {"bad key": 1}}, "host 'gpu-0': 'bad key' is not an Ansible variable name"),
    ({"vars": ["not", "a", "mapping"]}, "host 'gpu-0': vars must be a mapping"),
    ({"groups": ["gpu", 5]}, "group name must be a string"),
    ({"gpu_path": "{{ 1 }}"}, "gpu_path '{{ 1 }}' is not one of"),
]  # fmt: skip


@pytest.mark.parametrize(("fields", "needle"), BAD_HOST_FIELDS)
def test_a_hostile_host_field_is_refused_in_one_line(
    gpulab, tmp_path: Path, fields: dict[str, object], needle: str
) -> None:
    out = tmp_path / "inventory.yml"
    r = gpulab("inventory", "local", "--outputs", str(_one_host_outputs(tmp_path, **fields)),
               "--out", str(out))  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
    assert r.stderr.startswith("gpulab: error: stack 'local': hosts output: ")
    assert needle in r.stderr, r.stderr
    assert not out.exists() and list(tmp_path.glob(".inventory.yml.*")) == []


DATA_VALUES = {
    "template": "{{ lookup('pipe', 'touch /tmp/PWNED-inventory-var') }}",
    "block": "{% for x in range(3) %}{{ x }}{% endfor %}",
    "newline": "line one\nansible_ssh_common_args: -oProxyCommand=id",
    "yaml_tag": "!!python/object/apply:os.system ['id']",
    "dash": "- item",
    "unicode": "caf\u00e9 \u2028 end",
}


def test_host_var_values_are_written_as_unsafe_data(gpulab, tmp_path: Path) -> None:
    """Any text in a host var survives as that text, tagged !unsafe: ansible-inventory reads
    every value back as unsafe text (``__ansible_unsafe``), equal to what went in."""
    outputs = _one_host_outputs(tmp_path, vars={"lab": "lab-a", **DATA_VALUES})
    out = tmp_path / "inventory.yml"
    r = gpulab("inventory", "local", "--outputs", str(outputs), "--out", str(out))
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    assert not re.search(r"^\s*ansible_ssh_common_args:", text, re.MULTILINE)  # no key of its own
    assert "\nansible" not in text and text.count("!unsafe") >= 10
    listed = subprocess.run([ANSIBLE_INVENTORY, "-i", str(out), "--list"], capture_output=True,
                            text=True, timeout=120, check=True)  # fmt: skip
    hv = json.loads(listed.stdout)["_meta"]["hostvars"]["gpu-0"]
    for key, value in DATA_VALUES.items():
        assert hv[key] == {"__ansible_unsafe": value}, key
    assert hv["ansible_host"] == {"__ansible_unsafe": "10.0.0.5"}
    assert "ansible_ssh_common_args" not in hv


# ---------------------------------------------------------------- where it is written


@pytest.fixture
def mounted(tmp_path: Path):  # type: ignore[no-untyped-def]
    """``mounted(options) -> Path``: a small tmpfs (``ro``, ``size=...``), unmounted after."""
    from tests.parts import need_root

    need_root("a read-only or full file system")
    mounts: list[Path] = []

    def mount(options: str) -> Path:
        d = tmp_path / f"fs{len(mounts)}"
        d.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(d)], check=True)
        mounts.append(d)
        return d

    yield mount
    for d in mounts:
        subprocess.run(["umount", str(d)], check=False)


@pytest.mark.parametrize("where", ["file", "missing-dir"])
def test_a_read_only_directory_is_one_line_and_no_file(gpulab, tmp_path: Path, mounted,  # type: ignore[no-untyped-def]
                                                       where: str) -> None:  # fmt: skip
    ro = mounted("ro,size=64k")
    out = ro / "inventory.yml" if where == "file" else ro / "new" / "inventory.yml"
    r = gpulab("inventory", "local", "--outputs", str(_outputs(tmp_path)), "--out", str(out))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "Read-only file system" in r.stderr and str(out.parent) in r.stderr
    assert list(ro.iterdir()) == []


def test_a_full_disk_is_one_line_and_keeps_the_previous_file(gpulab, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                             mounted) -> None:  # fmt: skip
    small = mounted("size=16k")
    out = small / "inventory.yml"
    out.write_text("previous\n")
    (small / "filler").write_bytes(b"x" * 12288)  # what is left is less than the inventory
    outputs = _one_host_outputs(tmp_path, vars={"lab": "x" * 8000})
    r = gpulab("inventory", "local", "--outputs", str(outputs), "--out", str(out))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "No space left on device" in r.stderr and str(out) in r.stderr
    assert out.read_text() == "previous\n"
    assert sorted(p.name for p in small.iterdir()) == ["filler", "inventory.yml"]


def test_a_port_the_engine_hands_as_a_double_is_taken_whole_and_a_fraction_refused() -> None:
    """The Pulumi engine passes numbers to a dynamic provider as a protobuf Struct: doubles."""
    from infra.ansible.inventory import InventoryError, check_host, host_vars

    assert host_vars(Host("h", "10.0.0.5", ssh_port=22.0))["ansible_port"] == 22  # type: ignore[arg-type]
    with pytest.raises(InventoryError, match=r"ssh_port must be 1-65535, got 22\.5"):
        check_host(Host("h", "10.0.0.5", ssh_port=22.5))  # type: ignore[arg-type]
