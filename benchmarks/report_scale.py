"""How `gpulab report` scales with the number of records: 10k, 100k and 1M synthetic records.

Writes schema-2 records (each about 2.7 KB, with a fingerprint of the size a real GPU host
writes) as JSON Lines under a temporary directory, one run per arm split into files of
50,000 lines, then runs the full report (``report.build_report``: load, exclusions, table,
bootstrap CIs, claims, figures, HTML/Markdown/CSV) in a fresh Python process per size and
prints the records per second and the child's peak resident memory
(``resource.getrusage(RUSAGE_CHILDREN).ru_maxrss``). ``--legacy`` adds the Python path
(every record as a dict; ``build_report(..., engine="python")``) at the sizes named by
``--legacy-sizes`` (default 10k and 100k), so the ratio comes from one run of the script.

The same records are also written as Parquet (one file per JSON Lines file, by the COPY of
``gpulab export --format parquet``, report.export.copy_jsonl) and the report is run on those
too, so JSON Lines and Parquet input are printed side by side (``--formats`` picks).

    .venv/bin/python benchmarks/report_scale.py                      # 10k 100k 1M, DuckDB
    .venv/bin/python benchmarks/report_scale.py --legacy             # plus the Python path
    .venv/bin/python benchmarks/report_scale.py --sizes 10000 --keep /tmp/recs
    .venv/bin/python benchmarks/report_scale.py --formats parquet    # Parquet input only

The records are deleted afterwards (1M records take about 2.7 GB) unless ``--keep`` names a
directory. The synthetic set: 4 arms (BM, container on BM, VM, container on VM), the CLOSER
2018 experiments (single and distributed, synthetic and real data) for InceptionV3,
ResNet-50 and AlexNet, repetition noise of a few percent, 0.1 % failed runs and 0.1 %
power-capped ones. It imports nothing from tests/.
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


def write_records(root: Path, n: int) -> int:
    """``n`` records under ``root``: one run per arm, files of FILE_LINES lines."""
    cells = [(a, e, m) for a in ARMS for e in EXPERIMENTS for m in MODELS]
    per_cell = max(1, n // len(cells))
    written = 0
    for arm_key in ARMS:
        setting, gpu_path, exec_env, virt, factor = ARMS[arm_key]
        run_id = f"20261101T0000{list(ARMS).index(arm_key)}Z-{setting}"
        base = {
            "schema_version": 2,
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
        fp_text = json.dumps(fingerprint(setting))  # spliced in: one dumps per arm, not per line
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
            tail = json.dumps(cell)[1:-1] + ', "fingerprint": ' + fp_text + "}\n"
            for i in range(per_cell):
                if written >= n:
                    break
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


def run_child(records: Path, out: Path, engine: str) -> tuple[float, float, float, float]:
    """(seconds, peak RSS MiB, seconds to the table, CPU seconds) of one full report in a
    fresh process (CPU: user + system of that process, its DuckDB threads included)."""
    code = (
        "import resource, subprocess, sys\n"
        "p = subprocess.run([sys.executable, '-c', sys.argv[1], *sys.argv[2:]],"
        " capture_output=True, text=True)\n"
        "sys.stderr.write(p.stderr[-2000:])\n"
        "u = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
        "print(p.stdout.strip(), u.ru_maxrss, u.ru_utime + u.ru_stime)\n"
        "sys.exit(p.returncode)\n"
    )
    # the wrapper process is fresh too, so RUSAGE_CHILDREN sees only this report's process
    t0 = time.perf_counter()
    p = subprocess.run(
        [sys.executable, "-c", code, CHILD, str(records), str(out), engine],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"report_scale: the {engine} report failed:\n{p.stderr[-3000:]}")
    line = next(ln for ln in reversed(p.stdout.splitlines()) if ln.startswith("RESULT"))
    _, _rows, load_s, maxrss_kib, cpu_s = line.split()  # wall: start and imports too
    return wall, int(maxrss_kib) / 1024.0, float(load_s), float(cpu_s)


def write_parquet(jsonl_root: Path, root: Path) -> int:
    """The JSON Lines files under ``jsonl_root`` as Parquet files under ``root`` (same
    layout), written by the exporter's COPY; the number of files."""
    sys.path.insert(0, str(REPO))
    import duckdb

    from report.export import copy_jsonl

    con = duckdb.connect()
    files = sorted(jsonl_root.rglob("*.jsonl"))
    for f in files:
        out = root / f.relative_to(jsonl_root).with_suffix(".parquet")
        out.parent.mkdir(parents=True, exist_ok=True)
        copy_jsonl(con, f, out)
    con.close()
    return len(files)


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
    args = ap.parse_args(argv)
    if any(n < 100 for n in args.sizes):
        print("report_scale: error: --sizes takes counts of 100 or more", file=sys.stderr)
        return 2
    base = args.keep or Path(tempfile.mkdtemp(prefix="gpulab-report-scale-", dir="/tmp"))
    rows: list[tuple[int, str, float, float, float, float, float]] = []
    try:
        for n in args.sizes:
            recs = base / f"records-{n}"
            if not recs.is_dir():
                t0 = time.perf_counter()
                write_records(recs, n)
                gen = time.perf_counter() - t0
                size = sum(f.stat().st_size for f in recs.rglob("*.jsonl")) / 2**20
                print(f"{n:>9,} records written in {gen:.1f} s ({size:,.0f} MiB)", flush=True)
            pq = base / f"records-{n}-parquet"
            if "parquet" in args.formats and not pq.is_dir():
                t0 = time.perf_counter()
                nf = write_parquet(recs, pq)
                gen = time.perf_counter() - t0
                size = sum(f.stat().st_size for f in pq.rglob("*.parquet")) / 2**20
                print(
                    f"{n:>9,} records as Parquet ({nf} files) in {gen:.1f} s ({size:,.0f} MiB)",
                    flush=True,
                )
            arms = [("duckdb", "jsonl", recs)] if "jsonl" in args.formats else []
            arms += [("duckdb", "parquet", pq)] if "parquet" in args.formats else []
            if args.legacy and n in args.legacy_sizes:
                arms.append(("python", "jsonl", recs))
            for engine, fmt, src in arms:
                label = f"{engine} {fmt}"
                out = base / f"report-{n}-{engine}-{fmt}"
                secs, rss, load_s, cpu = run_child(src, out, engine)
                rows.append((n, label, secs, n / secs, rss, load_s, cpu))
                # the machine's 1-minute load average after the run: on shared CPUs the wall
                # times only compare at similar loads (the CPU seconds vary less)
                print(
                    f"{n:>9,} {label:<14} {secs:8.1f} s {n / secs:>11,.0f} rec/s {rss:8.0f} MiB"
                    f"  (records to table {load_s:.1f} s; CPU {cpu:.1f} s; "
                    f"load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
            if args.keep is None:
                shutil.rmtree(recs, ignore_errors=True)
                shutil.rmtree(pq, ignore_errors=True)
    finally:
        if args.keep is None:
            shutil.rmtree(base, ignore_errors=True)
    print(
        "\n| records | engine, input | full report (s) | records/s | peak RSS (MiB) "
        "| to table (s) | CPU (s) |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|")
    for n, engine, secs, rate, rss, load_s, cpu in rows:
        print(
            f"| {n:,} | {engine} | {secs:.1f} | {rate:,.0f} | {rss:,.0f} | {load_s:.1f} "
            f"| {cpu:.1f} |"
        )
    by = {(n, e): s for n, e, s, *_ in rows}
    for n in sorted({r[0] for r in rows}):
        if (n, "python jsonl") in by and (n, "duckdb jsonl") in by:
            ratio = by[(n, "python jsonl")] / by[(n, "duckdb jsonl")]
            print(f"{n:,} records: DuckDB path {ratio:.1f}x faster than the Python path")
        if (n, "duckdb parquet") in by and (n, "duckdb jsonl") in by:
            ratio = by[(n, "duckdb jsonl")] / by[(n, "duckdb parquet")]
            print(f"{n:,} records: the report {ratio:.1f}x faster from Parquet than from JSONL")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
