"""The claim check table: which rows each published claim is judged on, and its tolerance.

BOUNDS reads as: claim, what is checked, which rows (metric, experiment, models, settings,
batch, a model-name test), the bound [lo, hi] and the tolerance added to it, and ``agg``
("max": the bound applies to each arm's largest value over models). RELATIONS holds the
checks that compare arms or models with each other (report.relations), NOT_CHECKABLE the
claims no lab of this kind can check. report.claims turns each line into a check.

Windows (report.windows): the papers' elapsed times are a whole job's, launch to finish
(CLOSER 2018: "job launch to finish, includes data loading"), so the elapsed checks read
``elapsed_s``, and the shared scenario's ``elapsed_degradation`` is that of the two jobs'
elapsed_s (report.table); the VMware claims are about training wall-clock (``train_wall_s``
of the mnist_epochs scenario); the Bitfusion completion time is the jobs' timed windows
(``completion_time_ratio``).

UNITS_NEEDED: the units (study repeats) a verdict on the claim needs, found by
benchmarks/calibration.py; fewer give "inconclusive" with that number.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from report import relations as R
from report.mapping import Arm
from report.mixed_workloads import alone_on_its_gpu
from report.table import Table
from report.windows import WINDOWS

CL, VW, IBM = "closer2018", "vmware_vgpu_containers", "ibm_containers"
BF = "vmware_bitfusion_singularity"
CONTAINERS = ("cbm", "cvm")
# the VMware claims are about training wall-clock: the mnist_epochs scenario's train_wall_s,
# else the job's elapsed_s
MNIST_TIME = ("train_wall_s", "elapsed_s")
MIN_UNITS = 3  # no verdict on fewer units, whatever the calibration says
# units a verdict needs, per claim: the fewest study repeats at which benchmarks/calibration.py
# (``--no-minimum``) found, at 2 % run-to-run noise (0.5 % within a run, 5 repeats each),
# "not reproduced" in 80 % of the trials or more where one of the claim's numbers lies outside
# its band by the band's width, with the paper's own numbers "not reproduced" in 5 % or fewer.
# Claims not listed need MIN_UNITS. With less noise fewer would do (benchmarks/RESULTS.md).
UNITS_NEEDED: dict[str, int] = {
    f"{CL}/single_synthetic": 8,
    f"{CL}/single_real": 5,
    f"{CL}/distributed_synthetic": 5,
    f"{CL}/distributed_real": 5,
    f"{CL}/shared": 8,
    f"{CL}/fig5_single_real_elapsed_s": 5,
    f"{CL}/fig6_distributed_synthetic_images_per_sec": 5,
    f"{CL}/fig7_distributed_synthetic_elapsed_s": 8,
    f"{CL}/fig8_distributed_real_images_per_sec": 5,
    f"{CL}/fig9_distributed_real_elapsed_s": 5,
    f"{VW}/mnist_container_vm": 5,
    f"{VW}/virtualization_overhead": 5,
    f"{VW}/mixed_workloads": 10,
    f"{IBM}/conv_gemm_parity": 5,
    f"{IBM}/rnn": 5,
    f"{IBM}/bandwidth_numa": 5,
    f"{IBM}/fathom_parity": 5,
}


def units_needed(claim: str) -> int:
    return max(MIN_UNITS, UNITS_NEEDED.get(claim, MIN_UNITS))


@dataclass(frozen=True)
class Bound:
    claim: str
    what: str
    metric: str | tuple[str, ...]  # a tuple: the first metric that has rows is judged
    lo: float | None
    hi: float | None
    tol: float
    experiment: str | None = None
    models: tuple[str, ...] | None = None
    settings: tuple[str, ...] | None = None
    batch: int | None = None
    match: Callable[[str], bool] | None = None  # model-name test (kernels)
    variant: Callable[[str], bool] | None = None  # variant test (NUMA affinity)
    suite: str | None = None  # only rows of this suite (or an experiment naming it)
    agg: str | None = None  # "max": per arm, the largest value over models
    with_baseline: bool = False  # judge the baseline arm too (ratios, degradations)
    arm_ok: Callable[[Table, Arm], bool] | None = None  # only the arms it accepts


def _conv_gemm(m: str) -> bool:
    return "conv" in m or "gemm" in m


def _rnn_lstm(m: str) -> bool:
    return ("rnn" in m or "lstm" in m or "vanilla" in m) and "gru" not in m


def _gru(m: str) -> bool:
    return "gru" in m


def _four_jobs(v: str) -> bool:
    return v in ("", "4 jobs")  # the study ran 4 concurrent jobs; other N are not comparable


def _bandwidth(m: str) -> bool:
    return "bandwidth" in m


BIG, CNNS = R.BIG, R.CNNS
SS, SR, DS, DR = "single_synthetic", "single_real", "distributed_synthetic", "distributed_real"

BOUNDS: list[Bound] = [
    Bound(
        f"{CL}/{SS}",
        "every non-BM arm within 15 %: imgs/s >= 0.85x",
        "images_per_sec",
        0.85,
        None,
        0.03,
        SS,
    ),
    Bound(
        f"{CL}/{SS}",
        "every non-BM arm within 15 %: elapsed <= 1.15x",
        "elapsed_s",
        None,
        1.15,
        0.03,
        SS,
    ),
    Bound(
        f"{CL}/{SR}",
        "container on BM almost the same as BM: imgs/s within 5 %",
        "images_per_sec",
        1.0,
        1.0,
        0.05,
        SR,
        settings=("cbm",),
    ),
    Bound(
        f"{CL}/{SR}",
        "container on BM almost the same as BM: elapsed within 5 %",
        "elapsed_s",
        1.0,
        1.0,
        0.05,
        SR,
        settings=("cbm",),
    ),
    Bound(
        f"{CL}/{SR}",
        "container on VM elapsed almost 30 % longer (max over models 1.30x)",
        "elapsed_s",
        1.30,
        1.30,
        0.10,
        SR,
        settings=("cvm",),
        agg="max",
    ),
    Bound(
        f"{CL}/{SR}",
        "synthetic data: container on VM elapsed under 20 % longer (max < 1.20x)",
        "elapsed_s",
        None,
        1.20,
        0.02,
        SS,
        settings=("cvm",),
        agg="max",
    ),
    Bound(
        f"{CL}/{DS}",
        "InceptionV3/ResNet-50 imgs/s, container on BM: about 20 % lower (0.80x)",
        "images_per_sec",
        0.80,
        0.80,
        0.07,
        DS,
        models=BIG,
        settings=("cbm",),
    ),
    Bound(
        f"{CL}/{DS}",
        "InceptionV3/ResNet-50 imgs/s, VM: about 25 % lower (0.75x)",
        "images_per_sec",
        0.75,
        0.75,
        0.07,
        DS,
        models=BIG,
        settings=("vm",),
    ),
    Bound(
        f"{CL}/{DS}",
        "InceptionV3/ResNet-50 imgs/s, container on VM: about 35 % lower (0.65x)",
        "images_per_sec",
        0.65,
        0.65,
        0.07,
        DS,
        models=BIG,
        settings=("cvm",),
    ),
    Bound(
        f"{CL}/{DR}",
        "container on VM elapsed up to 1.5x BM (max over models)",
        "elapsed_s",
        1.5,
        1.5,
        0.10,
        DR,
        settings=("cvm",),
        agg="max",
    ),
    Bound(
        f"{CL}/shared",
        "batch-32 models: elapsed degradation within 20 %",
        "elapsed_degradation",
        None,
        0.20,
        0.02,
        "shared",
        models=CNNS,
        batch=32,
        with_baseline=True,
    ),
    Bound(
        f"{CL}/shared",
        "AlexNet batch 512: elapsed degradation over 30 %",
        "elapsed_degradation",
        0.30,
        None,
        0.03,
        "shared",
        models=("alexnet",),
        batch=512,
        with_baseline=True,
    ),
    Bound(
        f"{CL}/shared",
        "AlexNet batch 32: elapsed degradation under 10 % for container and VM",
        "elapsed_degradation",
        None,
        0.10,
        0.02,
        "shared",
        models=("alexnet",),
        batch=32,
        settings=("cbm", "vm", "cvm"),
    ),
    Bound(
        f"{VW}/virtualization_overhead",
        "MNIST CNN elapsed in a VM (passthrough or vGPU, its GPU to itself, no knowledge "
        "workers beside it) about 4 % over bare metal (<= 1.04x)",
        MNIST_TIME,
        None,
        1.04,
        0.04,
        models=("mnist_cnn",),
        settings=("vm",),
        arm_ok=alone_on_its_gpu,
    ),
    Bound(
        f"{IBM}/conv_gemm_parity",
        "conv and GEMM kernels: container time per call within 5 %",
        "time_per_call_s",
        1.0,
        1.0,
        0.05,
        settings=CONTAINERS,
        match=_conv_gemm,
    ),
    Bound(
        f"{IBM}/rnn",
        "vanilla RNN and LSTM kernels: container time per call within 5 %",
        "time_per_call_s",
        1.0,
        1.0,
        0.05,
        settings=CONTAINERS,
        match=_rnn_lstm,
    ),
    Bound(
        f"{IBM}/rnn",
        "GRU kernels consistently slower in the container (> 1.0x)",
        "time_per_call_s",
        1.0 + 1e-9,
        None,
        0.0,
        settings=CONTAINERS,
        match=_gru,
    ),
    Bound(
        f"{IBM}/bandwidth_numa",
        "container affinitized to the GPU's node: GB/s restored "
        "(>= 0.95x of the baseline pinned the same way)",
        "gbps",
        0.95,
        None,
        0.0,
        settings=CONTAINERS,
        match=_bandwidth,
        variant=R.is_local,
    ),
    Bound(
        f"{IBM}/fathom_parity",
        "Fathom convolution models: container imgs/s within 5 %",
        "images_per_sec",
        1.0,
        1.0,
        0.05,
        models=("alexnet", "vgg", "residual", "deepq"),
        settings=CONTAINERS,
        suite="ibm-containers",
    ),
    Bound(
        f"{BF}/sharing_throughput",
        "4 jobs at 25 % of a GPU: aggregate throughput about 3x one full-GPU job",
        "aggregate_throughput_ratio",
        3.0,
        3.0,
        0.5,
        with_baseline=True,
        variant=_four_jobs,
    ),
    Bound(
        f"{BF}/sharing_completion",
        "4 jobs take about 17 % longer than one (completion-time ratio 1.17)",
        "completion_time_ratio",
        1.17,
        1.17,
        0.10,
        with_baseline=True,
        variant=_four_jobs,
    ),
]

# (claim, what, tolerance, check)
RELATIONS: list[tuple[str, str, str, Callable[[Table], R.Measured]]] = [
    (
        f"{CL}/{SS}",
        "container on VM has the lowest mean normalized imgs/s",
        "<= others + 0.02",
        R.cvm_worst,
    ),
    (
        f"{CL}/{SS}",
        "elapsed degrades more than throughput (per arm, mean over models; "
        + WINDOWS["elapsed_s"]
        + ")",
        "elapsed increase >= imgs/s decrease - 0.02",
        R.elapsed_more,
    ),
    (
        f"{CL}/{DS}",
        "AlexNet much less affected: degradation at most half of InceptionV3/ResNet-50's",
        "<= half of theirs + 0.02",
        R.alexnet_less,
    ),
    (
        f"{CL}/{DR}",
        "real data like synthetic: normalized imgs/s differ by at most 0.10",
        "|diff| <= 0.10",
        R.real_like_synthetic,
    ),
    (
        f"{CL}/shared",
        "bare metal degrades most, VM least (elapsed degradation per model and batch; "
        + WINDOWS["elapsed_degradation"]
        + ")",
        "bm >= others - 0.02, vm <= others + 0.02",
        R.shared_order,
    ),
    (
        f"{IBM}/bandwidth_numa",
        "container pinned away from the GPU's NUMA node: host-device "
        "GB/s considerably lower than pinned to it (< 0.90x)",
        "< 0.90 (none)",
        R.numa_remote_lower,
    ),
    (
        f"{VW}/mnist_container_vm",
        "MNIST CNN training time, docker in a VM over docker natively: no measurable penalty "
        "(equivalence: two one-sided tests against the 3 % margin; "
        + WINDOWS["train_wall_s"]
        + ")",
        "0.97 - 1.03 (1.0 ± 0.03)",
        R.ratio_within(MNIST_TIME, "mnist_cnn", "cvm", "cbm", 0.97, 1.03, keep=alone_on_its_gpu),
    ),
]

# VW/mixed_workloads: report.mixed_workloads (its numbers are the published entry's)
NOT_CHECKABLE = {
    f"{VW}/vgpu_scheduling": "descriptive claim: no number to check",
}
