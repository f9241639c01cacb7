"""The report's, the export's and ``gpulab data``'s files: whole or not at all, the previous
ones kept when a write fails, and one file mode for all (``workloads.files.file_mode``)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.cli import main
from tests.report import synth
from workloads.files import file_mode
from workloads.records import RecordWriter, make_record, repair_tail


@pytest.fixture
def records(tmp_path: Path) -> Path:
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=100.0, repeats=3)
    recs += synth.reps("local", "docker", experiment="e", model="resnet50", ips=90.0, repeats=3)
    return synth.write(tmp_path / "in" / "r.jsonl", recs)


@pytest.fixture
def umask() -> Iterator[None]:
    old = os.umask(0o027)  # group may read, others not: every file must follow it
    try:
        yield
    finally:
        os.umask(old)


def modes(root: Path) -> dict[str, int]:
    return {
        str(p.relative_to(root)): stat.S_IMODE(p.stat().st_mode)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def test_a_failed_report_leaves_the_previous_one_whole(
    records: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "rep"
    assert main(["report", str(records), "--out-dir", str(out)]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert len(before) == 5  # CSV, Markdown, HTML and two figures
    (out / "report.csv").unlink()
    (out / "report.csv").mkdir()  # in the way of the new CSV
    more = synth.reps("local", "native", experiment="e2", model="alexnet", ips=50.0, repeats=3)
    synth.write(tmp_path / "in" / "more.jsonl", more)
    capsys.readouterr()
    assert main(["report", str(tmp_path / "in"), "--out-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"gpulab: error: cannot write {str(out / 'report.csv')!r}: Is a directory"]
    after = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert after == {p: b for p, b in before.items() if p.name != "report.csv"}  # untouched
    assert sorted(p.name for p in out.iterdir()) == [
        "figures",
        "report.csv",
        "report.html",
        "report.md",
    ]  # fmt: skip  (no staging directory left)


def test_every_file_gets_the_umask_mode(records: Path, tmp_path: Path, umask: None) -> None:
    """Report pages and figures, both exports, MNIST files, records and a torn line moved
    aside: one mode, what a plain open() gives under the umask (0640 here)."""
    assert file_mode() == 0o640
    assert main(["report", str(records), "--out-dir", str(tmp_path / "out" / "rep")]) == 0
    for fmt, name in (("parquet", "r.parquet"), ("openmetrics", "m.prom")):
        argv = ["export", str(records), "--format", fmt, "--out", str(tmp_path / "out" / name)]
        assert main(argv) == 0
    argv = ["data", "mnist-like", "--out-dir", str(tmp_path / "out" / "mnist"), "--train", "20"]
    assert main([*argv, "--test", "10"]) == 0
    rec_file = tmp_path / "out" / "run.jsonl"
    with RecordWriter(rec_file) as w:
        w.write(make_record(run_id="r", suite="s", experiment="e", model="m"))
    with open(rec_file, "a") as fh:
        fh.write('{"torn')
    assert repair_tail(rec_file) is not None  # moves the torn line to run.jsonl.partial
    got = modes(tmp_path / "out")
    assert len(got) == 13, got  # 3 pages, 2 figures, 2 exports, 4 MNIST files, 2 record files
    assert set(got.values()) == {0o640}, got
