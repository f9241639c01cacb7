"""The distributed scenario between two hosts over a real network shaped like 1 GbE, against
the same job over loopback on one host.

Two nspawn hosts (real systemd, their own network namespaces and veths on the lab's bridge)
get this checkout and its Python read-only at the same paths; the link of each is shaped to
1 Gbit/s in both directions with ``tc ... tbf`` (tests/parts/nspawn.py). Each host runs the
runner's own command line (``python -m workloads bench``) at the same time with
``GPULAB_DIST_HOSTS`` naming both hosts, as the workload_run role runs a lab's hosts: each
starts the worker placed on its own address (launch: host) and the two train with
MultiWorkerMirroredStrategy over the bridge. The loopback run is the same suite on one host
without ``GPULAB_DIST_HOSTS``. Every process has a kill deadline (the scenario's
``deadline_s``; the hosts are stopped at the end).
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.parts import REPO
from tests.parts.nspawn import NspawnHost, NspawnLab

pytestmark = [pytest.mark.nspawn, pytest.mark.tf, pytest.mark.slow]

STEPS, WARMUP, BATCH = 24, 3, 32
PORT = 2222


@pytest.fixture(scope="module")
def two_hosts(nspawn_lab: NspawnLab) -> Iterator[tuple[list[NspawnHost], Path]]:
    """Two more hosts with the checkout, its venv's Python and a shared work directory."""
    work = Path(tempfile.mkdtemp(prefix="gpulab-dist-hosts-"))
    binds = [f"--bind-ro={REPO}", f"--bind-ro={sys.base_prefix}", f"--bind={work}"]
    hosts = nspawn_lab.boot(2, gpu_path="none", groups=["cpu_hosts"], binds=binds)
    try:
        yield hosts, work
    finally:
        nspawn_lab.unshape(hosts)
        nspawn_lab.stop(hosts)
        subprocess.run(["rm", "-rf", str(work)], check=False)


def _suite(work: Path) -> Path:
    path = work / "dist.yaml"
    entry = {
        "experiment": "dist_allreduce",
        "model": "mnist_cnn",
        "scenario": "distributed",
        "batch": BATCH,
        "steps": STEPS,
        "warmup": WARMUP,
        "repeats": 1,
        "timeout_s": 420,
        # learning_rate 0.0001: at tf_cnn's 0.005 the raw-pixel synthetic images (mean 127) sent
        # the loss to nan at timed step 11 of 24 in one CI run (a failed record); the rate does
        # not change what is timed
        "options": {"mode": "allreduce", "workers": 2, "deadline_s": 360, "learning_rate": 0.0001},
    }
    path.write_text(yaml.safe_dump({"name": "dist-hosts", "experiments": [entry]}))
    return path


def _bench(host: NspawnHost, out: Path, suite: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    """The runner's command line on ``host`` as root (the playbook's become), in the
    background; its stdout/stderr come back through ssh."""
    exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
    cmd = (
        f"cd {shlex.quote(str(REPO))} && env {exports} TF_CPP_MIN_LOG_LEVEL=2 "
        f".venv/bin/python -m workloads bench --suite {shlex.quote(str(suite))} "
        f"--out {shlex.quote(str(out))} --gpu-path local --arm {host.name}"
    )
    argv = [
        "ssh", "-i", str(host.key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
        f"{host.host.ssh_user}@{host.address}", f"sudo -n sh -c {shlex.quote(cmd)}",
    ]  # fmt: skip
    return subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def _records(*procs_out: tuple[subprocess.Popen[str], Path]) -> list[dict[str, Any]]:
    recs = []
    for proc, out in procs_out:
        try:
            log, _ = proc.communicate(timeout=480)
        except subprocess.TimeoutExpired:
            proc.kill()
            log, _ = proc.communicate()
        assert proc.returncode == 0, log[-3000:]
        lines = out.read_text().splitlines()
        assert len(lines) == 1, lines
        recs.append(json.loads(lines[0]))
    return recs


def test_distributed_between_two_nspawn_hosts_on_a_1gbit_bridge_vs_loopback(
    nspawn_lab: NspawnLab, two_hosts: tuple[list[NspawnHost], Path]
) -> None:
    (a, b), work = two_hosts
    r = a.ssh(f"{REPO}/.venv/bin/python -c 'import tensorflow, sys; print(sys.version)'")
    assert r.returncode == 0, r.stderr
    suite = _suite(work)

    # loopback: both workers on host a, no GPULAB_DIST_HOSTS
    (loop,) = _records((_bench(a, work / "loop.jsonl", suite, {}), work / "loop.jsonl"))

    env = {"GPULAB_DIST_HOSTS": f"{a.address},{b.address}", "GPULAB_DIST_BASE_PORT": str(PORT)}

    def between(tag: str) -> list[dict[str, Any]]:
        procs = [
            (_bench(h, work / f"{tag}-{h.name}.jsonl", suite, env), work / f"{tag}-{h.name}.jsonl")
            for h in (a, b)
        ]
        return _records(*procs)

    # between the hosts on the bridge as it is (veth speed), then each link a 1 Gbit/s NIC
    fast_a, fast_b = between("bridge")
    nspawn_lab.shape([a, b], rate="1gbit")
    before = nspawn_lab.qdisc_counters(b)
    t0 = time.monotonic()
    ra, rb = between("1gbit")
    took = time.monotonic() - t0
    after = nspawn_lab.qdisc_counters(b)
    sent = after["sent"] - before["sent"]
    held_back = after["overlimits"] - before["overlimits"]

    for rec in (loop, fast_a, fast_b, ra, rb):
        assert rec["status"] == "ok", rec.get("error")
        assert rec["params"]["mode"] == "allreduce" and rec["global_batch"] == 2 * BATCH
        assert rec["timed_s"] > 0 and rec["sync_every"] >= 1
    assert loop["params"]["network"] == "loopback" and loop["params"]["launch"] == "local"
    workers = [f"{a.address}:{PORT}", f"{b.address}:{PORT}"]
    for rec, own in (
        (ra, "worker:0"),
        (rb, "worker:1"),
        (fast_a, "worker:0"),
        (fast_b, "worker:1"),
    ):
        assert rec["params"]["network"] == "between hosts" and rec["params"]["launch"] == "host"
        assert rec["params"]["cluster"] == {"worker": workers}
        assert rec["params"]["tasks"] == [own]  # each host started only its own worker
        # its worker left only once the other host's was done too (a worker that exited at
        # once had its peer fail its last all-reduce with "Socket closed")
        assert rec["params"]["ended_together"] == {own: "met"}, rec["params"]
    assert loop["params"]["ended_together"] == {"worker:0": "met", "worker:1": "met"}
    # the gradients crossed the shaped link: 2 (n - 1) / n of the MNIST CNN's 1,199,882 float32
    # gradients per step and worker, for warm-up and timed steps
    grads = 1_199_882 * 4
    assert sent >= (WARMUP + STEPS) * grads * 0.9, (sent, took)
    shaped = (ra["images_per_sec"] + rb["images_per_sec"]) / 2
    bridge = (fast_a["images_per_sec"] + fast_b["images_per_sec"]) / 2
    ratio = shaped / loop["images_per_sec"]

    def fastest_step(*recs: dict[str, Any]) -> float:
        return sum(min(r["step_times_s"]) for r in recs) / len(recs)

    # at 1 Gbit/s each step moves 2 (n - 1) / n of the gradients each way, about 38 ms a step
    # that the bridge does not pay, less what overlaps the backward pass. What that costs in
    # throughput depends on the other test worker's load on the same 2 cores (+43 ms on the
    # fastest step idle, +15 ms in a loaded CI run), so it is printed here and measured by the
    # benchmarks; the test asserts what does not depend on load: the token bucket held the
    # gradients back, they came faster than the link's rate.
    link_s = grads / (1e9 / 8)
    added = fastest_step(ra, rb) - fastest_step(fast_a, fast_b)
    print(
        f"\nallreduce mnist_cnn b{BATCH} x 2 workers, images/sec: loopback "
        f"{loop['images_per_sec']:.1f}, two hosts on the bridge {bridge:.1f}, two hosts at "
        f"1 Gbit/s {shaped:.1f} (shaped / loopback {ratio:.3f}, shaped / bridge "
        f"{shaped / bridge:.3f}); fastest step: bridge {fastest_step(fast_a, fast_b) * 1e3:.1f}"
        f" ms, 1 Gbit/s {fastest_step(ra, rb) * 1e3:.1f} ms (+{added * 1e3:.1f} ms, the link's "
        f"{link_s * 1e3:.1f} ms); {sent / 1e6:.0f} MB through host b's shaped port in {took:.0f} s"
        f", held back {held_back} times"
    )
    assert held_back > 0, (after, before, sent)
