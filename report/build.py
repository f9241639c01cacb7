"""The whole report: inputs -> records -> table -> verdicts, figures -> HTML, Markdown, CSV."""

from __future__ import annotations

import errno
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from report import claims as claims_mod
from report.cpus import report_threads
from report.environment import banner, compare, size_text
from report.exclusions import Excluded, bit_names, split, throttle_bits
from report.figures import FigureFile, all_figures, warm_up
from report.load import load_records
from report.mapping import SETTING_LABELS, arm_settings, check_pairs, resolve_baseline
from report.published import load_published
from report.render import (
    FEW_REPS,
    HEADLINE,
    figure_src,
    render_html,
    render_markdown,
    table_sections,
    write_csv,
)
from report.stats import CV_FLAG
from report.table import Table, arm_of, build_table, finish, image_size
from workloads.errors import InputError
from workloads.files import OutputError, make_dirs, output_error, write_bytes

NOTES = [
    "Settings are the ones the lab stated in each record (virtualization, from the host's "
    "gpu_path and the execution environment): none -> BM, container -> container on BM, vm -> "
    "VM, container-in-vm -> container on VM. Records without a setting (schema 1) are 'unknown "
    "setting', never guessed from labels or fingerprints. Where the fingerprint disagrees with "
    "the stated setting the arm carries a flag (report/mapping.py).",
    "Repetitions of one (suite, experiment, model, scenario, data, batch, variant) and arm are "
    "summarized by their median and CV (sample stdev / mean, flagged above "
    f"{CV_FLAG:.0%}). Intervals are over units: a study repeat (or, outside a study, a run) "
    "is one unit, its repetitions averaged into one value; 95 % CI: the t interval of the "
    "mean over units (none with one unit).",
    "Normalized = the geometric mean of the per-unit ratios to the baseline arm's unit of the "
    "same study repeat (paired), with the t interval of their logs; ratios and degradations "
    "are already relative and are not normalized.",
    "Left out: records with status failed or interrupted, and throttled runs: an NVML sample "
    "over the timed window shows HW slowdown, SW or HW thermal slowdown, or HW power brake "
    "(mask 0xE8). SW power cap alone is normal at full load: such runs are kept and listed.",
    "Verdicts: reproduced when every check is measured and its 95 % interval lies inside the "
    "tolerance band; not reproduced when a check lies outside, significantly over all the "
    "claim's rows (Holm); inconclusive otherwise (an interval across an edge, a check not "
    "measured, fewer units than the claim needs); not measured when no check has records. "
    "On records that ran on no GPU: method check (the numbers, no verdict). Tolerances are "
    "absolute on normalized values (or on ratios/degradations) and are given with each claim.",
]


@dataclass
class ReportResult:
    out_dir: Path
    html: Path
    markdown: Path
    csv: Path
    figures: list[FigureFile]
    verdicts: list[claims_mod.Verdict]
    excluded: list[Excluded]
    table: Table
    problems: list[str]  # skipped lines, records without a setting: one line each
    banner: list[str] = field(default_factory=list)  # what ran, one line each (for a console)


def _excluded_row(e: Excluded) -> dict[str, Any]:
    r = e.record
    return {
        "record_id": e.record_id,
        "arm": arm_of(r).label,
        "experiment": r["experiment"],
        "model": r["model"],
        "image_size": size_text([image_size(r)], str(r["model"])),
        "steps": r.get("steps") if r.get("steps") is not None else "—",
        "reason": e.reason,
        "detail": e.detail,
    }


def verdict_counts(verdicts: list[Any]) -> list[tuple[str, int]]:
    """Verdicts by name: the known ones first (zeros included), then any other name."""
    known = [
        getattr(claims_mod, name, None)
        for name in ("REPRODUCED", "NOT_REPRODUCED", "INCONCLUSIVE", "METHOD_CHECK", "NOT_MEASURED")
    ]
    names = [n for n in known if isinstance(n, str)]
    names += [v.verdict for v in verdicts if v.verdict not in names]
    return [(n, sum(v.verdict == n for v in verdicts)) for n in dict.fromkeys(names)]


def checkable(verdicts: list[Any]) -> tuple[int, int]:
    """(claims that these records can check, all claims): not-measured ones cannot."""
    not_measured = getattr(claims_mod, "NOT_MEASURED", "not measured")
    return sum(v.verdict != not_measured for v in verdicts), len(verdicts)


@dataclass
class _Loaded:
    total: int
    kept: int
    excluded: list[Excluded]
    capped: list[tuple[dict[str, Any], int]]
    table: Table
    claim_lists: list[tuple[list[Any], int]]


def _python(inputs: Any, baseline: str | None, pool: bool, problems: list[str]) -> _Loaded:
    """Every record as a dict (the small-scale path; ``engine="python"``)."""
    records = load_records(inputs, problems)
    kept, excluded, capped = split(records)
    if not kept:
        reasons = ", ".join(sorted({e.reason for e in excluded}))
        raise InputError(f"no ok records to report: all {len(records)} are left out ({reasons})")
    kept_settings = {a: s.setting for a, s in arm_settings(kept, arm_of).items()}
    base = resolve_baseline(baseline, kept_settings, kept_settings)
    table = build_table(kept, base, pool=pool)
    claim_lists = [(r.get("claims") or [], 1) for r in records]
    capped_bits = [(r, throttle_bits(r)) for r in capped]
    return _Loaded(len(records), len(kept), excluded, capped_bits, table, claim_lists)


def _duckdb(inputs: Any, baseline: str | None, pool: bool, problems: list[str]) -> _Loaded:
    """Records streamed through DuckDB (report.scan); Python sees the aggregates."""
    from report.scan import scan

    sc = scan(inputs)
    problems.extend(sc.problems)
    if not sc.kept:
        reasons = ", ".join(sorted({e.reason for e in sc.excluded}))
        raise InputError(f"no ok records to report: all {sc.total} are left out ({reasons})")
    kept_settings = {a: s.setting for a, s in sc.collected.arm_set.items()}
    base = resolve_baseline(baseline, kept_settings, kept_settings)
    check_pairs(sc.pairs, base, pool)
    table = finish(sc.collected, base)
    return _Loaded(sc.total, sc.kept, sc.excluded, sc.capped, table, sc.claim_lists)


ENGINES = ("duckdb", "python")


def build_report(
    inputs: Iterable[str | os.PathLike[str]],
    out_dir: str | os.PathLike[str],
    baseline: str | None = None,
    published: str | os.PathLike[str] | None = None,
    embed_figures: bool = True,
    title: str = "gpulab report",
    pool: bool = False,
    engine: str = "duckdb",
) -> ReportResult:
    """The report of ``inputs`` in ``out_dir``.

    ``pool``: repetitions of one group and arm may come from several runs (else refused).
    ``engine``: ``duckdb`` streams the records (report.scan); ``python`` holds every record
    as a dict (the same results; slower and larger beyond a few thousand records).
    """
    if engine not in ENGINES:
        raise InputError(f"engine {engine!r} is not one of {', '.join(ENGINES)}")
    report_threads()  # a bad $GPULAB_REPORT_THREADS fails here, before anything is read or made
    problems: list[str] = []
    load = _duckdb if engine == "duckdb" else _python
    warm = warm_up()  # beside the scan; figures.draw waits for it before it forks
    try:
        got = load(inputs, baseline, pool, problems)
        table = got.table
        pub = load_published(published)
        verdicts = claims_mod.verdicts(table, pub, got.claim_lists)
        out = Path(out_dir)
        with staging(out) as stage:
            drawn = _write(stage, title, got, table, pub, verdicts, embed_figures, problems)
            figures, what_ran = publish(stage, out, drawn)
    except BaseException:
        # A daemon thread still inside matplotlib's C++ code when the interpreter exits aborts
        # the process ("terminate called without an active exception", exit -6): a report that
        # fails early waits for the warm-up before it says why.
        if warm is not None:
            warm.join()
        raise
    lines = [f"{what}: {text}" for what, text in what_ran.lines]
    if what_ran.single_arm:
        lines.append(what_ran.single_arm)
    return ReportResult(
        out,
        out / "report.html",
        out / "report.md",
        out / "report.csv",
        figures,
        verdicts,
        got.excluded,
        table,
        problems,
        lines,
    )


@contextmanager
def staging(out: Path) -> Iterator[Path]:
    """A hidden directory in ``out`` that the report is written into; removed at the end.

    The report lands whole or not at all: a full disk or a read-only directory while the
    figures or pages are written leaves the previous report as it was (and one line naming
    the file and why, OutputError), not half a new one."""
    make_dirs(out)
    try:
        stage = Path(tempfile.mkdtemp(prefix=".report-", dir=out))
    except OSError as exc:
        raise output_error(out, exc) from None
    try:
        yield stage
    except OutputError as exc:  # name the file where the report goes, not the staged one
        raise OutputError(str(exc).replace(str(stage), str(out))) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)


@dataclass
class _Drawn:
    figures: list[FigureFile]
    what_ran: Any


def publish(stage: Path, out: Path, drawn: _Drawn) -> tuple[list[FigureFile], Any]:
    """Move the staged report into ``out``: the figures, then the CSV, Markdown and HTML
    (renames within one file system: nothing to run out of)."""
    make_dirs(out / "figures")
    figures = []
    moves = [(f.path, out / "figures" / f.path.name) for f in drawn.figures]
    moves += [(stage / n, out / n) for n in ("report.csv", "report.md", "report.html")]
    for _, dst in moves:  # a directory in the way: refused before anything moves
        if dst.is_dir():
            raise output_error(dst, IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR)))
    for src, dst in moves:
        try:
            os.replace(src, dst)
        except OSError as exc:
            raise output_error(dst, exc) from None
    for f in drawn.figures:
        figures.append(replace(f, path=out / "figures" / f.path.name))
    return figures, drawn.what_ran


def _write(
    stage: Path,
    title: str,
    got: _Loaded,
    table: Table,
    pub: Any,
    verdicts: list[Any],
    embed_figures: bool,
    problems: list[str],
) -> _Drawn:
    """The figures, CSV, Markdown and HTML of the report, written into ``stage``."""
    out = stage
    excluded, capped, base = got.excluded, got.capped, table.baseline
    figures = all_figures(table, pub, out / "figures")
    arms = table.arms
    env = compare(arms, table.records_per_arm)
    what_ran = banner(
        arms, table.records_per_arm, table.settings, SETTING_LABELS, table.model_counts
    )
    ctx: dict[str, Any] = {
        "title": title,
        "generated_at": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "baseline": base.label,
        "counts": {"records": got.total, "ok": got.kept, "excluded": len(excluded)},
        "arms": [
            {
                "label": a.label,
                "setting": table.settings[a],
                "setting_label": SETTING_LABELS.get(table.settings[a], "other"),
                "n": table.counts.get(a, 0),
                "baseline": a == base,
                "flags": table.setting_flags.get(a, []),
            }
            for a in arms
        ],
        "problems": problems,
        "banner": what_ran.lines,
        "single_arm": what_ran.single_arm,
        "checkable": checkable(verdicts),
        "few_rows": sum(1 for r in table.rows if r.summary.n < FEW_REPS and r.metric in HEADLINE),
        "environment": [
            {"field": e.field, "key": e.key, "values": list(e.values), "differs": e.differs}
            for e in env
        ],
        "verdicts": [claims_mod.verdict_data(v) for v in verdicts],
        "verdict_counts": verdict_counts(verdicts),
        "status_words": {"pass": "pass", "fail": "FAIL", "missing": "no records"},
        "sections": table_sections(table),
        "figures": [
            {
                "title": f.title,
                "caption": f.caption,
                "file": str(f.path.relative_to(out)),
                "src": figure_src(f.path, out, embed_figures),
            }
            for f in figures
        ],
        "excluded": [_excluded_row(e) for e in excluded],
        "power_capped": [
            {
                "record_id": r["record_id"],
                "arm": arm_of(r).label,
                "model": r["model"],
                "bits": bit_names(bits),
            }
            for r, bits in capped
        ],
        "cv_flagged": sum(1 for r in table.rows if r.summary.cv_flag),
        "notes": NOTES,
    }
    csv_path, md_path, html_path = out / "report.csv", out / "report.md", out / "report.html"
    # a lone surrogate (a record's \udcxx escape, a file name that is not UTF-8) is written
    # as its escape
    write_csv(table, csv_path)
    write_bytes(md_path, render_markdown(ctx).encode("utf-8", "backslashreplace"))
    write_bytes(html_path, render_html(ctx).encode("utf-8", "backslashreplace"))
    return _Drawn(figures, what_ran)
