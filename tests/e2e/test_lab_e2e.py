"""The end-to-end lab: a full ``up`` of the nova-pci and ironic-bm stacks, with only the Pulumi
ENGINE and the CLOUD APIs (Nova, Neutron, Glance, Ironic-through-Nova) doubled.

- Engine double (tests/e2e/engine.py): a preview pass, then the update; Check before Create,
  Diff, replacement (create-before-delete, delete-before-replace where a resource asks for
  it), independent resources in parallel, secrets as secrets, stored outputs for what did not
  change; every dynamic resource goes to the real provider host (``python -m pulumi.dynamic``),
  started per operation as the engine starts it.
- Cloud double (tests/e2e/cloud.py): a Nova server boots a NEW systemd-nspawn host and is
  reported ACTIVE while that host still boots; Debian's cloud-init creates the login user and
  key from a NoCloud seed, and sshd answers only after cloud-init has finished, later still.
- Real: the hosts (systemd, sshd, cloud-init), Ansible's site run (stub NVIDIA driver/CUDA
  repositories, the runner's TensorFlow from a served wheelhouse with ``--no-index
  --find-links``), the runner measuring on each host, records fetched back, ``gpulab report``.

The stub "GPU" hosts have no GPU: the stack sets ``workload_run_expect_device: cpu``, and one
test shows that without it the run fails with a record saying no GPU is visible. Each step's
wall time is printed (run with ``-s``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from infra.lab_faults import provider_message
from tests.e2e.cloud import NspawnCloud
from tests.e2e.conftest import TINY_SUITE, Lab, say
from tests.e2e.engine import Engine, UpResult
from tests.parts import REPO
from tests.parts.nspawn import wait_for
from workloads.records import read_records

pytestmark = [pytest.mark.nspawn, pytest.mark.tf, pytest.mark.slow]

CPU = {"workload_run_suite": str(TINY_SUITE), "workload_run_expect_device": "cpu"}
# The first lab's hosts: sshd answers this long after cloud-init finished. Late enough that the
# site run's wait probes several times (at 0, 0.5, 1.5, 3.5, 7.5 s, ...) and longer than the
# pauses of ssh's own reconnections in a play (ANSIBLE_SSH_RETRIES=3: 0 + 1 + 3 s), so ssh's
# retries alone would not get a play through; 20 s showed nothing more and cost 15 s more.
LATE_SSHD_S = 8.0
SITE, WORKLOADS = "e2e-pci-site", "e2e-pci-workloads-native"
SERVERS = ("e2e-pci-gpu-0", "e2e-pci-gpu-1")


def show(result: UpResult, what: str) -> None:
    """Print an ``up``: the preview's plan, the steps, each host's wait, the site run's recap
    per host, the workload runs' records."""
    say(
        f"[e2e] {what}: up of stack {result.stack} in {result.elapsed_s:.1f} s"
        + (f" -> ERROR: {result.error}" if result.error else "")
    )
    changes = [f"{s.name}={s.op}" for s in result.plan if s.op != "same"]
    say(f"[e2e]   preview: {', '.join(changes) or 'no changes'}")
    for s in result.steps:
        if s.op != "same":
            say(f"[e2e]   {s.op:15s} {s.name:32s} {s.seconds:6.1f} s {s.detail}")
    for line in result.wait_lines:
        say(f"[e2e]   {line}")
    prov = result.exports.get("provision") or {}
    for host, recap in sorted((prov.get("hosts") or {}).items()):
        say(f"[e2e]   site recap {host}: " + " ".join(f"{k}={int(v)}" for k, v in recap.items()))
    res = result.exports.get("results") or {}
    if res:
        say(
            f"[e2e]   results: status={res.get('status')} counts={res.get('counts')} "
            f"records={len(res.get('records') or [])}"
        )


def record_paths(results: dict[str, Any]) -> list[Path]:
    return [p if p.is_absolute() else REPO / p for p in map(Path, results["records"])]


def site_outputs(engine: Engine, name: str) -> dict[str, Any]:
    return next(r.outs for r in engine.state.values() if r.name == name)


@pytest.fixture(scope="module")
def nova(e2e_lab: Lab) -> Any:
    """nova-pci on the cloud double, built once for the tests below (which run in file
    order); its servers answer SSH only LATE_SSHD_S after cloud-init has finished."""
    cloud = e2e_lab.cloud(sshd_delay_s=LATE_SSHD_S)
    engine = e2e_lab.engine(cloud=cloud)
    raw = e2e_lab.stack("nova-pci", "e2e-pci", workload_variables=CPU)
    result = engine.up("nova-pci", raw)
    show(result, "nova-pci first, late-booting hosts")
    state = {"engine": engine, "cloud": cloud, "raw": raw, "up": result}
    yield state
    if engine.state:
        engine.down()


def test_nova_pci_up_waits_for_late_booting_hosts_then_configures_and_measures(
    nova: Any, e2e_lab: Lab
) -> None:
    """Nova says ACTIVE at once; sshd answers LATE_SSHD_S after cloud-init has finished; the
    site run waits for sshd, then for the login and cloud-init, and only then starts its first
    task; one line per host says what it waited for and how long."""
    result: UpResult = nova["up"]
    cloud: NspawnCloud = nova["cloud"]
    assert result.error is None, result.error
    # the preview planned what the update then did: everything new
    assert {s.op for s in result.plan} == {"create"}, result.plan
    assert [(s.name, s.op) for s in result.steps if s.op != "same" and "e2e-pci-" in s.name][-2:] \
        == [(SITE, "create"), (WORKLOADS, "create")]  # fmt: skip
    ex = result.exports
    hosts = {h["name"]: h for h in ex["hosts"]}
    assert sorted(hosts) == sorted(SERVERS)
    prov = ex["provision"]
    assert prov["status"] == "successful", prov
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in prov["hosts"].values())
    say("[e2e] host               ACTIVE->sshd  ACTIVE->cloud-init done  ACTIVE->first task")
    for name in SERVERS:
        server = cloud.by_name(name)
        assert hosts[name]["address"] == server.address
        assert hosts[name]["identity"] == server.id  # the Nova server id identifies the machine
        w = prov["waited"][name]
        active, sshd, ci, first = server.active_at, w["sshd_at"], w["cloud_init_done_at"], \
            w["first_task_at"]  # fmt: skip
        say(
            f"[e2e] {name}  {sshd - active:10.1f} s  {ci - active:18.1f} s"
            f"  {first - active:14.1f} s"
        )
        assert w["cloud_init"] == "done" and w["sshd_tries"] > 1
        assert active < ci < sshd < first, (active, ci, sshd, first)
        assert sshd - ci >= LATE_SSHD_S - 1.0  # sshd only after cloud-init, and later
        assert sshd - active >= LATE_SSHD_S
    # one line per host: the host, what it waited for, how long
    assert len(result.wait_lines) == len(SERVERS), result.wait_lines
    for name in SERVERS:
        (line,) = [ln for ln in result.wait_lines if f"host {name} (" in ln]
        assert "sshd " in line and " s (" in line and "cloud-init done" in line, line
    # the records fetched back are the `results` output, under results/<stack>/
    res = ex["results"]
    assert res["status"] == "ok" and res["counts"]["ok"] == 2, res
    files = record_paths(res)
    stack_dir = e2e_lab.results / "nova-pci"
    assert files and all(f.is_file() and stack_dir in f.parents for f in files), files
    recs = read_records(files)
    assert sorted(r["host"] for r in recs) == sorted(SERVERS)  # the host names Nova gave
    for r in recs:
        assert r["status"] == "ok" and r["images_per_sec"] > 0
        assert r["topology"] == "nova-pci" and r["arm"] == "native"
        assert r["params"]["device"]["expected"] == "cpu"
        assert r["params"]["device"]["used"] == "cpu"  # the device really used
    cloud.sshd_delay_s = 1.0  # the servers of later tests need not boot as slowly


def test_gpulab_report_builds_a_report_from_the_results(nova, e2e_lab: Lab) -> None:
    stack_dir = e2e_lab.results / "nova-pci"
    out = e2e_lab.workdir / "report-nova-pci"
    t0 = time.monotonic()
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "infra.cli",
            "report",
            str(stack_dir),
            "--baseline",
            "nova-pci",
            "--out-dir",
            str(out),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stdout[-1500:] + r.stderr[-1500:]
    made = sorted(p.name for p in out.iterdir())
    assert any(n.endswith(".html") for n in made) and any(n.endswith(".md") for n in made), made
    say(
        f"[e2e] gpulab report {stack_dir} -> {out} ({', '.join(made)}) "
        f"in {time.monotonic() - t0:.1f} s"
    )


def test_second_up_changes_nothing(nova: Any) -> None:
    """Nothing changed: the preview plans no change and the update calls no provider: every
    resource keeps its stored id and outputs (the engine's "same" step)."""
    engine: Engine = nova["engine"]
    before = {r.name: (r.id, r.outs) for r in engine.state.values()}
    result = engine.up("nova-pci", nova["raw"])
    show(result, "nova-pci again, nothing changed")
    assert result.error is None, result.error
    assert {s.op for s in result.plan} == {"same"} and {s.op for s in result.steps} == {"same"}
    assert {r.name: (r.id, r.outs) for r in engine.state.values()} == before
    assert result.exports["provision"] == nova["up"].exports["provision"]


def test_a_newer_image_replaces_the_servers_which_are_provisioned_and_measured(
    nova: Any,
) -> None:
    """A newer image under the lab's image name (``most_recent``): each server is replaced,
    the old one deleted first (its port cannot serve two servers: the resource asks for
    delete-before-replace); the new machines get the site play (changed > 0) and are
    measured; the network, ports and floating IPs stay."""
    engine: Engine = nova["engine"]
    cloud: NspawnCloud = nova["cloud"]
    old_ids = {n: cloud.by_name(n).id for n in SERVERS}
    before_files = set(record_paths(nova["up"].exports["results"]))
    cloud.publish_image(nova["raw"]["image"])
    result = engine.up("nova-pci", nova["raw"])
    show(result, "nova-pci after a newer image")
    assert result.error is None, result.error
    plan = {s.name: s for s in result.plan}
    for name in SERVERS:
        assert plan[name].op == "replace" and "imageId" in plan[name].detail, plan[name]
        assert "delete first" in plan[name].detail
        assert plan[f"{name}-port"].op == plan[f"{name}-fip"].op == "same"
    assert plan[SITE].op == plan[WORKLOADS].op == "update"
    ops = result.ops()
    assert {ops[n] for n in SERVERS} == {"replace"} and ops[SITE] == ops[WORKLOADS] == "update"
    assert {s.id for s in cloud.gone} >= set(old_ids.values())  # the old servers are gone
    site = site_outputs(engine, SITE)
    assert site["ran_on"] == sorted(SERVERS)
    for name in SERVERS:
        assert cloud.by_name(name).id != old_ids[name]
        assert site["summary"][name]["changed"] > 0, site["summary"]  # a blank machine
    files = [f for f in record_paths(result.exports["results"]) if f not in before_files]
    assert sorted(r["host"] for r in read_records(files)) == sorted(SERVERS)
    nova["up"] = result


def test_a_rebuilt_server_is_seen_by_refresh_and_only_it_is_provisioned(nova: Any) -> None:
    """``openstack server rebuild`` outside gpulab: the same server id on a new machine.
    ``up --refresh`` reads every host's machine id back; the site play runs on the rebuilt
    host only (changed > 0), the other host is not touched (no run, its recap kept); both
    are measured again."""
    engine: Engine = nova["engine"]
    cloud: NspawnCloud = nova["cloud"]
    rebuilt, untouched = SERVERS[1], SERVERS[0]
    before = site_outputs(engine, SITE)
    new = cloud.rebuild(cloud.by_name(rebuilt).id)
    wait_for(new.host.answers_ssh, 120, f"ssh to the rebuilt {rebuilt}", step=1)
    result = engine.up("nova-pci", nova["raw"], refresh=True)
    show(result, "nova-pci after a rebuild, with --refresh")
    assert result.error is None, result.error
    assert {s.name: s.op for s in result.plan if s.op != "same"} == {
        SITE: "update",
        WORKLOADS: "update",
    }
    site = site_outputs(engine, SITE)
    assert site["ran_on"] == [rebuilt]
    assert site["summary"][rebuilt]["changed"] > 0
    assert site["summary"][untouched] == before["summary"][untouched]  # no run: recap kept
    assert site["machines"][untouched] == before["machines"][untouched]
    assert site["machines"][rebuilt] != before["machines"][rebuilt]
    assert [ln for ln in result.wait_lines if f"host {untouched} " in ln] == []
    recs = read_records(record_paths(result.exports["results"]))
    assert sorted(r["host"] for r in recs) == sorted(SERVERS), "both measured again"
    say(f"[e2e] site recap {rebuilt} (rebuilt): {site['summary'][rebuilt]}")
    say(f"[e2e] site recap {untouched} (untouched, kept): {site['summary'][untouched]}")
    for r in recs:
        say(f"[e2e] record {r['host']}: {r['model']} {r['images_per_sec']:.1f} images/s")
    nova["up"] = result


def test_down_deletes_everything_and_keeps_the_results(nova: Any, e2e_lab: Lab) -> None:
    engine: Engine = nova["engine"]
    cloud: NspawnCloud = nova["cloud"]
    files = record_paths(nova["up"].exports["results"])
    made = [r.name for r in engine.state.values()]
    t0 = time.monotonic()
    deleted = engine.down()
    say(f"[e2e] nova-pci down: {len(deleted)} resources deleted in {time.monotonic() - t0:.1f} s")
    assert engine.state == {} and cloud.servers == {}
    assert sorted(deleted) == sorted(made)
    assert deleted.index(WORKLOADS) < deleted.index(SITE) < deleted.index(SERVERS[0])
    assert all(f.is_file() for f in files), "down removed results"


def test_sshd_that_never_starts_fails_up_within_the_timeout_with_one_line(e2e_lab: Lab) -> None:
    """A server whose sshd never starts (cloud-init finishes, sshd does not): ``up`` fails
    after ``gpulab:host_wait_s`` with one line naming the step, the host, what it waited for
    and how long; the resources made before stay in the state, and ``down`` removes them."""
    cloud = e2e_lab.cloud(sshd_delay_s=None)
    engine = e2e_lab.engine(cloud=cloud)
    raw = e2e_lab.stack("nova-pci", "e2e-dead", host_count=1, host_wait_s=20,
                        workload_variables=CPU)  # fmt: skip
    result = engine.up("nova-pci", raw)
    show(result, "nova-pci whose sshd never starts")
    try:
        err = result.error or ""
        say(f"[e2e] sshd never starts -> {err}")
        assert "\n" not in err and err.startswith("e2e-dead-site: "), err
        line = provider_message(err.split(": ", 1)[-1])  # what `gpulab up` prints of it
        assert line and line.startswith("host e2e-dead-gpu-0 ("), err
        assert "no SSH answer within 20 s (waited for sshd" in line, line
        assert "connection refused" in err and "gpulab:host_wait_s" in err, err
        (failed,) = [s for s in result.steps if s.op == "failed"]
        assert failed.name == "e2e-dead-site" and 20 <= failed.seconds < 35, failed
        kept = [r.name for r in engine.state.values()]
        assert "e2e-dead-gpu-0" in kept and not any("site" in n or "work" in n for n in kept)
        assert [s.name for s in cloud.servers.values()] == ["e2e-dead-gpu-0"]
    finally:
        deleted = engine.down()
    assert engine.state == {} and cloud.servers == {} and "e2e-dead-gpu-0" in deleted


def test_vsphere_gpu_vgpu_up_against_the_vcenter_simulator(e2e_lab: Lab, vcsim) -> None:  # type: ignore[no-untyped-def]
    """vsphere-gpu mode vgpu: the VMs are cloned in the real vCenter simulator, the vGPU
    attaches (VgpuProfile, through the provider host and pyVmomi) run in parallel before the
    site run and each waits for its guest to come back after the power cycle (VMware Tools,
    an address: the simulator's guests boot late); the hosts are configured as vGPU guests
    (stub GRID driver, licensing token as a secret) and measured; ``down`` detaches the
    profiles and the VMs go away."""
    from tests.e2e.vcsim_cloud import VcsimCloud

    cloud = VcsimCloud(vcsim.host, vcsim.port, vcsim.user, vcsim.password)
    engine = e2e_lab.engine(cloud=cloud)
    raw = e2e_lab.stack(
        "vsphere-gpu", "e2e-vs", workload_variables=CPU, mode="vgpu",
        vgpu_profile="grid_p100-4q", gpu_host=None, pci_device_ids=None, gpus_per_vm=None,
        gpu_bar_gb=None, vsphere_server=f"{vcsim.host}:{vcsim.port}", vsphere_user=vcsim.user,
        vsphere_insecure=True, vgpu_license_token={"secure": "v1:e2e:vgpu_license_token"},
    )  # fmt: skip
    try:
        result = engine.up("vsphere-gpu", raw, secret_values={"vsphere_password": vcsim.password})
        show(result, "vsphere-gpu (vgpu)")
        assert result.error is None, result.error
        names = [s.name for s in result.steps]
        vgpus = [s for s in result.steps if "vgpu" in s.name and s.op == "create"]
        assert len(vgpus) == 2 and names.index("e2e-vs-site") > max(
            names.index(s.name) for s in vgpus
        )
        # independent: attached at the same time; each waited for its guest (>= its boot)
        a, b = vgpus
        assert a.start < b.end and b.start < a.end, (a, b)
        assert min(a.seconds, b.seconds) >= 1.5, (a, b)
        for i in range(2):
            assert cloud.profiles(f"e2e-vs-gpu-{i}") == ["grid_p100-4q"]
        assert result.exports["provision"]["status"] == "successful"
        recs = read_records(record_paths(result.exports["results"]))
        assert len(recs) == 2 and {r["topology"] for r in recs} == {"vsphere-gpu"}
        assert all(r["status"] == "ok" for r in recs)
        t0 = time.monotonic()
        engine.down()
        say(f"[e2e] vsphere-gpu down in {time.monotonic() - t0:.1f} s")
        assert not cloud.exists("e2e-vs-gpu-0") and not cloud.exists("e2e-vs-gpu-1")
    finally:
        if engine.state:
            engine.down()
        cloud.close()


def test_ironic_bm_up_then_gpu_expected_but_absent(e2e_lab: Lab) -> None:
    """ironic-bm on the lab's two booted hosts; then the measurement is repeated
    (``gpulab:measure_id``) WITHOUT the explicit expected device: the hosts are GPU hosts
    (whole-machine), the framework sees no GPU, so every record fails saying so and naming its
    host, only the workload run re-ran, and ``up`` ends with one line naming the step and the
    host; the state keeps the earlier run, so ``down`` still removes everything."""
    engine = e2e_lab.engine()
    raw = e2e_lab.stack("ironic-bm", "e2e-bm", workload_variables=CPU)
    first = engine.up("ironic-bm", raw)
    show(first, "ironic-bm first")
    try:
        assert first.error is None, first.error
        assert first.exports["provision"]["status"] == "successful"
        assert first.exports["results"]["status"] == "ok"
        recs = read_records(record_paths(first.exports["results"]))
        assert {r["topology"] for r in recs} == {"ironic-bm"} and len(recs) == 2

        again = dict(
            raw, measure_id="no-expect", workload_variables={"workload_run_suite": str(TINY_SUITE)}
        )
        second = engine.up("ironic-bm", again)
        show(second, "ironic-bm measure without the expected device")
        ops = second.ops()
        assert ops["e2e-bm-workloads-native"] == "failed", ops
        # the site run is not re-run for a new measurement: none of its inputs changes
        site_changed = engine.changed_inputs.get("e2e-bm-site", [])
        assert ops["e2e-bm-site"] == "same" and site_changed == [], (ops, site_changed)
        # `up` ends with one line naming the step, the host and why
        err = second.error or ""
        assert "\n" not in err and err.startswith("e2e-bm-workloads-native: "), err
        assert "host 'e2e-bm-gpu-" in err and "no GPU is visible to tensorflow" in err, err
        # the failed records are fetched and kept beside the first run's
        before = set(record_paths(first.exports["results"]))
        files = [f for f in (e2e_lab.results / "ironic-bm").rglob("*.jsonl") if f not in before]
        failed = read_records(files)
        assert len(failed) == 2, files
        for r in failed:
            assert r["status"] == "failed" and r["images_per_sec"] is None
            assert r["error"].startswith(f"host {r['host']}: no GPU is visible to tensorflow"), r
            device = r["params"]["device"]
            assert device["expected"] == "gpu" and device["used"] == "cpu", device
        say(f"[e2e] no GPU visible -> {failed[0]['error']}")
    finally:
        engine.down()
