"""The README's main command stays small: the built-in first-run study's runner processes, counted
from its suites (tests/lifecycle/first_run.py; the real launches are counted in
tests/lifecycle/test_local_run.py), within the budget, with the repeats its intervals need."""

from __future__ import annotations

from infra.study.model import load_study
from tests.lifecycle.first_run import PROCESS_BUDGET, planned
from workloads.suites import load_suite


def test_the_first_run_study_stays_within_its_process_budget() -> None:
    per_arm = planned()
    # native and docker: 2 models x 1 repetition; shared: 4 processes; nway: 2 + 4 jobs;
    # each over the study's 3 repeats
    assert per_arm == {"native": 6, "docker": 6, "shared": 12, "nway": 18}
    assert sum(per_arm.values()) <= PROCESS_BUDGET


def test_the_first_run_keeps_what_its_method_checks_need() -> None:
    study = load_study("local-first-run")
    # intervals over units: the study's repeats (report.intervals needs 2, the claims 3)
    assert study.repeats >= 3 and study.order == "interleaved"
    suites = {a.name: load_suite(a.suite) for a in study.arms}
    # every arm still measures what its claim compares: both models natively and in the
    # container, the foreground beside a background, 4 jobs against one
    for arm in ("native", "docker"):
        assert {e.model for e in suites[arm].entries} == {"mnist_cnn", "alexnet"}
    (shared,) = suites["shared"].entries
    assert shared.scenario == "shared" and shared.options["min_overlap"] >= 0.8
    (sharing,) = suites["nway"].entries
    assert sharing.scenario == "sharing" and sharing.options["jobs"] == 4
    # the warm-up stays out of the timing: at least one warm-up step (the first one compiles)
    assert all(e.warmup >= 1 and e.steps >= 3 for s in suites.values() for e in s.entries)
