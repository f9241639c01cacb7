"""The study's first numbers while it runs (infra.study.early): each ratio printed as soon as
the units that give it are done, with a DOUBLE of the local unit runner (no framework) that
writes records at rates the test chooses."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from rich.console import Console

from infra.study.driver import Driver, RunOptions
from infra.study.early import EarlyLines
from infra.study.local import UnitResult
from infra.study.model import Arm, load_study
from infra.study.plan import Unit
from tests.study.helpers import write_study
from workloads.records import make_record

# images/sec per (arm, repeat): b runs at 0.90x, 0.80x, 0.85x of a
RATES = {("a", 1): 100.0, ("b", 1): 90.0, ("a", 2): 50.0, ("b", 2): 40.0}
RATES |= {("a", 3): 100.0, ("b", 3): 85.0}


class RateUnits:
    """Stands in for LocalUnits: one ok single-scenario record per unit at RATES' rate."""

    def __init__(self) -> None:
        self.calls: list[Unit] = []

    def remove_container(self, name: str) -> None:
        pass

    def close(self) -> None:
        pass

    def run(
        self, arm: Arm, suite: str, out: Path, log: Path, run_id: str, on_start: Any = None
    ) -> UnitResult:
        repeat = int(run_id.rsplit("-r", 1)[1])
        self.calls.append(Unit(arm.name, repeat))
        rec = make_record(
            run_id=run_id,
            suite="s",
            experiment="single_synthetic",
            model="mnist_cnn",
            batch_size=64,
            arm=arm.label,
            topology="local",
            images_per_sec=RATES[(arm.name, repeat)],
            repeat=0,
        )
        out.write_text(json.dumps(rec) + "\n")
        return UnitResult("done")


def run_study(tmp_path: Path, repeats: int) -> list[str]:
    write_study(tmp_path, repeats=repeats, suite="smoke")
    out = io.StringIO()
    d = Driver(
        load_study(str(tmp_path / "t.yaml")),
        tmp_path / "results",
        RunOptions(),
        Console(file=out, width=200),
    )
    d.local = RateUnits()  # type: ignore[assignment]
    d._planned_records = lambda arm: 1  # type: ignore[method-assign]  # the double writes one
    d.run()
    return out.getvalue().splitlines()


def test_each_ratio_is_printed_when_its_two_units_are_done(tmp_path: Path) -> None:
    lines = run_study(tmp_path, repeats=3)
    ratio = [i for i, ln in enumerate(lines) if "b/a images/sec" in ln]
    assert [lines[i].strip() for i in ratio] == [
        "b/a images/sec, repeat 1: mnist_cnn 0.90x",
        "b/a images/sec, repeat 2: mnist_cnn 0.80x",
        # the geometric mean of the repeats' ratios, exp(mean log +- t(0.975, n-1) s/sqrt n):
        # n=2: exp(-0.164 +- 12.71 * 0.0589); n=3: exp(-0.164 +- 4.30 * 0.0340)
        "b/a images/sec over 2 repeats: mnist_cnn 0.85x [0.40, 1.79]",
        "b/a images/sec, repeat 3: mnist_cnn 0.85x",
        "b/a images/sec over 3 repeats: mnist_cnn 0.85x [0.73, 0.98]",
    ]
    # interleaved a, b | b, a | a, b: each ratio comes right after the unit that completes it,
    # before the next unit starts
    done = [i for i, ln in enumerate(lines) if ln.lstrip().startswith("done arm")]
    finishing = [lines[i].split("arm ")[1].split(",")[0] for i in done]
    assert finishing == ["a", "b", "b", "a", "a", "b"]
    assert ratio[0] == done[1] + 1 and ratio[1] == done[3] + 1 and ratio[3] == done[5] + 1
    # the final lines are printed by the CLI, not here: nothing after the last unit but these
    assert lines[done[5] + 1 :] == [lines[ratio[3]], lines[ratio[4]]]


def test_no_ratio_while_the_baseline_unit_of_that_repeat_is_not_done(tmp_path: Path) -> None:
    lines = run_study(tmp_path, repeats=1)
    first_done = next(i for i, ln in enumerate(lines) if "done arm a" in ln)
    assert "images/sec" not in lines[first_done + 1]


def shared_rec(arm: str, degradation: float, elapsed: float) -> dict[str, Any]:
    return make_record(
        run_id="x",
        suite="s",
        experiment="shared",
        model="alexnet",
        batch_size=32,
        scenario="shared",
        arm=arm,
        topology="local",
        images_per_sec=10.0,
        metrics={
            "images_per_sec_degradation": degradation,
            "elapsed_degradation": elapsed,
            "elapsed_alone_s": 4.0,
            "elapsed_shared_s": 5.0,
        },
    )


def sharing_rec(arm: str, aggregate: float, completion: float) -> dict[str, Any]:
    return make_record(
        run_id="x",
        suite="s",
        experiment="sharing",
        model="mnist_cnn",
        batch_size=16,
        scenario="sharing",
        arm=arm,
        topology="local",
        images_per_sec=40.0,
        params={"jobs": 4},
        metrics={"aggregate_throughput_ratio": aggregate, "completion_time_ratio": completion},
    )


class JournalDouble:
    """The part of a Journal EarlyLines reads: arms, baseline, order and unit statuses."""

    def __init__(self, done: set[Unit]) -> None:
        self.data = {"baseline": "native", "arms": {"native": {}, "shared": {}, "nway": {}}}
        self.done = done

    def order(self) -> list[Unit]:
        return [Unit(a, r) for r in (1, 2) for a in ("native", "shared", "nway")]

    def unit(self, u: Unit) -> dict[str, str]:
        return {"status": "done" if u in self.done else "pending"}


def test_shared_and_sharing_units_show_their_own_ratios_then_over_the_repeats() -> None:
    recs = {
        Unit("shared", 1): [shared_rec("shared", 0.40, 0.70)],
        Unit("shared", 2): [shared_rec("shared", 0.30, 0.50)],
        Unit("nway", 1): [sharing_rec("nway", 1.30, 2.00)],
        Unit("nway", 2): [sharing_rec("nway", 1.10, 2.20)],
    }
    journal = JournalDouble({Unit("shared", 1), Unit("nway", 1)})
    early = EarlyLines(journal, read=lambda u: recs[u])  # type: ignore[arg-type]
    assert early.after(Unit("shared", 1)) == [
        "  shared, repeat 1: alexnet: images/sec lower by 40 %, timed window longer by 70 %, "
        "job elapsed longer by 25 %"  # 5.0 s / 4.0 s - 1, as the report has it
    ]
    assert early.after(Unit("nway", 1)) == [
        "  nway (4 jobs), repeat 1: mnist_cnn: aggregate throughput 1.30x one job, "
        "completion time 2.00x one job's"
    ]
    journal.done |= {Unit("nway", 2)}
    assert early.after(Unit("nway", 2)) == [
        "  nway (4 jobs), repeat 2: mnist_cnn: aggregate throughput 1.10x one job, "
        "completion time 2.20x one job's",
        # the mean of the repeats' own ratios, mean +- t(0.975, 1) s/sqrt 2 = 12.71 * 0.1
        "  nway (4 jobs) over 2 repeats: mnist_cnn: aggregate throughput 1.20x one job "
        "[-0.07, 2.47], completion time 2.10x one job's [0.83, 3.37]",
    ]
    # a unit not done, or a failed one, completes nothing
    assert early.after(Unit("shared", 2)) == []


def test_a_record_file_that_cannot_be_read_gives_no_line_and_no_error() -> None:
    journal = JournalDouble({Unit("nway", 1)})

    def unreadable(u: Unit) -> list[dict[str, Any]]:
        raise OSError("gone")

    assert EarlyLines(journal, read=unreadable).after(Unit("nway", 1)) == []  # type: ignore[arg-type]


# --- the parts, called directly -----------------------------------------------------------


def single(experiment: str, model: str, batch: int | None, ips: Any, **kw: Any) -> dict[str, Any]:
    rec = {"scenario": "single", "experiment": experiment, "model": model, "images_per_sec": ips}
    if batch is not None:
        rec["batch_size"] = batch
    return rec | kw


def test_rates_average_a_units_repetitions_of_positive_single_job_rates() -> None:
    from infra.study.early import _rates

    recs = [
        single("e", "m", 8, 10.0),
        single("e", "m", 8, 20.0),  # two repetitions: their mean
        single("e2", "m", 8, 5.0),  # another experiment, the same model and batch
        single("e", "m", None, 7),  # no batch recorded: batch 0
        single("slow", "m", 8, 0.5),  # under one image a second is still a rate
        single("zero", "m", 8, 0.0),  # no rate
        single("neg", "m", 8, -1.0),
        single("none", "m", 8, None),
        single("flag", "m", 8, True),  # a bool is no rate
        single("nan", "m", 8, float("nan")),
        {**single("shared-fg", "m", 8, 99.0), "scenario": "shared"},  # not a single job
    ]
    assert _rates(recs) == {
        ("e", "m", 8): 15.0,
        ("e2", "m", 8): 5.0,
        ("e", "m", 0): 7.0,
        ("slow", "m", 8): 0.5,
    }


def test_mean_leaves_non_finite_values_out_and_has_none_of_nothing() -> None:
    from infra.study.early import _mean

    assert _mean([1.0, float("nan"), 3.0, float("inf")]) == 2.0
    assert _mean([float("nan")]) is None and _mean([]) is None


def test_own_ratios_per_experiment_model_and_batch_repetitions_averaged() -> None:
    from infra.study.early import JOB_ELAPSED, _own

    def shared(exp: str, batch: int | None, deg: float, **metrics: Any) -> dict[str, Any]:
        rec: dict[str, Any] = {"scenario": "shared", "experiment": exp, "model": "alexnet"}
        rec["metrics"] = {"images_per_sec_degradation": deg, **metrics}
        return rec | ({"batch_size": batch} if batch is not None else {})

    recs = [
        {"scenario": "shared", "experiment": "x", "model": "alexnet", "metrics": None},  # none
        shared("fg", 32, 0.40, elapsed_alone_s=4.0, elapsed_shared_s=5.0),
        shared("fg", 32, 0.20, elapsed_alone_s=4.0, elapsed_shared_s=7.0),
        shared("fg2", 32, 0.10, elapsed_alone_s=0.0, elapsed_shared_s=5.0),  # no alone time
        shared("fg3", None, 0.30, elapsed_alone_s=4.0, elapsed_shared_s=None),
        {"scenario": "single", "experiment": "s", "model": "m", "metrics": {"x": 1.0}},
    ]
    key, key2, key3 = ("fg", "alexnet", 32), ("fg2", "alexnet", 32), ("fg3", "alexnet", 0)
    got = _own(recs)
    assert got == {
        ("shared", key, "images_per_sec_degradation"): 0.30000000000000004,
        ("shared", key, JOB_ELAPSED): 0.5,  # (0.25 + 0.75) / 2
        ("shared", key2, "images_per_sec_degradation"): 0.1,
        ("shared", key3, "images_per_sec_degradation"): 0.3,
    }


def test_a_model_measured_at_two_batches_is_named_with_its_batch() -> None:
    from infra.study.early import _name

    keys = [("e", "alexnet", 32), ("e", "alexnet", 64), ("e", "mnist_cnn", 32)]
    assert [_name(k, keys) for k in keys] == ["alexnet b32", "alexnet b64", "mnist_cnn"]
    assert _name(("e", "alexnet", 32), keys[:1]) == "alexnet"


def test_over_the_repeats_needs_two_values_and_shows_percentages_as_such() -> None:
    from infra.study.early import _over
    from report.intervals import LINEAR, LOG

    assert _over([0.4], LINEAR, "%") == ""
    assert _over([], LOG, "x") == ""
    # mean 0.30, s = 0.1414, half-width t(0.975, 1) * s / sqrt 2 = 12.706 * 0.1 = 1.2706
    assert _over([0.40, 0.20], LINEAR, "%") == "30 % [-97, 157]"
    assert _over([0.90, 0.70], LINEAR, "%") == "80 % [-47, 207]"
    assert _over([1.3, 1.1], LINEAR, "x one job") == "1.20x one job [-0.07, 2.47]"


class Arms3(JournalDouble):
    def __init__(self, done: set[Unit]) -> None:
        super().__init__(done)
        self.data = {"baseline": "native", "arms": {"native": {}, "docker": {}, "other": {}}}

    def order(self) -> list[Unit]:
        return [Unit(a, r) for r in (1, 2) for a in ("native", "docker", "other")]


def test_an_arms_unit_completes_its_own_ratio_and_the_baseline_completes_every_arms() -> None:
    recs = {
        Unit("native", 1): [single("e", "alexnet", 8, 10.0), single("e", "mnist_cnn", 64, 100.0)],
        # docker measured one more model than the baseline: only the models both measured
        Unit("docker", 1): [
            single("e", "alexnet", 8, 9.0),
            single("e", "mnist_cnn", 64, 80.0),
            single("e", "resnet50", 4, 1.0),
        ],
        Unit("other", 1): [single("e", "alexnet", 8, 5.0)],
        Unit("native", 2): [single("e", "alexnet", 8, 10.0)],
    }
    journal = Arms3({Unit("native", 1), Unit("docker", 1), Unit("other", 1), Unit("native", 2)})
    early = EarlyLines(journal, read=lambda u: recs[u])  # type: ignore[arg-type]
    # repeat 2's docker unit is not done: repeat 1's line alone, no line over the repeats
    assert early.after(Unit("docker", 1)) == [
        "  docker/native images/sec, repeat 1: alexnet 0.90x, mnist_cnn 0.80x"
    ]
    assert early.after(Unit("native", 1)) == [
        "  docker/native images/sec, repeat 1: alexnet 0.90x, mnist_cnn 0.80x",
        "  other/native images/sec, repeat 1: alexnet 0.50x",
    ]


def test_a_unit_done_again_is_read_again() -> None:
    recs = {Unit("nway", 1): [sharing_rec("nway", 1.30, 2.00)]}
    journal = JournalDouble({Unit("nway", 1)})
    early = EarlyLines(journal, read=lambda u: recs[u])  # type: ignore[arg-type]
    assert "1.30x" in early.after(Unit("nway", 1))[0]
    journal.done = set()  # `study run --fresh`, or a unit run again
    assert early.after(Unit("nway", 1)) == []
    recs[Unit("nway", 1)] = [sharing_rec("nway", 1.50, 2.00)]
    journal.done = {Unit("nway", 1)}
    assert "aggregate throughput 1.50x" in early.after(Unit("nway", 1))[0]


def test_a_shared_unit_with_two_models_and_its_percentages_over_the_repeats() -> None:
    def fg(model: str, deg: float) -> dict[str, Any]:
        rec = shared_rec("shared", deg, 0.5)
        return rec | {"model": model, "params": {**rec["params"], "jobs": 2}}

    recs = {
        Unit("shared", 1): [fg("alexnet", 0.40), fg("resnet50", 0.10)],
        Unit("shared", 2): [fg("alexnet", 0.20), fg("resnet50", 0.30)],
    }
    journal = JournalDouble({Unit("shared", 1), Unit("shared", 2)})
    early = EarlyLines(journal, read=lambda u: recs[u])  # type: ignore[arg-type]
    lines = early.after(Unit("shared", 2))
    assert lines[0] == (
        "  shared (2 jobs), repeat 2: alexnet: images/sec lower by 20 %, timed window longer by"
        " 50 %, job elapsed longer by 25 %; resnet50: images/sec lower by 30 %, timed window"
        " longer by 50 %, job elapsed longer by 25 %"
    )
    assert lines[1].startswith(
        "  shared (2 jobs) over 2 repeats: alexnet: images/sec lower by 30 % [-97, 157],"
    )
    assert "; resnet50: images/sec lower by 20 % [-107, 147]," in lines[1]
    assert len(lines) == 2


class Arms3x3(Arms3):
    def order(self) -> list[Unit]:
        return [Unit(a, r) for r in (1, 2, 3) for a in ("native", "docker", "other")]


def test_over_the_repeats_skips_a_repeat_not_done_and_a_model_one_arm_missed() -> None:
    both = [single("e", "alexnet", 8, 10.0), single("e", "mnist_cnn", 64, 100.0)]
    recs = {
        Unit("native", 1): [single("e", "alexnet", 8, 10.0)],  # no mnist_cnn
        Unit("docker", 1): [single("e", "alexnet", 8, 9.0), single("e", "mnist_cnn", 64, 80.0)],
        Unit("native", 2): both,  # docker's repeat 2 is not done
        Unit("native", 3): both,
        Unit("docker", 3): [single("e", "alexnet", 8, 7.0)],
    }
    done = {Unit("native", 1), Unit("docker", 1), Unit("native", 2), Unit("native", 3)}
    journal = Arms3x3(done | {Unit("docker", 3)})

    def after() -> list[str]:  # a new reader each time: a done unit's records are cached
        early = EarlyLines(journal, read=lambda u: recs[u])  # type: ignore[arg-type]
        return early.after(Unit("docker", 3))

    # repeats 1 and 3: 0.9 and 0.7, geometric mean 0.79
    assert after() == [
        "  docker/native images/sec, repeat 3: alexnet 0.70x",
        "  docker/native images/sec over 2 repeats: alexnet 0.79x [0.16, 3.92]",
    ]
    # mnist_cnn now in repeat 3, but the baseline missed it in repeat 1: one repeat, so no
    # line over the repeats (it needs every model's two)
    recs[Unit("docker", 3)] = [single("e", "alexnet", 8, 7.0), single("e", "mnist_cnn", 64, 90.0)]
    assert after() == ["  docker/native images/sec, repeat 3: alexnet 0.70x, mnist_cnn 0.90x"]
    recs[Unit("native", 1)] = both
    lines = after()
    assert lines[1].startswith("  docker/native images/sec over 2 repeats: alexnet 0.79x [")
    assert "], mnist_cnn 0.85x [" in lines[1] and len(lines) == 2


def test_over_the_repeats_counts_the_repeats_every_model_has() -> None:
    def fg(model: str, deg: float) -> dict[str, Any]:
        return shared_rec("shared", deg, 0.5) | {"model": model}

    recs = {
        Unit("shared", 1): [fg("resnet50", 0.10)],  # alexnet from repeat 2 on
        Unit("shared", 2): [fg("alexnet", 0.40), fg("resnet50", 0.30)],
    }
    journal = JournalDouble({Unit("shared", 1), Unit("shared", 2)})
    journal.order = lambda: [Unit("shared", r) for r in (1, 2, 3)]  # type: ignore[method-assign]
    recs[Unit("shared", 3)] = [fg("alexnet", 0.20), fg("resnet50", 0.20)]
    journal.done.add(Unit("shared", 3))
    early = EarlyLines(journal, read=lambda u: recs[u])  # type: ignore[arg-type]
    lines = early.after(Unit("shared", 3))
    assert lines[1].startswith("  shared over 2 repeats: alexnet: "), lines
