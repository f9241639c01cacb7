"""Synthetic record sets with known ratios (test data; also `python -m tests.report.synth DIR`).

``paper_like()`` builds records whose medians reproduce the published CLOSER 2018 figures and
the other papers' stated ratios, for four arms (ironic-bm/native = BM, magnum-k8s/container-bm,
nova-pci/native = VM, magnum-k8s/container-vm) plus vSphere and kernel arms. Repetition noise
is deterministic: value x (1 + noise x k) for k in a fixed symmetric pattern, so the median of
the repetitions is exactly the value given. Each repetition is its own study unit (a study
repeat, ``params.study``, as infra.study writes it), and each arm starts the pattern at its
own place (OFFSET), so the per-unit ratios between two arms vary as they would.

``truth()`` and ``noisy()`` simulate studies with random run-to-run and within-run noise
around the same numbers (benchmarks/calibration.py).
"""

from __future__ import annotations

import json
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from workloads.records import make_record
from workloads.setting import make_setting

PATTERN = (0.0, -1.0, 1.0, -0.5, 0.5)  # symmetric: the median is the centre value
# where each arm starts in PATTERN (so two arms' per-unit ratios vary); others: a CRC
OFFSET = {
    "ironic-bm/native": 0,
    "magnum-k8s/container-bm": 1,
    "nova-pci/native": 2,
    "magnum-k8s/container-vm": 3,
    "ironic-bm/docker": 1,
    "vsphere-gpu/vgpu": 2,
    "vsphere-gpu/docker": 3,
    "vsphere-gpu/bitfusion": 4,
    "nova-pci/singularity": 4,
    "local/native": 0,
    "local/docker": 1,
}


def offset(topology: str, arm: str) -> int:
    label = f"{topology}/{arm}"
    return OFFSET.get(label, zlib.crc32(label.encode()) % len(PATTERN))


ARMS = {
    "bm": ("ironic-bm", "native"),
    "cbm": ("magnum-k8s", "container-bm"),
    "vm": ("nova-pci", "native"),
    "cvm": ("magnum-k8s", "container-vm"),
}
# the vGPU arms of the mixed-workload claim (report/mixed_workloads.py): the reference (no
# knowledge-worker VMs) and the same arm with 32, 64, 96 of them, and the paper's ratios of
# their ML training times (1.02 at 32, 1.18 at 96; 64 halfway)
VGPU_REF = "vgpu:grid_p100-16q.best-effort.1-per-gpu"
KW_RATIO = {32: 1.02, 64: 1.10, 96: 1.18}
# the setting the lab states for each synthetic arm: (topology, arm) -> (gpu_path, exec_env
# [, sharing])
LAB_SETTING: dict[tuple[str, str], tuple[str, ...]] = {
    ("ironic-bm", "native"): ("whole-machine", "native"),
    ("ironic-bm", "docker"): ("whole-machine", "docker"),
    ("magnum-k8s", "container-bm"): ("container-bm", "k8s"),
    ("nova-pci", "native"): ("pci-passthrough", "native"),
    ("nova-pci", "singularity"): ("pci-passthrough", "singularity"),
    ("magnum-k8s", "container-vm"): ("container-vm", "k8s"),
    ("vsphere-gpu", "vgpu"): ("vgpu", "native", VGPU_REF),
    **{("vsphere-gpu", f"vgpu-kw{n}"): ("vgpu", "native", f"{VGPU_REF}.kw{n}") for n in KW_RATIO},
    ("vsphere-gpu", "docker"): ("vgpu", "docker"),
    ("vsphere-gpu", "bitfusion"): ("bitfusion", "bitfusion"),
    ("local", "native"): ("local", "native"),
    ("local", "docker"): ("local", "docker"),
}


def setting_fields(topology: str, arm: str) -> dict[str, Any]:
    """The setting fields of a synthetic record ({} for an arm the lab states nothing for);
    no cross-check flags: the synthetic fingerprints are illustrative."""
    if (topology, arm) not in LAB_SETTING:
        return {}
    return {**make_setting(*LAB_SETTING[(topology, arm)]).fields(), "setting_flags": []}


def fingerprint(setting: str, virt: str | None = None, gpu_node: int = 0) -> dict[str, Any]:
    is_vm = setting in ("vm", "cvm")
    runtime = "kubernetes" if setting in ("cbm", "cvm") else None
    return {
        "host": f"{setting}-host",
        "os": {"name": "Ubuntu 22.04.4 LTS"},
        "kernel": "5.15.0-105-generic",
        "cpu": {"model": "Intel Xeon E5-2650 v4", "usable_cpus": 24 if not is_vm else 16},
        "numa": {"nodes": 2 if not is_vm else 1},
        "vm": {"is_vm": is_vm, "hypervisor": "kvm" if is_vm else None},
        "container": {"in_container": runtime is not None, "runtime": runtime},
        "execution_env": runtime or "native",
        "gpu": {
            "present": True,
            "count": 2,
            "driver_version": "535.104.05" if not is_vm else "535.129.03",
            "cuda_driver_version": "12.2",
            "virtualization_modes": [virt or ("passthrough" if is_vm else "none")],
            "gpus": [
                {
                    "name": "NVIDIA GeForce GTX 1080",
                    "numa_node": gpu_node,
                    "pcie": {"gen_current": 3, "width_current": 16},
                }
            ],
        },
        "software": {
            "python": "3.11.2",
            "packages": {"tensorflow": "2.21.0", "keras": "3.15.0"},
            "backend": {"keras_backend": "tensorflow"},
            "git": {"revision": "abc1234"},
        },
    }


def reps(
    topology: str,
    arm: str,
    *,
    experiment: str,
    model: str,
    ips: float | None = None,
    elapsed: float | None = None,
    suite: str = "closer2018",
    scenario: str = "single",
    data: str = "synthetic",
    batch: int = 32,
    repeats: int = 5,
    noise: float = 0.01,
    metrics: dict[str, float] | None = None,
    kind: str = "training",
    fp: dict[str, Any] | None = None,
    params: dict[str, Any] | None = None,
    claims: list[str] | None = None,
) -> list[dict[str, Any]]:
    out = []
    off = offset(topology, arm)
    for i in range(repeats):
        f = 1.0 + noise * PATTERN[(i + off) % len(PATTERN)] * (1 + i // len(PATTERN))
        study = {"name": "synthetic", "arm": f"{topology}/{arm}", "repeat": i + 1}
        rec: dict[str, Any] = {
            "run_id": "synthetic",
            "kind": kind,
            "suite": suite,
            "experiment": experiment,
            "model": model,
            "scenario": scenario,
            "data": data,
            "batch_size": batch,
            "repeat": i,
            "topology": topology,
            "arm": arm,
            "host": "h",
            "fingerprint": fp if fp is not None else {},
            "metrics": {k: v * f for k, v in (metrics or {}).items()},
            "params": {**(params or {}), "study": study},
            "claims": claims or [],
            **setting_fields(topology, arm),
        }
        if ips is not None:
            rec["images_per_sec"] = ips * f
        if elapsed is not None:
            rec["elapsed_s"] = elapsed / f
        out.append(make_record(**rec))
    return out


BATCH = {"inception_v3": 32, "resnet50": 32, "alexnet": 512}
# single instance, synthetic data (figs 2-3 carry no numbers; ratios from the text)
SINGLE_SYN_BM = {
    "inception_v3": (100.0, 60.0),
    "resnet50": (120.0, 50.0),
    "alexnet": (900.0, 140.0),
}
SINGLE_SYN = {"bm": (1.0, 1.0), "cbm": (0.98, 1.02), "vm": (0.93, 1.10), "cvm": (0.90, 1.15)}
SINGLE_REAL_IPS = {"bm": 1.0, "cbm": 0.99, "vm": 0.90, "cvm": 0.88}
FIG5 = {
    "bm": {"inception_v3": 72, "resnet50": 52, "alexnet": 157},
    "cbm": {"inception_v3": 73, "resnet50": 53, "alexnet": 160},
    "vm": {"inception_v3": 79, "resnet50": 58, "alexnet": 184},
    "cvm": {"inception_v3": 81, "resnet50": 60, "alexnet": 200},
}
FIG6 = {
    "bm": {"inception_v3": 57, "resnet50": 52, "alexnet": 284},
    "cbm": {"inception_v3": 47, "resnet50": 43, "alexnet": 282},
    "vm": {"inception_v3": 44, "resnet50": 39, "alexnet": 247},
    "cvm": {"inception_v3": 38, "resnet50": 35, "alexnet": 240},
}
FIG7 = {
    "bm": {"inception_v3": 261, "resnet50": 322, "alexnet": 800},
    "cbm": {"inception_v3": 320, "resnet50": 338, "alexnet": 818},
    "vm": {"inception_v3": 353, "resnet50": 375, "alexnet": 943},
    "cvm": {"inception_v3": 391, "resnet50": 389, "alexnet": 944},
}
FIG8 = {
    "bm": {"inception_v3": 54, "resnet50": 47, "alexnet": 282},
    "cbm": {"inception_v3": 45, "resnet50": 43, "alexnet": 279},
    "vm": {"inception_v3": 39, "resnet50": 37, "alexnet": 241},
    "cvm": {"inception_v3": 36.5, "resnet50": 35, "alexnet": 239},
}
FIG9 = {
    "bm": {"inception_v3": 278, "resnet50": 336, "alexnet": 869},
    "cbm": {"inception_v3": 354, "resnet50": 364, "alexnet": 895},
    "vm": {"inception_v3": 384, "resnet50": 408, "alexnet": 984},
    "cvm": {"inception_v3": 419, "resnet50": 429, "alexnet": 1003},
}
# shared host: elapsed degradation with a background AlexNet b512 (fig. 10 shape)
SHARED = {
    ("inception_v3", 32): {"bm": 0.18, "cbm": 0.12, "vm": 0.08},
    ("resnet50", 32): {"bm": 0.17, "cbm": 0.12, "vm": 0.07},
    ("alexnet", 512): {"bm": 0.60, "cbm": 0.45, "vm": 0.35},
    ("alexnet", 32): {"bm": 0.15, "cbm": 0.08, "vm": 0.05},
}


def closer(scale: dict[str, float] | None = None, repeats: int = 5) -> list[dict[str, Any]]:
    """The CLOSER 2018 matrix; ``scale`` multiplies a setting's distributed throughput;
    ``repeats`` repetitions (units) per arm and group."""
    scale = scale or {}
    recs: list[dict[str, Any]] = []
    for s, (topo, arm) in ARMS.items():
        fp = fingerprint(s)
        for model, (ips, ela) in SINGLE_SYN_BM.items():
            fi, fe = SINGLE_SYN[s]
            b = BATCH[model]
            recs += reps(
                topo,
                arm,
                experiment="single_synthetic",
                model=model,
                batch=b,
                ips=ips * fi,
                elapsed=ela * fe,
                fp=fp,
                claims=["single_synthetic"],
                repeats=repeats,
            )
            recs += reps(
                topo,
                arm,
                experiment="single_real",
                model=model,
                batch=b,
                data="real",
                ips=ips * SINGLE_REAL_IPS[s],
                elapsed=FIG5[s][model],
                fp=fp,
                repeats=repeats,
            )
            for exp, data, ips_t, ela_t in (
                ("distributed_synthetic", "synthetic", FIG6, FIG7),
                ("distributed_real", "real", FIG8, FIG9),
            ):
                recs += reps(
                    topo,
                    arm,
                    experiment=exp,
                    model=model,
                    batch=b,
                    data=data,
                    scenario="distributed",
                    ips=ips_t[s][model] * scale.get(s, 1.0),
                    elapsed=ela_t[s][model],
                    fp=fp,
                    repeats=repeats,
                )
        if s == "cvm":
            continue
        for (model, b), degs in SHARED.items():
            alone = 100.0
            recs += reps(
                topo,
                arm,
                experiment="shared",
                model=model,
                batch=b,
                scenario="shared",
                fp=fp,
                noise=0.0,  # the names workloads/scenarios/shared.py writes
                metrics={
                    "alone_elapsed_s": alone,
                    "shared_elapsed_s": alone * (1 + degs[s]),
                    "alone_images_per_sec": 50.0,
                    "shared_images_per_sec": 50.0 / (1 + degs[s]),
                },
                repeats=repeats,
            )
    return recs


def others(repeats: int = 5) -> list[dict[str, Any]]:
    """vSphere MNIST, Bitfusion sharing, IBM kernels and Fathom-style models."""
    recs: list[dict[str, Any]] = []
    for topo, arm, wall, fp in (
        ("ironic-bm", "native", 100.0, fingerprint("bm")),
        ("ironic-bm", "docker", 100.0, fingerprint("cbm")),
        ("vsphere-gpu", "vgpu", 103.0, fingerprint("vm", "vgpu")),
        ("vsphere-gpu", "docker", 100.5, fingerprint("cvm", "vgpu")),
        *[
            ("vsphere-gpu", f"vgpu-kw{n}", 103.0 * r, fingerprint("vm", "vgpu"))
            for n, r in KW_RATIO.items()
        ],
    ):
        # as the mnist_epochs scenario writes it: kind job, training wall-clock in metrics
        recs += reps(
            topo,
            arm,
            suite="vmware-mnist",
            experiment="mnist_epochs",
            model="mnist_cnn",
            scenario="mnist_epochs",
            data="real",
            batch=128,
            kind="job",
            elapsed=wall + 20.0,
            metrics={"train_wall_s": wall},
            fp=fp,
            repeats=repeats,
        )
    recs += reps(
        "vsphere-gpu",
        "bitfusion",
        suite="bitfusion-sharing",
        experiment="sharing",
        model="resnet50",
        scenario="sharing",
        fp=fingerprint("vm", "passthrough"),
        metrics={"throughput_ratio": 3.05, "completion_time_ratio": 1.19},
        params={"jobs": 4},
        repeats=repeats,
    )  # as workloads/scenarios/sharing.py writes them
    kernels = {
        "gemm": {"gemm_1760x16x1760": (1.0, 1.0)},
        "conv": {"conv_7x7x832_n16_k256_1x1_s1": (1.0, 1.01)},
        "rnn": {
            "rnn_vanilla_h1760_b16_t50": (1.0, 1.0),
            "rnn_lstm_h512_b16_t25": (1.0, 1.02),
            "rnn_gru_h512_b32_t1": (1.0, 1.15),
        },
        "bandwidth": {"bandwidth_h2d_local_33554432": (1.0, 1.0)},
    }
    for arm, idx, s in (("native", 0, "bm"), ("docker", 1, "cbm")):
        for kern, shapes in kernels.items():
            m = {f"{sh}.time_per_call_s": v[idx] * 1e-3 for sh, v in shapes.items()}
            if kern == "bandwidth":
                m = {
                    "bandwidth_h2d_local_33554432.gbps": 12.0,
                    "bandwidth_h2d_remote_33554432.gbps": 12.0 if s == "bm" else 7.0,
                }
            recs += reps(
                "ironic-bm",
                arm,
                suite="ibm-containers",
                experiment=f"deepbench-{kern}",
                model=kern,
                kind="kernel",
                scenario="kernel",
                metrics=m,
                fp=fingerprint(s),
                repeats=repeats,
            )
        for model in ("alexnet", "vgg", "residual"):
            recs += reps(
                "ironic-bm",
                arm,
                suite="ibm-containers",
                experiment=f"fathom-{model}",
                model=model,
                ips=200.0 * (1.0 if s == "bm" else 0.99),
                fp=fingerprint(s),
                repeats=repeats,
            )
    return recs


def bad_runs() -> list[dict[str, Any]]:
    """One failed and one throttled run (HW thermal slowdown in the NVML samples)."""
    failed = make_record(
        run_id="x",
        suite="closer2018",
        experiment="single_synthetic",
        model="resnet50",
        scenario="single",
        status="failed",
        error="ResourceExhaustedError: OOM when allocating tensor",
        topology="nova-pci",
        arm="native",
        batch_size=32,
    )
    throttled = reps(
        "ironic-bm",
        "native",
        experiment="single_synthetic",
        model="resnet50",
        ips=10.0,
        elapsed=500.0,
        repeats=1,
        params={
            "nvml_samples": [{"gpu": 0, "throttle_mask": 0x0}, {"gpu": 0, "throttle_mask": 0x40}]
        },
    )[0]
    capped = reps(
        "ironic-bm",
        "native",
        experiment="single_synthetic",
        model="alexnet",
        batch=512,
        ips=900.0,
        elapsed=140.0,
        repeats=1,
        params={"nvml_samples": [{"gpu": 0, "throttle_mask": 0x4}]},
    )[0]
    return [failed, throttled, capped]


# repetitions (units) enough for a verdict on every claim (report.claim_table.UNITS_NEEDED),
# a multiple of len(PATTERN) so that each arm's median is still the value given
VERDICT_REPEATS = 10


def paper_like(repeats: int = 5) -> list[dict[str, Any]]:
    return closer(repeats=repeats) + others(repeats=repeats) + bad_runs()


def truth() -> list[dict[str, Any]]:
    """One noise-free record per (arm, group) of :func:`paper_like`: its repetition 0, whose
    noise factor is exactly 1 (PATTERN[0]); the failed and throttled runs left out."""
    return [r for r in closer() + others() if r.get("repeat") == 0 and r.get("status") == "ok"]


def noisy(
    truth_records: list[dict[str, Any]],
    rng: Any,
    *,
    units: int,
    within: int = 5,
    run_noise: float = 0.01,
    within_noise: float = 0.005,
    study: str = "synthetic",
) -> list[dict[str, Any]]:
    """Records of a study of ``units`` repeats around ``truth_records`` (e.g. :func:`truth`).

    Each study repeat (a unit: an independent build-or-start and run of every arm, as
    infra.study writes it, ``params.study.repeat``) runs each truth record's measurement
    ``within`` times back to back (the suite's repeats, ``repeat`` 0..within-1). Every number
    (images/sec, elapsed, each metric) is the truth x exp(N(0, run_noise)) drawn once per
    unit, arm and measurement, x exp(N(0, within_noise)) drawn per record: the median of
    either factor is 1, so the truth is the median of the records' values. ``rng`` is a
    numpy Generator (the draws are reproducible from its seed).
    """
    out: list[dict[str, Any]] = []
    for u in range(1, units + 1):
        for t in truth_records:
            label = f"{t.get('topology')}/{t.get('arm')}"
            run = {k: float(rng.normal(0.0, run_noise)) for k in _noisy_fields(t)}
            for w in range(within):
                rec = {**t, "metrics": dict(t.get("metrics") or {})}  # the rest is shared
                rec["record_id"] = f"{study}-u{u}-w{w}-{len(out)}"
                rec["run_id"] = f"{study}-{label.replace('/', '-')}-r{u}"
                rec["repeat"] = w
                rec["params"] = {
                    **rec.get("params", {}),
                    "study": {"name": study, "arm": label, "repeat": u},
                }
                for k, shift in run.items():
                    f = float(np.exp(shift + rng.normal(0.0, within_noise)))
                    if k.startswith("metrics."):
                        rec["metrics"][k[8:]] *= f
                    else:
                        rec[k] *= f
                out.append(rec)
    return out


def _noisy_fields(rec: dict[str, Any]) -> list[str]:
    """The numbers of a record that a measurement varies."""
    fields = [k for k in ("images_per_sec", "elapsed_s") if rec.get(k) is not None]
    return fields + [f"metrics.{k}" for k in rec.get("metrics") or {}]


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


if __name__ == "__main__":
    write(Path(sys.argv[1]) / "paper-like.jsonl", paper_like())
