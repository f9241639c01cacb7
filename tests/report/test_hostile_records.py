"""Hostile records in the report: values that are not numbers are noted (how many, which
fields, where), never silently dropped; deep JSON, bad claims and odd file names are handled
the same by the DuckDB scan and the Python reader (``engine="python"``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from infra.cli import main
from report import build_report
from tests.report import synth
from workloads.errors import InputError


def good(tmp_path: Path) -> Path:
    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=100.0, repeats=3)
    recs += synth.reps("local", "docker", experiment="e", model="resnet50", ips=90.0, repeats=3)
    return synth.write(tmp_path / "in" / "good.jsonl", recs)


def line(tmp_path: Path, rid: str, text_fields: str = "", **fields: object) -> str:
    """A record of the good arm with ``fields`` set and ``text_fields`` (raw JSON text, for
    what json.dumps cannot write) added."""
    rec = json.loads((tmp_path / "in" / "good.jsonl").read_text().splitlines()[0])
    rec.update(fields, record_id=rid)
    text = json.dumps(rec)
    return text[:-1] + (", " + text_fields if text_fields else "") + "}"


def both(inputs: list[Path], out: Path) -> tuple[list[str], list[str]]:
    """The problems of the DuckDB report and of the Python one, which must agree."""
    a = build_report(inputs, out / "duckdb", engine="duckdb")
    b = build_report(inputs, out / "python", engine="python")
    assert [(r.arm, r.metric, r.summary.median, r.summary.n) for r in a.table.rows] == [
        (r.arm, r.metric, r.summary.median, r.summary.n) for r in b.table.rows
    ]
    return a.problems, b.problems


def test_values_that_are_not_numbers_are_noted_by_both_engines(tmp_path: Path) -> None:
    g = good(tmp_path)
    bad = tmp_path / "in" / "bad.jsonl"
    lines = [
        line(tmp_path, "a" * 32, images_per_sec=float("nan")),  # json.dumps writes NaN
        line(tmp_path, "b" * 32, images_per_sec=None).replace(
            '"images_per_sec": null', '"images_per_sec": 1e400'
        ),
        line(tmp_path, "c" * 32, elapsed_s=float("inf"), metrics={"tflops": float("-inf")}),
        line(tmp_path, "d" * 32, images_per_sec=10**400),  # an int beyond a double
    ]
    bad.write_text("".join(f"{ln}\n" for ln in lines))
    duck, py = both([g, bad], tmp_path / "rep")
    note = (
        f"{bad}: 5 value(s) that are not finite numbers (NaN, infinity or beyond a double's "
        "range) left out: elapsed_s, images_per_sec, metrics.tflops of 4 record(s) "
        "(line 1, 2, 3, 4)"
    )
    assert duck == py == [note]
    # in the report's pages and on the console too
    assert note in (tmp_path / "rep" / "duckdb" / "report.md").read_text()


def test_the_cli_prints_the_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    g = good(tmp_path)
    bad = synth.write(tmp_path / "in" / "nan.jsonl", [])
    bad.write_text(line(tmp_path, "e" * 32, images_per_sec=float("nan")) + "\n")
    assert main(["report", str(g), str(bad), "--out-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    assert "1 value(s) that are not finite numbers" in out and "images_per_sec" in out


@pytest.mark.integration
def test_words_duckdb_reads_as_numbers_and_python_does_not_are_skipped_alike(
    tmp_path: Path,
) -> None:
    """DuckDB's JSON reader takes nan, inf, Infinity (any case) for numbers; Python's takes
    NaN, Infinity and -Infinity only. Both engines give what the Python reader gives."""
    g = good(tmp_path)
    bad = tmp_path / "in" / "words.jsonl"
    words = ("nan", "inf", "-INF", "Infinity", "NaN")
    bad.write_text(
        "".join(
            line(tmp_path, f"{i:032x}", images_per_sec=None).replace(
                '"images_per_sec": null', f'"images_per_sec": {w}'
            )
            + "\n"
            for i, w in enumerate(words)
        )
    )
    duck, py = both([g, bad], tmp_path / "rep")
    assert duck == py
    assert f"{bad}:1: skipped" in duck[0] and f"{bad}:3: skipped" in duck[2]
    assert "2 value(s) that are not finite numbers" in duck[-1] and "(line 4, 5)" in duck[-1]


def test_a_number_word_in_an_int_field_is_refused_by_both_engines(tmp_path: Path) -> None:
    g = good(tmp_path)
    bad = tmp_path / "in" / "batch.jsonl"
    bad.write_text(line(tmp_path, "f" * 32, batch_size=float("nan")) + "\n")
    for engine in ("duckdb", "python"):
        with pytest.raises(
            InputError, match=f"^{bad}:1: record field 'batch_size' has type float$"
        ):
            build_report([g, bad], tmp_path / engine, engine=engine)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("claims", [{}], r":2: record field claims\[0\] has type dict, not a string"),
        ("setting_flags", [["x"]], r":2: record field setting_flags\[0\] has type list"),
        ("claims", json.loads("[" * 70 + "]" * 70), ":2: JSON nested deeper than 64 levels"),
        ("params", {"image_size": json.loads("[" * 70 + "]" * 70)}, ":2: JSON nested deeper"),
    ],
)
def test_bad_lists_and_deep_json_are_refused_by_both_engines(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    g = good(tmp_path)
    bad = tmp_path / "in" / "bad.jsonl"
    first = line(tmp_path, "1" * 32)
    bad.write_text(first + "\n" + line(tmp_path, "2" * 32, **{field: value}) + "\n")
    for engine in ("duckdb", "python"):
        with pytest.raises(InputError, match=f"^{bad}{message}"):
            build_report([g, bad], tmp_path / engine, engine=engine)


def test_file_names_duckdb_cannot_take_are_read_and_named(tmp_path: Path) -> None:
    """A name that is not UTF-8 (a lone surrogate in Python) and names with glob characters:
    read (DuckDB through a link), named as they are in the notes."""
    g = good(tmp_path)
    d = tmp_path / "odd"
    d.mkdir()
    raw = os.path.join(os.fsencode(d), b"run-\xff.jsonl")
    with open(raw, "wb") as fh:
        fh.write(line(tmp_path, "3" * 32, images_per_sec=float("nan")).encode() + b"\n")
    globby = d / "run[1]*.jsonl"
    globby.write_text(line(tmp_path, "4" * 32, elapsed_s=float("nan")) + "\n")
    duck, py = both([g, d], tmp_path / "rep")
    assert duck == py
    assert {n.split(":")[0] for n in duck} == {os.fsdecode(raw), str(globby)}


def test_the_cli_prints_a_name_that_is_not_utf8(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    g = good(tmp_path)
    out = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"rep-\xfe"))
    assert main(["report", str(g), "--out-dir", out]) == 0
    assert "rep-\\udcfe" in capsys.readouterr().out.replace("\n", "")
    assert (Path(out) / "report.html").is_file()


@pytest.mark.integration
def test_a_record_line_over_16_mib_is_read_by_both_engines(tmp_path: Path) -> None:
    """DuckDB's JSON reader stops at 16 MiB a line: that file goes to the Python reader."""
    g = good(tmp_path)
    big = tmp_path / "in" / "big.jsonl"
    big.write_text(line(tmp_path, "5" * 32, params={"note": "x" * (17 << 20)}) + "\n")
    duck, py = both([g, big], tmp_path / "rep")
    assert duck == py == []


def test_export_to_a_path_that_is_not_utf8(tmp_path: Path) -> None:
    g = good(tmp_path)
    out = os.fsdecode(os.path.join(os.fsencode(tmp_path), b"out-\xff.parquet"))
    assert main(["export", str(g), "--format", "parquet", "--out", out]) == 0
    assert Path(out).stat().st_size > 0
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []
