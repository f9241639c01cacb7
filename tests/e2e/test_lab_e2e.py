"""The end-to-end lab: a full ``up`` of the nova-pci and ironic-bm stacks on booted hosts, with
only the Pulumi ENGINE and the CLOUD APIs (Nova, Neutron, Glance, Ironic-through-Nova) doubled.

- Engine double: Pulumi's mocks run the program from the repository root as the language host
  does; a cloud resource comes back with the address of a booted nspawn host (host 0 marked as
  a GPU host with the stub NVIDIA repository, host 1 CPU-only); every dynamic resource goes to
  the real provider host (``python -m pulumi.dynamic``, gRPC Check + Create, Diff + Update for
  one already in the state, Delete in reverse order for ``down``): see tests/e2e/engine.py.
- Real: systemd-nspawn hosts over SSH as the sudo user ``debian``, Ansible's site run (stub
  NVIDIA driver/CUDA repositories, the runner's TensorFlow from a served wheelhouse with
  ``--no-index --find-links``), the runner measuring on each host, records fetched back,
  ``gpulab report``.

The stub "GPU" host has no GPU: the stack sets ``workload_run_expect_device: cpu`` for it, and
one test shows that without it the run fails with a record saying no GPU is visible.
Each step's wall time is printed (run with ``-s``).
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import TINY_SUITE, Lab, say
from tests.e2e.engine import Engine, UpResult
from tests.parts import REPO
from workloads.records import read_records

pytestmark = [pytest.mark.nspawn, pytest.mark.tf, pytest.mark.slow]

CPU = {"workload_run_suite": str(TINY_SUITE), "workload_run_expect_device": "cpu"}


def show(result: UpResult, what: str) -> None:
    """Print an ``up``: resources, the site run's recap per host, workload runs, records."""
    say(
        f"[e2e] {what}: up of stack {result.stack} in {result.elapsed_s:.1f} s"
        + (f" -> ERROR: {result.error}" if result.error else "")
    )
    for name, op, dt in result.steps:
        say(f"[e2e]   {op:7s} {name:32s} {dt:6.1f} s")
    prov = result.exports.get("provision") or {}
    for host, recap in sorted((prov.get("hosts") or {}).items()):
        say(f"[e2e]   site recap {host}: " + " ".join(f"{k}={int(v)}" for k, v in recap.items()))
    res = result.exports.get("results") or {}
    if res:
        say(
            f"[e2e]   results: status={res.get('status')} counts={res.get('counts')} "
            f"records={len(res.get('records') or [])}"
        )


def step_time(result: UpResult, prefix: str) -> float:
    return sum(dt for name, _, dt in result.steps if prefix in name)


def record_paths(results: dict[str, Any]) -> list[Path]:
    return [p if p.is_absolute() else REPO / p for p in map(Path, results["records"])]


@pytest.fixture(scope="module")
def nova(e2e_lab: Lab) -> dict[str, Any]:
    """nova-pci, built once for the tests below (which run in file order)."""
    engine = e2e_lab.engine()
    raw = e2e_lab.stack("nova-pci", "e2e-pci", workload_variables=CPU)
    result = engine.up("nova-pci", raw)
    show(result, "nova-pci first")
    return {"engine": engine, "raw": raw, "up": result}


def test_nova_pci_up_builds_configures_measures_and_exports(nova, e2e_lab: Lab) -> None:
    result: UpResult = nova["up"]
    assert result.error is None, result.error
    ex = result.exports
    assert {"hosts", "provision", "results"} <= set(ex)
    assert [h["address"] for h in ex["hosts"]] == e2e_lab.addresses
    assert {h["ssh_user"] for h in ex["hosts"]} == {"debian"}
    prov = ex["provision"]
    assert prov["status"] == "successful", prov
    names = [h["name"] for h in ex["hosts"]]
    assert sorted(prov["hosts"]) == sorted(names)
    assert all(r["failed"] == 0 and r["unreachable"] == 0 for r in prov["hosts"].values())
    # the engine's order: site run after the hosts, the workload run after the site run
    ops = [(name, op) for name, op, _ in result.steps]
    assert ops == [("e2e-pci-site", "create"), ("e2e-pci-workloads-native", "create")]
    # the records fetched back from the hosts are the `results` output, under results/<stack>/
    res = ex["results"]
    assert res["status"] == "ok" and res["counts"]["ok"] == 2, res
    files = record_paths(res)
    stack_dir = e2e_lab.results / "nova-pci"
    assert files and all(f.is_file() and stack_dir in f.parents for f in files), files
    recs = read_records(files)
    assert sorted(r["host"] for r in recs) == sorted(h.name for h in e2e_lab.nspawn.hosts[:2])
    for r in recs:
        assert r["status"] == "ok" and r["images_per_sec"] > 0
        assert r["topology"] == "nova-pci" and r["arm"] == "native"
        assert r["params"]["device"]["expected"] == "cpu"
        assert r["params"]["device"]["used"] == "cpu"  # the device really used
    say(
        f"[e2e] nova-pci: site run {step_time(result, '-site'):.1f} s, workload runs "
        f"{step_time(result, '-workloads-'):.1f} s, {len(recs)} records fetched to {stack_dir}"
    )


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
            "--out",
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


def test_down_deletes_everything_and_keeps_the_results(nova, e2e_lab: Lab) -> None:
    engine: Engine = nova["engine"]
    files = record_paths(nova["up"].exports["results"])
    made = list(engine.state)
    t0 = time.monotonic()
    deleted = engine.down()
    say(
        f"[e2e] nova-pci down: {len(deleted)} resources deleted in {time.monotonic() - t0:.1f} s "
        f"(dynamic, newest first: {[n for n in deleted if 'site' in n or 'workloads' in n]})"
    )
    assert engine.state == {}
    assert sorted(deleted) == sorted(name for _, name in made)
    assert deleted.index("e2e-pci-workloads-native") < deleted.index("e2e-pci-site")
    assert all(f.is_file() for f in files), "down removed results"


def test_second_up_reconverges_with_no_change(nova, e2e_lab: Lab) -> None:
    """After ``down`` the (doubled) cloud hands back the same hosts: the site run changes
    nothing on them."""
    engine: Engine = nova["engine"]
    result = engine.up("nova-pci", nova["raw"])
    show(result, "nova-pci second")
    assert result.error is None, result.error
    recap = result.exports["provision"]["hosts"]
    assert recap and all(r["changed"] == 0 and r["failed"] == 0 for r in recap.values()), recap
    assert result.exports["results"]["status"] == "ok"
    engine.down()


def test_ironic_bm_up_on_converged_hosts_then_gpu_expected_but_absent(e2e_lab: Lab) -> None:
    """ironic-bm on the same (converged) hosts; then the measurement is repeated
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
        ops = {name: op for name, op, _ in second.steps}
        assert ops["e2e-bm-workloads-native"] == "failed", ops
        # the site run is not re-run for a new measurement: none of its inputs changes (the
        # hosts keep their addresses; playbook_digest changes only if playbooks/ is edited
        # while this test runs)
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


def test_vsphere_gpu_vgpu_up_against_the_vcenter_simulator(e2e_lab: Lab, vcsim) -> None:  # type: ignore[no-untyped-def]
    """vsphere-gpu mode vgpu: the VMs are cloned in the real vCenter simulator, the vGPU
    attach (VgpuProfile, through the provider host and pyVmomi) runs before the site run, the
    hosts are configured as vGPU guests (stub GRID driver, licensing token as a secret) and
    measured; ``down`` detaches the profiles and the VMs go away."""
    from tests.e2e.vcsim_cloud import VcsimCloud

    cloud = VcsimCloud(vcsim.host, vcsim.port, vcsim.user, vcsim.password)
    engine = Engine(e2e_lab.provider, e2e_lab.addresses, log=say, cloud=cloud)
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
        names = [name for name, _, _ in result.steps]
        vgpus = [n for n in names if "vgpu" in n]
        assert len(vgpus) == 2 and names.index("e2e-vs-site") > max(map(names.index, vgpus))
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


def test_unreachable_host_ends_up_with_one_line_and_keeps_state_for_down(e2e_lab: Lab) -> None:
    """A host that never answers SSH: ``up`` ends with one line naming the host and the step;
    the resources made before stay in the state, and ``down`` removes them."""
    dead = f"{e2e_lab.nspawn.net}.250"  # on the lab bridge, nothing there
    engine = e2e_lab.engine([dead])
    raw = e2e_lab.stack("nova-pci", "e2e-dead", host_count=1, workload_variables=CPU)
    result = engine.up("nova-pci", raw)
    show(result, "nova-pci with an unreachable host")
    assert result.error is not None
    assert "\n" not in result.error
    assert "e2e-dead-gpu-0" in result.error and "unreachable" in result.error, result.error
    assert "e2e-dead-site" in result.error  # the step
    kept = [name for _, name in engine.state]
    assert "e2e-dead-gpu-0" in kept, kept  # the server made before the failure
    assert not any("workloads" in n for n in kept)
    deleted = engine.down()
    assert sorted(deleted) == sorted(kept) and engine.state == {}
