"""How `gpulab report` scales with the number of records: 10k, 100k and 1M synthetic records.

Writes schema-3 records (each about 0.9 KB; each file's first record of an arm also carries a
fingerprint of the size a real GPU host writes, about 1.9 KB, which the others name by its
``fingerprint_ref``, as workloads.records.RecordWriter writes them) as JSON Lines under a
temporary directory, one run per arm split into files of 50,000 lines, then runs the full
report (``report.build_report``: load, exclusions, table, bootstrap CIs, claims, figures,
HTML/Markdown/CSV) in a fresh Python process per size and prints the records per second and
the child's peak resident memory (``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``).
``--schema 2`` writes the old format (the fingerprint in every record, about 2.8 KB each).
``--legacy`` adds the Python path (every record as a dict; ``build_report(...,
engine="python")``) at the sizes named by ``--legacy-sizes`` (default 10k and 100k).

The same records are also written as Parquet, as ``gpulab export --format parquet`` writes
them (every row carries the fingerprint; the exporter's COPY, report.export.copy_jsonl), and
the report is run on those too (``--formats`` picks). Beside each report, in a fresh process
each, the bare group-by a user would write over the same files: the median images/sec per
experiment, model, topology and arm of the ok records, in DuckDB (``read_json`` /
``read_parquet``) and, where installed, Polars (``scan_ndjson`` with the five columns /
``scan_parquet``). The last line gives the full report's time over the fastest bare group-by
of the same files, per input format, at the largest size: ``ratio_vs_bare=<x> (jsonl)``.
``--old DIR`` runs the report of another checkout (a ``git worktree`` or ``git archive`` of
older code, with this venv) beside, on schema-2 records, at ``--old-sizes`` (default 1M);
``--old-schema 3`` gives it this side's very files (a change of the reader alone), and this
side's report runs again after it (the lower of its two times is compared).

    .venv/bin/python benchmarks/report_scale.py                      # 10k 100k 1M
    .venv/bin/python benchmarks/report_scale.py --legacy             # plus the Python path
    .venv/bin/python benchmarks/report_scale.py --sizes 10000 --keep /tmp/recs
    .venv/bin/python benchmarks/report_scale.py --formats parquet    # Parquet input only
    .venv/bin/python benchmarks/report_scale.py --old ../main        # old code beside, 1M
    .venv/bin/python benchmarks/report_scale.py --old ../main --old-schema 3 --formats parquet

The records are deleted afterwards (1M records take about 0.9 GB, 2.7 GB in schema 2)
unless ``--keep`` names a directory. The synthetic set: 4 arms (BM, container on BM, VM,
container on VM), the CLOSER 2018 experiments (single and distributed, synthetic and real
data) for InceptionV3, ResNet-50 and AlexNet, repetition noise of a few percent, 0.1 %
failed runs and 0.1 % power-capped ones. It imports nothing from tests/.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ARMS = {  # (topology, arm) -> (setting, gpu_path, exec_env, virtualization, throughput factor)
    ("ironic-bm", "native"): ("bm", "whole-machine", "native", "none", 1.0),
    ("magnum-k8s", "container-bm"): ("cbm", "container-bm", "k8s", "container", 0.98),
    ("nova-pci", "native"): ("vm", "pci-passthrough", "native", "vm", 0.93),
    ("magnum-k8s", "container-vm"): ("cvm", "container-vm", "k8s", "container-in-vm", 0.90),
}
MODELS = {"inception_v3": (100.0, 32), "resnet50": (120.0, 32), "alexnet": (900.0, 512)}
EXPERIMENTS = (
    ("single_synthetic", "single", "synthetic", 1.0),
    ("single_real", "single", "real", 0.95),
    ("distributed_synthetic", "distributed", "synthetic", 3.2),
    ("distributed_real", "distributed", "real", 3.0),
)
FILE_LINES = 50_000


def fingerprint(setting: str) -> dict[str, Any]:
    is_vm = setting in ("vm", "cvm")
    runtime = "kubernetes" if setting in ("cbm", "cvm") else None
    packages = {f"package-{i:02d}": f"{i}.{i % 7}.{i % 3}" for i in range(40)}
    packages.update({"tensorflow": "2.21.0", "keras": "3.15.0", "numpy": "2.1.3"})
    return {
        "host": f"{setting}-host",
        "os": {"name": "Ubuntu 22.04.4 LTS", "id": "ubuntu", "version": "22.04"},
        "kernel": "5.15.0-105-generic",
        "cpu": {"model": "Intel Xeon E5-2650 v4", "usable_cpus": 16 if is_vm else 24},
        "numa": {"nodes": 1 if is_vm else 2},
        "vm": {"is_vm": is_vm, "hypervisor": "kvm" if is_vm else None},
        "container": {"in_container": runtime is not None, "runtime": runtime},
        "execution_env": runtime or "native",
        "gpu": {
            "present": True,
            "count": 2,
            "driver_version": "535.129.03" if is_vm else "535.104.05",
            "cuda_driver_version": "12.2",
            "virtualization_modes": ["passthrough" if is_vm else "none"],
            "gpus": [
                {
                    "name": "NVIDIA GeForce GTX 1080",
                    "numa_node": 0,
                    "uuid": f"GPU-{uuid.UUID(int=i + 7).hex}",
                    "pcie": {"gen_current": 3, "width_current": 16, "gen_max": 3},
                    "memory_total_mib": 8192,
                    "mig_mode": None,
                }
                for i in range(2)
            ],
        },
        "software": {
            "python": "3.11.2",
            "packages": packages,
            "backend": {"keras_backend": "tensorflow"},
            "git": {"revision": "abc1234", "dirty": False},
        },
    }


def write_records(root: Path, n: int, schema: int = 3, inline: bool = False) -> int:
    """``n`` records under ``root``: one run per arm, files of FILE_LINES lines.

    ``schema`` 3: each file's first record of an arm carries the fingerprint and its
    ``fingerprint_ref``, the others the reference alone (as workloads.records.RecordWriter
    writes them); ``inline``: every record carries both (the rows ``gpulab export`` writes).
    ``schema`` 2: every record carries the fingerprint, no reference."""
    sys.path.insert(0, str(REPO))
    from workloads.fingerprints import ref_of  # the repository's, whatever the venv maps

    cells = [(a, e, m) for a in ARMS for e in EXPERIMENTS for m in MODELS]
    per_cell = max(1, n // len(cells))
    written = 0
    for arm_key in ARMS:
        setting, gpu_path, exec_env, virt, factor = ARMS[arm_key]
        run_id = f"20261101T0000{list(ARMS).index(arm_key)}Z-{setting}"
        base = {
            "schema_version": schema,
            "run_id": run_id,
            "kind": "training",
            "suite": "closer2018",
            "warmup": 10,
            "steps": 100,
            "topology": arm_key[0],
            "arm": arm_key[1],
            "gpu_path": gpu_path,
            "exec_env": exec_env,
            "virtualization": virt,
            "sharing": "exclusive",
            "setting_flags": [],
            "host": f"{setting}-host",
            "claims": [],
        }
        fp = fingerprint(setting)
        fp_text = json.dumps(fp)  # spliced in: one dumps per arm, not per line
        ref = f', "fingerprint_ref": "{ref_of(fp)}"' if schema >= 3 else ""
        lines: list[str] = []
        parts = [0]

        def flush(
            lines: list[str], arm_key: tuple[str, str], run_id: str, parts: list[int] = parts
        ) -> None:
            if lines:
                name = f"{run_id}-{arm_key[1]}-{parts[0]:03d}.jsonl"
                out = root / arm_key[0] / name
                out.parent.mkdir(parents=True, exist_ok=True)
                out.write_text("".join(lines), encoding="utf-8")
                parts[0] += 1
                lines.clear()

        for _, (exp, scenario, data, scale), model in [c for c in cells if c[0] == arm_key]:
            ips0, batch = MODELS[model]
            cell = dict(base)
            cell.update(
                experiment=exp,
                model=model,
                scenario=scenario,
                data=data,
                batch_size=batch,
                global_batch=batch * (2 if scenario == "distributed" else 1),
                error=None,
                metrics={},
                started_at="2026-11-01T00:00:00.000+00:00",
                finished_at="2026-11-01T00:01:00.000+00:00",
            )
            size = 224 if model != "inception_v3" else 299
            carrier = json.dumps(cell)[1:-1] + ', "fingerprint": ' + fp_text + ref + "}\n"
            named = json.dumps(cell)[1:-1] + ref + "}\n"
            for i in range(per_cell):
                if written >= n:
                    break
                tail = carrier if schema < 3 or inline or not lines else named
                noise = 1.0 + 0.03 * (((i * 7919) % 101) / 50.0 - 1.0)
                ips = ips0 * scale * factor * noise
                status, params = "ok", f'{{"image_size": {size}}}'
                if i % 1000 == 500:
                    params = f'{{"image_size": {size}, "nvml_samples": [{{"throttle_mask": 4}}]}}'
                head = (
                    f'{{"record_id": "{uuid.UUID(int=(written << 8) + len(ARMS) + 1).hex}", '
                    f'"repeat": {i}, "status": "{status}", "images_per_sec": {ips!r}, '
                    f'"elapsed_s": {batch * 100 / ips + 20.0!r}, '
                    f'"step_times_s": {[round(batch / ips, 6)] * 5}, "params": {params}, '
                )
                if i % 1000 == 999:
                    head = head.replace('"status": "ok"', '"status": "failed"').replace(
                        f'"images_per_sec": {ips!r}', '"images_per_sec": null'
                    )
                    tail_i = tail.replace('"error": null', '"error": "ResourceExhaustedError: OOM"')
                    lines.append(head + tail_i)
                else:
                    lines.append(head + tail)
                written += 1
                if len(lines) >= FILE_LINES:
                    flush(lines, arm_key, run_id)
        flush(lines, arm_key, run_id)
    return written


CHILD = """
import sys, time
import report.build as b
from report import build_report
engine = sys.argv[3]
name = "_duckdb" if engine == "duckdb" else "_python"
orig, took = getattr(b, name), {}
def timed(*a, **k):
    t = time.perf_counter()
    r = orig(*a, **k)
    took["load"] = time.perf_counter() - t
    return r
setattr(b, name, timed)
res = build_report([sys.argv[1]], sys.argv[2], engine=engine, pool=False)
print("RESULT", len(res.table.rows), took["load"])
"""

# The bare group-by: the median images/sec per (experiment, model, topology, arm) of the ok
# records, as a user would write it, over the same files (argv: engine, format, directory).
BARE = """
import sys, time
engine, fmt, root = sys.argv[1:4]
t = time.perf_counter()
keys = ["experiment", "model", "topology", "arm"]
if engine == "duckdb":
    import duckdb
    src = (f"read_json('{root}/**/*.jsonl', format='newline_delimited')" if fmt == "jsonl"
           else f"read_parquet('{root}/**/*.parquet')")
    rows = duckdb.sql(f"SELECT {', '.join(keys)}, median(images_per_sec) FROM {src} "
                      "WHERE status = 'ok' GROUP BY ALL").fetchall()
else:
    import polars as pl
    files = f"{root}/**/*.{fmt}"
    if fmt == "jsonl":
        schema = {k: pl.String for k in [*keys, "status"]} | {"images_per_sec": pl.Float64}
        lf = pl.scan_ndjson(files, schema=schema)
    else:
        lf = pl.scan_parquet(files)
    rows = (lf.filter(pl.col("status") == "ok").group_by(keys)
            .agg(pl.col("images_per_sec").median()).collect().rows())
print("RESULT", len(rows), time.perf_counter() - t)
"""

WRAP = (
    "import resource, subprocess, sys\n"
    "p = subprocess.run([sys.executable, '-c', sys.argv[1], *sys.argv[2:]],"
    " capture_output=True, text=True)\n"
    "sys.stderr.write(p.stderr[-2000:])\n"
    "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "print(p.stdout.strip(), u.ru_maxrss, u.ru_utime + u.ru_stime)\n"
    "sys.exit(p.returncode)\n"
)  # the wrapper process is fresh too, so RUSAGE_CHILDREN sees only the measured process


def _fresh(code: str, args: list[str], repo: Path, what: str) -> tuple[float, float, float, float]:
    """(wall seconds, peak RSS MiB, the child's own seconds, CPU seconds) of ``code`` in a
    fresh process importing from ``repo`` (wall: interpreter start and imports included;
    CPU: user + system, DuckDB's and Polars' threads and forked figure workers included)."""
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", WRAP, code, *args],
        capture_output=True,
        text=True,
        cwd=repo,
        env={**os.environ, "PYTHONPATH": str(repo)},
    )
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"report_scale: {what} failed:\n{p.stderr[-3000:]}")
    line = next(ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("RESULT"))
    _, _rows, inner_s, maxrss_kib, cpu_s = line.split()
    return wall, int(maxrss_kib) / 1024.0, float(inner_s), float(cpu_s)


def run_child(
    records: Path, out: Path, engine: str, repo: Path = REPO
) -> tuple[float, float, float, float]:
    """(seconds, peak RSS MiB, seconds to the table, CPU seconds) of one full report in a
    fresh process, with the code of ``repo``."""
    return _fresh(CHILD, [str(records), str(out), engine], repo, f"the {engine} report")


def run_bare(engine: str, fmt: str, records: Path) -> tuple[float, float, float, float]:
    """(seconds, peak RSS MiB, seconds of the query, CPU seconds) of the bare group-by."""
    return _fresh(BARE, [engine, fmt, str(records)], REPO, f"the bare {engine} group-by")


def write_parquet(jsonl_root: Path, root: Path, n: int, schema: int) -> int:
    """The records of ``write_records(jsonl_root, n, schema)`` as Parquet files under
    ``root`` (one per JSON Lines file), as ``gpulab export --format parquet`` writes them:
    the exporter's COPY (report.export.copy_jsonl) of rows that each carry the fingerprint
    (schema 3: the same records written with the fingerprint inlined); the number of files."""
    import duckdb

    from report.export import copy_jsonl

    src = jsonl_root
    if schema >= 3:
        src = root.with_name(root.name + "-inline")
        write_records(src, n, schema, inline=True)
    con = duckdb.connect()
    files = sorted(src.rglob("*.jsonl"))
    for f in files:
        out = root / f.relative_to(src).with_suffix(".parquet")
        out.parent.mkdir(parents=True, exist_ok=True)
        copy_jsonl(con, f, out)
    con.close()
    if src != jsonl_root:
        shutil.rmtree(src, ignore_errors=True)
    return len(files)


def _prepare(base: Path, n: int, schema: int, parquet: bool) -> tuple[Path, Path]:
    """The JSON Lines and Parquet record sets of ``n`` records (written unless kept)."""
    tag = "" if schema == 3 else f"-schema{schema}"
    recs, pq = base / f"records-{n}{tag}", base / f"records-{n}{tag}-parquet"
    if not recs.is_dir():
        t0 = time.perf_counter()
        write_records(recs, n, schema)
        size = sum(f.stat().st_size for f in recs.rglob("*.jsonl")) / 2**20
        print(
            f"{n:>9,} records (schema {schema}) written in {time.perf_counter() - t0:.1f} s "
            f"({size:,.0f} MiB)",
            flush=True,
        )
    if parquet and not pq.is_dir():
        t0 = time.perf_counter()
        nf = write_parquet(recs, pq, n, schema)
        size = sum(f.stat().st_size for f in pq.rglob("*.parquet")) / 2**20
        print(
            f"{n:>9,} records (schema {schema}) as Parquet ({nf} files) in "
            f"{time.perf_counter() - t0:.1f} s ({size:,.0f} MiB)",
            flush=True,
        )
    return recs, pq


def _has_polars() -> bool:
    try:
        import polars  # noqa: F401
    except ImportError:
        return False
    return True


Row = tuple[int, str, float, float, float, float]  # records, arm, wall, RSS, inner, CPU


def _show(n: int, label: str, got: tuple[float, float, float, float], inner: str) -> Row:
    secs, rss, inner_s, cpu = got
    # the machine's 1-minute load average after the run: on shared CPUs the wall times only
    # compare at similar loads (the CPU seconds vary less)
    print(
        f"{n:>9,} {label:<26} {secs:8.1f} s {n / secs:>11,.0f} rec/s {rss:8.0f} MiB"
        f"  ({inner} {inner_s:.1f} s; CPU {cpu:.1f} s; load {os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return (n, label, secs, rss, inner_s, cpu)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000, 1_000_000])
    ap.add_argument("--legacy", action="store_true", help="also run the Python path")
    ap.add_argument("--legacy-sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--keep", type=Path, default=None, help="write the records here, keep them")
    ap.add_argument(
        "--formats",
        nargs="+",
        choices=("jsonl", "parquet"),
        default=["jsonl", "parquet"],
        help="input formats of the DuckDB report (default: both)",
    )
    ap.add_argument(
        "--schema",
        type=int,
        choices=(2, 3),
        default=3,
        help="record schema: 3 (the fingerprint once per file, the default) or 2 (in every record)",
    )
    ap.add_argument(
        "--old",
        type=Path,
        default=None,
        help="a checkout of older code (a git worktree) whose report runs beside this one, "
        "on records of --old-schema, at the sizes of --old-sizes",
    )
    ap.add_argument("--old-sizes", type=int, nargs="+", default=[1_000_000])
    ap.add_argument(
        "--old-schema",
        type=int,
        choices=(2, 3),
        default=2,
        help="record schema of the old side's records (default 2: what code before schema 3 "
        "reads; 3: the very files of this side, for a change of the reader alone)",
    )
    ap.add_argument(
        "--no-bare", action="store_true", help="leave out the bare DuckDB and Polars group-by"
    )
    args = ap.parse_args(argv)
    if any(n < 100 for n in args.sizes):
        print("report_scale: error: --sizes takes counts of 100 or more", file=sys.stderr)
        return 2
    if args.old is not None and not (args.old / "report" / "build.py").is_file():
        print(f"report_scale: error: --old {args.old}: no report/build.py there", file=sys.stderr)
        return 2
    bare_engines = [] if args.no_bare else ["duckdb", *(["polars"] if _has_polars() else [])]
    if not args.no_bare and "polars" not in bare_engines:
        print("report_scale: polars is not installed: the bare group-by of DuckDB only")
    base = args.keep or Path(tempfile.mkdtemp(prefix="gpulab-report-scale-", dir="/tmp"))
    rows: list[Row] = []
    try:
        for n in args.sizes:
            recs, pq = _prepare(base, n, args.schema, "parquet" in args.formats)
            src = {"jsonl": recs, "parquet": pq}
            for fmt in args.formats:
                label = f"duckdb {fmt}" + ("" if args.schema == 3 else f" (schema {args.schema})")
                out = base / f"report-{n}-{fmt}"
                rows.append(_show(n, label, run_child(src[fmt], out, "duckdb"), "to table"))
                for eng in bare_engines:
                    got = run_bare(eng, fmt, src[fmt])
                    rows.append(_show(n, f"bare {eng} {fmt}", got, "query"))
            if args.legacy and n in args.legacy_sizes:
                out = base / f"report-{n}-python"
                rows.append(_show(n, "python jsonl", run_child(recs, out, "python"), "to table"))
            if args.old is not None and n in args.old_sizes:
                old_src = src
                if args.old_schema != args.schema:
                    old_recs, old_pq = _prepare(base, n, args.old_schema, "parquet" in args.formats)
                    old_src = {"jsonl": old_recs, "parquet": old_pq}
                for fmt in args.formats:
                    out = base / f"report-{n}-{fmt}-old"
                    got = run_child(old_src[fmt], out, "duckdb", repo=args.old.resolve())
                    label = f"old duckdb {fmt} (schema {args.old_schema})"
                    rows.append(_show(n, label, got, "to table"))
                    # the new side once more after the old, so neither has the warmer cache
                    out = base / f"report-{n}-{fmt}-again"
                    again = run_child(src[fmt], out, "duckdb")
                    rows.append(_show(n, f"duckdb {fmt} again", again, "to table"))
            if args.keep is None:
                for d in base.glob(f"records-{n}*"):
                    shutil.rmtree(d, ignore_errors=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    _table(rows)
    return 0


def _table(rows: list[Row]) -> None:
    print(
        "\n| records | what, input | wall (s) | records/s | peak RSS (MiB) "
        "| to table or query (s) | CPU (s) |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n, label, secs, rss, inner_s, cpu in rows:
        print(
            f"| {n:,} | {label} | {secs:.1f} | {n / secs:,.0f} | {rss:,.0f} | {inner_s:.1f} "
            f"| {cpu:.1f} |"
        )
    by = {(n, label): secs for n, label, secs, *_ in rows}
    for n in sorted({r[0] for r in rows}):
        if (n, "python jsonl") in by and (n, "duckdb jsonl") in by:
            ratio = by[(n, "python jsonl")] / by[(n, "duckdb jsonl")]
            print(f"{n:,} records: DuckDB path {ratio:.1f}x faster than the Python path")
        for fmt in ("jsonl", "parquet"):
            olds = [
                v for (m, lab), v in by.items() if m == n and lab.startswith(f"old duckdb {fmt} ")
            ]
            news = [
                by[(n, lab)] for lab in (f"duckdb {fmt}", f"duckdb {fmt} again") if (n, lab) in by
            ]
            old, new = (olds[0] if olds else None), (min(news) if news else None)
            if old and new:
                print(f"{n:,} records, {fmt}: old {old:.1f} s, new {new:.1f} s ({old / new:.1f}x)")
    # last line: the full report over the fastest bare group-by of the same files, per format
    # (the largest size), e.g. "ratio_vs_bare=1.42 (jsonl) ratio_vs_bare=1.31 (parquet)"
    last = max((r[0] for r in rows), default=0)
    parts = []
    for fmt in ("jsonl", "parquet"):
        report = by.get((last, f"duckdb {fmt}"))
        bare = [s for (n, lab), s in by.items() if n == last and lab.startswith("bare ")
                and lab.endswith(f" {fmt}")]  # fmt: skip
        if report and bare:
            parts.append(f"ratio_vs_bare={report / min(bare):.2f} ({fmt})")
    if parts:
        print(f"{last:,} records: " + " ".join(parts))


if __name__ == "__main__":
    raise SystemExit(main())
