"""A hostile value in every string field of a record reaches no output raw.

Each string field of the records (and of their fingerprint, params, metrics' names, setting
flags and claims) carries a payload: HTML (``<script>``, ``<img onerror>``), a ``|`` that would
split a Markdown table, a spreadsheet formula (``=cmd|' /C calc'!A0``), the other formula
starts (``+ - @``, tab, CR), a newline and Rich markup. Every output is checked: CSV (OWASP
neutralization, numbers still numbers), Markdown (escaped; every table row keeps its columns),
HTML (no element or attribute comes from a value), and the console output of
``gpulab report``.
"""

from __future__ import annotations

import csv
import html.parser
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from report import build_report
from report.build import ReportResult
from report.render import CSV_COLUMNS, csv_cell, md
from tests.report import synth

CORE = (
    "<script>alert(1)</script><img src=x onerror=alert(2)>|=cmd|' /C calc'!A0\n"
    "[bold]x[/bold]\x1b[31m"
)
STARTS = ("=", "+", "-", "@", "\t", "\r", "=cmd|' /C calc'!A0 ", "<img src=x onerror=alert(3)>")
FORMULA = ("=", "+", "-", "@", "\t", "\r")


def hostile(i: int) -> str:
    return f"{STARTS[i % len(STARTS)]}{CORE}{i}"


def _poison(value: Any, counter: list[int]) -> Any:
    if isinstance(value, str):
        counter[0] += 1
        return hostile(counter[0])
    if isinstance(value, list):
        return [_poison(v, counter) for v in value]
    if isinstance(value, dict):
        return {
            (_poison(k, counter) if k in ("variant",) else k): _poison(v, counter)
            for k, v in value.items()
        }
    return value


# fields whose values the record schema constrains (a payload there is refused at load time)
CONSTRAINED = {"kind", "status", "virtualization", "schema_version", "error"}


def poisoned_records() -> list[dict[str, Any]]:
    """Two arms (so ratio figures and every table render), payloads in every free string."""
    out = []
    for arm, f in (("native", 1.0), ("docker", 0.9)):
        recs = synth.reps(
            "local",
            arm,
            experiment="e",
            model="m",
            ips=100.0 * f,
            elapsed=10.0 / f,
            repeats=2,
            fp=synth.fingerprint("bm"),
            params={"variant": "v", "image_size": 32},
            metrics={"delta": -0.5 * f},
            claims=["c"],
        )
        out += recs
    counter = [0]
    poisoned = []
    for rec in out:
        new = {k: (v if k in CONSTRAINED else _poison(v, counter)) for k, v in rec.items()}
        # the grouping fields get one payload per field, shared by both arms, so the two arms
        # stay one comparable group; topology/arm differ per arm
        for i, key in enumerate(("suite", "experiment", "model", "scenario", "data")):
            new[key] = hostile(i)
        new["params"]["variant"] = hostile(5)
        new["metrics"] = {hostile(6): rec["metrics"]["delta"]}
        if rec["arm"] == "docker":
            new["topology"] = hostile(7)
            new["arm"] = f"{hostile(0)}docker"  # "=...": a formula start in the CSV's arm
        else:  # the baseline: local/native, found by default
            new["topology"], new["arm"] = "local", "native"
        new["setting_flags"] = [hostile(3)]
        new["steps"] = 5
        # the settings a comparison pairs on (report.mapping.paired_settings): one payload
        # each, shared by both arms, or the report refuses to compare them
        new["fingerprint"]["software"]["backend"]["keras_backend"] = hostile(8)
        new["fingerprint"]["gpu"]["gpus"][0]["name"] = hostile(9)
        poisoned.append(new)
    failed = dict(poisoned[0], status="failed", error=hostile(4), record_id="x" + hostile(2))
    return [*poisoned, failed]


@pytest.fixture(scope="module")
def rep(tmp_path_factory: pytest.TempPathFactory) -> ReportResult:
    d = tmp_path_factory.mktemp("inject")
    src = synth.write(d / "in" / "r.jsonl", poisoned_records())
    return build_report([src], d / "out", pool=True)  # every run_id carries a payload


def test_the_payloads_reach_every_output(rep: ReportResult) -> None:
    """The test can fail: the values are there (escaped), so a raw one would be seen."""
    assert len(rep.table.arms) == 2 and len(rep.excluded) == 1
    assert any(f.path.name.endswith("_absolute.png") for f in rep.figures)
    assert len(rep.figures) >= 4  # absolute and ratio figures drew the hostile labels
    assert "onerror" in rep.html.read_text(encoding="utf-8")
    assert "onerror" in rep.markdown.read_text(encoding="utf-8")
    assert "cmd|" in rep.csv.read_text(encoding="utf-8")


def test_csv_cells_are_neutralized_and_numbers_stay_numbers(rep: ReportResult) -> None:
    with open(rep.csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    assert tuple(rows[0]) == CSV_COLUMNS
    numeric = {"n", "median", "ci95_lo", "ci95_hi", "cv", "cv_flag", "batch_size"}
    seen_negative = False
    for row in rows[1:]:
        for col, cell in zip(CSV_COLUMNS, row, strict=True):
            if cell.startswith(FORMULA):
                float(cell)  # only a plain number may start so
                assert col in numeric | {"normalized", "baseline_median"}, (col, cell)
                seen_negative = seen_negative or cell.startswith("-")
            hostile_cols = ("suite", "experiment", "model", "scenario", "data", "variant")
            if col in hostile_cols or (col == "metric" and "_s" not in cell):
                assert cell.startswith("'") and "alert(1)" in cell, (col, cell)
            if col == "arm" and cell != "native":
                assert cell.startswith("'=<script>"), cell
    assert seen_negative  # the metric of -0.5 is written as a number, not neutralized


@pytest.mark.parametrize(
    ("value", "cell"),
    [
        ("=1+1", "'=1+1"),
        ("+cmd", "'+cmd"),
        ("-cmd", "'-cmd"),
        ("@SUM(A1)", "'@SUM(A1)"),
        ("\tx", "'\tx"),
        ("\rx", "'\rx"),
        ("-0.5", "-0.5"),
        ("+1e3", "+1e3"),
        ("- 1", "'- 1"),
        ("safe", "safe"),
        (-0.5, "-0.5"),
        (3, 3),
        (None, ""),
        (True, 1),
    ],
)
def test_csv_cell(value: Any, cell: Any) -> None:
    assert csv_cell(value) == cell


def _md_cells(line: str) -> int:
    return len(re.findall(r"(?<!\\)\|", line)) - 1


def test_markdown_is_escaped_and_tables_keep_their_shape(rep: ReportResult) -> None:
    text = rep.markdown.read_text(encoding="utf-8")
    assert not re.search(r"<(script|img)", text, flags=re.I)
    assert "\r" not in text and "\t" not in text and "\x1b" not in text
    assert "&lt;script&gt;" in text and "&lt;img src=x onerror" in text
    lines = text.split("\n")
    header_cells = None
    for line in lines:
        if not line.startswith("|"):
            header_cells = None
            continue
        assert line.endswith("|"), line
        if header_cells is None:
            header_cells = _md_cells(line)
        assert _md_cells(line) == header_cells, line
    # a value's newline started no line of its own
    assert not any(line.lstrip().startswith(("[bold]", "\\[bold\\]")) for line in lines)
    assert "\\[bold\\]x\\[/bold\\]" in text
    # the only HTML this file holds is the report's own <details>/<summary>
    assert set(re.findall(r"<(/?[a-zA-Z]+)", text)) <= {
        "details",
        "/details",
        "summary",
        "/summary",
        "br",
    }


def test_md_escape() -> None:
    assert md("a|b\nc<d>&`*[x]") == "a\\|b c&lt;d&gt;&amp;\\`\\*\\[x\\]"


class _Tags(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def test_html_holds_no_element_or_attribute_from_a_value(rep: ReportResult) -> None:
    text = rep.html.read_text(encoding="utf-8")
    parser = _Tags()
    parser.feed(text)
    names = {t for t, _ in parser.tags}
    assert "script" not in names
    assert "details" in names and "summary" in names
    imgs = [dict(a) for t, a in parser.tags if t == "img"]
    assert len(imgs) == len(rep.figures)
    for attrs in imgs:
        assert set(attrs) == {"src", "alt"}
        assert (attrs["src"] or "").startswith("data:image/png;base64,")
    for _tag, attrs in parser.tags:
        assert not any(k.startswith("on") for k, _ in attrs), attrs


@pytest.mark.integration
def test_console_output_of_gpulab_report(rep: ReportResult, tmp_path: Path) -> None:
    from infra.cli import app

    src = next(rep.out_dir.parent.glob("in/*.jsonl"))
    res = CliRunner().invoke(app, ["report", str(src), "--out-dir", str(tmp_path / "o"), "--pool"])
    assert res.exit_code == 0, res.output
    out = res.output
    assert "\r" not in out and "\t" not in out and "\x1b" not in out
    assert "[bold]x[/bold]" in out  # markup printed as text, not applied
    assert "claims checkable with these records" in out
