"""The study report's own parts (infra/study/verdicts.py) called directly, milliseconds a case:
the units' records read back with their fingerprints, each arm's row, what a claim's checks
measured, the device label, the report's engines tried in turn, the verdict rows with their
warnings and notes, ``--strict``, and study.md / study.json.

The journal is built in memory (its data as ``open_journal`` writes it) and the records by
``make_record``. The report itself (``report.build_report``) is replaced by a DOUBLE that
returns the verdicts a case needs: the whole report on real records is
tests/study/test_verdicts.py's (3 to 7 s a test); here only what the study adds around it."""

from __future__ import annotations

import json
import locale
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import report
from infra.study import verdicts as V
from infra.study.fingerprint import Warning_
from infra.study.plan import Unit
from infra.study.state import Journal
from report.checks import Outcome
from workloads.errors import InputError
from workloads.records import make_record

SINGLE = "closer2018/single_synthetic"
SHARED = "closer2018/shared"


def fingerprint(tf: str = "2.21.0", gpu: bool = False) -> dict[str, Any]:
    return {
        "cpu": {"model": "Xeon"},
        "software": {"packages": {"tensorflow": tf}},
        "gpu": {"gpus": [{"name": "NVIDIA H100 80GB HBM3"}]} if gpu else {"gpus": []},
    }


def record(label: str, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "run_id": "t-r1",
        "suite": "s",
        "experiment": "single_synthetic",
        "model": "mnist_cnn",
        "batch_size": 16,
        "steps": 5,
        "warmup": 1,
        "repeat": 0,
        "arm": label,
        "topology": "local",
        "claims": [SINGLE],
        "images_per_sec": 100.0,
        "fingerprint": fingerprint(),
    }
    base.update(fields)
    return make_record(**base)


ARMS = {
    "native": {"stack": "local", "topology": "local", "exec_env": "native", "label": "nat"},
    "box": {"stack": "lab-box", "topology": "local", "exec_env": "docker", "label": "boxed"},
    "gone": {"stack": "local", "topology": "local", "exec_env": "native", "label": "gone"},
}


def journal(tmp_path: Path, units: dict[str, dict[str, Any]], **data: Any) -> Journal:
    """A journal as ``open_journal`` writes it; ``units``: key -> entry (arm, repeat, status
    and, when finished, records / reason)."""
    j = Journal(tmp_path / "study-t" / "study.json")
    j.data = {
        "study": "t",
        "baseline": "native",
        "seed": None,
        "order_kind": "interleaved",
        "rebuild": "never",
        "claims": [SINGLE, SHARED],
        "arms": {name: dict(info) for name, info in ARMS.items()},
        "order": [[e["arm"], e["repeat"]] for e in units.values()],
        "units": units,
        "teardown": None,
    }
    j.data.update(data)
    j.units_dir.mkdir(parents=True)
    return j


def entry(arm: str, repeat: int, status: str, **more: Any) -> dict[str, Any]:
    return {"arm": arm, "repeat": repeat, "status": status, **more}


def write_unit(j: Journal, arm: str, repeat: int, recs: list[dict[str, Any]]) -> Path:
    f = j.records_file(Unit(arm, repeat))
    f.write_text("".join(json.dumps(r) + "\n" for r in recs), encoding="utf-8")
    return f


def verdict(claim: str, word: str, *outcomes: Outcome) -> Any:
    """A report.claims.Verdict's stand-in: what build and _measured read of one."""
    return SimpleNamespace(claim=claim, verdict=word, results=[(None, o) for o in outcomes])


class ReportDouble:
    """Stands in for report.build_report (the whole report is test_verdicts.py's): records
    each call's arguments and answers from ``answers`` in turn (an exception is raised)."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.calls: list[dict[str, Any]] = []

    def __call__(self, files: list[Path], out_dir: Path, **kw: Any) -> Any:
        self.calls.append({"files": list(files), "out_dir": out_dir, **kw})
        got = self.answers.pop(0)
        if isinstance(got, BaseException):
            raise got
        return got


def result(tmp_path: Path, *verdicts: Any) -> Any:
    return SimpleNamespace(
        verdicts=list(verdicts),
        html=tmp_path / "report.html",
        figures=[
            SimpleNamespace(path=tmp_path / "f1.png"),
            SimpleNamespace(path=tmp_path / "f2.png"),
        ],
    )


Double = Callable[..., ReportDouble]


@pytest.fixture
def double(monkeypatch: pytest.MonkeyPatch) -> Double:
    def use(*answers: Any) -> ReportDouble:
        d = ReportDouble(*answers)
        monkeypatch.setattr(report, "build_report", d)
        return d

    return use


# -- read_records ------------------------------------------------------------------------------


def test_read_records_reads_every_file_in_order_skips_blank_lines_and_puts_fingerprints_back(
    tmp_path: Path,
) -> None:
    fp = fingerprint(gpu=True)
    first = record("nat", fingerprint=fp, fingerprint_ref="h1")
    second = record("nat", fingerprint_ref="h1", repeat=1)
    second.pop("fingerprint")
    other = record("boxed", fingerprint_ref="h2")
    other.pop("fingerprint")  # no record carries h2: it stays without one
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text(json.dumps(first) + "\n\n   \n" + json.dumps(second) + "\n")
    b.write_text(json.dumps(other) + "\n")
    got = V.read_records([a, b])
    assert [r["record_id"] for r in got] == [
        first["record_id"],
        second["record_id"],
        other["record_id"],
    ]
    assert got[1]["fingerprint"] == fp
    assert "fingerprint" not in got[2]
    assert V.read_records([]) == []


def test_read_records_decodes_utf8_under_an_ascii_locale(tmp_path: Path) -> None:
    """A unit file holding raw UTF-8 (a model name with accents) read while the C library's
    locale is "C" (ASCII codeset): the study decodes UTF-8 itself, not the locale's encoding."""
    rec = record("nat", model="résnet-ü")
    f = tmp_path / "u.jsonl"
    f.write_bytes(json.dumps(rec, ensure_ascii=False).encode("utf-8") + b"\n")
    old = locale.setlocale(locale.LC_CTYPE)
    locale.setlocale(locale.LC_CTYPE, "C")
    try:
        codeset = locale.getpreferredencoding(False)
        assert "UTF" not in codeset.upper(), f"the locale's codeset stays {codeset}: UTF-8 mode?"
        got = V.read_records([f])
    finally:
        locale.setlocale(locale.LC_CTYPE, old)
    assert got == [rec]


# -- arm_rows ----------------------------------------------------------------------------------


def test_arm_rows_count_each_arms_units_by_status_with_records_and_reasons(tmp_path: Path) -> None:
    j = journal(
        tmp_path,
        {
            "native#1": entry("native", 1, "done", records=3),
            "box#1": entry("box", 1, "failed", records=1, reason="runner exited 1: oom"),
            "native#2": entry("native", 2, "done", records=None),
            "box#2": entry("box", 2, "skipped", reason="needs a lab"),
            "box#3": entry("box", 3, "failed", reason="runner exited 1: oom"),
            "box#4": entry("box", 4, "pending"),
            "box#5": entry("box", 5, "running", records=2, reason=""),
        },
    )
    rows = {r["arm"]: r for r in V.arm_rows(j)}
    assert list(rows) == ["native", "box", "gone"]  # the journal's arms, in its order
    assert rows["native"] == {
        "arm": "native",
        "stack": "local",
        "topology": "local",
        "exec_env": "native",
        "units": 2,
        "done": 2,
        "failed": 0,
        "skipped": 0,
        "missing": 0,
        "records": 3,
        "reasons": [],
    }
    assert rows["box"] == {
        "arm": "box",
        "stack": "lab-box",
        "topology": "local",
        "exec_env": "docker",
        "units": 5,
        "done": 0,
        "failed": 2,
        "skipped": 1,
        "missing": 2,
        "records": 3,
        "reasons": ["needs a lab", "runner exited 1: oom"],
    }
    assert rows["gone"]["units"] == 0 and rows["gone"]["missing"] == 0
    assert rows["gone"]["records"] == 0 and rows["gone"]["reasons"] == []


# -- _measured ---------------------------------------------------------------------------------


def test_measured_puts_measured_outcomes_before_missing_ones_and_drops_empty_ones() -> None:
    v = verdict(
        SINGLE,
        "reproduced",
        Outcome("missing", "no record of model x"),
        Outcome("pass", ""),
        Outcome("pass", "a 0.95x"),
        Outcome("missing", "no record of model y"),
        Outcome("fail", "b 0.50x"),
    )
    assert V._measured(v) == "a 0.95x; b 0.50x; no record of model x; no record of model y"
    assert V._measured(verdict(SINGLE, "x")) == ""


def test_measured_is_cut_at_its_limit_with_an_ellipsis() -> None:
    long = verdict(SINGLE, "x", Outcome("pass", "a" * 300), Outcome("fail", "b" * 299))
    assert len("; ".join(["a" * 300, "b" * 299])) == 601
    text = V._measured(long)
    assert len(text) == 600 and text.endswith("b" * 294 + "...")
    assert V._measured(long, limit=10) == "aaaaaaa..."
    exact = verdict(SINGLE, "x", Outcome("pass", "a" * 298), Outcome("fail", "b" * 300))
    assert V._measured(exact) == "a" * 298 + "; " + "b" * 300  # 600: not cut
    assert V._measured(exact, limit=599).endswith("b" * 296 + "...")


# -- device_label ------------------------------------------------------------------------------


def test_device_label_is_cpu_gpu_or_empty() -> None:
    cpu = record("nat", fingerprint=fingerprint(gpu=False))
    gpu = record("nat", fingerprint=fingerprint(gpu=True))
    bare = record("nat")
    bare.pop("fingerprint")
    assert V.device_label([cpu, cpu]) == "CPU"
    assert V.device_label([gpu, cpu]) == "GPU"  # one record on a GPU: not a CPU run
    assert V.device_label([gpu]) == "GPU"
    assert V.device_label([bare, gpu]) == "GPU"
    assert V.device_label([bare]) == ""
    assert V.device_label([]) == ""


# -- _build_report -----------------------------------------------------------------------------


def test_build_report_pools_the_repeats_and_passes_the_study_settings(
    tmp_path: Path, double: Double
) -> None:
    rep = result(tmp_path)
    d = double(rep)
    files = [tmp_path / "a.jsonl"]
    assert V._build_report(files, tmp_path / "out", "local/nat", False, "study t") == (rep, "")
    assert d.calls == [
        {
            "files": files,
            "out_dir": tmp_path / "out",
            "baseline": "local/nat",
            "embed_figures": False,
            "title": "study t",
            "pool": True,
        }
    ]


def test_build_report_refused_input_is_a_note_and_no_second_engine(
    tmp_path: Path, double: Double
) -> None:
    d = double(InputError("records of two suites"), result(tmp_path))
    got = V._build_report([], tmp_path, "local/nat", True, "study t")
    assert got == (None, "no report: records of two suites")
    assert len(d.calls) == 1 and d.calls[0]["embed_figures"] is True


def test_build_report_falls_back_to_the_python_engine_when_the_first_fails(
    tmp_path: Path, double: Double
) -> None:
    rep = result(tmp_path)
    d = double(RuntimeError("duckdb broke"), rep)
    assert V._build_report([], tmp_path, "local/nat", True, "study t") == (rep, "")
    assert "engine" not in d.calls[0]
    assert d.calls[1]["engine"] == "python" and d.calls[1]["pool"] is True


def test_build_report_that_fails_on_both_engines_is_a_note_naming_the_last_error(
    tmp_path: Path, double: Double
) -> None:
    d = double(RuntimeError("duckdb broke"), ValueError("python broke"))
    got = V._build_report([], tmp_path, "local/nat", True, "study t")
    assert got == (None, "no report (the report failed: ValueError: python broke)")
    assert len(d.calls) == 2
    d = double(RuntimeError("duckdb broke"), InputError("bad record"))
    assert V._build_report([], tmp_path, "x", True, "t") == (None, "no report: bad record")


# -- build -------------------------------------------------------------------------------------


def finished_study(tmp_path: Path, box_tf: str = "2.21.0", **data: Any) -> Journal:
    """native: two done units (the second's file missing), box: one done, one failed with
    records, one skipped, one pending with a stray file; gone: failed without records."""
    j = journal(
        tmp_path,
        {
            "native#1": entry("native", 1, "done", records=2),
            "box#1": entry("box", 1, "done", records=2),
            "gone#1": entry("gone", 1, "failed", reason="runner exited 1: out of memory"),
            "native#2": entry("native", 2, "done", records=2),
            "box#2": entry("box", 2, "failed", records=1, reason="runner exited 1: oom"),
            "box#3": entry("box", 3, "skipped", reason="needs a lab"),
            "box#4": entry("box", 4, "pending"),
        },
        **data,
    )
    write_unit(j, "native", 1, [record("nat"), record("nat", repeat=1)])
    box = fingerprint(tf=box_tf)
    write_unit(j, "box", 1, [record("boxed", fingerprint=box), record("boxed", fingerprint=box)])
    write_unit(
        j, "box", 2, [record("boxed", fingerprint=box, status="failed", images_per_sec=None)]
    )
    write_unit(j, "box", 3, [record("boxed", fingerprint=box, model="other")])
    write_unit(j, "box", 4, [record("boxed", fingerprint=box, model="other")])
    return j


def test_build_reports_the_finished_units_files_in_order_with_the_baseline_label(
    tmp_path: Path, double: Double
) -> None:
    j = finished_study(tmp_path)
    d = double(result(tmp_path, verdict(SINGLE, "method check", Outcome("pass", "0.95x"))))
    r = V.build(j, embed=False)
    units = j.units_dir
    assert d.calls[0]["files"] == [
        units / "native.r1.jsonl",
        units / "box.r1.jsonl",
        units / "box.r2.jsonl",
    ]
    assert d.calls[0]["out_dir"] == j.dir / "report"
    assert d.calls[0]["baseline"] == "local/nat"
    assert d.calls[0]["title"] == "study t"
    assert d.calls[0]["embed_figures"] is False
    assert r.out_dir == j.dir / "report"
    assert r.html == tmp_path / "report.html"
    assert r.figures == [tmp_path / "f1.png", tmp_path / "f2.png"]
    assert r.note == "" and r.missing == ["gone"] and r.warnings == []
    assert [a["arm"] for a in r.arms] == ["native", "box", "gone"]
    assert len(d.calls) == 1


def test_build_embeds_figures_by_default(tmp_path: Path, double: Double) -> None:
    j = finished_study(tmp_path)
    d = double(result(tmp_path))
    V.build(j)
    assert d.calls[0]["embed_figures"] is True


def test_build_gives_each_claim_its_verdict_label_and_measured_text(
    tmp_path: Path, double: Double
) -> None:
    j = finished_study(tmp_path)
    single = verdict(SINGLE, "method check", Outcome("pass", "local/boxed 0.95x"))
    other = verdict("other/claim", "reproduced", Outcome("pass", "1.0x"))
    double(result(tmp_path, single, other))
    r = V.build(j)
    assert [(v.claim, v.verdict, v.label, v.measured, v.warnings) for v in r.verdicts] == [
        (SINGLE, "method check", "CPU", "local/boxed 0.95x", []),
        (
            SHARED,
            "not measured",
            "CPU",
            f"no finished record tests this claim (the suite's experiments test {SINGLE})",
            [],
        ),
    ]


def test_build_names_every_claim_the_finished_records_test_when_a_claim_has_no_verdict(
    tmp_path: Path, double: Double
) -> None:
    j = finished_study(tmp_path, claims=["x/none"])
    more = record("nat", claims=["b/two", SINGLE], repeat=2)
    failed = record("nat", claims=["c/failed"], status="failed", images_per_sec=None)
    with j.records_file(Unit("native", 1)).open("a") as fh:
        fh.write(json.dumps(more) + "\n" + json.dumps(failed) + "\n")
    double(result(tmp_path))
    (row,) = V.build(j).verdicts
    assert row.measured == (
        f"no finished record tests this claim (the suite's experiments test b/two, {SINGLE})"
    )
    nothing = journal(tmp_path / "n", {"native#1": entry("native", 1, "done")}, claims=["x/none"])
    write_unit(nothing, "native", 1, [record("nat", claims=[])])
    double(result(tmp_path))
    (row,) = V.build(nothing).verdicts
    assert (
        row.measured
        == "no finished record tests this claim (the suite's experiments test no claim)"
    )


def test_build_on_a_gpu_labels_the_verdicts_gpu(tmp_path: Path, double: Double) -> None:
    j = journal(tmp_path, {"native#1": entry("native", 1, "done")}, claims=[SINGLE])
    gpu = fingerprint(gpu=True)
    write_unit(
        j,
        "native",
        1,
        [
            record("nat", fingerprint=gpu),
            # a failed record that ran on the CPU is not what the verdict measured
            record("nat", fingerprint=fingerprint(), status="failed", images_per_sec=None),
        ],
    )
    double(result(tmp_path, verdict(SINGLE, "reproduced", Outcome("pass", "1.0x"))))
    (row,) = V.build(j).verdicts
    assert (row.verdict, row.label, row.measured) == ("reproduced", "GPU", "1.0x")


def test_build_without_finished_units_builds_no_report_and_says_so(
    tmp_path: Path, double: Double
) -> None:
    j = journal(
        tmp_path,
        {"native#1": entry("native", 1, "pending"), "box#1": entry("box", 1, "skipped")},
        claims=[SINGLE],
    )
    d = double()
    r = V.build(j)
    assert d.calls == []
    assert r.note == "no report: no unit has finished"
    assert (r.html, r.figures) == (None, [])
    assert r.missing == ["native", "box", "gone"]
    (row,) = r.verdicts
    assert (row.verdict, row.label, row.measured) == (
        "not measured",
        "",
        "no report: no unit has finished",
    )
    assert json.loads((j.dir / "report/study.json").read_text())["note"] == r.note


def test_build_whose_report_failed_puts_the_note_in_each_claims_row(
    tmp_path: Path, double: Double
) -> None:
    j = finished_study(tmp_path)
    double(InputError("records of two suites"))
    r = V.build(j)
    assert r.note == "no report: records of two suites"
    assert r.html is None and r.figures == []
    assert [(v.verdict, v.measured) for v in r.verdicts] == [
        ("not measured", "no report: records of two suites")
    ] * 2


def test_build_measured_nothing_keeps_the_report_note(tmp_path: Path, double: Double) -> None:
    """A claim with a verdict whose checks measured nothing shows the (empty) note, not the
    'no finished record' text."""
    j = finished_study(tmp_path)
    double(result(tmp_path, verdict(SINGLE, "inconclusive", Outcome("missing", ""))))
    rows = {v.claim: v for v in V.build(j).verdicts}
    assert (rows[SINGLE].verdict, rows[SINGLE].measured) == ("inconclusive", "")


def test_build_attaches_an_arms_fingerprint_warning_to_the_claims_its_records_test(
    tmp_path: Path, double: Double
) -> None:
    j = finished_study(tmp_path, box_tf="2.20.0")
    double(result(tmp_path))
    r = V.build(j)
    text = "framework: tensorflow 2.20.0 vs baseline native tensorflow 2.21.0"
    assert [(w.arm, w.text, w.claims) for w in r.warnings] == [("box", text, [SINGLE])]
    rows = {v.claim: v for v in r.verdicts}
    assert rows[SINGLE].warnings == [f"box: {text}"]
    assert rows[SHARED].warnings == []


def test_build_under_strict_refuses_unpaired_arms_before_any_report(
    tmp_path: Path, double: Double
) -> None:
    j = finished_study(tmp_path, box_tf="2.20.0")
    d = double()
    with pytest.raises(V.NotPaired) as exc:
        V.build(j, strict=True)
    assert str(exc.value) == (
        "study t: arms not paired (1 difference(s)); first: arm box: "
        "framework: tensorflow 2.20.0 vs baseline native tensorflow 2.21.0"
    )
    assert d.calls == [] and not (j.dir / "report").exists()
    ok = finished_study(tmp_path / "ok")
    double(result(tmp_path))
    assert V.build(ok, strict=True).warnings == []


def test_build_adds_the_reports_pairing_refusal_as_a_warning_on_every_claim(
    tmp_path: Path, double: Double
) -> None:
    """The box arm timed another number of steps than the baseline: report.mapping.check_paired's
    refusal becomes a warning of arm ``*`` on all the study's claims."""
    j = journal(
        tmp_path,
        {"native#1": entry("native", 1, "done"), "box#1": entry("box", 1, "done")},
    )
    write_unit(j, "native", 1, [record("nat")])
    write_unit(j, "box", 1, [record("boxed", steps=50)])
    double(result(tmp_path))
    r = V.build(j)
    (w,) = r.warnings
    assert w.arm == "*" and w.claims == [SINGLE, SHARED] and "steps" in w.text
    assert all(v.warnings == [f"*: {w.text}"] for v in r.verdicts)
    with pytest.raises(V.NotPaired, match=r"\(1 difference\(s\)\); first: arm \*: "):
        V.build(j, strict=True)


def test_build_groups_records_by_the_arm_their_label_names(tmp_path: Path, double: Double) -> None:
    """Records name their arm by its label: the native arm's label is ``nat``; a label no arm
    has keeps its own name (and is compared with the baseline like any arm)."""
    j = journal(tmp_path, {"native#1": entry("native", 1, "done")}, claims=[SINGLE])
    write_unit(
        j,
        "native",
        1,
        [
            record("nat"),
            record("nat", fingerprint=fingerprint(tf="2.21.0")),
            record("stray", fingerprint=fingerprint(tf="2.19.0")),
        ],
    )
    double(result(tmp_path))
    r = V.build(j)
    assert [(w.arm, w.text) for w in r.warnings] == [
        ("stray", "framework: tensorflow 2.19.0 vs baseline native tensorflow 2.21.0")
    ]


def test_build_reads_the_teardown_stacks_and_writes_the_study_files(
    tmp_path: Path, double: Double
) -> None:
    rows = [{"stack": "lab-box", "status": "destroyed", "reason": ""}]
    j = finished_study(tmp_path, teardown={"stacks": rows})
    double(result(tmp_path))
    r = V.build(j)
    assert r.teardown == rows
    assert json.loads((j.dir / "report/study.json").read_text())["teardown"] == rows
    assert "Teardown lab-box: destroyed\n" in (j.dir / "report/study.md").read_text()
    for teardown in (None, {}, {"stacks": None}):
        j.data["teardown"] = teardown
        double(result(tmp_path))
        assert V.build(j).teardown == []


def test_build_without_claims_has_no_verdict_rows(tmp_path: Path, double: Double) -> None:
    j = finished_study(tmp_path)
    del j.data["claims"]
    double(result(tmp_path, verdict(SINGLE, "reproduced")))
    assert V.build(j).verdicts == []


# -- write and markdown ------------------------------------------------------------------------


def a_report(tmp_path: Path, **more: Any) -> V.StudyReport:
    fields: dict[str, Any] = {
        "out_dir": tmp_path / "deep" / "report",
        "arms": [
            {
                "arm": "native",
                "stack": "local",
                "exec_env": "native",
                "done": 2,
                "failed": 0,
                "skipped": 0,
                "missing": 0,
                "records": 6,
                "reasons": [],
            },
            {
                "arm": "box",
                "stack": "lab-box",
                "exec_env": "docker",
                "done": 0,
                "failed": 1,
                "skipped": 1,
                "missing": 1,
                "records": 1,
                "reasons": ["needs a lab", "oom"],
            },
        ],
        "missing": ["box", "gone"],
        "teardown": [
            {"stack": "lab-box", "status": "failed", "reason": "timeout"},
            {"stack": "lab-c", "status": "destroyed", "reason": ""},
        ],
        "warnings": [Warning_("box", "CPU model: a | b", [SINGLE])],
        "verdicts": [
            V.VerdictRow(SINGLE, "method check", "CPU", "a|b 0.9x", ["box: CPU model: a | b", "x"]),
            V.VerdictRow(SHARED, "not measured", "", "no report", []),
        ],
        "note": "a note",
    }
    fields.update(more)
    return V.StudyReport(**fields)


def test_markdown_lists_arms_missing_arms_teardown_verdicts_and_warnings(tmp_path: Path) -> None:
    j = journal(tmp_path, {}, seed=42, order_kind="random", rebuild="each-repeat")
    assert V.markdown(j, a_report(tmp_path)) == (
        "# Study t\n"
        "\n"
        "Order random (seed 42), rebuild each-repeat, baseline arm native.\n"
        "\n"
        "| arm | stack | exec env | done | failed | skipped | missing | records | why |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "| native | local | native | 2 | 0 | 0 | 0 | 6 |  |\n"
        "| box | lab-box | docker | 0 | 1 | 1 | 1 | 1 | needs a lab; oom |\n"
        "\n"
        "Arms without a finished unit: box, gone.\n"
        "\n"
        "Teardown lab-box: failed timeout\n"
        "Teardown lab-c: destroyed\n"
        "\n"
        "## Verdicts\n"
        "\n"
        "| claim | verdict | label | measured | warnings |\n"
        "|---|---|---|---|---|\n"
        f"| {SINGLE} | method check | CPU | a/b 0.9x | box: CPU model: a / b; x |\n"
        f"| {SHARED} | not measured |  | no report |  |\n"
        "\n"
        "## Paired-arm warnings\n"
        "\n"
        "- arm box: CPU model: a | b\n"
    )


def test_markdown_without_seed_missing_arms_teardown_or_warnings(tmp_path: Path) -> None:
    j = journal(tmp_path, {})
    r = a_report(tmp_path, arms=[], missing=[], teardown=[], warnings=[], verdicts=[])
    assert V.markdown(j, r) == (
        "# Study t\n"
        "\n"
        "Order interleaved, rebuild never, baseline arm native.\n"
        "\n"
        "| arm | stack | exec env | done | failed | skipped | missing | records | why |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        "\n"
        "\n"
        "## Verdicts\n"
        "\n"
        "| claim | verdict | label | measured | warnings |\n"
        "|---|---|---|---|---|\n"
    )
    j.data["seed"] = 0  # a seed of 0 is a seed
    assert "Order interleaved (seed 0), rebuild never" in V.markdown(j, r)


def test_write_makes_the_report_folder_and_writes_study_json_and_md(tmp_path: Path) -> None:
    j = journal(tmp_path, {}, seed=7)
    j.data["order"] = [["native", 1], ["box", 1]]
    r = a_report(tmp_path)
    V.write(j, r)
    data = json.loads((r.out_dir / "study.json").read_text(encoding="utf-8"))
    assert data == {
        "study": "t",
        "baseline": "native",
        "seed": 7,
        "order": [["native", 1], ["box", 1]],
        "arms": r.arms,
        "missing_arms": ["box", "gone"],
        "teardown": r.teardown,
        "warnings": [{"arm": "box", "text": "CPU model: a | b", "claims": [SINGLE]}],
        "verdicts": [
            {
                "claim": SINGLE,
                "verdict": "method check",
                "label": "CPU",
                "measured": "a|b 0.9x",
                "warnings": ["box: CPU model: a | b", "x"],
            },
            {
                "claim": SHARED,
                "verdict": "not measured",
                "label": "",
                "measured": "no report",
                "warnings": [],
            },
        ],
        "note": "a note",
    }
    text = (r.out_dir / "study.json").read_text(encoding="utf-8")
    assert text == json.dumps(data, indent=2, sort_keys=True) + "\n"
    assert (r.out_dir / "study.md").read_text(encoding="utf-8") == V.markdown(j, r)
    del j.data["seed"]
    V.write(j, r)  # again, into the folder that is there now; a journal without a seed
    assert json.loads((r.out_dir / "study.json").read_text())["seed"] is None
