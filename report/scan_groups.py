"""The kept records of report.scan's table, grouped in DuckDB: settings, environments, values.

Reads the view ``k`` (kept records: ``r`` row id, ``o`` input order, the columns of
report.scan_sql) and fills a report.table.Collected exactly as report.table.collect would
from the same records in the same order.
"""

from __future__ import annotations

from typing import Any

from report.mapping import SETTING_OF_VIRTUALIZATION, Arm, arm_settings_from, paired_settings
from report.table import Collected, GroupKey, key_of
from workloads.json_bounded import loads_json

ARM_SQL = "coalesce(nullif(topology, ''), 'unknown'), coalesce(nullif(arm, ''), 'native')"
# records whose group or metrics need report.table's Python (metrics, odd variants, sharing)
PY_ROW = (
    "(coalesce(metrics, '{}') <> '{}' OR scenario = 'sharing' OR NOT (variant IS NULL OR "
    "variant = 'null' OR starts_with(variant, '\"')))"
)
VARIANT = "coalesce(CASE WHEN starts_with(variant, '\"') THEN variant ->> '$' END, '')"
ISIZE = (
    "CASE WHEN NOT (contains(isz, '.') OR contains(isz, 'e') OR contains(isz, 'E')) "
    "THEN TRY_CAST(isz AS BIGINT) ELSE (CASE json_extract(ishape, '$[0]') WHEN 'true' THEN 1 "
    "WHEN 'false' THEN 0 ELSE CASE WHEN starts_with(ishape, '[') AND NOT contains("
    "json_extract(ishape, '$[0]'), '.') THEN TRY_CAST(json_extract(ishape, '$[0]') AS BIGINT) "
    "END END) END"
)


def _loads(text: str | None) -> Any:
    return None if text is None else loads_json(text)


def settings(con: Any, col: Collected) -> None:
    """Per arm: records per stated setting, and the flags in the records' order."""
    seen: dict[Arm, dict[str, int]] = {}
    for topo, arm, virt, n in con.execute(
        f"SELECT {ARM_SQL}, virt, count(*) FROM k GROUP BY ALL"
    ).fetchall():
        s = SETTING_OF_VIRTUALIZATION.get(virt, "unknown") if virt is not None else "unknown"
        counts = seen.setdefault(Arm(topo, arm), {})
        counts[s] = counts.get(s, 0) + int(n)
    flags: dict[Arm, list[Any]] = {}
    for topo, arm, fl, _ in con.execute(
        f"SELECT {ARM_SQL}, flags, min(o) FROM k WHERE flags IS NOT NULL AND flags <> '[]' "
        "GROUP BY ALL ORDER BY 4"
    ).fetchall():
        flags.setdefault(Arm(topo, arm), []).extend(_loads(fl) or [])
    col.arm_set = arm_settings_from(seen, flags)
    for topo, arm, n in con.execute(f"SELECT {ARM_SQL}, count(*) FROM k GROUP BY ALL").fetchall():
        col.counts[Arm(topo, arm)] = int(n)
    for model, n in con.execute("SELECT model, count(*) FROM k GROUP BY ALL").fetchall():
        col.model_counts[str(model)] = int(n)


def _params(isz: Any, ishape: Any, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    params: dict[str, Any] = dict(extra or {})
    for key, v in (("image_size", isz), ("input_shape", ishape)):
        if v is not None:
            params[key] = loads_json(v)
    return params


def reps(con: Any, col: Collected, fps: dict[int, dict[str, Any]]) -> None:
    """One stand-in record per arm and distinct environment, in the records' order."""
    rows = con.execute(
        f"SELECT {ARM_SQL}, fh, model, steps, warmup, batch, isz, ishape, dev_used, virt, "
        "gpu_path, exec_env, sharing, flags, min(o) FROM k GROUP BY ALL ORDER BY 16"
    ).fetchall()
    for topo, arm, fh, model, steps, warm, batch, isz, ishape, dev, virt, gp, ee, sh, fl, _ in rows:
        rec: dict[str, Any] = {"model": model, "fingerprint": fps.get(int(fh), {})}
        for key, v in (
            ("steps", steps),
            ("warmup", warm),
            ("batch_size", batch),
            ("virtualization", virt),
            ("gpu_path", gp),
            ("exec_env", ee),
            ("sharing", sh),
        ):
            if v is not None:
                rec[key] = v
        if fl is not None:
            rec["setting_flags"] = loads_json(fl)
        rec["params"] = _params(isz, ishape, {"device": {"used": _loads(dev)}})
        col.reps.setdefault(Arm(topo, arm), []).append(rec)


# the record's top-level numbers that are metrics (report.table.TOP_METRICS), and their columns
TOP = (
    ("images_per_sec", "ips"),
    ("elapsed_s", "ela"),
    ("startup_s", "startup"),
    ("first_step_s", "first_step"),
    ("timed_s", "timed"),
)
ANY_TOP = "(" + " OR ".join(f"{c} IS NOT NULL" for _, c in TOP) + ")"

PAIR_COLS = (
    "model, batch, isz, ishape, steps, warmup, prec, backend, data, gpu_path, fh, run, sync_k, "
    "sync_mode"
)


def _pairing(row: tuple[Any, ...], fps: dict[int, dict[str, Any]]) -> dict[str, Any]:
    model, batch, isz, ishape, steps, warm, prec, backend, data, gp, fh, run, k, mode = row
    rec: dict[str, Any] = {"model": model, "fingerprint": fps.get(int(fh), {})}
    if k is not None:
        rec["sync_every"] = k
    for key, v in (
        ("batch_size", batch),
        ("steps", steps),
        ("warmup", warm),
        ("data", data),
        ("gpu_path", gp),
    ):
        if v is not None:
            rec[key] = v
    extra = {k: loads_json(v) for k, v in (("precision", prec), ("backend", backend)) if v}
    if mode is not None:
        extra["timing"] = {"sync_mode": loads_json(mode)}
    rec["params"] = _params(isz, ishape, extra)
    return {**paired_settings(rec), "run": run}


def values(
    con: Any,
    col: Collected,
    pairs: list[tuple[int, GroupKey, Arm, dict[str, Any]]],
    fps: dict[int, dict[str, Any]],
) -> None:
    """The values per (group, arm, metric) in the records' order, and the pairing rows."""
    key_sql = (
        f"suite, experiment, model, scenario, coalesce(data, ''), coalesce(batch, 0), {VARIANT}"
    )
    sql_rows = f"FROM k WHERE NOT {PY_ROW}"
    for row in con.execute(
        f"SELECT {key_sql}, {ARM_SQL}, {PAIR_COLS}, min(o) {sql_rows} GROUP BY ALL"
    ).fetchall():
        pairs.append(
            (int(row[-1]), GroupKey(*row[:7]), Arm(row[7], row[8]), _pairing(row[9:-1], fps))
        )
    py = con.execute(
        f"SELECT o, {ARM_SQL}, suite, experiment, model, scenario, data, batch, steps, kind, "
        f"ips, ela, metrics, variant, jobs, isz, ishape, unit, startup, first_step, timed, "
        f"{PAIR_COLS} FROM k WHERE {PY_ROW} ORDER BY o"
    ).fetchall()
    got: dict[tuple[GroupKey, Arm, str], list[tuple[int, float]]] = {}
    plain: dict[tuple[GroupKey, Arm, str], Any] = {}  # no Python rows: no orders
    last: dict[GroupKey, int] = {}
    # one group per (group, arm) holding both metrics' values (half the rows of a group per
    # metric); the order of each value is fetched only where Python rows are merged in (a
    # million ints and pairs less to build otherwise)
    m = len(TOP)
    lists = [f"list({c} ORDER BY o) FILTER ({c} IS NOT NULL)" for _, c in TOP]
    ords = [f"list(o ORDER BY o) FILTER ({c} IS NOT NULL)" if py else "NULL" for _, c in TOP]
    names = [f"c{i}" for i in range(9 + 2 * m + 4)]
    # fetchnumpy: each group's values come as one float64 array (a Python float per value
    # and a list per group cost about a second at a million records); NULL is None
    res = con.execute(
        f"SELECT * FROM (SELECT {key_sql}, {ARM_SQL}, {', '.join(lists)}, {', '.join(ords)}, "
        f"list(DISTINCT {ISIZE}) FILTER ({ISIZE} IS NOT NULL), "
        "list(DISTINCT steps) FILTER (steps IS NOT NULL), arg_max(kind, o), max(o) "
        f"{sql_rows} AND {ANY_TOP} GROUP BY ALL) "
        f"t({', '.join(names)})"
    ).fetchnumpy()
    for row in zip(*(res[n].tolist() for n in names), strict=True):
        key, arm = GroupKey(*row[:7]), Arm(row[7], row[8])
        isizes, steps, kind, at = row[9 + 2 * m : 13 + 2 * m]
        vals_ords = zip(TOP, row[9 : 9 + m], row[9 + m : 9 + 2 * m], strict=True)
        for (metric, _), vals, ords_ in vals_ords:
            if vals is None:
                continue
            if py:
                got[(key, arm, metric)] = list(zip(ords_.tolist(), vals.tolist(), strict=True))
            else:
                plain[(key, arm, metric)] = vals.astype(float, copy=False)
        sizes, steps_ = col.shapes.setdefault((key, arm), (set(), set()))
        sizes.update(int(x) for x in ([] if isizes is None else isizes))
        steps_.update(int(x) for x in ([] if steps is None else steps))
        _kind(col, last, key, kind, int(at))
    _unit_values(con, col, key_sql, sql_rows)
    for row in py:
        o, topo, arm_name, suite, exp, model, scen, data, batch, n_steps, kind = row[:11]
        ips, ela, metrics, variant, jobs, isz, ishape, unit = row[11:19]
        windows = dict(zip(("startup_s", "first_step_s", "timed_s"), row[19:22], strict=True))
        rec: dict[str, Any] = {
            "suite": suite,
            "experiment": exp,
            "model": model,
            "scenario": scen,
            "kind": kind,
            "metrics": _loads(metrics) or {},
            "params": _params(isz, ishape),
        }
        for k, v in (
            ("data", data),
            ("batch_size", batch),
            ("steps", n_steps),
            ("images_per_sec", ips),
            ("elapsed_s", ela),
            *windows.items(),
        ):
            if v is not None:
                rec[k] = v
        for k, v in (("variant", variant), ("jobs", jobs)):
            if v is not None:
                rec["params"][k] = loads_json(v)
        arm = Arm(topo, arm_name)
        key = key_of(rec)
        pairs.append((int(o), key, arm, _pairing(row[22:], fps)))
        one = Collected()
        one.add(key, arm, rec, unit=unit)
        for vk, vs in one.values.items():
            got.setdefault(vk, []).extend((int(o), v) for v in vs)
        for vk, per_unit in one.units.items():
            for u, vs in per_unit.items():
                col.units.setdefault(vk, {}).setdefault(u, []).extend(vs)
        for sk, (sz, st) in one.shapes.items():
            sizes, steps_ = col.shapes.setdefault(sk, (set(), set()))
            sizes |= sz
            steps_ |= st
        for gk in one.kinds:
            _kind(col, last, gk, kind, int(o))
    if not py:
        col.values = plain
        return
    col.values = {k: [float(v) for _, v in sorted(ov, key=lambda t: t[0])] for k, ov in got.items()}


def _unit_values(con: Any, col: Collected, key_sql: str, where: str) -> None:
    """Per (group, arm, unit): the values of each of TOP (records whose metrics report.table's
    Python reads add theirs in :func:`values`)."""
    names = [f"u{i}" for i in range(10 + len(TOP))]
    lists = ", ".join(f"list({c}) FILTER ({c} IS NOT NULL)" for _, c in TOP)
    res = con.execute(
        f"SELECT * FROM (SELECT {key_sql}, {ARM_SQL}, unit, {lists} {where} AND {ANY_TOP} "
        f"GROUP BY ALL) t({', '.join(names)})"
    ).fetchnumpy()
    for row in zip(*(res[n].tolist() for n in names), strict=True):
        key, arm, unit = GroupKey(*row[:7]), Arm(row[7], row[8]), row[9]
        for (metric, _), vals in zip(TOP, row[10:], strict=True):
            if vals is not None and len(vals):
                col.units.setdefault((key, arm, metric), {}).setdefault(unit, []).extend(
                    vals.astype(float, copy=False).tolist()
                )


def _kind(col: Collected, last: dict[GroupKey, int], key: GroupKey, kind: str, at: int) -> None:
    """kinds[key] is the kind of the last record (in order) with a value in that group."""
    if at >= last.get(key, -1):
        last[key] = at
        col.kinds[key] = kind
