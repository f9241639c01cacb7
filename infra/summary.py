"""Result records -> the ``results`` summary (one shape for stack outputs and ``gpulab run local``).

The summary is plain JSON data, small enough for a Pulumi stack output; the full records stay
in the JSON Lines files it points to. Shape::

    {
      "schema_version": 1,            # of this summary
      "run_id": "...",                # the runner's run id(s), comma-joined when several
      "suite": "smoke",
      "status": "ok" | "partial" | "failed" | "empty",
      "counts": {"records": 6, "ok": 6, "failed": 0, "interrupted": 0},
      "records": ["results/local/<run-id>.jsonl", ...],   # where the full records are
      "arms": ["native", "docker"],
      "rows": [                       # one per (arm, model, scenario, batch size)
        {"arm": "native", "model": "alexnet", "scenario": "single", "batch_size": 8,
         "kind": "training", "hosts": ["lab-0"], "n": 1, "ok": 1, "failed": 0,
         "images_per_sec_median": 41.2, "elapsed_s_median": 12.3, "startup_s_median": 6.1,
         "timed_s_median": 4.9, "errors": []}
      ],
      "ratios": [                     # images/sec of each arm over native, when both ran
        {"arm": "docker", "model": "alexnet", "scenario": "single", "batch_size": 8,
         "base": "native", "ratio": 0.98}
      ]
    }

``status`` is ``ok`` when every record is ok, ``failed`` when none is, ``partial`` otherwise,
``empty`` when there is no record at all.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from workloads.records import iter_records

SUMMARY_VERSION = 1
_MAX_ERRORS = 3


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 4) if values else None


def run_status(counts: dict[str, int]) -> str:
    total = counts.get("records", 0)
    if total == 0:
        return "empty"
    if counts.get("ok", 0) == total:
        return "ok"
    if counts.get("ok", 0) == 0:
        return "failed"
    return "partial"


def summarize(
    records: Iterable[dict[str, Any]],
    record_paths: Iterable[str | Path] = (),
    suite: str | None = None,
) -> dict[str, Any]:
    """Group records by (arm, model, scenario, batch size) and take medians over the ok ones."""
    recs = list(records)
    groups: dict[tuple[str, str, str, int | None], list[dict[str, Any]]] = {}
    for rec in recs:
        key = (
            str(rec.get("arm") or "native"),
            str(rec.get("model", "?")),
            str(rec.get("scenario", "?")),
            rec.get("batch_size"),
        )
        groups.setdefault(key, []).append(rec)

    rows: list[dict[str, Any]] = []
    for (arm, model, scenario, batch), group in groups.items():
        ok = [r for r in group if r.get("status") == "ok"]
        ips = [float(r["images_per_sec"]) for r in ok if r.get("images_per_sec") is not None]
        elapsed = [float(r["elapsed_s"]) for r in ok if r.get("elapsed_s") is not None]
        startup = [float(r["startup_s"]) for r in ok if r.get("startup_s") is not None]
        timed = [float(r["timed_s"]) for r in ok if r.get("timed_s") is not None]
        errors = sorted({str(r["error"]) for r in group if r.get("error")})[:_MAX_ERRORS]
        rows.append(
            {
                "arm": arm,
                "model": model,
                "scenario": scenario,
                "batch_size": batch,
                "kind": str(group[0].get("kind", "training")),
                "hosts": sorted({str(r.get("host", "?")) for r in group}),
                "n": len(group),
                "ok": len(ok),
                "failed": len(group) - len(ok),
                "images_per_sec_median": _median(ips),
                "elapsed_s_median": _median(elapsed),
                "startup_s_median": _median(startup),  # launch to the first step
                "timed_s_median": _median(timed),  # the window images/sec is measured over
                "errors": errors,
            }
        )

    counts = {
        "records": len(recs),
        "ok": sum(r.get("status") == "ok" for r in recs),
        "failed": sum(r.get("status") == "failed" for r in recs),
        "interrupted": sum(r.get("status") == "interrupted" for r in recs),
    }
    suites = sorted({str(r.get("suite")) for r in recs if r.get("suite")})
    run_ids = sorted({str(r.get("run_id")) for r in recs if r.get("run_id")})
    arms: list[str] = []
    for row in rows:
        if row["arm"] not in arms:
            arms.append(row["arm"])
    summary = {
        "schema_version": SUMMARY_VERSION,
        "run_id": ",".join(run_ids),
        "suite": suite or ",".join(suites),
        "status": run_status(counts),
        "counts": counts,
        "records": [str(p) for p in record_paths],
        "arms": arms,
        "rows": rows,
    }
    summary["ratios"] = arm_ratios(summary) if len(arms) > 1 else []
    return summary


def merge_summaries(summaries: Iterable[dict[str, Any] | None]) -> dict[str, Any]:
    """One summary of several runs (e.g. one workload run per execution environment)."""
    parts = [x for x in summaries if x]
    counts = {"records": 0, "ok": 0, "failed": 0, "interrupted": 0}
    rows: list[dict[str, Any]] = []
    records: list[str] = []
    arms: list[str] = []
    for part in parts:
        for key in counts:
            counts[key] += int(part.get("counts", {}).get(key, 0))
        rows.extend(part.get("rows", []))
        records.extend(part.get("records", []))
        arms.extend(a for a in part.get("arms", []) if a not in arms)
    merged = {
        "schema_version": SUMMARY_VERSION,
        "run_id": ",".join(p["run_id"] for p in parts if p.get("run_id")),
        "suite": ",".join(sorted({p["suite"] for p in parts if p.get("suite")})),
        "status": run_status(counts),
        "counts": counts,
        "records": records,
        "arms": arms,
        "rows": rows,
    }
    merged["ratios"] = arm_ratios(merged) if len(arms) > 1 else []
    return merged


def summarize_files(paths: Iterable[str | Path], suite: str | None = None) -> dict[str, Any]:
    """Read JSON Lines record files (missing files count as no records) and summarize them."""
    files = [Path(p) for p in paths]
    recs: list[dict[str, Any]] = []
    for p in files:
        if p.is_file():
            recs.extend(iter_records(p))
    return summarize(recs, [str(p) for p in files], suite=suite)


def summary_table(summary: dict[str, Any], title: str = "results") -> Any:
    """A rich Table of a summary's rows."""
    from rich.table import Table  # lazily: rich is only for the CLI

    table = Table(title=f"{title} — status {summary.get('status')}")
    for col, justify in (
        ("arm", "left"),
        ("model", "left"),
        ("scenario", "left"),
        ("batch", "right"),
        ("ok/n", "right"),
        ("images/sec (median)", "right"),
        ("start-up s (median)", "right"),
        ("timed s (median)", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in summary.get("rows", []):
        ips = row.get("images_per_sec_median")
        seconds = [row.get("startup_s_median"), row.get("timed_s_median")]
        table.add_row(
            row["arm"],
            row["model"],
            row["scenario"],
            "" if row.get("batch_size") is None else str(row["batch_size"]),
            f"{row['ok']}/{row['n']}",
            "-" if ips is None else f"{ips:.2f}",
            *("-" if v is None else f"{v:.2f}" for v in seconds),
        )
    return table


def arm_ratios(summary: dict[str, Any], base: str = "native") -> list[dict[str, Any]]:
    """images/sec of every other arm relative to ``base`` for the same model/scenario/batch."""
    base_rows = {
        (r["model"], r["scenario"], r["batch_size"]): r
        for r in summary.get("rows", [])
        if r["arm"] == base
    }
    out: list[dict[str, Any]] = []
    for r in summary.get("rows", []):
        b = base_rows.get((r["model"], r["scenario"], r["batch_size"]))
        if r["arm"] == base or b is None:
            continue
        num, den = r.get("images_per_sec_median"), b.get("images_per_sec_median")
        ratio = round(num / den, 4) if num is not None and den else None
        out.append(
            {
                "arm": r["arm"],
                "model": r["model"],
                "scenario": r["scenario"],
                "batch_size": r["batch_size"],
                "base": base,
                "ratio": ratio,
            }
        )
    return out
