"""Every DeepBench-style kernel at tiny sizes on the CPU (real TensorFlow), and its record."""

from __future__ import annotations

import math

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
        options=dict(options),
    )


@pytest.mark.parametrize("kernel", ["gemm", "conv", "rnn"])
def test_compute_kernel_records(kernel: str) -> None:
    fields = kernels.run(_job(kernel))
    rec = make_record(
        run_id="r", suite="t", experiment="x", model=kernel, scenario="kernel", **fields
    )
    assert rec["kind"] == "kernel"
    results = rec["params"]["results"]
    assert len(results) == len(shapes.select(kernel, "tiny")) >= 2
    for res in results:
        sid = kernels.shape_id(compute.KernelResult(**res))
        t = rec["metrics"][f"{sid}.time_per_call_s"]
        assert 0 < t < 5
        assert rec["metrics"][f"{sid}.tflops"] > 0
    if kernel == "rnn":
        cells = {r["shape"]["cell"] for r in results}
        assert cells == {"vanilla", "lstm", "gru"}


def test_gemm_flops_follow_the_shape() -> None:
    res = compute.gemm((64, 32, 16, False, True), warmup=1, iters=3)
    assert math.isclose(res.tflops * res.time_per_call_s * 1e12, 2 * 64 * 32 * 16, rel_tol=1e-9)
    assert kernels.shape_id(res) == "gemm_64x32x16_bt"


def test_conv_output_size_and_forward_flops() -> None:
    # DeepSpeech-like: W 20, H 10, C 4, N 2, K 4, S 5, R 3, no pad, stride 2
    res = compute.conv((20, 10, 4, 2, 4, 5, 3, 0, 0, 2, 2), warmup=1, iters=2, mode="forward")
    assert (res.shape["out_h"], res.shape["out_w"]) == (4, 8)
    flops = 2 * 2 * 4 * 4 * 3 * 5 * 4 * 8
    assert math.isclose(res.tflops * res.time_per_call_s * 1e12, flops, rel_tol=1e-9)


def test_allreduce_sums_across_two_devices_in_a_child_process() -> None:
    # TensorFlow is initialised in this process with one CPU device, so the kernel re-runs
    # itself in a child that configures two logical devices.
    fields = kernels.run(_job("allreduce", devices=2))
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
    assert len(shapes.select("conv", "deepbench")) > 40
    assert (2816, 32, 750, "gru") in shapes.select("rnn", "deepbench", "gru")
    assert shapes.select("allreduce", "deepbench")[-1] == 64500000
