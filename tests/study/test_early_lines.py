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
