"""Output: CSV (every row), Markdown and self-contained HTML (templates/report.html.j2)."""

from __future__ import annotations

import base64
import csv
from pathlib import Path
from typing import Any

from report.table import Table, higher_is_better, is_relative
from workloads.errors import InputError

TEMPLATE = Path(__file__).resolve().parents[1] / "templates" / "report.html.j2"
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


def _g(v: float | None, digits: int = 4) -> str:
    return "" if v is None else f"{v:.{digits}g}"


def write_csv(table: Table, path: Path) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(CSV_COLUMNS)
        for r in table.rows:
            s = r.summary
            w.writerow(
                [
                    r.key.suite,
                    r.key.experiment,
                    r.key.model,
                    r.key.scenario,
                    r.key.data,
                    r.key.batch_size,
                    r.key.variant,
                    r.arm.topology,
                    r.arm.arm,
                    r.setting,
                    r.metric,
                    s.n,
                    repr(s.median),
                    repr(s.ci_lo),
                    repr(s.ci_hi),
                    "" if s.cv is None else repr(s.cv),
                    int(s.cv_flag),
                    table.baseline.label,
                    "" if r.baseline_median is None else repr(r.baseline_median),
                    "" if r.norm is None else repr(r.norm),
                    "" if r.norm_lo is None else repr(r.norm_lo),
                    "" if r.norm_hi is None else repr(r.norm_hi),
                ]
            )


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
                "median": _g(s.median),
                "ci": f"{_g(s.ci_lo)} .. {_g(s.ci_hi)}",
                "cv": "" if s.cv is None else f"{s.cv:.1%}",
                "cv_flag": s.cv_flag,
                "norm": "" if r.norm is None else f"{r.norm:.3f}",
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


def _md_escape(s: Any) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_markdown(ctx: dict[str, Any]) -> str:
    out = [
        f"# {ctx['title']}",
        "",
        f"Generated {ctx['generated_at']} from "
        f"{ctx['counts']['records']} records ({ctx['counts']['ok']} used, "
        f"{ctx['counts']['excluded']} left out). Baseline: `{ctx['baseline']}`.",
        "",
    ]
    out += [
        "## Verdicts per published claim",
        "",
        "| claim | verdict | tolerance | checks |",
        "|---|---|---|---|",
    ]
    for v in ctx["verdicts"]:
        checks = "<br>".join(f"{c['status']}: {c['what']} — {c['measured']}" for c in v["checks"])
        out.append(
            f"| `{v['claim']}` {_md_escape(v['text'])} | **{v['verdict']}** | "
            f"{_md_escape(v['tolerance'])} | {_md_escape(checks)} |"
        )
    out += ["", "## Arms", "", "| arm | setting | ok records |", "|---|---|---|"]
    out += [f"| `{a['label']}` | {a['setting_label']} | {a['n']} |" for a in ctx["arms"]]
    flagged = [a for a in ctx["arms"] if a.get("flags")]
    if flagged:
        out += ["", "### Setting flags (the fingerprint disagrees with the stated setting)", ""]
        out += [f"- `{a['label']}`: {_md_escape(f)}" for a in flagged for f in a["flags"]]
    if ctx.get("problems"):
        out += ["", "### Input notes", ""] + [f"- {_md_escape(p)}" for p in ctx["problems"]]
    out += [
        "",
        "## Environment",
        "",
        "| field | " + " | ".join(a["label"] for a in ctx["arms"]) + " |",
        "|---|" + "---|" * len(ctx["arms"]),
    ]
    for e in ctx["environment"]:
        mark = " **(differs)**" if e["differs"] else ""
        out.append(
            f"| {e['field']}{mark} | " + " | ".join(_md_escape(v) for v in e["values"]) + " |"
        )
    for sec in ctx["sections"]:
        out += [
            "",
            f"## {sec['suite']} / {sec['experiment']}",
            "",
            "| model | batch | variant | arm | metric | n | median | 95 % CI | CV | normalized |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for r in sec["rows"]:
            cv = r["cv"] + (" ⚠" if r["cv_flag"] else "")
            out.append(
                f"| {r['model']} | {r['batch']} | {_md_escape(r['variant'])} | "
                f"{r['arm']} | {r['metric']} | {r['n']} | {r['median']} | {r['ci']} | "
                f"{cv} | {r['norm']} |"
            )
    out += ["", "## Figures", ""]
    out += [f"![{f['title']}]({f['file']})\n\n{f['caption']}\n" for f in ctx["figures"]]
    out += ["## Runs left out", ""]
    if ctx["excluded"]:
        out += [
            "| record | arm | experiment | model | reason | detail |",
            "|---|---|---|---|---|---|",
        ]
        out += [
            f"| {e['record_id']} | {e['arm']} | {e['experiment']} | {e['model']} | "
            f"{e['reason']} | {_md_escape(e['detail'])} |"
            for e in ctx["excluded"]
        ]
    else:
        out.append("None.")
    out += ["", "## Method", ""] + [f"- {n}" for n in ctx["notes"]]
    return "\n".join(out) + "\n"
