"""The mixed-workload claim judged from simulated records (tests/report/synth.py: vGPU arms
with 0, 32, 64 and 96 knowledge-worker VMs whose records state their factors in the sharing,
as the vsphere-gpu lab writes it), through the report's own functions: intervals over units,
Holm over the claim's items, the published numbers and tolerance (report/mixed_workloads.py)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest

from report.claim_table import units_needed
from report.claims import (
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    REPRODUCED,
    all_checks,
    verdicts,
)
from report.exclusions import split
from report.mapping import Arm
from report.mixed_workloads import CLAIM, claim_numbers
from report.published import load_published
from report.table import build_table
from tests.report import synth

PUB = load_published()
BM = Arm("ironic-bm", "native")
OVERHEAD = "vmware_vgpu_containers/virtualization_overhead"


def vmware(units: int, seed: int = 5, noise: float = 0.01) -> list[dict[str, Any]]:
    """A simulated study of ``units`` repeats of the VMware arms around the paper's numbers."""
    truth = [r for r in synth.truth() if r["suite"] == "vmware-mnist"]
    return synth.noisy(truth, np.random.default_rng(seed), units=units, run_noise=noise)


def judge(records: list[dict[str, Any]]) -> dict[str, Any]:
    kept, _, _ = split(records)
    return {v.claim: v for v in verdicts(build_table(kept, BM), PUB, records)}


def outcome(records: list[dict[str, Any]]) -> tuple[str, str]:
    v = judge(records)[CLAIM]
    (out,) = [o for _, o in v.results]
    print(v.verdict, "|", out.status, "|", out.measured)
    return v.verdict, out.measured


def scaled(records: list[dict[str, Any]], arm: str, factor: float) -> list[dict[str, Any]]:
    out = copy.deepcopy(records)
    for r in out:
        if r["arm"] == arm:
            r["metrics"]["train_wall_s"] *= factor
            r["elapsed_s"] *= factor
    return out


def test_the_check_uses_the_published_numbers_and_tolerance() -> None:
    c = claim_numbers(PUB.papers)
    assert (c.lo, c.hi, c.at_lo, c.at_hi, c.tol) == (32, 96, 1.02, 1.18, 0.05)
    assert (c.band(32), c.band(96), c.band(64), c.band(8), c.band(128)) == (
        pytest.approx((0.97, 1.07)),
        pytest.approx((1.13, 1.23)),
        pytest.approx((0.97, 1.23)),
        None,
        None,
    )
    (check,) = [ch for ch in all_checks(PUB) if ch.claim == CLAIM]
    assert check.tolerance == "32 VMs: 1.02 ± 0.05; 96 VMs: 1.18 ± 0.05; between: 0.97 - 1.23"
    assert "3D CAD" in check.what and "not judged" in check.what


def test_the_papers_numbers_come_out_reproduced_with_each_pair_named() -> None:
    verdict, measured = outcome(vmware(units=max(5, units_needed(CLAIM))))
    assert verdict == REPRODUCED
    for n in (32, 64, 96):
        pair = f"{n} KW VMs: vsphere-gpu/vgpu-kw{n} / vsphere-gpu/vgpu mnist_cnn (train_wall_s)"
        assert pair in measured
    assert "96 KW VMs: vsphere-gpu/vgpu-kw96 / vsphere-gpu/vgpu mnist_cnn (train_wall_s) 1.1" in (
        measured
    )


def test_training_time_outside_the_band_by_its_width_is_not_reproduced() -> None:
    """96 knowledge-worker VMs that slow training by 33 % instead of 18 %."""
    recs = scaled(vmware(units=units_needed(CLAIM)), "vgpu-kw96", 1.33 / 1.18)
    verdict, measured = outcome(recs)
    assert verdict == NOT_REPRODUCED and measured.startswith("outside: 96 KW VMs")


def test_no_knowledge_worker_slowdown_at_96_is_not_reproduced_either() -> None:
    recs = scaled(vmware(units=units_needed(CLAIM)), "vgpu-kw96", 1.0 / 1.18)
    assert outcome(recs)[0] == NOT_REPRODUCED


def test_fewer_units_than_a_verdict_needs_is_inconclusive_and_says_how_many() -> None:
    verdict, measured = outcome(vmware(units=2))
    assert verdict == INCONCLUSIVE and f"a verdict needs {units_needed(CLAIM)} units" in measured


def test_both_ends_of_the_range_must_be_measured() -> None:
    recs = [r for r in vmware(units=5) if r["arm"] != "vgpu-kw96"]
    verdict, measured = outcome(recs)
    assert verdict == NOT_MEASURED
    assert "needs vGPU arms with 32 and with 96 knowledge-worker VMs" in measured
    assert measured.endswith("measured: 32, 64")


def test_arms_pair_only_when_their_other_factors_match_as_the_records_state_them() -> None:
    """A 96-VM arm whose hosts ran another scheduling policy (its records say so) is not the
    reference arm plus knowledge workers: no pair, the claim is not measured at 96."""
    recs = vmware(units=5)
    for r in recs:
        if r["arm"] == "vgpu-kw96":
            r["sharing"] = "vgpu:grid_p100-16q.equal-share.1-per-gpu.kw96"
    verdict, measured = outcome(recs)
    assert verdict == NOT_MEASURED and measured.endswith("measured: 32, 64")


def test_knowledge_worker_arms_stay_out_of_the_virtualization_overhead_claim() -> None:
    """The 4 % overhead is about a VM with its GPU to itself: the 96-VM arm (1.22x bare metal)
    is not judged there, the plain vGPU arm is."""
    v = judge(vmware(units=units_needed(CLAIM)))[OVERHEAD]
    assert v.verdict == REPRODUCED
    (out,) = [o for _, o in v.results]
    assert "vsphere-gpu/vgpu mnist_cnn" in out.measured and "kw" not in out.measured
