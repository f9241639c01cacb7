"""Scenarios shared and sharing on the CPU: real training jobs in child processes."""

from __future__ import annotations

import pytest

from workloads.errors import InputError
from workloads.records import make_record
from workloads.scenarios import Job, shared, sharing


def _job(scenario: str, **options: object) -> Job:
    return Job(suite="t", experiment=scenario, model="mnist_cnn", scenario=scenario, batch=32,
               steps=8, warmup=1, options=dict(options), timeout_s=300)


def _record(fields: dict, scenario: str) -> dict:
    return make_record(run_id="r", suite="t", experiment=scenario, model="mnist_cnn",
                       scenario=scenario, **fields)


def test_shared_foreground_alone_then_beside_a_background_job() -> None:
    rec = _record(shared.run(_job("shared", background_model="mnist_cnn", background_batch=64)),
                  "shared")
    assert rec["status"] == "ok", rec.get("error")
    m = rec["metrics"]
    assert m["images_per_sec_alone"] > 0 and m["images_per_sec_shared"] > 0
    assert rec["images_per_sec"] == m["images_per_sec_shared"]
    assert m["images_per_sec_degradation"] == pytest.approx(
        1 - m["images_per_sec_shared"] / m["images_per_sec_alone"])
    assert m["elapsed_degradation"] == pytest.approx(
        m["elapsed_shared_s"] / m["elapsed_alone_s"] - 1)
    # the background was running (and stepping) for the whole foreground run
    assert rec["params"]["background_ran_throughout"] is True
    assert m["background_steps_during"] >= 1
    assert rec["params"]["background_model"] == "mnist_cnn"
    assert len(rec["step_times_s"]) == 8


def test_sharing_n_concurrent_jobs_against_one() -> None:
    rec = _record(sharing.run(_job("sharing", jobs=2)), "sharing")
    assert rec["status"] == "ok", rec.get("error")
    m = rec["metrics"]
    assert m["aggregate_images_per_sec"] == pytest.approx(
        m["job0_images_per_sec"] + m["job1_images_per_sec"])
    assert m["aggregate_throughput_ratio"] == pytest.approx(
        m["aggregate_images_per_sec"] / m["single_images_per_sec"])
    assert m["completion_time_ratio"] == pytest.approx(
        max(m["job0_elapsed_s"], m["job1_elapsed_s"]) / m["single_elapsed_s"])
    assert rec["global_batch"] == 64


def test_sharing_wrapper_that_fails_is_a_failed_record() -> None:
    fields = sharing.run(_job("sharing", jobs=1, baseline_wrapper=["/bin/false"]))
    assert fields["status"] == "failed" and "baseline" in fields["error"]
    assert "exited 1" in fields["error"]


@pytest.mark.parametrize(
    ("check", "options", "match"),
    [(shared.check_options, {"background_model": "bert"}, "background_model"),
     (shared.check_options, {"background_batch": 0}, "background_batch"),
     (shared.check_options, {"background_env": {"A": 1}}, "background_env"),
     (shared.check_options, {"jobs": 2}, "'jobs'"),
     (sharing.check_options, {"jobs": 0}, "'jobs'"),
     (sharing.check_options, {"wrapper": "bitfusion run"}, "'wrapper'"),
     (sharing.check_options, {"deadline_s": 0}, "'deadline_s'")],
)
def test_option_errors(check, options: dict, match: str) -> None:
    with pytest.raises(InputError, match=match):
        check(options)
