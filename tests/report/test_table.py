"""Mapping topology/arm -> paper setting, baseline resolution, grouping and normalization."""

from __future__ import annotations

import pytest

from report.exclusions import split, throttle_bits
from report.mapping import Arm, resolve_baseline, setting_of
from report.table import build_table, metric_values
from tests.report import synth
from workloads.errors import InputError


@pytest.mark.parametrize(
    ("topology", "arm", "setting"),
    [
        ("ironic-bm", "native", "bm"),
        ("ironic-bm", "docker", "cbm"),
        ("nova-pci", "native", "vm"),
        ("nova-pci", "singularity", "cvm"),
        ("magnum-k8s", "container-bm", "cbm"),
        ("magnum-k8s", "container-vm", "cvm"),
        ("vsphere-gpu", "vgpu", "vm"),
        ("vsphere-gpu", "docker", "cvm"),
        ("local", "native", "bm"),
        ("local", "docker", "cbm"),
        ("somewhere", "native", "unknown"),
    ],
)
def test_setting_is_the_recorded_one(topology: str, arm: str, setting: str) -> None:
    (rec,) = synth.reps(topology, arm, experiment="e", model="m", ips=1.0, repeats=1)
    assert setting_of(rec) == setting


def test_setting_is_never_guessed_from_labels_or_fingerprint() -> None:
    """A record without the setting is unknown, whatever its topology, arm or fingerprint say;
    a recorded setting wins over a fingerprint that disagrees."""
    (rec,) = synth.reps("nova-pci", "native", experiment="e", model="m", ips=1.0, repeats=1)
    bare = {
        k: v
        for k, v in rec.items()
        if k not in ("gpu_path", "exec_env", "virtualization", "sharing")
    }
    assert setting_of(dict(bare, fingerprint={"vm": {"is_vm": True}})) == "unknown"
    assert setting_of(dict(rec, fingerprint={"vm": {"is_vm": False}})) == "vm"


def test_baseline_resolution() -> None:
    arms = [Arm("ironic-bm", "native"), Arm("ironic-bm", "docker"), Arm("local", "native")]
    assert resolve_baseline(None, arms) == Arm("ironic-bm", "native")
    assert resolve_baseline("ironic-bm", arms) == Arm("ironic-bm", "native")
    assert resolve_baseline("ironic-bm/docker", arms) == Arm("ironic-bm", "docker")
    local = [Arm("local", "native"), Arm("local", "docker")]
    assert resolve_baseline(None, local) == Arm("local", "native")
    with pytest.raises(InputError, match="'nova-pci' has no ok records"):
        resolve_baseline("nova-pci", arms)
    with pytest.raises(InputError, match="no baseline"):
        resolve_baseline(None, [Arm("nova-pci", "native")])
    with pytest.raises(InputError, match="ambiguous"):
        resolve_baseline("vsphere-gpu", [Arm("vsphere-gpu", "vgpu"), Arm("vsphere-gpu", "pt")])
    with pytest.raises(InputError, match="not TOPOLOGY or TOPOLOGY/ARM"):
        resolve_baseline("a/b/c", arms)


def test_normalization_recovers_known_ratios() -> None:
    recs = []
    for arm, f in (("native", 1.0), ("docker", 0.8)):
        recs += synth.reps(
            "local",
            arm,
            experiment="e",
            model="resnet50",
            ips=200.0 * f,
            elapsed=30.0 / f,
            suite="s",
        )
    table = build_table(recs, Arm("local", "native"))
    ips = {r.arm.arm: r for r in table.find(metric="images_per_sec")}
    assert ips["native"].norm == pytest.approx(1.0)
    assert ips["docker"].norm == pytest.approx(0.8)
    assert ips["docker"].summary.median == pytest.approx(160.0)
    assert ips["docker"].norm_lo <= 0.8 <= ips["docker"].norm_hi
    ela = {r.arm.arm: r for r in table.find(metric="elapsed_s")}
    assert ela["docker"].norm == pytest.approx(1.25)
    assert table.settings[Arm("local", "docker")] == "cbm"


def test_groups_do_not_mix_batch_sizes_or_experiments() -> None:
    recs = synth.reps("local", "native", experiment="a", model="alexnet", batch=512, ips=100.0)
    recs += synth.reps("local", "native", experiment="a", model="alexnet", batch=32, ips=10.0)
    recs += synth.reps("local", "native", experiment="b", model="alexnet", batch=32, ips=20.0)
    table = build_table(recs, Arm("local", "native"))
    meds = sorted(r.summary.median for r in table.find(metric="images_per_sec"))
    assert meds == pytest.approx([10.0, 20.0, 100.0])


def test_missing_baseline_group_leaves_norm_empty() -> None:
    recs = synth.reps("local", "native", experiment="a", model="alexnet", ips=100.0)
    recs += synth.reps("local", "docker", experiment="b", model="alexnet", ips=90.0)
    table = build_table(recs, Arm("local", "native"))
    (row,) = table.find(experiment="b", metric="images_per_sec")
    assert row.norm is None


def test_shared_metrics_give_degradations_and_ratios_stay_unnormalized() -> None:
    recs = synth.reps(
        "local",
        "native",
        experiment="shared",
        model="resnet50",
        scenario="shared",
        noise=0.0,
        metrics={
            "elapsed_alone_s": 10.0,
            "elapsed_shared_s": 12.5,
            "images_per_sec_alone": 40.0,
            "images_per_sec_shared": 30.0,
        },
    )
    vals = metric_values(recs[0])
    assert vals["elapsed_degradation"] == pytest.approx(0.25)
    assert vals["images_per_sec_degradation"] == pytest.approx(0.25)
    table = build_table(recs, Arm("local", "native"))
    (row,) = table.find(metric="elapsed_degradation")
    assert row.norm is None and row.summary.median == pytest.approx(0.25)


def test_kernel_shape_metrics_become_variants() -> None:
    recs = synth.reps(
        "local",
        "native",
        experiment="k",
        model="rnn",
        kind="kernel",
        metrics={
            "rnn_gru_h8_b2_t3.time_per_call_s": 0.5,
            "rnn_lstm_h8_b2_t3.time_per_call_s": 0.25,
        },
    )
    table = build_table(recs, Arm("local", "native"))
    rows = {r.key.variant: r.summary.median for r in table.find(metric="time_per_call_s")}
    assert rows == pytest.approx({"rnn_gru_h8_b2_t3": 0.5, "rnn_lstm_h8_b2_t3": 0.25})


def test_failed_and_throttled_runs_are_left_out_power_cap_kept() -> None:
    kept, excluded, capped = split(synth.bad_runs())
    reasons = {e.reason: e for e in excluded}
    assert set(reasons) == {"failed", "throttled"}
    assert "OOM" in reasons["failed"].detail
    assert reasons["throttled"].detail == "hw_thermal_slowdown"
    assert [r["model"] for r in kept] == ["alexnet"] and capped == kept


@pytest.mark.parametrize(
    ("fp", "bits"),
    [
        ({"nvml_sampler": {"throttle_reasons": ["hw_slowdown"]}}, 0x08),
        ({"nvml_sampler": [{"throttle_reasons": 0x20}, {"throttle_reasons": 0x1}]}, 0x21),
        ({"sampler": {"samples": [{"throttle_mask": 0x80}]}}, 0x80),
        ({"nvml_sampler": {"throttle_reasons": ["HwThermalSlowdown", "gpu_idle"]}}, 0x41),
        ({}, 0),
    ],
)
def test_throttle_bits_from_fingerprint_shapes(fp: dict, bits: int) -> None:
    rec = synth.reps("local", "native", experiment="e", model="m", ips=1.0, repeats=1, fp=fp)[0]
    assert throttle_bits(rec) == bits
