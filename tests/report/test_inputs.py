"""Loading records (files, directories, stack-output summaries), bad input, the CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infra.cli import main
from report import build_report
from report.load import load_records
from tests.report import synth
from workloads.errors import InputError


def two_arms() -> list[dict]:
    recs = synth.reps("local", "native", experiment="e", model="alexnet", ips=10.0, elapsed=5.0)
    return recs + synth.reps(
        "local", "docker", experiment="e", model="alexnet", ips=9.0, elapsed=5.5
    )


def test_directory_and_duplicates(tmp_path: Path) -> None:
    recs = two_arms()
    synth.write(tmp_path / "a" / "one.jsonl", recs[:5])
    synth.write(tmp_path / "a" / "sub" / "two.jsonl", recs[5:])
    got = load_records([tmp_path / "a", tmp_path / "a" / "sub" / "two.jsonl"])
    assert sorted(r["record_id"] for r in got) == sorted(r["record_id"] for r in recs)


def test_truncated_last_line_is_skipped_and_reported(tmp_path: Path) -> None:
    p = synth.write(tmp_path / "r.jsonl", two_arms())
    p.write_text(p.read_text() + '{"schema_version": 1, "rec', encoding="utf-8")
    problems: list[str] = []
    assert len(load_records([p], problems)) == 10
    assert problems == [f"{p}:11: skipped (26 chars, last line, a writer killed mid-line)"]


def test_stack_output_summary_from_the_lifecycle(tmp_path: Path, monkeypatch) -> None:
    """A summary made by infra.summary (the stack-output shape) points at its record files."""
    from infra.summary import summarize_files

    monkeypatch.chdir(tmp_path)
    synth.write(Path("results/local/run1.jsonl"), two_arms())
    summary = summarize_files(["results/local/run1.jsonl"], suite="smoke")
    Path("results/local/run1.summary.json").write_text(json.dumps(summary), encoding="utf-8")
    nested = {"results": {"value": summary}}  # `pulumi stack output --json` shape
    Path("outputs.json").write_text(json.dumps(nested), encoding="utf-8")
    assert len(load_records(["results/local/run1.summary.json"])) == 10
    assert len(load_records(["outputs.json"])) == 10


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        (lambda d: [], "no inputs"),
        (lambda d: [d / "missing.jsonl"], "does not exist"),
        (lambda d: [synth.write(d / "empty.jsonl", [])], "no records in"),
        (lambda d: [(d / "x").mkdir() or d / "x"], "holds no *.jsonl"),
        (
            lambda d: [d.joinpath("s.json").write_text('{"a": 1}') and d / "s.json"],
            "names no existing",
        ),
        (
            lambda d: [d.joinpath("b.jsonl").write_text('{"x": 1\n{}\n') and d / "b.jsonl"],
            "b.jsonl:2: schema_version None is not supported",
        ),
    ],
)
def test_bad_inputs(tmp_path: Path, setup, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("*", r"\*")):
        load_records(setup(tmp_path))


def test_schema_versions_1_and_2_read_together_99_refused(tmp_path: Path) -> None:
    """Schema 1 records (no setting) stay readable beside schema 2; each file without the
    setting is named once, and its records are grouped as unknown setting."""
    recs = two_arms()
    old = [
        {
            k: v
            for k, v in r.items()
            if k not in ("gpu_path", "exec_env", "virtualization", "sharing", "setting_flags")
        }
        | {"schema_version": 1}
        for r in recs[:3]
    ]
    p1 = synth.write(tmp_path / "v1.jsonl", old)
    p2 = synth.write(tmp_path / "v2.jsonl", recs[3:])
    problems: list[str] = []
    got = load_records([p1, p2], problems)
    assert len(got) == len(recs)
    assert len(problems) == 1 and problems[0].startswith(f"{p1}: 3 record(s) carry no setting")
    bad = synth.write(tmp_path / "v99.jsonl", [dict(recs[0], schema_version=99)])
    with pytest.raises(InputError, match=r"v99.jsonl:1: schema_version 99 is not supported"):
        load_records([bad])


def test_invalid_record_names_file_and_line(tmp_path: Path) -> None:
    recs = two_arms()
    recs[1] = dict(recs[1], surprise=1)
    p = synth.write(tmp_path / "r.jsonl", recs)
    with pytest.raises(InputError, match=r"r.jsonl:2: record has unknown field 'surprise'"):
        load_records([p])


def test_no_ok_records_and_missing_baseline(tmp_path: Path) -> None:
    failed = synth.write(tmp_path / "f.jsonl", synth.bad_runs()[:1])
    with pytest.raises(InputError, match="no ok records to report"):
        build_report([failed], tmp_path / "out")
    ok = synth.write(tmp_path / "ok.jsonl", two_arms())
    with pytest.raises(InputError, match="baseline 'ironic-bm' has no ok records"):
        build_report([ok], tmp_path / "out", baseline="ironic-bm")


def test_cli_writes_the_report(tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:
    # A console wide enough for the note's path: rich folds a word longer than the line, and a
    # deeper tmp_path (one per pytest-xdist worker) is folded inside the text looked for below.
    monkeypatch.setenv("COLUMNS", "1000")
    src = synth.write(tmp_path / "r.jsonl", two_arms())
    with open(src, "a", encoding="utf-8") as fh:
        fh.write('{"schema_version": 2, "rec')  # a writer killed mid-line
    out = tmp_path / "out"
    assert main(["report", str(src), "--out-dir", str(out), "--baseline", "local/native"]) == 0
    for name in ("report.html", "report.md", "report.csv"):
        assert (out / name).is_file()
    assert any((out / "figures").glob("*.png"))
    printed = capsys.readouterr().out
    assert "not measured" in printed
    assert "r.jsonl:11: skipped (26 chars, last line, a writer" in " ".join(printed.split())


def test_cli_bad_input_is_one_line_exit_2(tmp_path: Path, capsys, monkeypatch) -> None:
    src = synth.write(tmp_path / "r.jsonl", two_arms())
    argv = ["report", str(src), "--out-dir", str(tmp_path / "o"), "--baseline", "nova-pci"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("gpulab: error: baseline 'nova-pci' has no ok records")
    assert len(err.splitlines()) == 1
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GPULAB_RESULTS", raising=False)  # the default root: ./results
    assert not os.path.exists("results")
    assert main(["report", "--out-dir", "o"]) == 2
    assert "./results does not exist" in capsys.readouterr().err
