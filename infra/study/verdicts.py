"""``gpulab study report``: the study's records -> the report, with what the study adds.

The report itself is ``report.build_report`` on the finished units' records, normalized to the
study's baseline arm (HTML, Markdown, CSV, figures in ``study-<name>/report/``). The study adds
``study.md`` and ``study.json`` beside it: each arm's units (done, failed with the reason,
skipped, missing), what the teardown left, the paired-arm warnings, and one verdict per claim
the study checks (report.claims: intervals over the study's repeats, each repeat one unit),
labelled with the device the records ran on. On records that ran on no GPU the verdict is
``method check``: the measured ratios and their intervals, never a verdict word (a CPU run
shows the tool and the method, not the papers' GPU claims).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.study.fingerprint import Warning_, compare, paired_setting_warning
from infra.study.state import Journal
from workloads.files import write_text
from workloads.fingerprints import resolve


class NotPaired(Exception):
    """``--strict`` and the arms' fingerprints differ: the report is not built."""


@dataclass
class VerdictRow:
    claim: str
    verdict: str
    label: str  # the device the records ran on: "GPU", "CPU" or "" (not recorded)
    measured: str
    warnings: list[str] = field(default_factory=list)


@dataclass
class StudyReport:
    out_dir: Path
    arms: list[dict[str, Any]]
    missing: list[str]
    teardown: list[dict[str, Any]]
    warnings: list[Warning_]
    verdicts: list[VerdictRow]
    html: Path | None = None
    figures: list[Path] = field(default_factory=list)
    note: str = ""


def read_records(files: list[Path]) -> list[dict[str, Any]]:
    """The records of the units' files, each with its fingerprint (schema 3: put back from
    the record that carries it, which may be a failed one: workloads.fingerprints.resolve)."""
    out = []
    for f in files:
        for line in f.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(json.loads(line))
    resolve(out)
    return out


def arm_rows(j: Journal) -> list[dict[str, Any]]:
    rows = []
    for name, info in j.data["arms"].items():
        units = [e for e in j.data["units"].values() if e["arm"] == name]
        count = {s: sum(e["status"] == s for e in units) for s in ("done", "failed", "skipped")}
        left = len(units) - sum(count.values())
        reasons = sorted({e["reason"] for e in units if e.get("reason")})
        rows.append(
            {
                "arm": name,
                "stack": info["stack"],
                "topology": info["topology"],
                "exec_env": info["exec_env"],
                "units": len(units),
                **count,
                "missing": left,
                "records": sum(int(e.get("records") or 0) for e in units),
                "reasons": reasons,
            }
        )
    return rows


def _measured(v: Any, limit: int = 600) -> str:
    """What a claim's checks measured, the measured ones first, cut at ``limit``."""
    outs = sorted((o for _, o in v.results if o.measured), key=lambda o: o.status == "missing")
    text = "; ".join(o.measured for o in outs)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def device_label(records: list[dict[str, Any]]) -> str:
    """``GPU``, ``CPU`` (report.device.on_cpu: the verdicts are method checks) or ``""``."""
    from report.device import device_kind, on_cpu

    if on_cpu(records):
        return "CPU"
    return "GPU" if any(device_kind(r) == "gpu" for r in records) else ""


def _build_report(
    files: list[Path], out_dir: Path, baseline: str, embed: bool, title: str
) -> tuple[Any, str]:
    """``report.build_report`` on the units' files; (result or None, a note when none).

    The repeats of a study are separate runs, so they are pooled where the report asks
    (``pool``). Should the streaming engine fail on these records, the Python engine is tried;
    a report that cannot be built is a note, never a lost study.
    """
    import inspect

    from report import build_report
    from report.build import build_report as real
    from workloads.errors import InputError

    params = inspect.signature(real).parameters
    kw: dict[str, Any] = {"pool": True} if "pool" in params else {}
    engines: list[dict[str, Any]] = [{}]
    if "engine" in params:
        engines.append({"engine": "python"})
    note = ""
    for extra in engines:
        try:
            rep = build_report(
                files, out_dir, baseline=baseline, embed_figures=embed, title=title, **kw, **extra
            )
            return rep, ""
        except InputError as exc:
            return None, f"no report: {exc}"
        except Exception as exc:  # the report's own fault never loses the study's results
            note = f"no report (the report failed: {type(exc).__name__}: {exc})"
    return None, note


def build(j: Journal, strict: bool = False, embed: bool = True) -> StudyReport:
    from report.mapping import Arm as ReportArm

    files = [
        j.records_file(u)
        for u in j.order()
        if j.unit(u)["status"] in ("done", "failed") and j.records_file(u).is_file()
    ]
    records = read_records(files)
    arms = arm_rows(j)
    missing = [a["arm"] for a in arms if a["done"] == 0]
    claims = list(j.data.get("claims") or [])
    base_name = j.data["baseline"]
    base_info = j.data["arms"][base_name]
    base = ReportArm(base_info["topology"], base_info["label"])
    label_of = {info["label"]: name for name, info in j.data["arms"].items()}
    per_arm: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        if r.get("status") == "ok":
            per_arm.setdefault(label_of.get(str(r.get("arm")), str(r.get("arm"))), []).append(r)
    warnings = compare(per_arm, base_name, claims)
    paired = paired_setting_warning(records, base, claims)
    if paired is not None:
        warnings.append(paired)
    if strict and warnings:
        w = warnings[0]
        raise NotPaired(
            f"study {j.data['study']}: arms not paired ({len(warnings)} difference(s)); first: "
            f"arm {w.arm}: {w.text}"
        )
    out_dir = j.dir / "report"
    rep = None
    note = ""
    if records:
        rep, note = _build_report(files, out_dir, base.label, embed, f"study {j.data['study']}")
    else:
        note = "no report: no unit has finished"
    label = device_label([r for r in records if r.get("status") == "ok"])
    rows = []
    by_claim = {v.claim: v for v in (rep.verdicts if rep else [])}
    tested = sorted(
        {str(c) for r in records if r.get("status") == "ok" for c in r.get("claims") or []}
    )
    for c in claims:
        v = by_claim.get(c)
        measured = _measured(v) if v else ""
        if v is None and not note:  # the reason a claim has no verdict
            measured = (
                "no finished record tests this claim (the suite's experiments test "
                + (", ".join(tested) or "no claim")
                + ")"
            )
        rows.append(
            VerdictRow(
                c,
                v.verdict if v else "not measured",
                label,
                measured or note,
                [f"{w.arm}: {w.text}" for w in warnings if c in w.claims],
            )
        )
    teardown = (j.data.get("teardown") or {}).get("stacks") or []
    result = StudyReport(
        out_dir,
        arms,
        missing,
        teardown,
        warnings,
        rows,
        rep.html if rep else None,
        [f.path for f in rep.figures] if rep else [],
        note,
    )
    write(j, result)
    return result


def write(j: Journal, r: StudyReport) -> None:
    r.out_dir.mkdir(parents=True, exist_ok=True)
    data = {
        "study": j.data["study"],
        "baseline": j.data["baseline"],
        "seed": j.data.get("seed"),
        "order": j.data["order"],
        "arms": r.arms,
        "missing_arms": r.missing,
        "teardown": r.teardown,
        "warnings": [w.__dict__ for w in r.warnings],
        "verdicts": [v.__dict__ for v in r.verdicts],
        "note": r.note,
    }
    write_text(r.out_dir / "study.json", json.dumps(data, indent=2, sort_keys=True) + "\n")
    write_text(r.out_dir / "study.md", markdown(j, r))


def markdown(j: Journal, r: StudyReport) -> str:
    lines = [f"# Study {j.data['study']}", ""]
    seed = j.data.get("seed")
    lines += [
        f"Order {j.data['order_kind']}"
        + (f" (seed {seed})" if seed is not None else "")
        + f", rebuild {j.data['rebuild']}, baseline arm {j.data['baseline']}.",
        "",
        "| arm | stack | exec env | done | failed | skipped | missing | records | why |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for a in r.arms:
        lines.append(
            f"| {a['arm']} | {a['stack']} | {a['exec_env']} | {a['done']} | {a['failed']} | "
            f"{a['skipped']} | {a['missing']} | {a['records']} | {'; '.join(a['reasons'])} |"
        )
    lines.append("")
    if r.missing:
        lines += [f"Arms without a finished unit: {', '.join(r.missing)}.", ""]
    for t in r.teardown:
        lines.append(f"Teardown {t['stack']}: {t['status']} {t['reason']}".rstrip())
    lines += ["", "## Verdicts", "", "| claim | verdict | label | measured | warnings |"]
    lines.append("|---|---|---|---|---|")
    for v in r.verdicts:
        lines.append(
            f"| {v.claim} | {v.verdict} | {v.label} | {v.measured.replace('|', '/')} | "
            f"{'; '.join(v.warnings).replace('|', '/')} |"
        )
    if r.warnings:
        lines += ["", "## Paired-arm warnings", ""]
        lines += [f"- arm {w.arm}: {w.text}" for w in r.warnings]
    return "\n".join(lines) + "\n"
