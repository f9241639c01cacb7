"""Records out of gpulab: Parquet (one row per record, via DuckDB COPY) and OpenMetrics text.

* Parquet: the record's fields as columns (``metrics``, ``params``, ``fingerprint``,
  ``setting_flags``, ``claims`` and ``step_times_s`` as JSON text), one row per record read
  by report.load (skipped lines reported, duplicates once), so any Parquet reader (DuckDB,
  pandas, Spark) takes it. Each row carries its fingerprint in full (a schema-3 record names
  it by ``fingerprint_ref``, written once per file: report.load puts it back) beside the
  reference, so a row stands alone. A value that is not a finite number (noted by report.load) is
  written as NULL.
* OpenMetrics: per run, group and arm, gauges of the median images/sec
  (``gpulab_images_per_second``), the median elapsed time (``gpulab_elapsed_seconds``) and the
  number of ok records (``gpulab_records``), labelled with run_id, suite, experiment, model,
  scenario, data, batch, topology, arm and the stated setting; ``# EOF`` last
  (https://prometheus.io/docs/specs/om/open_metrics_spec/). Values are spelled as the format
  wants (``NaN``, ``+Inf``); label values escape backslash, quote and newline, and carry no
  other control character or lone surrogate (each becomes U+FFFD). ``push`` sends the same
  samples to a Prometheus Pushgateway in its text format, within an overall deadline,
  with credentials from ``$GPULAB_PUSHGATEWAY_USER``/``$GPULAB_PUSHGATEWAY_PASSWORD`` or
  ``~/.netrc`` (never from the URL, never echoed).

Every file is written whole or not at all (workloads.files): a failed write leaves the
previous file, or none, and one line naming the path and the reason.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import statistics
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from report.exclusions import split
from report.load import load_records
from report.mapping import setting_of
from report.parquet import COLUMNS
from report.table import arm_of, key_of
from workloads.errors import InputError
from workloads.files import reason, replacing, write_text
from workloads.finite import nulled

FORMATS = ("parquet", "openmetrics")
LABELS = ("run_id", "suite", "experiment", "model", "scenario", "data", "batch", "topology",
          "arm", "setting")  # fmt: skip


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, typ in COLUMNS.items():
        v = rec.get(name)
        if typ == "JSON":
            out[name] = nulled(v)  # stored as JSON (DuckDB's JSON type, text in Parquet)
        elif typ == "DOUBLE":
            out[name] = finite(v)
        else:
            out[name] = v
    return out


def finite(v: Any) -> float | None:
    """``v`` as a finite float; None for anything else (NaN, infinity, an int beyond a
    double, a bool, text)."""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def to_parquet(records: list[dict[str, Any]], out: Path) -> int:
    """Write ``records`` to ``out`` as Parquet through DuckDB's COPY; the row count.

    DuckDB writes into a temporary directory (a path it can take: any name, UTF-8 or not),
    and the file is copied to ``out`` whole or not at all (workloads.files), so a full disk
    or a read-only directory is one line naming ``out`` and the previous file stays."""
    import duckdb

    try:
        tmp_dir = tempfile.TemporaryDirectory(prefix="gpulab-export-")
    except OSError as exc:
        raise InputError(
            f"cannot make a temporary directory in {tempfile.gettempdir()!r} ($TMPDIR): "
            f"{reason(exc)}"
        ) from None
    with tmp_dir as tmp:
        staged, made = Path(tmp) / "rows.jsonl", Path(tmp) / "rows.parquet"
        try:
            with open(staged, "w", encoding="utf-8") as fh:
                for rec in records:
                    fh.write(json.dumps(_row(rec), allow_nan=False, default=str) + "\n")
            con = duckdb.connect()
            try:
                copy_jsonl(con, staged, made)
            finally:
                con.close()
        except OSError as exc:
            raise InputError(f"cannot write temporary files in {tmp!r}: {reason(exc)}") from None
        except duckdb.Error as exc:
            raise InputError(f"--out {str(out)!r}: DuckDB could not write Parquet: "
                             f"{_first_line(exc)}") from None  # fmt: skip
        with replacing(out) as part, open(made, "rb") as src, open(part, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    return len(records)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def copy_jsonl(con: Any, src: Path, dst: Path) -> None:
    """Write the JSON Lines records of ``src`` to ``dst`` as Parquet, one row per line with
    the columns of report.parquet.COLUMNS (fields not among them are not written)."""
    cols = ", ".join(f"'{k}': '{v}'" for k, v in COLUMNS.items())
    s, d = (str(p).replace("'", "''") for p in (src, dst))
    con.execute(
        f"COPY (SELECT * FROM read_json('{s}', format='newline_delimited', "
        f"columns={{{cols}}})) TO '{d}' (FORMAT parquet)"
    )


_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ud800-\udfff]")  # controls, lone surrogates


def _escape(v: str) -> str:
    """A label value as OpenMetrics and the Prometheus text format want it: backslash,
    quote and newline escaped; other control characters and lone surrogates (which no
    UTF-8 text can hold) replaced by U+FFFD."""
    v = _UNSAFE.sub("\ufffd", v)
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def _value(v: float) -> str:
    """A sample value as both formats spell it: NaN, +Inf, -Inf, else Python's repr."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(v)


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
            vals = [f for r in recs if (f := finite(r.get(field))) is not None]
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
            lines.append(f"{name}{{{text}}} {_value(v)}")
    if openmetrics:
        lines.append("# EOF")
    return "\n".join(lines) + "\n"


def export(
    inputs: Iterable[str | os.PathLike[str]], fmt: str, out: Path, problems: list[str]
) -> int:
    """Write the records of ``inputs`` to ``out`` in ``fmt``; the number of records read."""
    if fmt not in FORMATS:
        raise InputError(f"--format {fmt!r} is not one of {', '.join(FORMATS)}")
    records = load_records(inputs, problems)
    if fmt == "parquet":
        to_parquet(records, out)
    else:
        write_text(out, exposition(records))  # whole or not at all (workloads.files)
    return len(records)
