"""The SQL of the streaming report (report.scan): one pass over the JSON Lines in DuckDB.

Parquet record files go through the same query and checks: report.parquet.source_sql gives
each column as the JSON text ``json_extract`` would give for that field of a JSON line, and a
string, integer or float column also as it is (``t_*``: the values read there without
writing and parsing their text).

Each line is parsed once (``read_json`` into a map of each top-level key to its JSON text);
the nested paths the report needs come from the small text of their top-level field, and the
number of keys shows an unknown one.
Each record's JSON types go into a short ``sig`` string that report.scan checks with
``workloads.records.validate_record``; a line that fails (not JSON, a torn write, a wrong
type, an unknown field, NaN ...) sends its whole file to the Python reader (report.load),
which names the file and line exactly as before.
"""

from __future__ import annotations

from collections.abc import Sequence

from workloads.records import OPTIONAL, REQUIRED

PATHS = (
    "schema_version",
    "record_id",
    "run_id",
    "kind",
    "suite",
    "experiment",
    "model",
    "scenario",
    "status",
    "error",
    "data",
    "batch_size",
    "steps",
    "warmup",
    "images_per_sec",
    "elapsed_s",
    "metrics",
    "topology",
    "arm",
    "gpu_path",
    "exec_env",
    "virtualization",
    "sharing",
    "setting_flags",
    "claims",
    "params.variant",
    "params.jobs",
    "params.image_size",
    "params.input_shape",
    "params.precision",
    "params.backend",
    "params.device.used",
    "params.nvml_samples",
    "params.study",
    "fingerprint",
    "fingerprint_ref",
    "global_batch",
    "repeat",
    "step_times_s",
    "params",
    "host",
    "started_at",
    "finished_at",
    "sync_every",
    "startup_s",
    "first_step_s",
    "timed_s",
    "block_times_s",
    "params.nvml_window.throttle_mask",
    "params.timing.sync_mode",
)
IDX = {p: i + 1 for i, p in enumerate(PATHS)}  # DuckDB lists are 1-based


def j(path: str) -> str:
    """The column holding the JSON text of ``path`` (one column each: expressions over
    columns are much cheaper in DuckDB than over the elements of one list)."""
    return f"j_{IDX[path]}"


TOP = tuple(p for p in PATHS if "." not in p)


def t(path: str) -> str:
    """The column holding the value of top-level ``path`` as its typed source column holds
    it (a Parquet file's VARCHAR, integer or float column: report.parquet.typed_columns)."""
    return f"t_{IDX[path]}"


def _types(field: str) -> tuple[type, ...]:
    typ = REQUIRED.get(field) or OPTIONAL[field]
    return typ if isinstance(typ, tuple) else (typ,)


# From the record tables of workloads.records: the fields whose full JSON type the SQL spells
# out, those that may hold null or a float (null is valid there, and NaN is noted by the Python
# reader); every other field gives the first character of its JSON text, which decides its
# type (:func:`decode`). The fields that must be ints: one check per record over all of them.
LETTERED = tuple(p for p in TOP if {type(None), float} & set(_types(p)))
INTS = tuple(p for p in TOP if _types(p) == (int,))
_RAW = {"s": '"', "i": "0", "b": "t"}  # a fixed type's letter as its text's first character


def _lettered(v: str) -> str:
    return (
        f"CASE WHEN {v} IS NULL THEN '-' WHEN starts_with({v}, '\"') THEN 's' "
        f"WHEN starts_with({v}, '{{') THEN 'o' WHEN starts_with({v}, '[') THEN 'a' "
        f"WHEN {v} = 'null' THEN 'n' WHEN starts_with({v}, 't') "
        f"OR starts_with({v}, 'f') THEN 'b' WHEN contains({v}, 'n') OR contains({v}, 'N') "
        f"THEN 'x' WHEN contains({v}, '.') OR contains({v}, 'e') "
        f"OR contains({v}, 'E') THEN 'f' ELSE 'i' END"
    )


def signature(fixed: dict[str, str] | None = None, typed: dict[str, str] | None = None) -> str:
    """SQL: a short string per record from which :func:`decode` gives each top-level field's
    JSON type. Few distinct values; report.scan checks each with validate_record on a
    stand-in record of those types. ``fixed``: fields whose JSON type is known from their
    source column wherever they are present (a Parquet VARCHAR column is always a string:
    report.parquet.fixed_types), so the text is not looked at. ``typed``: fields read from a
    typed column (:func:`t`, report.parquet.typed_columns): a float column's letter is f
    where the value is finite (x where not, as its JSON text NaN or Infinity gives).

    One character per field of TOP: for LETTERED fields their type's letter (as
    :func:`decode` gives it), for the others the first character of their JSON text (``_``
    where absent: one ``left()`` per field, several times cheaper in DuckDB than a CASE of
    tests); then ``1`` where every field of INTS that is present is written with digits and
    ``-`` only, else ``0`` (a float, an exponent, NaN where an int belongs)."""
    parts = []
    for p in TOP:
        v = j(p)
        if p in LETTERED and typed and typed.get(p) == "f":
            parts.append(f"CASE WHEN {t(p)} IS NULL THEN '-' WHEN isfinite({t(p)}) THEN 'f' "
                         "ELSE 'x' END")  # fmt: skip
        elif fixed and p in fixed:
            ch = fixed[p] if p in LETTERED else _RAW[fixed[p]]
            there = t(p) if typed and p in typed else v
            parts.append(f"CASE WHEN {there} IS NULL THEN '{'-' if p in LETTERED else '_'}' "
                         f"ELSE '{ch}' END")  # fmt: skip
        elif p in LETTERED:
            parts.append(_lettered(v))
        else:
            parts.append(f"coalesce(left({v}, 1), '_')")
    # a typed integer column holds digits and '-' only: nothing to look at
    ints = ", ".join(j(p) for p in INTS if not (typed and typed.get(p) == "i")) or "''"
    parts.append(f"CASE WHEN regexp_matches(concat_ws(',', {ints}), '[^0-9,-]') THEN '0' "
                 "ELSE '1' END")  # fmt: skip
    return "concat(" + ", ".join(parts) + ")"


_FIRST = {'"': "s", "{": "o", "[": "a", "n": "n", "t": "b", "f": "b", "_": "-"}


def decode(raw: str) -> str:
    """The type letters of a :func:`signature`, one per field of TOP: s(tring) i(nt)
    f(loat) o(bject) a(rray) n(ull) b(ool), x for a word that DuckDB reads as a number and
    Python may not (NaN, Infinity: the Python reader decides, and notes or skips it), or -
    (absent). A number in a field of INTS that is not written as an int reads as f.

    Outside LETTERED, ``n`` stands for null or nan alike, and a number's letter is i: no
    other field takes a null or a float, so the record is refused either way."""
    ints_ok = raw[len(TOP) :] == "1"
    out = []
    for p, ch in zip(TOP, raw, strict=False):
        if p in LETTERED:
            out.append(ch)
        elif ch in _FIRST:
            out.append(_FIRST[ch])
        elif ch.isdigit() or ch == "-":
            out.append("i" if ints_ok or p not in INTS else "f")
        else:  # N(aN), I(nfinity), anything else
            out.append("x")
    return "".join(out)


def unknown_keys(all_keys: bool = True) -> str:
    """SQL boolean: a top-level key the report does not extract (unknown, or not checked).

    ``all_keys``: ``nk`` counts every top-level key of the record, each once (a JSON line:
    :func:`json_source`), so there is an unknown one when there are more keys than fields
    of TOP present (a field of TOP is present where its ``j_*`` is not NULL); a count, much
    cheaper than looking each key up. Else the list ``k`` holds only the fields that are no
    top level of PATHS (a Parquet file: report.parquet.source_sql)."""
    if not all_keys:
        return "len(k) > 0"
    present = " + ".join(f"({j(p)} IS NOT NULL)::INTEGER" for p in TOP)
    return f"nk > ({present})"


Typed = dict[str, str] | None  # report.parquet.typed_columns: path -> s, i or f


def _str(path: str, typed: Typed = None) -> str:
    """The string a record field holds (NULL for anything else); escapes decoded only where
    there are any."""
    if typed and typed.get(path) == "s":
        return t(path)
    v = j(path)
    return f"CASE WHEN starts_with({v}, '\"') THEN {_text(v)} END"


def _text(v: str) -> str:
    """The string of the JSON string text ``v`` (garbage for any other JSON: for fields that
    only a string may fill, whose records the signature refuses otherwise)."""
    return f"CASE WHEN contains({v}, '\\') THEN {v} ->> '$' ELSE {v}[2:-2] END"


def _must_str(path: str, typed: Typed = None) -> str:
    """:func:`_str` of a field that only a string may fill (a record holding anything else
    there is refused by its signature, and its file read by Python)."""
    if typed and typed.get(path) == "s":
        return t(path)
    return _text(j(path))


def _int(path: str, typed: Typed = None) -> str:
    """The int a record field holds (None for anything else, a bool included)."""
    if typed and typed.get(path) == "i":
        return f"TRY_CAST({t(path)} AS BIGINT)"
    v = j(path)
    return (
        f"CASE WHEN NOT (contains({v}, '.') OR contains({v}, 'e') OR contains({v}, 'E')) "
        f"THEN TRY_CAST({v} AS BIGINT) END"
    )


def _num(path: str, typed: Typed = None) -> str:
    """A finite number (int or float, not a bool) as DOUBLE, else NULL."""
    if typed and typed.get(path) in ("i", "f"):
        v = f"TRY_CAST({t(path)} AS DOUBLE)"
        return f"CASE WHEN isfinite({v}) THEN {v} END"
    v = j(path)
    return f"CASE WHEN isfinite(TRY_CAST({v} AS DOUBLE)) THEN TRY_CAST({v} AS DOUBLE) END"


def _suspect() -> str:
    """SQL boolean: ``params.nvml_samples`` needs the Python reader (report.exclusions): a
    list with readings other than plain int ``throttle_mask`` values. The fingerprint's
    readings are decoded once per distinct fingerprint (report.scan), not per record."""
    s = j("params.nvml_samples")
    simple = (
        f"NOT contains(regexp_replace({s}, '\"throttle_mask\":-?[0-9]+', '', 'g'), 'throttle')"
        f" AND NOT contains({s}, 'clocks_event') AND NOT contains({s}, '\"samples\"')"
        f" AND NOT contains({s}, '\"gpus\"') AND NOT contains({s}, '\"per_gpu\"')"
    )
    return f"({s} IS NOT NULL AND starts_with({s}, '[') AND NOT ({simple}))"


def unit_sql(typed: Typed = None) -> str:
    """SQL: the record's unit key, as report.units.unit_of gives it: ``study:<name>#<repeat>``
    where ``params.study.repeat`` is an int in 0..2**31-1, else ``run:<run_id>``."""
    s = j("params.study")
    rep = f"TRY_CAST({s} ->> '$.repeat' AS BIGINT)"
    name = f"CASE WHEN json_type({s}, '$.name') = 'VARCHAR' THEN {s} ->> '$.name' ELSE '' END"
    return (
        f"CASE WHEN starts_with({s}, '{{') AND json_type({s}, '$.repeat') IN ('BIGINT', "
        f"'UBIGINT') AND {rep} BETWEEN 0 AND 2147483647 THEN 'study:' || {name} || '#' || "
        f"CAST({rep} AS VARCHAR) ELSE 'run:' || coalesce({_str('run_id', typed)}, '') END"
    )


def _bits() -> str:
    s = j("params.nvml_samples")
    ints = f"regexp_extract_all({s}, '\"throttle_mask\":(-?[0-9]+)', 1)"
    return (
        f"CASE WHEN {s} IS NOT NULL AND starts_with({s}, '[') THEN coalesce("
        # 0 first: samples without a throttle_mask (or none at all) reduce to no throttle bits
        f"list_reduce(list_prepend(0::BIGINT, list_transform({ints}, x -> x::BIGINT)),"
        " (a, b) -> a | b), 0) ELSE 0 END"
    )


def _fingerprint_columns(carriers: bool) -> dict[str, str]:
    """``fh``: which fingerprint a record has (the hash of its ``fingerprint_ref``'s JSON
    text, else of its fingerprint's); ``fp_ref``: it names one by reference (schema 3);
    ``fp_in``: it carries one; ``fp_text``: where ``carriers``, the text of a fingerprint
    carried with its reference (the writer puts it in the first record of a file only: a
    few rows; a Parquet export repeats it in every row, so it is read back from the file
    instead)."""
    ref, fp = j("fingerprint_ref"), j("fingerprint")
    named = f"starts_with({ref}, '\"')"
    return {
        "fh": f"CASE WHEN {named} THEN hash({ref}) ELSE hash({fp}) END",
        "fp_ref": f"coalesce({named}, false)",
        "fp_in": f"coalesce(starts_with({fp}, '{{'), false)",
        "fp_text": f"CASE WHEN {named} AND starts_with({fp}, '{{') THEN {fp} END"
        if carriers
        else "NULL::VARCHAR",
    }


def _window_bits() -> str:
    """``params.nvml_window.throttle_mask`` (an int: the reasons whose NVML counters grew
    over the timed window, workloads.fingerprint.throttle.CounterWindow), else 0."""
    v = j("params.nvml_window.throttle_mask")
    return (
        f"coalesce(CASE WHEN NOT (contains({v}, '.') OR contains({v}, 'e') OR contains({v}, 'E'))"
        f" THEN TRY_CAST({v} AS BIGINT) END, 0)"
    )


def columns(fixed: dict[str, str] | None = None, all_keys: bool = True, typed: Typed = None) -> str:
    """The per-record columns kept after the scan (small: no fingerprint, no step times);
    ``fixed`` and ``typed`` as for :func:`signature`, ``all_keys`` as for
    :func:`unknown_keys` (and a JSON Lines source: the carried fingerprints' text,
    :func:`_fingerprint_columns`)."""
    ty = typed or {}
    cols = {
        "sig": signature(fixed, typed),
        "unknown": unknown_keys(all_keys),
        "sv": f"CAST({t('schema_version')} AS VARCHAR)"
        if ty.get("schema_version") == "i"
        else j("schema_version"),
        "err_set": f"coalesce({t('error')} <> '', false)"
        if ty.get("error") == "s"
        else f"coalesce({j('error')} NOT IN ('null', '\"\"'), false)",
        "rid": _must_str("record_id", typed),
        "run": _must_str("run_id", typed),
        "unit": unit_sql(typed),
        "status": _must_str("status", typed),
        "kind": _must_str("kind", typed),
        "suite": _must_str("suite", typed),
        "experiment": _must_str("experiment", typed),
        "model": _must_str("model", typed),
        "scenario": _must_str("scenario", typed),
        "error": _str("error", typed),
        "data": _must_str("data", typed),
        "batch": _int("batch_size", typed),
        "steps": _int("steps", typed),
        "warmup": _int("warmup", typed),
        "ips": _num("images_per_sec", typed),
        "ela": _num("elapsed_s", typed),
        "startup": _num("startup_s", typed),
        "first_step": _num("first_step_s", typed),
        "timed": _num("timed_s", typed),
        "metrics": j("metrics"),
        "topology": _must_str("topology", typed),
        "arm": _must_str("arm", typed),
        "gpu_path": _must_str("gpu_path", typed),
        "exec_env": _must_str("exec_env", typed),
        "virt": _must_str("virtualization", typed),
        "sharing": _must_str("sharing", typed),
        "flags": j("setting_flags"),
        "claims": j("claims"),
        "variant": j("params.variant"),
        "jobs": j("params.jobs"),
        "isz": j("params.image_size"),
        "ishape": j("params.input_shape"),
        "prec": j("params.precision"),
        "backend": j("params.backend"),
        "dev_used": j("params.device.used"),
        **_fingerprint_columns(carriers=all_keys),
        "thr_bits": f"({_bits()}) | ({_window_bits()})",
        "win_bits": _window_bits(),
        "sync_k": _int("sync_every", typed),
        "sync_mode": j("params.timing.sync_mode"),
        "thr_src": f"CASE WHEN {_suspect()} THEN {j('params.nvml_samples')} END",
        "nvml_list": f"coalesce(starts_with({j('params.nvml_samples')}, '['), false)",
    }
    return ",\n".join(f"{expr} AS {name}" for name, expr in cols.items())


def records(param: str = "$files") -> str:
    """Every line of the JSON Lines files in ``param`` parsed once, as ``m``: each top-level
    key of the record with its value as JSON text (NULL for a JSON null), with ``filename``.
    A line that is not a JSON object, or repeats a key, fails the whole read (report.scan
    then reads that file alone, and a file that still fails goes to the Python reader)."""
    return (
        f"read_json({param}, format='newline_delimited', records=false, "
        "columns={'m': 'MAP(VARCHAR, JSON)'}, filename=true)"
    )


def top_value(key: str, at: int | None = None) -> str:
    """SQL: the JSON text of the top-level ``key`` of :func:`records`' ``m`` as
    ``json_extract`` gives it (a JSON null is a NULL map value: 'null' again where the key
    is there; NULL where it is not). ``at``: the key's place in the usual key order
    (:func:`json_source`): where the record has ``key`` there, its value is taken by
    position instead of by a search of the keys."""
    found = (
        f"CASE WHEN m['{key}'] IS NOT NULL THEN m['{key}']::VARCHAR "
        f"WHEN map_contains(m, '{key}') THEN 'null' END"
    )
    if at is None:
        return found
    return f"CASE WHEN ks[{at}] = '{key}' THEN coalesce(vs[{at}]::VARCHAR, 'null') ELSE {found} END"


def json_source(order: Sequence[str] = ()) -> str:
    """SQL: ``filename``, ``nk`` (how many top-level keys the record has) and ``j_1`` ...
    ``j_N`` (the JSON text of each of PATHS, NULL where absent) per line of the JSON Lines
    files in ``$files``; one JSON parse per line (:func:`records`), the nested paths from
    the small text of their top-level field.

    ``order``: the top-level keys in the order a writer puts them (the first record's:
    report.scan.key_order). A record whose key sits at its usual place has its value taken
    by place; any other record is searched by key (same result: the order only saves the
    searches, about a tenth of the scan of a million records)."""
    at = {k: i for i, k in enumerate(order, start=1)}
    top = {p: i for p, i in IDX.items() if "." not in p}
    nested: dict[str, list[str]] = {}
    for p in PATHS:
        head, _, rest = p.partition(".")
        if rest:
            nested.setdefault(head, []).append(rest)
    firsts = ", ".join(f"{top_value(p, at.get(p))} AS j_{i}" for p, i in top.items())
    subs = "".join(
        f", CASE WHEN starts_with({j(h)}, '{{') THEN try(json_extract({j(h)}, "
        f"[{', '.join(repr('$.' + r) for r in rs)}])) END AS _n_{h}"
        for h, rs in nested.items()
    )
    outs = []
    for p, i in IDX.items():
        head, _, rest = p.partition(".")
        outs.append(
            f"j_{i}" if not rest else f"_n_{head}[{nested[head].index(rest) + 1}]::VARCHAR AS j_{i}"
        )
    lines = (
        f"(SELECT *, map_keys(m) AS ks, map_values(m) AS vs FROM {records()})"
        if any(p in at for p in top)
        else records()
    )
    return (
        f"(SELECT filename, nk, {', '.join(outs)} FROM (SELECT *{subs} FROM "
        f"(SELECT filename, cardinality(m) AS nk, {firsts} FROM {lines})))"
    )


def scan_query(
    source: str | None = None,
    fixed: dict[str, str] | None = None,
    order: Sequence[str] = (),
    typed: Typed = None,
) -> str:
    """The per-record columns of ``source``: the JSON Lines in ``$files`` by default
    (:func:`json_source`, with the usual key ``order``), or a Parquet file through
    report.parquet.source_sql (``filename``, ``k``, ``j_*`` and ``t_*``), with its ``fixed``
    and ``typed`` columns: :func:`signature`)."""
    return (
        f"SELECT f.idx AS fi, {columns(fixed, all_keys=source is None, typed=typed)}\n"
        f"FROM {source or json_source(order)} s\n"
        "JOIN files f ON f.name = s.filename"
    )
