"""The ``static`` topology end to end: machines that already exist, reached only through a
bastion, built (nothing), configured, measured, reported and left alone by ``down``; with only
the Pulumi ENGINE doubled (tests/e2e/engine.py: the program runs as the language host runs
it, the dynamic resources in the real provider host).

Real: three systemd-nspawn hosts booted for this module. One is the bastion: it takes only a
key of its own (sshd ``AuthorizedKeysFile`` set to a second file). The other two are the GPU
machines (no GPU: stub NVIDIA repositories, ``workload_run_expect_device: cpu``); their sshd
lets ``debian`` in only from the bastion's address (``AllowUsers debian@<bastion>``), so a
login from this machine is refused and every Ansible connection must go through the bastion.
Nothing in the environment carries a key (no ``ANSIBLE_PRIVATE_KEY_FILE``): the stack's
``gpulab:ssh_private_key_file`` and ``gpulab:bastion`` are all the provider host gets.

Two stacks, one machine each (bare metal, and a VM with passthrough), as a study's arms are
stacks: their records state their own setting, and one report compares them. Each step's
wall time is printed (run with ``-s``).
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.ansible.ssh_route import login_argv
from infra.config import load_stack_file, raw_from_stack_file
from tests.e2e.conftest import TINY_SUITE, booting_the_lab_image, requirements, say, site_vars
from tests.e2e.engine import Engine, UpResult
from tests.parts import REPO
from tests.parts.nspawn import NspawnHost, NspawnLab
from tests.parts.provider_host import ProviderHost
from workloads.records import read_records

pytestmark = [pytest.mark.nspawn, pytest.mark.tf, pytest.mark.slow]

USER = "debian"


@dataclass
class Owned:
    """The booted machines, the keys, the provider host, where results and stacks go."""

    lab: NspawnLab
    bastion: NspawnHost
    gpus: list[NspawnHost]
    bastion_key: Path
    provider: ProviderHost
    results: Path
    workdir: Path
    site: dict[str, Any]
    restricted: str  # when the machines began to take logins from the bastion only

    def jump(self) -> dict[str, Any]:
        return {"host": self.bastion.address, "user": USER, "port": 22,
                "key": str(self.bastion_key)}  # fmt: skip

    def through(self, nh: NspawnHost, command: str) -> subprocess.CompletedProcess[str]:
        """``command`` on ``nh`` as root, through the bastion (the only way in)."""
        argv = login_argv(nh.address, 22, USER, str(self.lab.key), self.jump(),
                          f"sudo -n sh -c {shlex.quote(command)}")  # fmt: skip
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)

    def stack(
        self, name: str, hosts: list[dict[str, Any]], *, valid: bool = True, **over: Any
    ) -> dict[str, Any]:
        """A stack file written out and read back as ``gpulab up`` reads one (``valid``: and
        ``gpulab validate`` passes on it)."""
        config: dict[str, Any] = {
            "topology": "static",
            "lab": name,
            "ssh_user": USER,
            "ssh_private_key_file": str(self.lab.key),
            "bastion": {"host": self.bastion.address, "key": str(self.bastion_key)},
            "hosts": hosts,
            "suite": "smoke",  # replaced by the tiny suite file below
            "workload_variables": {
                "workload_run_suite": str(TINY_SUITE),
                "workload_run_expect_device": "cpu",
            },
            "site": self.site,
        }
        config.update(over)
        config = {k: v for k, v in config.items() if v is not None}  # None: the key unset
        path = self.workdir / f"Pulumi.{name}.yaml"
        path.write_text(yaml.safe_dump({"config": {f"gpulab:{k}": v for k, v in config.items()}}))
        if valid:
            load_stack_file(path)  # `gpulab validate` passes on it
        return raw_from_stack_file(path)

    def engine(self) -> Engine:
        return Engine(self.provider, [], log=say)  # no cloud: no address to hand out


SSHD = "/etc/ssh/sshd_config.d"


def _configure(bastion: NspawnHost, gpus: list[NspawnHost], key: Path) -> None:
    """The bastion takes only ``key``; the GPU machines take logins only from the bastion."""
    pub = (key.parent / f"{key.name}.pub").read_text().strip()
    keys2 = f"/home/{USER}/.ssh/authorized_keys2"
    bastion.ssh(
        f"printf '%s\\n' {shlex.quote(pub)} > {keys2} && chown {USER}:{USER} {keys2}"
        f" && chmod 600 {keys2}"
        f" && echo 'AuthorizedKeysFile .ssh/authorized_keys2' > {SSHD}/10-bastion.conf"
        " && systemctl reload ssh"
    )
    for nh in gpus:
        nh.ssh(
            f"echo 'AllowUsers {USER}@{bastion.address}' > {SSHD}/10-only-bastion.conf"
            " && systemctl reload ssh"
        )


@pytest.fixture(scope="module")
def owned(nspawn_lab: NspawnLab, wheelhouse: Path, tmp_path_factory) -> Iterator[Owned]:  # type: ignore[no-untyped-def]
    workdir = tmp_path_factory.mktemp("e2e-static")
    results = workdir / "results"
    wheel_url = nspawn_lab.serve(wheelhouse)
    site = site_vars(nspawn_lab, wheel_url, requirements(wheelhouse))
    with booting_the_lab_image(nspawn_lab, site, wheelhouse):
        t0 = time.monotonic()
        booted = nspawn_lab.boot(3, gpu_path="whole-machine")
    bastion, gpus = booted[0], booted[1:]
    key = workdir / "bastion_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    # Only the stack's keys: nothing in the environment may name one. The results root: what
    # a user's shell gives `gpulab up` (the program and the provider host both read it).
    old = {k: os.environ.pop(k, None) for k in ("ANSIBLE_PRIVATE_KEY_FILE", "GPULAB_RESULTS")}
    os.environ["GPULAB_RESULTS"] = str(results)
    try:
        _configure(bastion, gpus, key)
        time.sleep(1.1)  # the journal counts in seconds: the direct logins above come before
        restricted = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())  # the hosts' clock
        with ProviderHost(stack="e2e-static", env={"GPULAB_RESULTS": str(results)}) as provider:
            say(f"\n[e2e-static] bastion {bastion.address}, machines "
                f"{[nh.address for nh in gpus]} up in {time.monotonic() - t0:.1f} s")  # fmt: skip
            yield Owned(nspawn_lab, bastion, gpus, key, provider, results, workdir, site,
                        restricted)  # fmt: skip
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        nspawn_lab.stop(booted)


def show(result: UpResult, what: str) -> None:
    say(f"[e2e-static] {what}: up of stack {result.stack} in {result.elapsed_s:.1f} s"
        + (f" -> ERROR: {result.error}" if result.error else ""))  # fmt: skip
    for name, op, dt in result.steps:
        say(f"[e2e-static]   {op:7s} {name:28s} {dt:6.1f} s")
    for host, recap in sorted(((result.exports.get("provision") or {}).get("hosts") or {}).items()):
        say(f"[e2e-static]   site recap {host}: "
            + " ".join(f"{k}={int(v)}" for k, v in recap.items()))  # fmt: skip


def record_files(result: UpResult) -> list[Path]:
    files = map(Path, result.exports["results"]["records"])
    return [p if p.is_absolute() else REPO / p for p in files]


@pytest.fixture(scope="module")
def ups(owned: Owned) -> dict[str, Any]:
    """Two static labs through the bastion: a bare-metal machine (cleaned on down) and a VM
    with passthrough (left as it is)."""
    bm, vm = owned.gpus
    out: dict[str, Any] = {}
    for name, nh, machine, arm, cleanup in (
        ("own-bm", bm, "bare-metal", "bm", True),
        ("own-vm", vm, "vm-passthrough", "vm", False),
    ):
        raw = owned.stack(
            name,
            [{"name": name, "address": nh.address, "machine": machine}],
            cleanup_on_down=cleanup,
            workload_variables={"workload_run_suite": str(TINY_SUITE),
                                "workload_run_expect_device": "cpu", "workload_run_arm": arm},
        )  # fmt: skip
        engine = owned.engine()
        result = engine.up(name, raw)
        show(result, f"static {machine}")
        out[name] = {"engine": engine, "up": result, "machine": nh}
    return out


def test_direct_logins_are_refused_so_the_path_is_the_bastion(owned: Owned) -> None:
    for nh in owned.gpus:  # the lab key, from this machine: AllowUsers refuses it
        r = nh.ssh_as(USER, "true", check=False)
        assert r.returncode == 255 and "Permission denied" in r.stderr, r.stderr
    r = owned.bastion.ssh_as(USER, "true", check=False)  # the bastion refuses the lab key
    assert r.returncode == 255 and "Permission denied" in r.stderr, r.stderr
    for nh in owned.gpus:  # and through the bastion, with its key, the machines answer
        r = owned.through(nh, "id -un")
        assert r.returncode == 0 and r.stdout.strip() == "root", r.stderr


def test_preflight_shows_the_bastion_and_each_machine_with_sudo(owned: Owned) -> None:
    bm, vm = owned.gpus
    owned.stack("own-pre", [
        {"name": "own-bm", "address": bm.address, "machine": "bare-metal"},
        {"name": "own-vm", "address": vm.address, "machine": "vm-passthrough"},
    ])  # fmt: skip
    r = subprocess.run(
        [sys.executable, "-m", "infra.cli", "preflight", str(owned.workdir / "Pulumi.own-pre.yaml"),
         "--json"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    doc = json.loads(r.stdout)  # the envelope of every --json (docs/cli-json.schema.json)
    assert doc["ok"] is True and doc["command"] == "preflight" and doc["data"]["failed"] == 0
    checks = doc["data"]["checks"]
    rows = {(c["name"], c["passed"]) for c in checks}
    assert rows == {
        ("topology static", True), ("ssh key file", True), ("bastion", True),
        ("host own-bm", True), ("host own-vm", True),
    }, rows  # fmt: skip
    for c in checks:
        say(f"[e2e-static] preflight {c['name']}: {c['detail']}")


def test_static_labs_configure_measure_and_state_each_machines_setting(
    owned: Owned, ups: dict[str, Any]
) -> None:
    want = {"own-bm": ("whole-machine", "none", "bm"), "own-vm": ("pci-passthrough", "vm", "vm")}
    for name, (gpu_path, virtualization, arm) in want.items():
        result: UpResult = ups[name]["up"]
        assert result.error is None, result.error
        # nothing in a cloud: the lab's component, the site run, the cleanup holder, the
        # workload run
        assert sorted(n for n, _, _ in result.steps) == sorted(
            [name, f"{name}-site", f"{name}-cleanup", f"{name}-workloads-native"]
        )
        (host,) = result.exports["hosts"]
        assert host["vars"]["gpulab_bastion"]["host"] == owned.bastion.address
        assert host["vars"]["ansible_ssh_private_key_file"] == str(owned.lab.key)
        recap = result.exports["provision"]["hosts"][name]
        assert recap["failed"] == 0 and recap["unreachable"] == 0 and recap["changed"] > 0, recap
        recs = read_records(record_files(result))
        assert len(recs) == 1 and owned.results / name in record_files(result)[0].parents, recs
        (rec,) = recs
        assert rec["status"] == "ok" and rec["images_per_sec"] > 0, rec
        assert rec["host"] == ups[name]["machine"].name
        assert (rec["topology"], rec["arm"]) == ("static", arm)
        assert (rec["gpu_path"], rec["virtualization"], rec["exec_env"]) == (
            gpu_path, virtualization, "native",
        )  # fmt: skip
        say(f"[e2e-static] {name}: record host={rec['host']} gpu_path={rec['gpu_path']} "
            f"virtualization={rec['virtualization']} images/s={rec['images_per_sec']:.1f} "
            f"-> {record_files(result)[0]}")  # fmt: skip
    # since the machines took logins from the bastion only, every one came from its address
    for nh in owned.gpus:
        log = owned.through(
            nh, f"journalctl -u ssh --no-pager -o cat --since '{owned.restricted}'"
        ).stdout
        accepted = [ln for ln in log.splitlines() if ln.startswith("Accepted publickey")]
        assert len(accepted) >= 2 and all(f" from {owned.bastion.address} " in ln
                                         for ln in accepted), accepted[:5]  # fmt: skip
        refused = [ln for ln in log.splitlines() if "not allowed because not listed" in ln]
        assert all(f"from {owned.lab.host_side}" in ln for ln in refused), refused
        say(
            f"[e2e-static] {nh.name}: {len(accepted)} logins accepted, all from the bastion "
            f"{owned.bastion.address}; {len(refused)} direct logins refused"
        )


def test_one_report_compares_the_two_machines(owned: Owned, ups: dict[str, Any]) -> None:
    out = owned.workdir / "report"
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "infra.cli", "report", str(owned.results / "own-bm"),
         str(owned.results / "own-vm"), "--baseline", "static/bm", "--out-dir", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    made = sorted(p.name for p in out.iterdir())
    assert any(n.endswith(".html") for n in made) and any(n.endswith(".md") for n in made), made
    md = next(out.glob("*.md")).read_text()
    assert "static/bm" in md and "static/vm" in md, md[:2000]
    say(f"[e2e-static] gpulab report -> {out} ({', '.join(made)}) in "
        f"{time.monotonic() - t0:.1f} s")  # fmt: skip
    shown = [ln for ln in md.splitlines() if "static/" in ln or ln.startswith("#")]
    say("[e2e-static] report (Markdown, its headings and the arms' lines):\n" + "\n".join(shown))


def test_down_leaves_the_machines_and_removes_gpulab_only_when_asked(
    owned: Owned, ups: dict[str, Any]
) -> None:
    bm, vm = owned.gpus
    for nh in (bm, vm):
        assert owned.through(nh, "test -d /opt/gpulab/workloads").returncode == 0
    files = [f for name in ups for f in record_files(ups[name]["up"])]
    for name in ("own-bm", "own-vm"):
        engine: Engine = ups[name]["engine"]
        t0 = time.monotonic()
        deleted = engine.down()
        say(f"[e2e-static] down {name}: {deleted} in {time.monotonic() - t0:.1f} s")
        assert engine.state == {}
    # bm asked for it (cleanup_on_down: true): gpulab's directories are gone, nothing else
    gone = owned.through(bm, "ls -d /opt/gpulab /var/lib/gpulab /var/cache/gpulab 2>&1; "
                             "command -v python3")  # fmt: skip
    assert "No such file" in gone.stdout and gone.stdout.count("No such file") == 3, gone.stdout
    assert gone.stdout.strip().endswith("/usr/bin/python3")
    # vm did not: everything the site play installed is still there; both machines still run
    assert owned.through(vm, "test -x /opt/gpulab/venv/bin/python").returncode == 0
    assert all(f.is_file() for f in files), "down removed results"


def test_faults_are_refused_before_anything_runs(owned: Owned, tmp_path: Path) -> None:
    """Each: one line naming the key and the host; the engine's state stays empty."""
    bm, _ = owned.gpus
    one = [{"name": "own-x", "address": bm.address, "machine": "bare-metal"}]
    loose = tmp_path / "loose_ed25519"
    loose.write_bytes(owned.lab.key.read_bytes())
    loose.chmod(0o644)
    dead = f"{owned.lab.net}.250"  # on the lab's bridge, nothing there
    cases = {
        # the bastion takes only its own key: with the lab's it refuses (ProxyJump's text
        # form, [user@]host[:port]: no key of its own, so the lab's)
        "bastion refuses": (
            {"bastion": f"{USER}@{owned.bastion.address}:22"},
            f"gpulab:bastion: bastion {owned.bastion.address}:22 (user {USER}, key "
            f"{owned.lab.key}) refused the login on the way to host own-x: ",
        ),
        "no bastion": (
            {"bastion": None},
            f"gpulab:hosts[0]: host own-x ({bm.address}:22) refused the login of user {USER} "
            f"with gpulab:ssh_private_key_file {owned.lab.key}: ",
        ),
        "missing key": (
            {"ssh_private_key_file": str(tmp_path / "missing_ed25519")},
            f"gpulab:ssh_private_key_file {tmp_path / 'missing_ed25519'} (for host own-x): no "
            "such file",
        ),
        "loose key": (
            {"ssh_private_key_file": str(loose)},
            f"gpulab:ssh_private_key_file {loose} (for host own-x): permissions 0644 are too open",
        ),
        "no answer": (
            {"hosts": [*one, {"name": "own-dead", "address": dead, "machine": "vgpu"}]},
            f"gpulab:hosts[1]: host own-dead ({dead}:22 through bastion "
            f"{owned.bastion.address}:22) does not answer SSH from the bastion: ",
        ),
        # the program validates the stack first, as `gpulab validate` does (below)
        "listed twice": (
            {"hosts": [*one, {"name": "own-y", "address": bm.address, "machine": "vgpu"}]},
            f"invalid stack config: gpulab:hosts[1] (own-y, {bm.address}:22) is the machine of "
            "gpulab:hosts[0] (own-x) again: list each machine once",
        ),
    }
    for what, (over, start) in cases.items():
        raw = owned.stack("own-fault", valid=what != "listed twice", **{"hosts": one, **over})
        engine = owned.engine()
        t0 = time.monotonic()
        result = engine.up("own-fault", raw)
        say(f"[e2e-static] {what} ({time.monotonic() - t0:.1f} s): {result.error}")
        # refused while the engine previews the program: nothing was created
        assert result.error is not None, what
        assert result.error.startswith(f"preview failed: {start}"), result.error
        assert "\n" not in result.error
        assert engine.state == {} and result.steps == [], (what, engine.state)
    # `gpulab validate` refuses the machine listed twice, exit 2, the same one line
    twice = owned.workdir / "Pulumi.own-fault.yaml"  # the last case's file
    r = subprocess.run(
        [sys.executable, "-m", "infra.cli", "validate", str(twice)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode == 2 and r.stderr == (
        f"gpulab: error: gpulab:hosts[1] (own-y, {bm.address}:22) is the machine of "
        "gpulab:hosts[0] (own-x) again: list each machine once\n"
    ), (r.returncode, r.stderr)
    say(f"[e2e-static] gpulab validate (listed twice), exit {r.returncode}: {r.stderr.strip()}")
