"""Records out of gpulab: Parquet (one row per record, via DuckDB COPY) and OpenMetrics text.

* Parquet: the record's fields as columns (``metrics``, ``params``, ``fingerprint``,
  ``setting_flags``, ``claims`` and ``step_times_s`` as JSON text), one row per record read
  by report.load (skipped lines reported, duplicates once), so any Parquet reader (DuckDB,
  pandas, Spark) takes it.
* OpenMetrics: per run, group and arm, gauges of the median images/sec
  (``gpulab_images_per_second``), the median elapsed time (``gpulab_elapsed_seconds``) and the
  number of ok records (``gpulab_records``), labelled with run_id, suite, experiment, model,
  scenario, data, batch, topology, arm and the stated setting; ``# EOF`` last
  (https://prometheus.io/docs/specs/om/open_metrics_spec/). ``push`` sends the same samples
  to a Prometheus Pushgateway in its text format.
"""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import urllib.error
import urllib.request
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from report.exclusions import split
from report.load import load_records
from report.mapping import setting_of
from report.parquet import COLUMNS
from report.table import arm_of, key_of
from workloads.errors import InputError

FORMATS = ("parquet", "openmetrics")
LABELS = ("run_id", "suite", "experiment", "model", "scenario", "data", "batch", "topology",
          "arm", "setting")  # fmt: skip


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, typ in COLUMNS.items():
        v = rec.get(name)
        if typ == "JSON":
            out[name] = v  # stored as JSON (DuckDB's JSON type, text in Parquet)
        elif typ == "DOUBLE":
            ok = isinstance(v, int | float) and not isinstance(v, bool)
            out[name] = float(v) if ok else None  # type: ignore[arg-type]
        else:
            out[name] = v
    return out


def to_parquet(records: list[dict[str, Any]], out: Path) -> int:
    """Write ``records`` to ``out`` as Parquet through DuckDB's COPY; the row count."""
    import duckdb

    with tempfile.TemporaryDirectory(prefix="gpulab-export-") as tmp:
        staged = Path(tmp) / "rows.jsonl"
        with open(staged, "w", encoding="utf-8") as fh:
            for rec in records:
                fh.write(json.dumps(_row(rec), allow_nan=False, default=str) + "\n")
        con = duckdb.connect()
        copy_jsonl(con, staged, out)
        con.close()
    return len(records)


def copy_jsonl(con: Any, src: Path, dst: Path) -> None:
    """Write the JSON Lines records of ``src`` to ``dst`` as Parquet, one row per line with
    the columns of report.parquet.COLUMNS (fields not among them are not written)."""
    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    s, d = (str(p).replace("'", "''") for p in (src, dst))
    con.execute(
        f"COPY (SELECT * FROM read_json('{s}', format='newline_delimited', "
        f"columns={{{cols}}})) TO '{d}' (FORMAT parquet)"
    )


def _escape(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def samples(records: list[dict[str, Any]]) -> list[tuple[str, dict[str, str], float]]:
    """(metric name, labels, value) per run, group and arm of the ok records."""
    kept = split(records)[0]
    groups: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for r in kept:
        k, a = key_of(r), arm_of(r)
        labels: tuple[str, ...] = (
            str(r.get("run_id")), k.suite, k.experiment, k.model, k.scenario, k.data,
            str(k.batch_size), a.topology, a.arm, setting_of(r),
        )  # fmt: skip
        groups.setdefault(labels, []).append(r)
    out: list[tuple[str, dict[str, str], float]] = []
    for labels, recs in sorted(groups.items()):
        lab = dict(zip(LABELS, labels, strict=True))
        for name, field in (
            ("gpulab_images_per_second", "images_per_sec"),
            ("gpulab_elapsed_seconds", "elapsed_s"),
        ):
            vals = [
                float(r[field])
                for r in recs
                if isinstance(r.get(field), int | float) and not isinstance(r.get(field), bool)
            ]
            if vals:
                out.append((name, lab, float(statistics.median(vals))))
        out.append(("gpulab_records", lab, float(len(recs))))
    return out


HELP = {
    "gpulab_images_per_second": "median images/sec over the ok records of a run, group and arm",
    "gpulab_elapsed_seconds": "median job elapsed time (s) over the ok records",
    "gpulab_records": "ok records of a run, group and arm",
}


def exposition(records: list[dict[str, Any]], openmetrics: bool = True) -> str:
    """The samples as OpenMetrics text (``# EOF`` last), or Prometheus text format 0.0.4."""
    by_name: dict[str, list[tuple[dict[str, str], float]]] = {}
    for name, lab, v in samples(records):
        by_name.setdefault(name, []).append((lab, v))
    lines: list[str] = []
    for name in HELP:
        if name not in by_name:
            continue
        lines += [f"# TYPE {name} gauge", f"# HELP {name} {HELP[name]}"]
        for lab, v in by_name[name]:
            text = ",".join(f'{k}="{_escape(val)}"' for k, val in lab.items())
            lines.append(f"{name}{{{text}}} {v!r}")
    if openmetrics:
        lines.append("# EOF")
    return "\n".join(lines) + "\n"


def push(records: list[dict[str, Any]], url: str, job: str = "gpulab") -> None:
    """PUT the samples to a Pushgateway (``URL/metrics/job/<job>``), Prometheus text format."""
    if not url.startswith(("http://", "https://")):
        raise InputError(f"--pushgateway {url!r} is not an http(s) URL")
    body = exposition(records, openmetrics=False).encode("utf-8")
    req = urllib.request.Request(
        f"{url.rstrip('/')}/metrics/job/{job}",
        data=body,
        method="PUT",
        headers={"Content-Type": "text/plain; version=0.0.4; charset=utf-8"},
    )
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            resp.read()
    except (urllib.error.URLError, OSError) as exc:
        raise InputError(f"--pushgateway {url!r}: {getattr(exc, 'reason', exc)}") from None


def export(
    inputs: Iterable[str | os.PathLike[str]], fmt: str, out: Path, problems: list[str]
) -> int:
    """Write the records of ``inputs`` to ``out`` in ``fmt``; the number of records read."""
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    records = load_records(inputs, problems)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            to_parquet(records, out)
        else:
            out.write_text(exposition(records), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--out {str(out)!r} cannot be written: {exc.strerror}") from None
    return len(records)
