"""The study report from a journal and records made by a DOUBLE of the runner (no framework):
the verdict table per claim (a method check without a GPU, verdicts with one, each study
repeat one unit), the arms that are missing or failed, the paired-arm warnings on the claims
they affect, and --strict."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from infra.cli import main
from infra.study.driver import Driver, RunOptions
from infra.study.model import load_study
from infra.study.state import find_journal
from report.claims import units_needed
from tests.study.helpers import write_study
from workloads.records import RecordWriter, make_record

SINGLE = "closer2018/single_synthetic"
SHARED = "closer2018/shared"


def fingerprint(tf: str, gpu: bool) -> dict:
    fp: dict = {"cpu": {"model": "Xeon"}, "software": {"packages": {"tensorflow": tf}}}
    fp["gpu"] = {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]} if gpu else {"gpus": []}
    return fp


class Runner:
    """Records as the runner writes them (workloads.records.RecordWriter: schema 3, the
    fingerprint in full in the first record of the file only, named by ``fingerprint_ref`` in
    all): the native arm at 100 images/sec (10 s), the other arm at ``rate`` (its elapsed time
    in proportion), each study repeat (read from the run id the driver gives a local unit,
    ``<study>-r<repeat>``) 1 % faster or slower than the last; ``tf`` per arm (a different
    framework version breaks the pairing); ``first_fails``: each unit's first measurement
    fails (out of memory), so the record that carries the fingerprint is not an ok one."""

    def __init__(
        self, rate: float, tf: dict[str, str], gpu: bool = False, first_fails: bool = False
    ) -> None:
        self.rate, self.tf, self.gpu, self.first_fails = rate, tf, gpu, first_fails

    def close(self) -> None:
        pass

    def run(self, arm, suite, out, log, run_id, on_start=None):  # type: ignore[no-untyped-def]
        from infra.study.local import UnitResult
        from workloads.suites import load_suite

        if arm.name == "gone":
            return UnitResult("failed", "runner exited 1: out of memory")
        repeat = int(run_id.rsplit("-r", 1)[1])
        f = 1.0 + 0.01 * ((repeat + (arm.name != "native")) % 3 - 1)
        w = RecordWriter(out)
        try:
            for i in range(load_suite(suite).measurements):  # one per measurement, as the runner
                rec = make_record(
                    run_id=run_id,
                    suite="s",
                    experiment="single_synthetic",
                    model="mnist_cnn",
                    batch_size=16,
                    steps=5,
                    warmup=1,
                    repeat=i,
                    arm=arm.label,
                    topology="local",
                    gpu_path="local",
                    exec_env="native",
                    virtualization="none" if arm.name == "native" else "container",
                    sharing="exclusive",
                    claims=[SINGLE],
                    images_per_sec=(100.0 if arm.name == "native" else self.rate) * f + 0.1 * i,
                    elapsed_s=10.0 if arm.name == "native" else 1000.0 / self.rate,
                    fingerprint=fingerprint(self.tf[arm.name], self.gpu),
                )
                if self.first_fails and i == 0:
                    rec.update(status="failed", images_per_sec=None, error="OOM")
                w.write(rec)
        finally:
            w.close()
        return UnitResult("done")


def run_study(tmp_path: Path, runner: Runner, repeats: int = units_needed(SINGLE)) -> None:
    write_study(
        tmp_path,
        repeats=repeats,
        claims=[SINGLE, SHARED],
        arms=[
            {"name": "native", "stack": "local", "exec_env": "native"},
            {"name": "box", "stack": "local", "exec_env": "native"},
            {"name": "gone", "stack": "local", "exec_env": "native"},
        ],
    )
    import io

    from rich.console import Console

    d = Driver(
        load_study(str(tmp_path / "t.yaml")),
        tmp_path / "results",
        RunOptions(),
        Console(file=io.StringIO()),
    )
    d.local = runner  # type: ignore[assignment]
    d.run()


def report(tmp_path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    path = str(tmp_path / "t.yaml")
    rc = main(["study", "report", path, "--results-dir", str(tmp_path / "results"), *extra])
    cap = capsys.readouterr()
    return rc, cap.out + cap.err


def verdicts(tmp_path: Path) -> dict[str, dict]:
    data = json.loads((tmp_path / "results/study-t/report/study.json").read_text())
    return {v["claim"]: v for v in data["verdicts"]} | {"_": data}


def test_verdict_table_method_check_on_cpu_and_missing_arms_double(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    run_study(tmp_path, Runner(95.0, {"native": "2.21.0", "box": "2.21.0", "gone": "2.21.0"}))
    rc, out = report(tmp_path, capsys)
    assert rc in (0, None)
    v = verdicts(tmp_path)
    assert v[SINGLE]["label"] == "CPU"
    assert v[SINGLE]["verdict"] == "method check"  # no verdict word on a CPU
    assert "local/box mnist_cnn 0.9" in v[SINGLE]["measured"]  # 0.95x, over the units
    assert "[" in v[SINGLE]["measured"]  # and its interval
    assert f"n={units_needed(SINGLE)} units" in v[SINGLE]["measured"]
    assert v[SHARED]["verdict"] == "not measured"
    assert v["_"]["missing_arms"] == ["gone"]
    assert v["_"]["warnings"] == []
    assert "arms without a finished unit: gone" in out
    assert "reproduced" not in out
    md = (tmp_path / "results/study-t/report/study.md").read_text()
    n = units_needed(SINGLE)
    assert f"| gone | local | native | 0 | {n} | 0 | 0 | 0 | runner exited 1: out of memory |" in md
    assert (tmp_path / "results/study-t/report/report.html").is_file()


def test_a_slow_arm_is_not_reproduced_and_a_gpu_run_is_labelled_gpu_double(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    run_study(tmp_path, Runner(50.0, dict.fromkeys(("native", "box", "gone"), "2.21.0"), gpu=True))
    report(tmp_path, capsys)
    v = verdicts(tmp_path)
    assert (v[SINGLE]["verdict"], v[SINGLE]["label"]) == ("not reproduced", "GPU")


def test_fewer_repeats_than_a_verdict_needs_are_inconclusive_double(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    """Each study repeat is one unit, whatever the suite's repeats inside it: two repeats of
    three records each are 2 units, and the verdict says how many it needs."""
    gpu = dict.fromkeys(("native", "box", "gone"), "2.21.0")
    run_study(tmp_path, Runner(50.0, gpu, gpu=True), repeats=2)
    report(tmp_path, capsys)
    v = verdicts(tmp_path)
    assert v[SINGLE]["verdict"] == "inconclusive"
    assert f"n=2 units (a verdict needs {units_needed(SINGLE)} units)" in v[SINGLE]["measured"]


def test_fingerprint_difference_warns_on_the_claim_and_strict_stops_double(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    run_study(
        tmp_path, Runner(95.0, {"native": "2.21.0", "box": "2.20.0", "gone": "2.21.0"}), repeats=1
    )
    rc, out = report(tmp_path, capsys)
    v = verdicts(tmp_path)
    assert v[SINGLE]["warnings"] == [
        "box: framework: tensorflow 2.20.0 vs baseline native tensorflow 2.21.0"
    ]
    assert v[SHARED]["warnings"] == []  # the arm's records test single_synthetic only
    assert "paired-arm warning, arm box: framework" in out
    rc, out = report(tmp_path, capsys, "--strict")
    assert rc == 1
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert lines == [
        "gpulab: error: study t: arms not paired (1 difference(s)); first: arm box: "
        "framework: tensorflow 2.20.0 vs baseline native tensorflow 2.21.0"
    ]
    assert find_journal(tmp_path / "results", "t").counts()["failed"] == 1


def test_fingerprint_carried_by_a_failed_first_record_still_pairs_the_arms_double(
    tmp_path: Path, capsys
) -> None:  # type: ignore[no-untyped-def]
    """Schema 3: a unit's ok records name the fingerprint that only its failed first record
    carries; the paired-arm check and the device label still see it."""
    tf = {"native": "2.21.0", "box": "2.20.0", "gone": "2.21.0"}
    run_study(tmp_path, Runner(95.0, tf, gpu=True, first_fails=True), repeats=1)
    unit = tmp_path / "results/study-t/units/box.r1.jsonl"
    recs = [json.loads(ln) for ln in unit.read_text().splitlines()]
    assert recs[0]["status"] == "failed" and "fingerprint" in recs[0]
    assert [r["status"] for r in recs[1:]] == ["ok"] * (len(recs) - 1)
    assert all("fingerprint" not in r and r["fingerprint_ref"] for r in recs[1:])
    report(tmp_path, capsys)
    v = verdicts(tmp_path)
    assert v[SINGLE]["warnings"] == [
        "box: framework: tensorflow 2.20.0 vs baseline native tensorflow 2.21.0"
    ]
    assert v[SINGLE]["label"] == "GPU"


def test_status_lists_every_unit_with_its_reason_double(
    tmp_path: Path, capsys, monkeypatch
) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "250")  # a wide terminal: one table row per unit
    run_study(tmp_path, Runner(95.0, dict.fromkeys(("native", "box", "gone"), "2.21.0")), 1)
    rc = main(
        ["study", "status", str(tmp_path / "t.yaml"), "--results-dir", str(tmp_path / "results")]
    )
    out = capsys.readouterr().out
    assert rc in (0, None)
    assert "2 done, 1 failed, 0 skipped, 0 not run; order interleaved" in out
    assert "runner exited 1: out of memory" in out
    assert (
        main(["study", "status", str(tmp_path / "t.yaml"), "--results-dir", str(tmp_path / "x")])
        == 2
    )
    assert "not run yet" in capsys.readouterr().err
