"""JSON Lines read once per line (report.scan_sql.json_source: ``read_json`` into a map of
each top-level key to its JSON text): what the map cannot tell apart on its own gives the
Python reader's results. Nothing is mocked: real files, DuckDB and the Python path
(``engine="python"``) side by side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from report import build_report
from report.build import _duckdb, _python
from report.scan import scan
from tests.report import synth
from workloads.errors import InputError


def _rows(loaded: Any) -> list[tuple[Any, ...]]:
    return [
        (r.key, r.arm, r.metric, r.summary, r.norm, r.image_sizes, r.steps)
        for r in loaded.table.rows
    ]


def _same(inputs: list[Any]) -> tuple[Any, Any]:
    pa: list[str] = []
    pd: list[str] = []
    a = _python(inputs, None, False, pa)
    b = _duckdb(inputs, None, False, pd)
    assert _rows(a) == _rows(b) and a.table.rows
    assert (a.total, a.kept, len(a.excluded)) == (b.total, b.kept, len(b.excluded))
    assert pa == pd
    return a, b


def _lines(path: Path, recs: list[dict[str, Any]], edit: Any = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    texts = [json.dumps(r) for r in recs]
    if edit is not None:
        texts = [edit(i, t) for i, t in enumerate(texts)]
    path.write_text("\n".join(texts) + "\n", encoding="utf-8")
    return path


def test_a_json_null_is_a_present_field_not_an_unknown_key(tmp_path: Path) -> None:
    """``"error": null`` is a NULL map value: still counted as a known field that is there
    (the file stays on the DuckDB path and nothing goes to the Python reader)."""
    recs = synth.paper_like()[:40]
    for r in recs:
        r["error"] = None
    src = _lines(tmp_path / "in" / "a.jsonl", recs)
    _same([src])
    sc = scan([src])
    assert sc.total == 40 and sc.problems == []


def test_a_repeated_key_gives_the_python_readers_value(tmp_path: Path) -> None:
    """A line repeating a key (JSON allows it; Python keeps the last value): DuckDB refuses
    the map, so the file is read by the Python reader and the table is the Python path's."""
    recs = [r for r in synth.paper_like() if r.get("images_per_sec")][:40]

    def repeat(i: int, text: str) -> str:
        if i != 5:
            return text
        return text[:-1] + ', "images_per_sec": 1.0}'  # the last value wins in Python

    src = _lines(tmp_path / "in" / "a.jsonl", recs, repeat)
    _, b = _same([src])
    values = [v for r in b.table.rows if r.metric == "images_per_sec" for v in r.summary.values]
    assert 1.0 in values


def test_an_unknown_key_next_to_a_missing_known_one_is_still_unknown(tmp_path: Path) -> None:
    """The unknown-field test counts keys: a record without ``error`` but with ``colour`` has
    as many keys as a complete one; it is still refused with the Python reader's message."""
    recs = synth.paper_like()[:10]
    recs[3] = dict(recs[3])
    recs[3].pop("error", None)
    recs[3]["colour"] = "red"
    src = _lines(tmp_path / "in" / "a.jsonl", recs)
    errors = []
    for engine in ("duckdb", "python"):
        with pytest.raises(InputError) as exc:
            build_report([src], tmp_path / f"rep-{engine}", engine=engine)
        errors.append(str(exc.value))
    assert "colour" in errors[1] and errors[0] == errors[1]


def test_a_line_that_is_not_an_object_names_its_line(tmp_path: Path) -> None:
    """A JSON array or a bare value on a line fails the map read: the file goes to the
    Python reader, which names file and line exactly as the Python path does."""
    recs = synth.paper_like()[:10]
    src = _lines(tmp_path / "in" / "a.jsonl", recs, lambda i, t: "[1, 2]" if i == 4 else t)
    errors = []
    for engine in ("duckdb", "python"):
        with pytest.raises(InputError) as exc:
            build_report([src], tmp_path / f"rep-{engine}", engine=engine)
        errors.append(str(exc.value))
    assert f"{src}:5" in errors[1] and errors[0] == errors[1]


@pytest.mark.parametrize(
    ("field", "text", "message"),
    [
        ("repeat", "1.0", "record field 'repeat' has type float"),
        ("global_batch", "2e3", "record field 'global_batch' has type float"),
        ("steps", "-1E2", "record field 'steps' has type float"),
        ("warmup", "NaN", "record field 'warmup' has type float"),
        ("schema_version", "3.0", "record field 'schema_version' has type float"),
        ("batch_size", "-Infinity", "record field 'batch_size' has type float"),
        ("host", "-7", "record field 'host' has type int"),
        ("arm", "null", "record field 'arm' has type NoneType"),
    ],
)
def test_a_field_of_another_json_type_is_refused_on_both_engines(
    tmp_path: Path, field: str, text: str, message: str
) -> None:
    """The signature reads most fields' types from the first character of their text, and
    whether the int fields are written as ints: a float, an exponent or NaN where an int
    belongs, a number or null where a string belongs, refuse the record on both engines,
    naming file and line."""
    recs = synth.reps("local", "native", experiment="e", model="m", ips=1.0, repeats=3)
    lines = [json.dumps(r) for r in recs]
    lines[1] = json.dumps({**recs[1], field: "@"}).replace('"@"', text)
    p = tmp_path / "r.jsonl"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for load in (_python, _duckdb):
        with pytest.raises(InputError, match=rf"r.jsonl:2: .*{message}"):
            load([p], None, False, [])
