"""Output: CSV (every row), Markdown and self-contained HTML (report/templates/report.html.j2)."""

from __future__ import annotations

import base64
import csv
import re
from pathlib import Path
from typing import Any

from report.environment import size_text
from report.table import Row, Table, higher_is_better, is_relative
from workloads.errors import InputError
from workloads.files import replacing

TEMPLATE = Path(__file__).resolve().parent / "templates" / "report.html.j2"  # package data
HEADLINE = (
    "images_per_sec",
    "elapsed_s",
    "elapsed_degradation",
    "images_per_sec_degradation",
    "aggregate_throughput_ratio",
    "completion_time_ratio",
    "time_per_call_s",
    "tflops",
    "gbps",
)
CSV_COLUMNS = (
    "suite",
    "experiment",
    "model",
    "scenario",
    "data",
    "batch_size",
    "image_size",
    "steps",
    "variant",
    "topology",
    "arm",
    "setting",
    "metric",
    "n",
    "median",
    "ci95_lo",
    "ci95_hi",
    "cv",
    "cv_flag",
    "baseline",
    "baseline_median",
    "normalized",
    "normalized_ci95_lo",
    "normalized_ci95_hi",
)


FEW_REPS = 3  # fewer repetitions than this: the median and its CI say little (warned)
# OWASP "CSV injection": a cell starting with one of these is read as a formula by spreadsheets
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def _g(v: float | None, digits: int = 4) -> str:
    return "" if v is None else f"{v:.{digits}g}"


def csv_cell(v: Any) -> Any:
    """One CSV cell, neutralized: a text starting with ``= + - @``, tab or CR gets a leading
    single quote (OWASP), unless it is a plain number (``-0.05`` stays a number)."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return int(v)
    if isinstance(v, int):
        return v
    if isinstance(v, float):
        return repr(v)
    s = str(v)
    if s.startswith(FORMULA_START) and not _NUMBER.fullmatch(s):
        return "'" + s
    return s


def _joined(values: tuple[int, ...]) -> str:
    return " ".join(str(v) for v in values)


def write_csv(table: Table, path: Path) -> None:
    """The CSV whole at ``path``, or the previous file and an OutputError (workloads.files).
    Text that is not Unicode (a lone surrogate from a record's ``\\udcxx`` escape) is
    written as its escape."""
    with (
        replacing(path) as tmp,
        open(tmp, "w", newline="", encoding="utf-8", errors="backslashreplace") as fh,
    ):
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for r in table.rows:
            s = r.summary
            cells = [
                r.key.suite,
                r.key.experiment,
                r.key.model,
                r.key.scenario,
                r.key.data,
                r.key.batch_size,
                _joined(getattr(r, "image_sizes", ())),
                _joined(getattr(r, "steps", ())),
                r.key.variant,
                r.arm.topology,
                r.arm.arm,
                r.setting,
                r.metric,
                s.n,
                s.median,
                s.ci_lo,
                s.ci_hi,
                s.cv,
                s.cv_flag,
                table.baseline.label,
                r.baseline_median,
                r.norm,
                r.norm_lo,
                r.norm_hi,
            ]
            w.writerow([csv_cell(c) for c in cells])


def shape_text(r: Row) -> tuple[str, str]:
    """(image size, steps) of a result row, as shown in every table."""
    sizes = getattr(r, "image_sizes", ())
    size = size_text(sizes, r.key.model) if sizes or r.key.model else ""
    steps = ", ".join(str(v) for v in getattr(r, "steps", ())) or "—"
    return size, steps


def table_sections(table: Table) -> list[dict[str, Any]]:
    """Headline rows grouped by (suite, experiment), as plain strings for the templates."""
    sections: dict[tuple[str, str], list[dict[str, Any]]] = {}
    order = {a: i for i, a in enumerate(table.arms)}
    rows = [r for r in table.rows if r.metric in HEADLINE]
    rows.sort(
        key=lambda r: (
            r.key.suite,
            r.key.experiment,
            HEADLINE.index(r.metric),
            r.key.model,
            r.key.batch_size,
            r.key.variant,
            order[r.arm],
        )
    )
    for r in rows:
        s = r.summary
        sections.setdefault((r.key.suite, r.key.experiment), []).append(
            {
                "model": r.key.model,
                "batch": r.key.batch_size or "",
                "variant": r.key.variant,
                "scenario": r.key.scenario,
                "data": r.key.data,
                "arm": r.arm.label,
                "setting": r.setting,
                "baseline": r.arm == table.baseline,
                "metric": r.metric,
                "direction": "relative"
                if is_relative(r.metric)
                else ("higher is better" if higher_is_better(r.metric) else "lower is better"),
                "n": s.n,
                "few": s.n < FEW_REPS,
                "image_size": shape_text(r)[0],
                "steps": shape_text(r)[1],
                "median": _g(s.median),
                "ci": f"{_g(s.ci_lo)} .. {_g(s.ci_hi)}",
                "cv": "" if s.cv is None else f"{s.cv:.1%}",
                "cv_flag": s.cv_flag,
                "norm": "baseline"
                if r.arm == table.baseline and r.norm is not None
                else ("" if r.norm is None else f"{r.norm:.3f}"),
            }
        )
    return [{"suite": k[0], "experiment": k[1], "rows": v} for k, v in sections.items()]


def figure_src(path: Path, out_dir: Path, embed: bool) -> str:
    if embed:
        return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")
    return str(path.relative_to(out_dir))


def render_html(ctx: dict[str, Any], template: Path = TEMPLATE) -> str:
    import jinja2

    if not template.is_file():
        raise InputError(f"report template {str(template)!r} is missing (run from a checkout)")
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template.parent)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    return env.get_template(template.name).render(**ctx)


_PLAIN = re.compile(r"[\w./:@+-]+")
_MD = str.maketrans(
    {
        **{c: " " for c in [*range(0x00, 0x20), 0x7F]},  # newline, CR, tab, ESC ...
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        '"': "&quot;",
        "\\": "\\\\",
        "`": "\\`",
        "*": "\\*",
        "[": "\\[",
        "]": "\\]",
        "|": "\\|",
    }
)


def md(s: Any) -> str:
    """A value as Markdown text: HTML special characters as entities, Markdown's own
    (``| ` * [ ] \\``) escaped, control characters (newline, CR, tab, ESC) as spaces: one
    table row stays one row."""
    return str(s).translate(_MD)


def code(s: Any) -> str:
    """A label as a Markdown code span when it is plain (letters, digits, ``_ . / : @ + -``),
    else as escaped text: some renderers read HTML even inside a code span."""
    text = str(s)
    return f"`{text}`" if _PLAIN.fullmatch(text) else md(text)


def _md_verdicts(ctx: dict[str, Any]) -> list[str]:
    k, n = ctx["checkable"]
    counts = ", ".join(f"{c} {name}" for name, c in ctx["verdict_counts"])
    out = [
        "## Published claims",
        "",
        f"**{k} of {n} claims checkable with these records** ({counts}).",
        "",
        "<details><summary>Every claim, its checks and what was measured</summary>",
        "",
        "| claim | verdict | tolerance | checks |",
        "|---|---|---|---|",
    ]
    for v in ctx["verdicts"]:
        checks = "<br>".join(
            f"{md(c['status'])}: {md(c['what'])} — {md(c['measured'])}" for c in v["checks"]
        )
        out.append(
            f"| {code(v['claim'])} {md(v['text'])} | **{md(v['verdict'])}** | "
            f"{md(v['tolerance'])} | {checks} |"
        )
    return [*out, "", "</details>"]


def _md_results(ctx: dict[str, Any]) -> list[str]:
    out: list[str] = []
    if ctx.get("few_rows"):
        out += ["", f"⚠ {ctx['few_rows']} result row(s) rest on fewer than 3 repetitions (n < 3)."]
    for sec in ctx["sections"]:
        out += [
            "",
            f"## {md(sec['suite'])} / {md(sec['experiment'])}",
            "",
            "| model | batch | image size | steps | variant | arm | metric | n | median | 95 % CI "
            "| CV | normalized |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sec["rows"]:
            cv = r["cv"] + (" ⚠" if r["cv_flag"] else "")
            n = f"{r['n']} ⚠ n < 3" if r["few"] else str(r["n"])
            out.append(
                f"| {md(r['model'])} | {r['batch']} | {md(r['image_size'])} | {md(r['steps'])} | "
                f"{md(r['variant'])} | {md(r['arm'])} | {md(r['metric'])} | {n} | {r['median']} "
                f"| {r['ci']} | {cv} | {r['norm']} |"
            )
    return out


def render_markdown(ctx: dict[str, Any]) -> str:
    out = [
        f"# {md(ctx['title'])}",
        "",
        f"Generated {ctx['generated_at']} from "
        f"{ctx['counts']['records']} records ({ctx['counts']['ok']} used, "
        f"{ctx['counts']['excluded']} left out). Baseline: {md(ctx['baseline'])}.",
        "",
        "## What ran",
        "",
    ]
    out += [f"- **{md(what)}**: {md(text)}" for what, text in ctx["banner"]]
    if ctx.get("single_arm"):
        out += ["", f"**{md(ctx['single_arm'])}**"]
    out += ["", *_md_verdicts(ctx)]
    out += ["", "## Arms", "", "| arm | setting | ok records |", "|---|---|---|"]
    out += [f"| {code(a['label'])} | {md(a['setting_label'])} | {a['n']} |" for a in ctx["arms"]]
    flagged = [a for a in ctx["arms"] if a.get("flags")]
    if flagged:
        out += ["", "### Setting flags (the fingerprint disagrees with the stated setting)", ""]
        out += [f"- {code(a['label'])}: {md(f)}" for a in flagged for f in a["flags"]]
    if ctx.get("problems"):
        out += ["", "### Input notes", ""] + [f"- {md(p)}" for p in ctx["problems"]]
    out += [
        "",
        "## Environment",
        "",
        "| field | " + " | ".join(md(a["label"]) for a in ctx["arms"]) + " |",
        "|---|" + "---|" * len(ctx["arms"]),
    ]
    for e in ctx["environment"]:
        mark = " **(differs)**" if e["differs"] else ""
        out.append(f"| {md(e['field'])}{mark} | " + " | ".join(md(v) for v in e["values"]) + " |")
    out += _md_results(ctx)
    out += ["", "## Figures", ""]
    out += [f"![{md(f['title'])}]({f['file']})\n\n{md(f['caption'])}\n" for f in ctx["figures"]]
    out += ["## Runs left out", ""]
    if ctx["excluded"]:
        out += [
            "| record | arm | experiment | model | image size | steps | reason | detail |",
            "|---|---|---|---|---|---|---|---|",
        ]
        out += [
            "| "
            + " | ".join(
                md(e[k])
                for k in (
                    "record_id",
                    "arm",
                    "experiment",
                    "model",
                    "image_size",
                    "steps",
                    "reason",
                    "detail",
                )
            )
            + " |"
            for e in ctx["excluded"]
        ]
    else:
        out.append("None.")
    out += ["", "## Method", ""] + [f"- {md(n)}" for n in ctx["notes"]]
    return "\n".join(out) + "\n"


_CONTROL = {c: " " for c in [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0)]}


def plain(s: Any) -> str:
    """A value for a terminal: control characters (CR, tab, newline, ESC ...) as spaces."""
    return str(s).translate(_CONTROL)


def console_report(res: Any) -> Any:
    """What ``gpulab report`` prints: what ran, then the claims these records can check (the
    rest counted in one line). Values are ``rich.text.Text`` (never read as markup) with
    control characters removed, so a record's field cannot restyle or rewrite the terminal."""
    from rich.console import Group
    from rich.table import Table as RichTable
    from rich.text import Text

    styles = {"reproduced": "green", "not reproduced": "red"}
    parts: list[Any] = [Text(plain(line)) for line in getattr(res, "banner", [])]
    verdicts = list(res.verdicts)
    not_measured = "not measured"
    checkable = [v for v in verdicts if v.verdict != not_measured]
    parts.append(
        Text(
            f"{len(checkable)} of {len(verdicts)} claims checkable with these records"
            + (" (the others: not measured; details in report.html)" if verdicts else "")
        )
    )
    if checkable:
        table = RichTable(title=Text(f"claims (baseline {plain(res.table.baseline.label)})"))
        for col in ("claim", "verdict", "tolerance"):
            table.add_column(col, overflow="fold")
        for v in checkable:
            table.add_row(
                Text(plain(v.claim)),
                Text(plain(v.verdict), style=styles.get(v.verdict, "")),
                Text(plain(v.tolerance)),
            )
        parts.append(table)
    return Group(*parts)
