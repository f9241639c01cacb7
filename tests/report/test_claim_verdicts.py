"""How a claim's checks combine into its verdict (report.decide, report.claims,
report.relations), on rows built directly: each case states the per-unit values it judges.

The whole-report cases are in test_claims.py and test_decide.py; these take milliseconds.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from report import mixed_workloads as mw
from report import relations as R
from report.checks import MISSING, Outcome
from report.claim_table import BOUNDS, NOT_CHECKABLE, Bound, units_needed
from report.claims import (
    FIG_TOL,
    METHOD_CHECK,
    Check,
    Verdict,
    _tol_text,
    all_checks,
    bound_check,
    interval,
    row_item,
    row_name,
    verdict_data,
    verdicts,
    with_windows,
)
from report.decide import (
    FAIL,
    INCONCLUSIVE,
    NOT_MEASURED,
    NOT_REPRODUCED,
    PASS,
    REPRODUCED,
    SHOWN,
    UNSURE,
    Item,
    item_text,
    judge,
    verdict_of,
)
from report.intervals import LINEAR, estimate
from report.published import load_published
from report.table import Row, Table
from report.windows import NONE_RECORDED
from tests.report.claim_rows import (
    BM,
    CBM,
    CVM,
    TIGHT,
    VM,
    decoys,
    item,
    judged,
    names,
    row,
    table,
)

# --- report.decide: items into check outcomes, outcomes into the verdict -------------------


@pytest.mark.parametrize(
    ("statuses", "verdict"),
    [
        ([], NOT_MEASURED),
        ([MISSING], NOT_MEASURED),
        ([MISSING, MISSING], NOT_MEASURED),
        ([PASS], REPRODUCED),
        ([PASS, PASS], REPRODUCED),
        ([PASS, MISSING], INCONCLUSIVE),
        ([MISSING, PASS], INCONCLUSIVE),
        ([PASS, UNSURE], INCONCLUSIVE),
        ([UNSURE], INCONCLUSIVE),
        ([PASS, FAIL], NOT_REPRODUCED),
        ([MISSING, FAIL], NOT_REPRODUCED),
        ([UNSURE, FAIL, PASS], NOT_REPRODUCED),
    ],
)
def test_the_verdict_of_the_checks_outcomes(statuses: list[str], verdict: str) -> None:
    assert verdict_of([Outcome(s, "why") for s in statuses]) == verdict


def test_an_item_inside_its_band_passes_and_its_text_names_estimate_interval_and_n() -> None:
    (out,) = judge([[Item("vm resnet50", estimate(TIGHT, LINEAR), 0.99, 1.01)]], need=5)
    assert out.status == PASS
    assert out.measured == "vm resnet50 1.000 [0.999, 1.001] n=5 units"


def test_the_band_edges_belong_to_the_band() -> None:
    """An interval that ends exactly on an edge lies inside the band (>= lo, <= hi)."""
    e = estimate(TIGHT, LINEAR)
    assert e is not None and (ci := e.interval()) is not None
    assert judge([[Item("x", e, ci[0], ci[1])]], need=5)[0].status == PASS
    assert judge([[Item("x", e, ci[0] + 1e-9, ci[1])]], need=5)[0].status == UNSURE
    assert judge([[Item("x", e, ci[0], ci[1] - 1e-9)]], need=5)[0].status == UNSURE


def test_exactly_the_needed_units_decide_one_fewer_does_not() -> None:
    assert judge([[item(TIGHT, 0.9, 1.1)]], need=5)[0].status == PASS
    (out,) = judge([[item(TIGHT, 0.9, 1.1, word="runs")]], need=6)
    assert out.status == UNSURE
    assert out.measured == "undecided: x 1.000 [0.999, 1.001] n=5 runs (a verdict needs 6 runs)"


def test_an_item_without_an_estimate_is_undecided_and_says_so() -> None:
    (out,) = judge([[Item("vm alexnet", None, 0.9, 1.1, note="(paper 0.93)")]], need=2)
    assert out == Outcome(
        UNSURE, "undecided: vm alexnet: no unit pairs with the baseline's (paper 0.93)"
    )


def test_one_unit_has_no_interval_and_decides_nothing() -> None:
    it = Item("x", estimate([1.0], LINEAR), 0.9, 1.1, times=True)
    assert item_text(it) == "x 1.000x [no interval] n=1 units"
    (out,) = judge([[it]], need=1)
    assert out.status == UNSURE and "interval straddles the band" in out.measured


def test_a_clear_failure_fails_and_names_the_item_first() -> None:
    (out,) = judge([[item([1.3, 1.31, 1.29], 0.9, 1.1), item(TIGHT, 0.9, 1.1)]], need=3)
    assert out.status == FAIL
    assert out.measured.startswith("outside: x 1.300 [")
    assert "1.000" not in out.measured  # only the failing item is named


def test_a_failure_below_the_band_fails_as_one_above() -> None:
    assert judge([[item([0.5, 0.51, 0.49], 0.9, 1.1)]], need=3)[0].status == FAIL
    assert judge([[item([0.5, 0.51, 0.49], lo=0.9)]], need=3)[0].status == FAIL
    assert judge([[item([1.5, 1.51, 1.49], hi=1.1)]], need=3)[0].status == FAIL


def test_an_interval_outside_but_not_significant_over_the_claim_is_undecided() -> None:
    """Holm over every tested item of the claim, across its checks: the same item fails
    alone and is undecided among many, whichever check the others belong to."""
    edge = [1.031, 1.034, 1.037, 1.040, 1.043]
    inside = [0.99, 1.00, 1.01, 1.00, 1.00]
    assert judge([[item(edge, 0.95, 1.03)]], need=5)[0].status == FAIL
    many = judge([[item(edge, 0.95, 1.03)], [item(inside, 0.95, 1.05)] * 8], need=5)
    assert many[0].status == UNSURE
    assert many[0].measured.endswith(
        "(outside the band, not significant over the claim's 9 items (Holm))"
    )
    assert many[1].status == PASS
    # items below the needed units are not in Holm's family
    few = judge([[item(edge, 0.95, 1.03)], [item(inside[:3], 0.95, 1.05)] * 8], need=5)
    assert few[0].status == FAIL and few[1].status == UNSURE


def test_a_straddling_interval_is_undecided_and_says_why() -> None:
    (out,) = judge([[item([0.95, 1.05, 1.0, 0.97, 1.03], 0.9, 1.01)]], need=5)
    assert out.status == UNSURE
    assert (
        out.measured.startswith("undecided: x 1.000 [")
        and "(interval straddles the band)" in out.measured
    )


def test_outcomes_come_one_per_check_in_order_missing_kept_empty_as_no_rows() -> None:
    gone = Outcome(MISSING, "no records of gbps")
    out = judge([gone, [item(TIGHT, 0.9, 1.1)], [], [item([1.3, 1.31, 1.29], 0.9, 1.1)]], need=3)
    assert [o.status for o in out] == [MISSING, PASS, MISSING, FAIL]
    assert out[0] is gone and out[2] == Outcome(MISSING, "no rows")


def test_the_worst_status_of_a_checks_items_is_its_outcome() -> None:
    wide = item([0.8, 1.2, 1.0, 0.9, 1.1], 0.95, 1.05)
    out = judge([[item(TIGHT, 0.9, 1.1), wide], [wide, item([1.3, 1.31, 1.29], 0.9, 1.1)]], 3)
    assert [o.status for o in out] == [UNSURE, FAIL]
    assert out[0].measured.startswith("undecided: ") and "1.000 [0.999" not in out[0].measured


def test_an_outcome_names_at_most_shown_items_and_counts_the_rest() -> None:
    items = [Item(f"i{k}", estimate(TIGHT, LINEAR), 0.9, 1.1) for k in range(SHOWN + 3)]
    (out,) = judge([items], need=5)
    assert out.status == PASS
    assert out.measured.count("n=5 units") == SHOWN
    assert out.measured.endswith(" ... (3 more)")
    assert out.measured.startswith("i0 1.000") and f"i{SHOWN - 1} " in out.measured
    assert f"i{SHOWN} " not in out.measured
    (exact,) = judge([items[:SHOWN]], need=5)
    assert "more" not in exact.measured and exact.measured.count("; ") == SHOWN - 1


# --- report.claims: checks and verdicts of a claim ----------------------------------------


def test_tolerance_texts() -> None:
    assert _tol_text(Bound("c/x", "w", "m", 0.8, 0.8, 0.07)) == "0.8 ± 0.07"
    assert _tol_text(Bound("c/x", "w", "m", 0.85, None, 0.03)) == ">= 0.82 (0.85 - 0.03)"
    assert _tol_text(Bound("c/x", "w", "m", None, 1.1, 0.05)) == "<= 1.15 (1.1 + 0.05)"
    assert _tol_text(Bound("c/x", "w", "m", 0.9, 1.1, 0.0)) == ">= 0.9, <= 1.1"
    assert (
        _tol_text(Bound("c/x", "w", "m", 0.9, 1.1, 0.02))
        == ">= 0.88 (0.9 - 0.02), <= 1.12 (1.1 + 0.02)"
    )


def test_a_verdict_as_data_and_its_tolerances_once_each_in_order() -> None:
    def fn(t: Table) -> R.Measured:
        return []

    a, b, c = Check("p/c", "A", "t1", fn), Check("p/c", "B", "t2", fn), Check("p/c", "C", "t1", fn)
    v = Verdict("p/c", "the text", REPRODUCED, records_naming=4, units_needed=7)
    v.results = [(a, Outcome(PASS, "ma")), (b, Outcome(MISSING, "mb")), (c, Outcome(PASS, "mc"))]
    assert v.tolerance == "t1; t2"
    assert verdict_data(v) == {
        "claim": "p/c",
        "verdict": REPRODUCED,
        "text": "the text",
        "tolerance": "t1; t2",
        "units_needed": 7,
        "records_naming": 4,
        "checks": [
            {"what": "A", "tolerance": "t1", "status": PASS, "measured": "ma"},
            {"what": "B", "tolerance": "t2", "status": MISSING, "measured": "mb"},
            {"what": "C", "tolerance": "t1", "status": PASS, "measured": "mc"},
        ],
    }


def test_a_rows_name_interval_and_item() -> None:
    r = row(VM, [0.9, 0.91, 0.89], variant="fp16")
    assert row_name(r) == "nova-pci/native resnet50 [fp16]"
    assert row_name(row(VM, [1.0, 1.0])) == "nova-pci/native resnet50"
    assert interval(r) == r.est.interval()  # type: ignore[union-attr]
    r.est = None
    assert interval(r) is None
    it = row_item(row(VM, [0.9, 0.91], study=False), 0.8, 1.2, "(paper 0.9)")
    assert (it.name, it.lo, it.hi, it.note, it.times, it.word) == (
        "nova-pci/native resnet50",
        0.8,
        1.2,
        "(paper 0.9)",
        True,
        "runs",
    )
    rel = row_item(row(VM, [0.1, 0.2], metric="elapsed_degradation"), 0.0, 0.3)
    assert rel.times is False and rel.word == "units" and rel.note == ""


def test_elapsed_items_carry_their_windows_or_the_first_says_there_are_none() -> None:
    ela = row(VM, [1.1, 1.1, 1.1], metric="elapsed_s", raw=[20.0, 20.0, 20.0])
    other = row(CVM, [1.2, 1.2, 1.2], metric="elapsed_s")
    t = table(ela, other)
    out = with_windows(
        t, [(ela, row_item(ela, 0, 2, "(paper 1.1)")), (other, row_item(other, 0, 2))]
    )
    assert out[0].note == f"(paper 1.1) {NONE_RECORDED}" and out[1].note == ""
    start = row(VM, [5.0, 5.0, 5.0], metric="startup_s", raw=[5.0, 5.0, 5.0])
    timed = row(VM, [2.0, 2.0, 2.0], metric="timed_s", raw=[2.0, 2.0, 2.0])
    t = table(ela, other, start, timed)
    out = with_windows(
        t, [(ela, row_item(ela, 0, 2, "(paper 1.1)")), (other, row_item(other, 0, 2))]
    )
    assert out[0].note == "(paper 1.1) (start-up 5 s, timed 2 s of 20 s)"
    assert out[1].note == ""  # the other arm has no windows; one row with them is enough
    ips = row(VM, [1.0, 1.0, 1.0])
    assert with_windows(t, [(ips, row_item(ips, 0, 2))])[0].note == ""
    assert with_windows(t, []) == []


def _bound(**kw: Any) -> Check:
    base: dict[str, Any] = {
        "claim": "closer2018/x",
        "what": "imgs/s",
        "metric": "images_per_sec",
        "lo": 0.9,
        "hi": None,
        "tol": 0.05,
        "experiment": "single_synthetic",
    }
    return bound_check(Bound(**{**base, **kw}))


def test_a_bound_checks_each_row_against_its_band_widened_by_the_tolerance() -> None:
    c = _bound(lo=0.9, hi=1.0, tol=0.05)
    assert (c.claim, c.what, c.tolerance) == (
        "closer2018/x",
        "imgs/s",
        ">= 0.85 (0.9 - 0.05), <= 1.05 (1 + 0.05)",
    )
    got = c.fn(table(row(BM, [1.0, 1.0]), row(VM, [0.88, 0.9]), row(CVM, [0.8, 0.8])))
    assert isinstance(got, list)
    assert [(i.name, round(i.lo, 9), round(i.hi, 9)) for i in got] == [
        ("nova-pci/docker resnet50", 0.85, 1.05),
        ("nova-pci/native resnet50", 0.85, 1.05),
    ]
    open_hi = _bound(lo=0.9, hi=None).fn(table(row(VM, [0.9, 0.9])))
    assert isinstance(open_hi, list) and open_hi[0].hi == math.inf
    assert open_hi[0].lo == pytest.approx(0.85)
    open_lo = _bound(lo=None, hi=1.0).fn(table(row(VM, [0.9, 0.9])))
    assert isinstance(open_lo, list) and open_lo[0].lo == -math.inf
    assert open_lo[0].hi == pytest.approx(1.05)


def test_a_bound_without_rows_says_what_it_looked_for() -> None:
    got = _bound(metric=("images_per_sec", "gbps"), settings=("vm", "cvm")).fn(table())
    assert got == Outcome(
        MISSING,
        "no records of images_per_sec or gbps in single_synthetic for vm/cvm (with a baseline)",
    )
    assert _bound(experiment=None).fn(table()) == Outcome(
        MISSING, "no records of images_per_sec (with a baseline)"
    )


def test_a_bound_judges_the_first_of_its_metrics_that_has_rows() -> None:
    c = _bound(metric=("gbps", "images_per_sec", "elapsed_s"))
    t = table(row(VM, [0.9, 0.9]), row(VM, [0.5, 0.5], metric="elapsed_s"))
    got = c.fn(t)
    assert isinstance(got, list) and [i.est.value for i in got] == [pytest.approx(0.9)]  # type: ignore[union-attr]
    first = c.fn(table(row(VM, [0.7, 0.7], metric="gbps"), row(VM, [0.9, 0.9])))
    assert isinstance(first, list) and [i.est.value for i in first] == [pytest.approx(0.7)]  # type: ignore[union-attr]
    assert "elapsed" in _bound(metric="elapsed_s").what  # names its window
    assert _bound(metric="gbps").what == "imgs/s"


def test_a_bounds_filters_keep_only_its_rows() -> None:
    t = table(
        row(BM, [1.0, 1.0], metric="elapsed_degradation"),
        row(VM, [0.2, 0.2], metric="elapsed_degradation"),
        row(VM, [0.9, 0.9], variant="bandwidth_h2d_local_1"),
        row(VM, [0.8, 0.8], variant="bandwidth_h2d_remote_1"),
        row(VM, [0.7, 0.7], suite="other", experiment="single_synthetic"),
        row(CVM, [0.6, 0.6], suite="other", experiment="other_closer2018"),
    )
    base = _bound(metric="elapsed_degradation", experiment=None, with_baseline=True)
    assert names(base.fn(t)) == ["ironic-bm/native resnet50", "nova-pci/native resnet50"]
    no_base = _bound(metric="elapsed_degradation", experiment=None)
    assert names(no_base.fn(t)) == ["nova-pci/native resnet50"]
    local = _bound(variant=R.is_local, experiment=None).fn(t)
    assert [i.name for i in local] == ["nova-pci/native resnet50 [bandwidth_h2d_local_1]"]  # type: ignore[union-attr]
    arm = _bound(arm_ok=lambda t, a: a == CVM, experiment=None).fn(t)
    assert names(arm) == ["nova-pci/docker resnet50"]
    suite = _bound(suite="closer2018", experiment=None, variant=lambda v: v == "").fn(t)
    assert names(suite) == ["nova-pci/docker resnet50"]  # an experiment naming the suite


def test_a_bounds_agg_takes_each_arms_largest_or_smallest_value() -> None:
    t = table(
        row(VM, [0.7, 0.7], model="alexnet"),
        row(VM, [0.9, 0.9], model="resnet50"),
        row(CVM, [0.6, 0.6], model="alexnet"),
    )
    high = _bound(agg="max").fn(t)
    low = _bound(agg="min").fn(t)
    assert isinstance(high, list) and isinstance(low, list)
    assert sorted(round(i.est.value, 3) for i in high) == [0.6, 0.9]  # type: ignore[union-attr]
    assert sorted(round(i.est.value, 3) for i in low) == [0.6, 0.7]  # type: ignore[union-attr]


PUB = load_published()


def _verdict(rows: list[Row], claim: str, records: list[Any] | None = None) -> Verdict:
    out = {v.claim: v for v in verdicts(table(*rows), PUB, records or [])}
    return out[claim]


def test_figure_checks_judge_each_cell_against_the_papers_value_within_fig_tol() -> None:
    """fig8: cbm resnet50 is 0.88-0.93 in the paper, cbm inception_v3 0.83; a cell within
    the value or range ± FIG_TOL passes, one further off fails, a model the figure does not
    show is not judged."""
    claim = "closer2018/fig8_distributed_real_images_per_sec"
    exp = "distributed_real"
    rows = [
        row(CBM, [0.93 + FIG_TOL - 0.002] * 5, experiment=exp),
        row(CBM, [0.834 - FIG_TOL] * 5, model="inception_v3", experiment=exp),
        row(CBM, [0.1] * 5, model="vgg16", experiment=exp),
    ]
    v = _verdict(rows, claim)
    ((check, out),) = v.results
    assert check.tolerance == f"paper ± {FIG_TOL}" and check.claim == claim
    assert check.what.startswith("Figure 8: each measured setting/model within the paper's value")
    assert (v.verdict, out.status) == (REPRODUCED, PASS), out
    assert "resnet50 0.978x [" in out.measured and "(paper 0.88-0.93)" in out.measured
    assert "inception_v3 0.784x [" in out.measured and "(paper 0.83)" in out.measured
    assert "vgg16" not in out.measured and out.measured.count("n=5") == 2
    off = _verdict([row(CBM, [0.93 + FIG_TOL + 0.01] * 5, experiment=exp)], claim)
    assert off.verdict == NOT_REPRODUCED
    low = _verdict([row(CBM, [0.88 - FIG_TOL - 0.01] * 5, experiment=exp)], claim)
    assert low.verdict == NOT_REPRODUCED
    none = _verdict([], claim)
    assert none.verdict == NOT_MEASURED
    assert none.results[0][1].measured == f"no {exp} images_per_sec records with a baseline"
    ela = [c for c, _ in _verdict([], "closer2018/fig9_distributed_real_elapsed_s").results]
    assert "job launch to finish" in ela[0].what


def test_verdicts_count_the_records_naming_a_claim_by_full_or_short_name() -> None:
    records: list[Any] = [
        {"claims": ["closer2018/single_synthetic"]},
        {"claims": ["single_synthetic", "other"]},
        {"claims": None},
        {},
        (["single_synthetic"], 3),
        (None, 5),
    ]
    v = _verdict([], "closer2018/single_synthetic", records)
    assert v.records_naming == 5
    assert v.verdict == NOT_MEASURED and v.units_needed >= 2


def test_verdicts_without_a_table_are_not_measured_and_in_the_files_order() -> None:
    out = verdicts(None, PUB, [])
    assert [v.claim for v in out] == list(PUB.claim_texts)
    assert {v.verdict for v in out} == {NOT_MEASURED}
    assert all(o.measured for v in out for _, o in v.results)


def test_a_claim_without_a_check_says_so() -> None:
    class Pub:
        claim_texts = {"nopaper/nothing": "a claim no check speaks of"}
        figures: list[Any] = []
        papers: dict[str, Any] = {}

    (v,) = verdicts(table(), Pub(), [])  # type: ignore[arg-type]
    assert v.verdict == NOT_MEASURED and v.text == "a claim no check speaks of"
    ((check, out),) = v.results
    assert (check.what, check.tolerance, out) == (
        "no check defined",
        "n/a",
        Outcome(MISSING, "no check defined"),
    )


def _gpu_fp(rows: list[Row], gpu: bool) -> Table:
    t = table(*rows)
    fp = (
        {"gpu": {"present": True, "gpus": [{"name": "Tesla V100"}]}}
        if gpu
        else {"cpu": {"model": "Xeon"}, "gpu": {"present": False, "gpus": []}}
    )
    t.records_per_arm = {VM: [{"fingerprint": fp}]}
    return t


def test_on_a_cpu_a_measured_claim_is_a_method_check_and_an_unmeasured_one_stays() -> None:
    rows = [row(VM, [0.97] * 5, model=m) for m in ("resnet50", "inception_v3", "alexnet")]
    on_gpu = {v.claim: v.verdict for v in verdicts(_gpu_fp(rows, True), PUB, [])}
    on_cpu = {v.claim: v.verdict for v in verdicts(_gpu_fp(rows, False), PUB, [])}
    measured = {c for c, x in on_gpu.items() if x != NOT_MEASURED}
    assert measured
    assert {on_cpu[c] for c in measured} == {METHOD_CHECK}
    assert {on_cpu[c] for c in on_gpu if c not in measured} == {NOT_MEASURED}


def test_claims_no_lab_can_check_say_why_and_are_not_measured() -> None:
    out = {v.claim: v for v in verdicts(table(row(VM, [1.0] * 5)), PUB, [])}
    for claim, why in NOT_CHECKABLE.items():
        v = out[claim]
        assert v.verdict == NOT_MEASURED
        assert [(c.what, c.tolerance, o) for c, o in v.results] == [
            ("not checkable", "n/a", Outcome(MISSING, why))
        ]


def test_the_mixed_workload_check_takes_the_published_numbers_or_says_they_are_missing() -> None:
    (check,) = [c for c in all_checks(PUB) if c.claim == mw.CLAIM]
    assert check.tolerance == mw.claim_numbers(PUB.papers).tolerance_text()
    assert check.what.startswith("ML training time with N knowledge-worker VMs beside it")

    class Pub:
        claim_texts = {mw.CLAIM: "mixed"}
        figures: list[Any] = []
        papers: dict[str, Any] = {}

    (v,) = verdicts(table(), Pub(), [])  # type: ignore[arg-type]
    ((c, o),) = v.results
    assert (c.claim, c.tolerance, o.status) == (mw.CLAIM, "n/a", MISSING)
    assert o.measured == f"published results: no claim {mw.CLAIM}"
    assert c.what == check.what


def test_every_check_belongs_to_a_claim_of_the_file_bounds_then_relations_then_figures() -> None:
    checks = all_checks(PUB)
    claims = [c.claim for c in checks]
    assert claims[: len(BOUNDS)] == [b.claim for b in BOUNDS]
    assert set(claims) <= set(PUB.claim_texts)
    figs = [f"{f.paper}/{f.key}" for f in PUB.figures]
    assert claims[-len(figs) :] == figs


# --- claims: each bound reads only its rows -----------------------------------------------


def test_a_bound_reads_only_its_models_settings_batch_arms_and_the_claims_suite() -> None:
    base = [row(VM, [0.9, 0.92, 0.91], model="m1")]
    want = names(_bound(experiment=None).fn(table(*base)))
    alex = [row(VM, [0.5] * 3, model="alexnet"), *base]
    assert names(_bound(experiment=None, models=("m1",)).fn(table(*alex))) == want
    match = _bound(experiment=None, match=lambda m: m.startswith("m1"))
    assert names(match.fn(table(*alex))) == want
    cvm = [row(CVM, [0.5] * 3, model="m1"), *base]
    assert names(_bound(experiment=None, settings=("vm",)).fn(table(*cvm))) == want
    arm = _bound(experiment=None, arm_ok=lambda t, a: t.settings[a] == "vm")
    assert names(arm.fn(table(*cvm))) == want
    b64 = [row(VM, [0.5] * 3, model="m1", batch=64), *base]
    got = _bound(experiment=None, batch=32).fn(table(*b64))
    assert judged(got) == judged(_bound(experiment=None).fn(table(*base)))
    other = [row(VM, [0.5] * 3, model="m1", suite="other"), *base]
    got = _bound(experiment=None).fn(table(*other))  # claim closer2018/x: its suite first
    assert judged(got) == judged(_bound(experiment=None).fn(table(*base)))


def test_a_bounds_largest_value_counts_a_zero_as_zero() -> None:
    t = table(
        row(VM, [0.0, 0.0], metric="elapsed_degradation", model="a"),
        row(VM, [0.5, 0.5], metric="elapsed_degradation", model="b"),
    )
    got = _bound(metric="elapsed_degradation", experiment=None, agg="max").fn(t)
    assert [v for _, v, *_ in judged(got)] == [pytest.approx(0.5)]


def test_a_bound_over_several_timed_metrics_names_each_window() -> None:
    c = _bound(metric=("elapsed_s", "train_wall_s"))
    from report.windows import WINDOWS

    assert c.what == f"imgs/s ({WINDOWS['elapsed_s']}; else {WINDOWS['train_wall_s']})"


def test_a_figure_reads_its_experiment_and_paper_only() -> None:
    claim = "closer2018/fig8_distributed_real_images_per_sec"
    good = [row(CBM, [0.9] * 5, experiment="distributed_real")]
    assert _verdict(good, claim).verdict == REPRODUCED
    for kind in ("suite", "setting"):
        assert _verdict(decoys(good, kind), claim).verdict == REPRODUCED, kind
    syn = [row(CBM, [0.1] * 5, experiment="distributed_synthetic"), *good]
    assert _verdict(syn, claim).verdict == REPRODUCED
    (check,) = [
        c for c in all_checks(PUB) if c.claim == "closer2018/fig9_distributed_real_elapsed_s"
    ]
    assert check.what.startswith("Figure 9: each measured setting/model within the paper's value (")


def test_relation_checks_keep_their_tolerance_texts() -> None:
    from report.claim_table import RELATIONS

    rel = {(c.claim, c.what): c.tolerance for c in all_checks(PUB)}
    for claim, what, tol, _ in RELATIONS:
        assert rel[(claim, what)] == tol


def test_the_mixed_workload_checks_text_in_full() -> None:
    (check,) = [c for c in all_checks(PUB) if c.claim == mw.CLAIM]
    assert check.what.endswith(
        "; the paper's 3D CAD impact and knowledge-worker latency are not judged: no 3D CAD "
        "VMs here, and the knowledge-worker load records no latency)"
    )


def test_each_claim_needs_its_own_number_of_units() -> None:
    from report.claim_table import UNITS_NEEDED

    claim, need = max(UNITS_NEEDED.items(), key=lambda kv: kv[1])
    v = _verdict([], claim)
    assert v.units_needed == need and need > 3
    assert all(x.units_needed == units_needed(x.claim) for x in verdicts(None, PUB, []))


def test_without_a_table_every_check_says_there_are_no_ok_records() -> None:
    v = {x.claim: x for x in verdicts(None, PUB, [])}["closer2018/single_synthetic"]
    assert {o for _, o in v.results} == {Outcome(MISSING, "no ok records")}
    pub: Any = type("P", (), {"claim_texts": {"np/x": "t"}, "figures": [], "papers": {}})()
    (nc,) = verdicts(None, pub, [])
    assert nc.results[0][0].claim == "np/x"


def test_a_touching_interval_straddles_and_an_outcome_joins_its_items() -> None:
    """An interval whose end touches the band's edge is not "outside the band"."""
    e = estimate([1.0, 1.01, 0.99, 1.0, 1.0], LINEAR)
    assert e is not None
    ci = e.interval()
    assert ci is not None
    filler = [item(TIGHT, 0.9, 1.1)] * 9  # Holm over ten: the touching item is not a failure
    low = judge([[Item("x", e, ci[1], math.inf), *filler]], need=5)[0]
    high = judge([[Item("x", e, -math.inf, ci[0]), *filler]], need=5)[0]
    for out in (low, high):
        assert out.status == UNSURE and "(interval straddles the band)" in out.measured
    (two,) = judge([[item(TIGHT, 0.9, 1.1), item(TIGHT, 0.9, 1.1)]], need=5)
    assert two.measured == "x 1.000 [0.999, 1.001] n=5 units; x 1.000 [0.999, 1.001] n=5 units"
