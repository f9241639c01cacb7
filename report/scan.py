"""Records streamed through DuckDB: JSON Lines and Parquet in, the report's small aggregates out.

The Python reader (report.load) keeps every record as a dict: 100,000 records took 2.5 GB.
Here each record file is read once by DuckDB (report.scan_sql; a Parquet file through
read_parquet, its columns given as the JSON text of each field by report.parquet) into a
table of small columns
(no fingerprint, no step times), and Python only sees what is small: the values of each
(group, arm, metric) for the statistics, one stand-in record per distinct environment of an
arm (banner, environment table, pairing), the left-out runs, and counts.

The semantics are report.load's, report.exclusions' and report.table's; where a record is
unusual, the Python code decides:

* a file with a line DuckDB cannot read, or a record whose field types or values
  ``validate_record`` refuses (checked once per distinct type signature), is read by
  report.load (skipped lines named with file and line, bad records refused with the same
  message); its good records then go through the same table;
* throttle readings that are not plain ``params.nvml_samples[*].throttle_mask`` ints are
  decoded by report.exclusions.throttle_bits, and a fingerprint's readings once per distinct
  fingerprint (ORed into the bits of every record that carries it);
* records with ``metrics``, a non-string ``params.variant`` or the sharing scenario are
  grouped by report.table.key_of / metric_values.

* a file holding a value that is not a finite number where the report reads one, or claims
  or setting flags that are not lists of strings, is read by report.load too (which notes the
  values, or refuses the record naming file and line);
* a file whose path DuckDB cannot take (not UTF-8, or a glob character) is read through a
  link of a plain name in the scan's temporary directory; notes still name the file;
* JSON nested deeper than workloads.json_bounded.MAX_JSON_DEPTH levels in a field Python decodes
  is located by report.load, which refuses it naming file and line; any other DuckDB error
  is one line (InputError).

Repetitions keep the records' order (file order, then line), so the seeded bootstrap gives
the same intervals as the Python path.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report import parquet
from report import scan_groups as groups
from report import scan_sql as q
from report.cpus import report_threads
from report.exclusions import POWER_CAP, THROTTLE_MASK, Excluded, bit_names, throttle_bits
from report.load import Planned, plan, read_planned
from report.mapping import Arm
from report.parquet import columns_of, is_parquet
from report.scan_route import duckdb_name, needs_python, standin_ok
from report.table import Collected, GroupKey
from workloads.errors import InputError
from workloads.files import reason
from workloads.fingerprints import REF, missing_note
from workloads.json_bounded import JSONDepthError, loads_json

ORD = "(fi::BIGINT * 1099511627776 + r)"  # the record's place: input order, then line


@dataclass
class Scanned:
    total: int
    kept: int
    excluded: list[Excluded]
    capped: list[tuple[dict[str, Any], int]]  # (record, throttle bits)
    pairs: list[tuple[GroupKey, Arm, dict[str, Any]]]  # paired settings, first seen first
    collected: Collected
    claim_lists: list[tuple[list[Any], int]]  # (a record's claims, how many records)
    problems: list[str] = field(default_factory=list)


def _connect(tmp: Path) -> Any:
    import duckdb

    con = duckdb.connect()
    con.execute(f"SET threads={report_threads()}")
    con.execute("SET memory_limit='480MB'")
    con.execute("SET preserve_insertion_order=true")
    con.execute("SET enable_progress_bar=false")
    con.execute(f"SET temp_directory='{_sql_text(str(tmp))}'")
    return con


def _sql_text(text: str) -> str:
    return text.replace("'", "''")


def _finite(node: Any) -> Any:
    if isinstance(node, float) and not math.isfinite(node):
        return None
    if isinstance(node, dict):
        return {k: _finite(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_finite(v) for v in node]
    return node


def _write_trusted(path: Path, recs: list[dict[str, Any]]) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for rec in recs:
            try:
                fh.write(json.dumps(rec, allow_nan=False) + "\n")
            except ValueError:  # NaN/inf: not JSON; metric_values skips them either way
                fh.write(json.dumps(_finite(rec)) + "\n")


def _loads(text: str | None) -> Any:
    return None if text is None else loads_json(text)


def scan(inputs: Iterable[str | os.PathLike[str]]) -> Scanned:
    """Read ``inputs`` (files, directories, summaries) as report.load does; see the module."""
    import duckdb

    inputs = list(inputs)
    try:
        tmp = Path(tempfile.mkdtemp(prefix="gpulab-report-"))
    except OSError as exc:
        where = tempfile.gettempdir()
        raise InputError(
            f"cannot make a temporary directory in {where!r} ($TMPDIR): {reason(exc)}"
        ) from None
    try:
        return _scan(inputs, tmp)
    except JSONDepthError:  # in a field decoded here: report.load names the file and line
        _locate(plan(inputs))
        raise InputError(f"a record in {', '.join(map(str, inputs))} nests too deep") from None
    except duckdb.Error as exc:
        raise InputError(f"reading the records failed: {_first_line(exc)}") from None
    except OSError as exc:  # the scan's own temporary files (a full disk)
        raise InputError(f"cannot write temporary files in {str(tmp)!r}: {reason(exc)}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _locate(items: list[Planned]) -> None:
    """Read each record file of ``items`` with report.load until one raises (naming file and
    line); one file at a time, so that a large input is not held whole."""
    for i, it in enumerate(items):
        if it.path is not None:
            read_planned([(i, it)], [])


def _scan(inputs: list[str | os.PathLike[str]], tmp: Path) -> Scanned:
    items = plan(inputs)
    con = _connect(tmp)
    con.execute("CREATE TABLE files(name VARCHAR, idx INTEGER)")
    labels: dict[int, str] = {}
    fast: dict[str, int] = {}
    pq: dict[str, int] = {}
    slow: set[int] = set()
    seen: set[str] = set()
    for i, it in enumerate(items):
        labels[i] = it.label
        if it.path is not None and str(it.path) not in seen:
            seen.add(str(it.path))
            name = duckdb_name(it.path, i, tmp)
            (pq if is_parquet(it.path) else fast)[name] = i
        elif it.path is None:
            slow.add(i)
    paths_by_idx = {i: Path(n) for n, i in fast.items()}
    sources: dict[int, str] = {}  # Parquet: the SQL of a file's fingerprints (report.parquet)
    same: dict[tuple[tuple[str, str], ...], list[tuple[str, int]]] = {}  # by columns
    for name, i in pq.items():
        cols = columns_of(con, Path(name), shown=labels[i])
        if parquet.fast_readable(cols):
            sources[i] = parquet.fingerprint_sql(Path(name), cols)
            same.setdefault(tuple(cols), []).append((name, i))
        else:
            slow.add(i)
    con.executemany(
        "INSERT INTO files VALUES (?, ?)", [[n, i] for n, i in [*fast.items(), *pq.items()]]
    )
    (tmp / "empty.jsonl").write_text("{}\n", encoding="utf-8")
    con.execute(
        f"CREATE TABLE rec AS {q.scan_query()} LIMIT 0", {"files": [str(tmp / "empty.jsonl")]}
    )

    order = key_order(next(iter(fast), None))

    def load(names: list[str]) -> None:
        con.execute(f"INSERT INTO rec {q.scan_query(order=order)}", {"files": names})

    if fast:
        try:
            load(list(fast))
        except Exception:  # a file DuckDB cannot read as text lines: that file alone to Python
            con.execute("DELETE FROM rec")
            for name, i in fast.items():
                try:
                    load([name])
                except Exception:
                    con.execute("DELETE FROM rec WHERE fi = ?", [i])
                    slow.add(i)
    for cols_t, group in same.items():  # the files of one set of columns in one statement

        def load_pq(part: list[tuple[str, int]], cols: Any = cols_t) -> None:
            src = parquet.source_sql([Path(n) for n, _ in part], list(cols), q.PATHS)
            fixed, typed = parquet.fixed_types(list(cols)), parquet.typed_columns(list(cols))
            con.execute(f"INSERT INTO rec {q.scan_query(src, fixed, typed=typed)}")

        try:
            load_pq(group)
        except Exception:  # a file DuckDB cannot read: that file alone to the Python reader
            con.execute("DELETE FROM rec WHERE list_contains(?, fi)", [[i for _, i in group]])
            for name, i in group:
                try:
                    load_pq([(name, i)])
                except Exception:
                    con.execute("DELETE FROM rec WHERE fi = ?", [i])
                    slow.add(i)
    combos = con.execute(
        "SELECT DISTINCT sig, sv, status, kind, virt, err_set, unknown FROM rec"
    ).fetchall()
    typed = [(q.decode(c[0]), *c[1:]) for c in combos]
    bad = [c for c, t in zip(combos, typed, strict=True)
           if t[6] or "x" in t[0] or not standin_ok(*t[:6])]  # fmt: skip
    if bad:
        con.execute("CREATE TEMP TABLE bad(sig VARCHAR, sv VARCHAR, status VARCHAR, kind VARCHAR, "
                    "virt VARCHAR, err_set BOOLEAN, unknown BOOLEAN)")  # fmt: skip
        con.executemany("INSERT INTO bad VALUES (?, ?, ?, ?, ?, ?, ?)", [list(c) for c in bad])
        rows = con.execute(
            "SELECT DISTINCT fi FROM rec JOIN bad ON "
            + " AND ".join(
                f"rec.{c} IS NOT DISTINCT FROM bad.{c}"
                for c in ("sig", "sv", "status", "kind", "virt", "err_set", "unknown")
            )
        ).fetchall()
        slow |= {int(r[0]) for r in rows}
    slow |= needs_python(con)
    if slow:
        con.execute("DELETE FROM rec WHERE list_contains(?, fi)", [sorted(slow)])
    problems: list[str] = []
    if slow:
        trusted = read_planned([(i, items[i]) for i in sorted(slow)], problems)
        names = []
        for i, recs in trusted:
            p = tmp / f"trusted-{i}.jsonl"
            _write_trusted(p, recs)
            paths_by_idx[i] = p
            sources.pop(i, None)
            con.execute("INSERT INTO files VALUES (?, ?)", [str(p), i])
            names.append(str(p))
        if names:
            load(names)
    total = int(con.execute("SELECT count(*) FROM rec").fetchone()[0])
    if total == 0:
        raise _no_records(inputs, problems)
    con.execute(f"CREATE TEMP VIEW ro AS SELECT rowid AS r, {ORD} AS o, * FROM rec")
    fps, missing = _fingerprints(con, paths_by_idx, sources)  # duplicates may carry them
    con.execute(
        "DELETE FROM rec WHERE rowid IN (SELECT r FROM (SELECT rowid AS r, row_number() OVER "
        "(PARTITION BY rid ORDER BY fi, rowid) AS n FROM rec) WHERE n > 1)"
    )
    problems += _unset_notes(con, labels)
    problems += _missing_notes(con, labels, missing)
    total = int(con.execute("SELECT count(*) FROM rec").fetchone()[0])
    _throttle(con, tmp, fps)
    excluded, capped = _left_out(con)
    kept_where = f"status = 'ok' AND (thr_bits & {THROTTLE_MASK}) = 0"
    con.execute(f"CREATE TEMP VIEW k AS SELECT * FROM ro WHERE {kept_where}")
    kept = int(con.execute("SELECT count(*) FROM k").fetchone()[0])
    claim_lists = [
        (_loads(c) or [], int(n))
        for c, n in con.execute("SELECT claims, count(*) FROM rec GROUP BY claims").fetchall()
    ]
    collected = Collected()
    pairs: list[tuple[int, GroupKey, Arm, dict[str, Any]]] = []
    if kept:
        groups.settings(con, collected)
        groups.reps(con, collected, fps)
        groups.values(con, collected, pairs, fps)
    pairs.sort(key=lambda p: p[0])
    return Scanned(
        total=total,
        kept=kept,
        excluded=excluded,
        capped=capped,
        pairs=[(g, a, s) for _, g, a, s in pairs],
        collected=collected,
        claim_lists=claim_lists,
        problems=problems,
    )


def key_order(path: str | None) -> tuple[str, ...]:
    """The top-level keys of the first line of the JSON Lines file ``path``, in order (the
    order a writer puts them: report.scan_sql.json_source); () where there is none."""
    if path is None:
        return ()
    try:
        with open(path, encoding="utf-8") as fh:
            rec = loads_json(fh.readline(1 << 20))
    except (OSError, ValueError):  # not JSON, too deep, not UTF-8
        return ()
    if not isinstance(rec, dict):
        return ()
    # a schema-3 file's first record carries its fingerprint in full, the others name it
    return tuple(k for k in rec if isinstance(k, str) and not (k == "fingerprint" and REF in rec))


def _no_records(inputs: list[str | os.PathLike[str]], problems: list[str]) -> InputError:
    return InputError(f"no records in {', '.join(str(i) for i in inputs)}")


def _unset_notes(con: Any, labels: dict[int, str]) -> list[str]:
    complete = " AND ".join(
        f"coalesce({c}, '') <> ''" for c in ("gpu_path", "exec_env", "virt", "sharing")
    )
    rows = con.execute(
        f"SELECT fi, count(*), min(o) FROM ro WHERE NOT ({complete}) GROUP BY fi ORDER BY 3"
    ).fetchall()
    counts: dict[str, int] = {}
    for fi, n, _ in rows:
        f = labels[int(fi)]
        counts[f] = counts.get(f, 0) + int(n)
    return [
        f"{f}: {n} record(s) carry no setting (gpu_path, exec_env, virtualization, "
        "sharing: schema 1, or a run given no --gpu-path); grouped as unknown setting, "
        "not guessed"
        for f, n in counts.items()
    ]


def _throttle(con: Any, tmp: Path, fps: dict[int, dict[str, Any]]) -> None:
    """thr_bits where SQL could not decode them: ``params.nvml_samples`` beyond plain
    ``throttle_mask`` ints (per record), and the fingerprint's readings (per distinct
    fingerprint: the same bits for every record that carries it). report.exclusions'
    throttle_bits is an OR over the readings of both, where a record's sample list stands
    in for a fingerprint's own ``_params_nvml_samples``; so is this."""
    rows = con.execute("SELECT r, thr_src FROM ro WHERE thr_src IS NOT NULL").fetchall()
    if rows:
        path = tmp / "bits.csv"
        with open(path, "w", encoding="utf-8") as fh:
            for r, src in rows:
                fh.write(f"{r},{throttle_bits({'params': {'nvml_samples': loads_json(src)}})}\n")
        con.execute(
            "UPDATE rec SET thr_bits = b.bits | rec.win_bits FROM read_csv(?, columns={'r': "
            "'BIGINT', 'bits': 'BIGINT'}, header=false) b WHERE rec.rowid = b.r",
            [str(path)],
        )
    for fh_, fp in fps.items():
        alone = throttle_bits({"fingerprint": fp})
        own = {k: v for k, v in fp.items() if k != "_params_nvml_samples"}
        beside = throttle_bits({"fingerprint": own}) if len(own) < len(fp) else alone
        if alone or beside:
            con.execute(
                "UPDATE rec SET thr_bits = thr_bits | CASE WHEN nvml_list THEN ? ELSE ? END "
                "WHERE fh = ?",
                [beside, alone, fh_],
            )


_COMPACT = (
    "rid, run, status, error, experiment, model, suite, scenario, data, batch, steps, "
    "warmup, topology, arm, isz, ishape, thr_bits"
)


def _compact(row: tuple[Any, ...]) -> dict[str, Any]:
    """A stand-in record with what the tables of left-out runs read."""
    rid, run, status, error, exp, model, suite, scen, data, batch, steps, warm = row[:12]
    topo, arm, isz, ishape = row[12:16]
    rec: dict[str, Any] = {
        "record_id": rid,
        "run_id": run,
        "status": status,
        "error": error,
        "experiment": exp,
        "model": model,
        "suite": suite,
        "scenario": scen,
        "params": {},
    }
    for k, v in (("data", data), ("batch_size", batch), ("steps", steps), ("warmup", warm)):
        if v is not None:
            rec[k] = v
    for k, v in (("topology", topo), ("arm", arm)):
        if v is not None:
            rec[k] = v
    for k, v in (("image_size", isz), ("input_shape", ishape)):
        if v is not None:
            rec["params"][k] = loads_json(v)
    return rec


def _left_out(con: Any) -> tuple[list[Excluded], list[tuple[dict[str, Any], int]]]:
    excluded: list[Excluded] = []
    capped: list[tuple[dict[str, Any], int]] = []
    rows = con.execute(
        f"SELECT {_COMPACT} FROM ro WHERE status <> 'ok' OR "
        f"(thr_bits & {THROTTLE_MASK | POWER_CAP}) <> 0 ORDER BY o"
    ).fetchall()
    for row in rows:
        rec, bits = _compact(row), int(row[-1])
        if rec["status"] != "ok":
            detail = (rec.get("error") or "").strip().splitlines()
            excluded.append(
                Excluded(rec["record_id"], rec["status"], detail[0] if detail else "", rec)
            )
        elif bits & THROTTLE_MASK:
            excluded.append(
                Excluded(rec["record_id"], "throttled", bit_names(bits & THROTTLE_MASK), rec)
            )
        else:
            capped.append((rec, bits))
    return excluded, capped


def _fingerprints(
    con: Any, paths: dict[int, Path], sources: dict[int, str]
) -> tuple[dict[int, dict[str, Any]], list[int]]:
    """One fingerprint per distinct ``fh`` (the throttle readings of every record,
    report.scan._throttle, and the environment of the kept ones), and the ``fh`` of the
    references that no record carries (workloads.fingerprints: read without a fingerprint).

    A reference's fingerprint is the one the first record carrying it (in input order)
    holds: its text kept by the scan (JSON Lines), else read back from its Parquet file; a
    fingerprint without a reference (schema 1, 2) is read back from the first file holding
    it."""
    rows = con.execute(
        "SELECT fh, bool_or(fp_ref), min(o) FILTER (fp_in), arg_min(fi, o) FILTER (fp_in), "
        "arg_min(fi, o) FROM ro GROUP BY fh"
    ).fetchall()
    out: dict[int, dict[str, Any]] = {}
    missing: list[int] = []
    for fh, named, first_o, carrier_fi, first_fi in rows:
        fh = int(fh)
        if named and first_o is None:
            missing.append(fh)
            out[fh] = {}
            continue
        fi = int(carrier_fi if carrier_fi is not None else first_fi)
        res = con.execute("SELECT fp_text FROM ro WHERE o = ?", [first_o]).fetchone()
        if res is None or res[0] is None:
            src = sources.get(fi)
            params: list[Any]
            if src is not None:
                sql, params = f"SELECT fp FROM {src} WHERE fh = ? AND fp IS NOT NULL LIMIT 1", [fh]
            else:
                sql = (
                    f"SELECT fp FROM (SELECT {q.top_value('fingerprint')} AS fp "
                    f"FROM {q.records('?')}) WHERE hash(fp) = ? LIMIT 1"
                )
                params = [[str(paths[fi])], fh]
            res = con.execute(sql, params).fetchone()
        fp = _loads(res[0]) if res else None
        out[fh] = fp if isinstance(fp, dict) else {}
    return out, missing


def _missing_notes(con: Any, labels: dict[int, str], missing: list[int]) -> list[str]:
    """One note per file holding records whose fingerprint no record carries (as
    workloads.fingerprints.missing_notes words it)."""
    if not missing:
        return []
    rows = con.execute(
        "SELECT fi, count(*), min(o) FROM ro WHERE list_contains(?, fh) GROUP BY fi ORDER BY 3",
        [missing],
    ).fetchall()
    counts: dict[str, int] = {}
    for fi, n, _ in rows:
        counts[labels[int(fi)]] = counts.get(labels[int(fi)], 0) + int(n)
    return [missing_note(f, n) for f, n in counts.items()]
