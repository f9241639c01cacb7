"""Every DeepBench-style kernel at tiny sizes on the CPU (real TensorFlow), and its record."""

from __future__ import annotations

import math
import shutil

import pytest

from workloads import kernels
from workloads.errors import InputError
from workloads.kernels import comm, compute, shapes
from workloads.records import make_record
from workloads.scenarios import Job


def _job(kernel: str, **options: object) -> Job:
    return Job(
        suite="t",
        experiment=f"k-{kernel}",
        model=kernel,
        scenario="kernel",
        batch=1,
        steps=3,
        warmup=1,
        options={"cpu_scale": 0.02, **options},
    )


@pytest.mark.tf
@pytest.mark.parametrize("kernel", ["gemm", "conv", "rnn"])
def test_compute_kernel_records(kernel: str) -> None:
    fields = kernels.run(_job(kernel))
    rec = make_record(
        run_id="r", suite="t", experiment="x", model=kernel, scenario="kernel", **fields
    )
    assert rec["kind"] == "kernel"
    results = rec["params"]["results"]
    per_shape = 1 if kernel == "gemm" else 3  # conv, rnn: forward, backward-data, -weights
    assert len(results) == per_shape * len(shapes.select(kernel, "tiny")) >= 2
    assert rec["params"]["iterations"] == {
        "source": "deepbench",
        "cpu_scale": 0.02,
        "scaled": True,
        "loop": "compiled",
    }
    assert {r["loop"] for r in results} == {"compiled"}
    assert {r["iters"] for r in results} == {
        round(0.02 * {"gemm": 400, "conv": 300}.get(kernel, 100))
    }
    if kernel != "gemm":
        assert {r["phase"] for r in results} == {"forward", "backward_data", "backward_weights"}
    for res in results:
        sid = kernels.shape_id(compute.KernelResult(**res))
        t = rec["metrics"][f"{sid}.time_per_call_s"]
        assert 0 < t < 5
        assert rec["metrics"][f"{sid}.tflops"] > 0
    if kernel == "rnn":
        cells = {r["shape"]["cell"] for r in results}
        assert cells == {"vanilla", "lstm", "gru"}
        vanilla = [r for r in results if r["shape"]["cell"] == "vanilla"]
        assert all(not r["comparable"] and "cuDNN" in r["note"] for r in vanilla)
        assert rec["params"]["not_comparable"]  # the vanilla rows at least


@pytest.mark.tf
def test_gemm_flops_follow_the_shape() -> None:
    res = compute.gemm((64, 32, 16, False, True), warmup=1, iters=3)
    assert math.isclose(res.tflops * res.time_per_call_s * 1e12, 2 * 64 * 32 * 16, rel_tol=1e-9)
    assert kernels.shape_id(res) == "gemm_64x32x16_bt"


@pytest.mark.integration
def test_conv_output_size_and_forward_flops() -> None:
    # DeepSpeech-like: W 20, H 10, C 4, N 2, K 4, S 5, R 3, no pad, stride 2
    (res,) = compute.conv((20, 10, 4, 2, 4, 5, 3, 0, 0, 2, 2), warmup=1, iters=2, mode="forward")
    assert (res.shape["out_h"], res.shape["out_w"]) == (4, 8) and res.phase == "forward"
    flops = 2 * 2 * 4 * 4 * 3 * 5 * 4 * 8
    assert math.isclose(res.tflops * res.time_per_call_s * 1e12, flops, rel_tol=1e-9)


@pytest.mark.tf
@pytest.mark.slow
def test_allreduce_sums_across_two_devices_in_a_child_process() -> None:
    # TensorFlow is initialised in this process with one CPU device, so the kernel re-runs
    # itself in a child that configures two logical devices.
    fields = kernels.run(_job("allreduce", devices=2, iterations="steps"))
    results = fields["params"]["results"]
    assert [r["shape"]["elements"] for r in results] == shapes.ALLREDUCE_TINY
    for r in results:
        assert r["extra"]["sum_check"] == 2.0  # ones summed over 2 replicas
        assert r["gbps"] > 0 and math.isclose(r["extra"]["busbw_gbps"], r["gbps"])


def test_bandwidth_pinned_to_the_node_and_unpinned() -> None:
    fields = kernels.run(_job("bandwidth", directions=["h2d"], affinities=["none", "local"]))
    res = fields["params"]["results"]
    assert {(r["shape"]["affinity"], r["shape"]["bytes"]) for r in res} == {
        (a, b) for a in ("none", "local") for b in shapes.BANDWIDTH_TINY
    }
    local = [r for r in res if r["shape"]["affinity"] == "local"]
    assert all(r["shape"]["cpus"] == sorted(comm.node_cpus(0)) for r in local)
    assert all(r["shape"]["process"] == "fresh" for r in res)
    assert all(r["shape"]["buffer_numa_node"] in comm.numa_nodes() for r in res)
    want = "numactl node 0" if shutil.which("numactl") else "skipped: numactl is not installed"
    assert all(r["shape"]["numactl"].startswith(want) for r in local)
    assert all(r["gbps"] > 0 for r in res)
    assert "bandwidth_h2d_local_65536.gbps" in fields["metrics"]


def test_bandwidth_remote_needs_a_second_node() -> None:
    if len(comm.numa_nodes()) > 1:
        pytest.skip("this host has a second NUMA node")
    with pytest.raises(ValueError, match="second NUMA node"):
        comm.bandwidth(1024, "h2d", "remote", 1, 1)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"sizes": "huge"}, "sizes"),
        ({"bogus": 1}, "bogus"),
        ({"mode": "backward"}, "mode"),
        ({"devices": 0}, "devices"),
        ({"affinities": ["far"]}, "affinities"),
    ],
)
def test_kernel_option_errors_name_the_key(options: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        kernels.check_options(options)


def test_unknown_family_and_kernel() -> None:
    with pytest.raises(InputError, match="family 'alexnet'"):
        shapes.select("conv", "deepbench", "alexnet")
    with pytest.raises(InputError, match="kernel 'fft'"):
        kernels.run(_job("fft"))


def test_deepbench_tables_have_the_published_sizes() -> None:
    gemm = shapes.select("gemm", "deepbench", "square")
    assert (1760, 16, 1760, False, False) in gemm and (4096, 7000, 4096, True, False) in gemm
    # the whole training sets of DeepBench's *_problems.h
    assert len(shapes.select("gemm", "deepbench")) == 160
    assert len(shapes.select("conv", "deepbench")) == 94
    rnn = shapes.select("rnn", "deepbench")
    assert len(rnn) == 53 and (2816, 32, 1500, "gru") in rnn
    assert (2816, 32, 750, "gru") in shapes.select("rnn", "deepbench", "gru")
    assert shapes.select("allreduce", "deepbench")[-1] == 64500000


def test_shape_set_labels_full_and_subset() -> None:
    assert shapes.coverage("gemm", "deepbench")["text"] == (
        "full: 160 of 160 DeepBench training shapes"
    )
    small = shapes.coverage("conv", "deepbench-small")
    assert small["label"] == "subset" and small["of"] == 94 and small["count"] < 94
    assert shapes.coverage("conv", "deepbench", "resnet")["label"] == "subset"
    assert shapes.coverage("gemm", "tiny")["label"] == "not deepbench"


def test_deepbench_iteration_counts() -> None:
    assert [shapes.deepbench_iterations(k, None) for k in ("gemm", "conv", "rnn")] == [
        400,
        300,
        100,
    ]
    assert shapes.deepbench_iterations("allreduce", 100000) == 10000
    assert shapes.deepbench_iterations("allreduce", 64500000) == 1000


def test_compiled_loop_amortizes_dispatch() -> None:
    """A 16^3 GEMM looped inside one tf.function costs less per call than one dispatch per
    call (the issue's dispatch floor), on the same shape and count."""
    loop = min(compute.gemm((16, 16, 16, False, False), 2, 200).time_per_call_s for _ in range(2))
    per_call = min(
        compute.gemm((16, 16, 16, False, False), 2, 200, loop="python").time_per_call_s
        for _ in range(2)
    )
    assert loop < per_call


def test_backend_without_the_kernel_is_a_skipped_record() -> None:
    job = _job("rnn")
    job.backend = "jax"
    fields = kernels.run(job)
    assert fields["status"] == "skipped" and "TensorFlow" in fields["error"]
    rec = make_record(run_id="r", suite="t", experiment="x", model="rnn", **fields)
    assert rec["status"] == "skipped"


def test_numactl_prefix_and_its_absence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(comm.shutil, "which", lambda name: None)
    argv, how = comm.numactl_argv("local", 0)
    assert argv == [] and how.startswith("skipped: numactl is not installed")
    monkeypatch.setattr(comm.shutil, "which", lambda name: "/usr/bin/numactl")
    argv, how = comm.numactl_argv("local", 0)
    assert argv == ["/usr/bin/numactl", "--cpunodebind=0", "--membind=0"]
    assert comm.numactl_argv("none", 0)[0] == [] and comm.numactl_argv("local", 0, "off")[0] == []


def test_buffer_node_is_read_from_the_page() -> None:
    import numpy as np

    buf = np.ones(1 << 16, dtype=np.uint8)
    assert comm.page_node(int(buf.ctypes.data)) in comm.numa_nodes()


@pytest.mark.tf
@pytest.mark.parametrize("kernel", ["gemm", "conv"])
def test_jax_kernels_loop_inside_one_jit(kernel: str) -> None:
    job = _job(kernel)
    job.backend = "jax"
    fields = kernels.run(job)
    results = fields["params"]["results"]
    assert fields["params"]["backend"] == "jax" and results
    assert all(r["device"].startswith("TFRT_CPU") or "cpu" in r["device"].lower() for r in results)
    assert all(r["time_per_call_s"] > 0 and r["tflops"] > 0 for r in results)
    if kernel == "conv":
        assert {r["phase"] for r in results} == {"forward", "backward_data", "backward_weights"}
