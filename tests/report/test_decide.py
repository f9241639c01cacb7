"""Every check judged on intervals over units (report.decide): the minimum, Holm, equivalence,
"reproduced" only when every check is measured, the CPU method check, and the windows."""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest

from report.checks import Outcome
from report.claims import (
    INCONCLUSIVE,
    METHOD_CHECK,
    NOT_MEASURED,
    NOT_REPRODUCED,
    REPRODUCED,
    all_checks,
    verdicts,
)
from report.decide import Item, judge, verdict_of
from report.exclusions import split
from report.intervals import LINEAR, estimate
from report.mapping import Arm
from report.published import load_published
from report.table import build_table, metric_values
from tests.report import synth

PUB = load_published()
BM = Arm("ironic-bm", "native")


def judge_all(records: list[dict[str, Any]], baseline: Arm = BM) -> dict[str, Any]:
    return {v.claim: v for v in verdicts(build_table(split(records)[0], baseline), PUB, records)}


def _item(values: list[float], lo: float = -math.inf, hi: float = math.inf) -> Item:
    return Item("x", estimate(values, LINEAR), lo, hi)


def test_holm_keeps_a_failure_that_is_not_significant_over_the_claims_rows_inconclusive() -> None:
    """One row's interval lies just outside its band (p about 0.02); alone it fails, among
    nine rows of the same claim it is not significant and the claim is inconclusive."""
    edge = [1.031, 1.034, 1.037, 1.040, 1.043]  # mean 1.037, 95 % interval about [1.031, 1.043]
    inside = [0.99, 1.00, 1.01, 1.00, 1.00]
    alone = judge([[_item(edge, 0.95, 1.03)]], need=3)
    assert alone[0].status == "fail"
    many = judge([[_item(edge, 0.95, 1.03)] + [_item(inside, 0.95, 1.05)] * 8], need=3)
    assert many[0].status == "inconclusive"
    assert "not significant over the claim's 9 items (Holm)" in many[0].measured
    assert verdict_of(many) == INCONCLUSIVE
    clear = judge([[_item([1.30, 1.31, 1.29, 1.30, 1.30], 0.95, 1.03)] + [_item(inside)] * 8], 3)
    assert clear[0].status == "fail" and verdict_of(clear) == NOT_REPRODUCED


def test_fewer_units_than_needed_decide_nothing_and_say_the_number() -> None:
    out = judge([[_item([1.5, 1.5], 0.95, 1.05)]], need=5)
    assert out[0].status == "inconclusive"
    assert "n=2 units (a verdict needs 5 units)" in out[0].measured


def test_a_claim_is_reproduced_only_when_every_check_is_measured_and_passes() -> None:
    ok = judge([[_item([1.0, 1.01, 0.99], 0.9, 1.1)], Outcome("missing", "no records")], 3)
    assert [o.status for o in ok] == ["pass", "missing"]
    assert verdict_of(ok) == INCONCLUSIVE
    assert verdict_of(judge([[_item([1.0, 1.01, 0.99], 0.9, 1.1)]], 3)) == REPRODUCED
    assert verdict_of([Outcome("missing", "none")]) == NOT_MEASURED


@pytest.mark.parametrize(
    ("ratio", "noise", "verdict"),
    [(1.0, 0.005, REPRODUCED), (1.0, 0.06, INCONCLUSIVE), (1.10, 0.005, NOT_REPRODUCED)],
)
def test_no_measurable_penalty_is_an_equivalence_test(
    ratio: float, noise: float, verdict: str
) -> None:
    """MNIST in docker in a VM vs docker natively: 'no measurable penalty' passes only when
    the whole interval lies inside 0.97-1.03 (two one-sided tests); a wide interval around
    1.0 proves nothing."""
    recs = []
    for topo, arm, f, n in (
        ("ironic-bm", "docker", 1.0, 0.0),
        ("vsphere-gpu", "docker", ratio, noise),
    ):
        recs += synth.reps(
            topo,
            arm,
            suite="vmware-mnist",
            experiment="mnist_epochs",
            model="mnist_cnn",
            scenario="mnist_epochs",
            kind="job",
            metrics={"train_wall_s": 100.0 * f},
            noise=n,
            fp=synth.fingerprint("cvm" if topo == "vsphere-gpu" else "cbm"),
        )
    v = judge_all(recs, Arm("ironic-bm", "docker"))["vmware_vgpu_containers/mnist_container_vm"]
    assert v.verdict == verdict, [(c.what, o) for c, o in v.results]
    (check, _) = v.results[0]
    assert "two one-sided tests" in check.what


def test_relation_checks_judge_per_unit_contrasts_with_the_same_minimum() -> None:
    """'real data like synthetic' at 2 units: inconclusive with the number needed (the old
    median comparison decided it); at 5 units it passes with an interval."""
    for repeats, status in ((2, "inconclusive"), (5, "pass")):
        recs = [
            r
            for r in synth.closer()
            if r["experiment"] in ("distributed_synthetic", "distributed_real")
            and r["repeat"] < repeats
        ]
        v = judge_all(recs)["closer2018/distributed_real"]
        (out,) = [o for c, o in v.results if "real data like synthetic" in c.what]
        assert out.status == status, out
        if repeats == 2:
            assert "a verdict needs" in out.measured
        else:
            assert "real - synthetic" in out.measured and "n=5 units" in out.measured


def _cpu(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = copy.deepcopy(records)
    for r in out:
        r["fingerprint"] = {"cpu": {"model": "Xeon"}, "gpu": {"present": False, "gpus": []}}
    return out


def test_records_without_a_gpu_give_a_method_check_never_a_verdict_word() -> None:
    recs = _cpu(synth.closer())
    v = judge_all(recs)
    measured = {c for c, x in v.items() if x.verdict != NOT_MEASURED}
    assert measured and {v[c].verdict for c in measured} == {METHOD_CHECK}
    sv = v["closer2018/single_synthetic"]
    assert any("[" in o.measured and "n=5 units" in o.measured for _, o in sv.results)
    assert v["vmware_vgpu_containers/mixed_workloads"].verdict == NOT_MEASURED


def test_a_gpu_fingerprint_keeps_the_verdicts() -> None:
    recs = synth.closer(repeats=synth.VERDICT_REPEATS)
    assert judge_all(recs)["closer2018/single_synthetic"].verdict == REPRODUCED
    used_cpu = copy.deepcopy(recs)
    for r in used_cpu:
        r["params"]["device"] = {"used": "cpu"}  # a GPU host whose framework ran on the CPU
    assert judge_all(used_cpu)["closer2018/single_synthetic"].verdict == METHOD_CHECK


def test_each_elapsed_check_names_its_window() -> None:
    checks = {(c.claim, c.what) for c in all_checks(PUB)}
    for claim in (
        "closer2018/fig5_single_real_elapsed_s",
        "closer2018/fig9_distributed_real_elapsed_s",
    ):
        (what,) = [w for c, w in checks if c == claim]
        assert "job launch to finish, start-up included" in what
    shared = [w for c, w in checks if c == "closer2018/shared" and "elapsed" in w]
    assert shared and all("launch to finish" in w for w in shared)
    mnist = [w for c, w in checks if c.startswith("vmware_vgpu_containers/") and "MNIST" in w]
    assert mnist and all("training wall-clock" in w for w in mnist)


def test_the_shared_scenarios_timed_ratio_is_not_read_as_elapsed() -> None:
    """The shared scenario writes ``elapsed_degradation`` from its timed windows; the report
    reads it as ``timed_degradation`` and derives ``elapsed_degradation`` from the two jobs'
    elapsed_s (launch to finish, the paper's elapsed)."""
    rec = {
        "metrics": {
            "elapsed_degradation": 0.40,  # timed windows, as workloads/scenarios/shared.py
            "timed_wall_alone_s": 2.0,
            "timed_wall_shared_s": 2.8,
            "elapsed_alone_s": 30.0,
            "elapsed_shared_s": 33.0,
        }
    }
    vals = metric_values(rec)
    assert vals["timed_degradation"] == pytest.approx(0.40)
    assert vals["elapsed_degradation"] == pytest.approx(0.10)
    old = metric_values({"metrics": {"elapsed_degradation": 0.40}})  # no elapsed_s: not guessed
    assert "elapsed_degradation" not in old and old["timed_degradation"] == pytest.approx(0.40)


def test_elapsed_checks_say_how_much_was_start_up_or_that_the_records_do_not_say() -> None:
    """The runner's windows (startup_s, first_step_s, timed_s), read where a record has them;
    records of an older runner have none and the check says so (no failure)."""
    recs = [r for r in synth.closer() if r["experiment"] == "single_real"]
    v = judge_all(recs)["closer2018/fig5_single_real_elapsed_s"]
    assert "no start-up or timed windows in these records" in v.results[0][1].measured
    with_parts = copy.deepcopy(recs)
    for r in with_parts:
        r.update(startup_s=0.8 * r["elapsed_s"], first_step_s=3.0, timed_s=1.5)
    v = judge_all(with_parts)["closer2018/fig5_single_real_elapsed_s"]
    text = v.results[0][1].measured
    assert "start-up" in text and "first steps 3 s, timed 1.5 s of" in text
    assert v.verdict == REPRODUCED
