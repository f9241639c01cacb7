"""Issue 9 in one call: on an H100/H200, the runner against raw framework loops, MFU, and the
seed claims one GPU host can test; result records, the report, and a table printed last.

    python benchmarks/gpu/h100_suite.py [--out DIR] [--backends jax,torch] [--parts ...]
    python benchmarks/gpu/h100_suite.py --cpu-smoke          # every part, tiny sizes, CPU
    python benchmarks/gpu/h100_suite.py --from-records A.jsonl [B.jsonl ...]   # tables + report

Parts (default all): train (ResNet-50 b32/64/256, InceptionV3 b32, AlexNet b512; fp32 and bf16
mixed precision; the runner's own measurement process against a raw loop on the same model's
weights; ratio; MFU over a bf16 matmul peak measured in the same run), sharing (4 concurrent
jobs vs 1), shared (background AlexNet b512 vs a foreground job), bandwidth (host-device with
and without NUMA affinity), rnn (DeepBench LSTM vs GRU), mnist (MNIST CNN wall-clock).

Backends: ``$KERAS_BACKEND`` if set; else tensorflow when installed; else every installed one of
jax and torch. Each training measurement and each kernel set runs in its own process. Records
go to DIR/records.jsonl (workloads/records.py schema, fingerprint with NVML virtualization mode),
the report to DIR/report/ (report, what ``gpulab report`` builds). Exit codes: 0 all
ok, 1 some measurement failed, 2 bad input, 130 interrupted (finished records are kept).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any, NoReturn

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from workloads.errors import InputError  # noqa: E402

SUITE = "gpu-h100"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"h100_suite: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _csv(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def parser() -> argparse.ArgumentParser:
    from benchmarks.gpu.plan import PARTS, PRECISIONS

    p = _Parser(prog="h100_suite", description=__doc__.split("\n")[0])
    p.add_argument("--cpu-smoke", action="store_true", help="every part at tiny sizes (CPU)")
    p.add_argument("--out", type=Path, help="output directory (default results/gpu-<run id>)")
    p.add_argument(
        "--backends", type=_csv, help="Keras backends, comma-separated (tensorflow, jax, torch)"
    )
    p.add_argument("--parts", type=_csv, help=f"comma-separated subset of {','.join(PARTS)}")
    p.add_argument(
        "--train",
        action="append",
        metavar="MODEL:BATCH[:PX]",
        help="training cases instead of the plan's (repeatable)",
    )
    p.add_argument("--precisions", type=_csv, help=f"subset of {','.join(PRECISIONS)}")
    p.add_argument("--steps", type=int, help="timed steps T of the training arms")
    p.add_argument("--warmup", type=int, help="warm-up steps W of the training arms")
    p.add_argument("--repeats", type=int, help="repetitions R (each arm its own process)")
    p.add_argument("--max-minutes", type=float, help="start no measurement after this long")
    p.add_argument("--topology", default="local", help="records' topology label")
    p.add_argument("--arm", default="native", help="records' arm label")
    p.add_argument(
        "--gpu-path",
        default="local",
        help="how this host reaches its GPU, as the records state it (default local: this "
        "machine, stated as bare metal; the fingerprint flags a VM or container it finds)",
    )
    p.add_argument("--exec-env", default="native", help="records' execution environment")
    p.add_argument("--sharing", help="records' GPU sharing (default from --gpu-path)")
    p.add_argument(
        "--pool",
        action="store_true",
        help="with --from-records: pool the runs of several files into one report "
        "(each call of the suite is its own run)",
    )
    p.add_argument("--no-report", action="store_true", help="skip the report")
    p.add_argument(
        "--from-records",
        nargs="+",
        type=Path,
        metavar="JSONL",
        help="measure nothing: tables and report from these record files",
    )
    return p


def default_backends() -> list[str]:
    env = os.environ.get("KERAS_BACKEND")
    if env:
        return [env]
    if importlib.util.find_spec("tensorflow") is not None:
        return ["tensorflow"]
    found = [b for b in ("jax", "torch") if importlib.util.find_spec(b) is not None]
    if not found:
        raise InputError("no Keras backend installed (need tensorflow, jax or torch)")
    return found


def check_backends(names: list[str]) -> list[str]:
    from workloads.step import check_backend

    if not names:
        raise InputError("--backends names no backend")
    return [check_backend(n) for n in names]


def check_parts(names: list[str] | None) -> list[str]:
    from benchmarks.gpu.plan import PARTS

    if names is None:
        return list(PARTS)
    bad = [n for n in names if n not in PARTS]
    if bad or not names:
        raise InputError(f"--parts {bad[0] if bad else ''!r} is not one of {', '.join(PARTS)}")
    return names


def device_name(records: list[dict[str, Any]]) -> str:
    for r in records:
        gpus = ((r.get("fingerprint") or {}).get("gpu") or {}).get("gpus") or []
        if gpus:
            g = gpus[0]
            return f"{g.get('name')} ({g.get('virtualization_mode') or 'virtualization ?'})"
    for r in records:
        cpu = (r.get("fingerprint") or {}).get("cpu") or {}
        if cpu:
            return f"CPU only: {cpu.get('model')} x{cpu.get('logical_cpus')}"
    return ""


def build_report(paths: list[Path], out: Path, console: Any, pool: bool = False) -> None:
    try:
        from report import build_report as report
    except ImportError:
        console.print("report: the report package is not available; run `gpulab report` later")
        return
    try:
        res = report(paths, out, title="gpulab GPU suite", pool=pool)
    except Exception as exc:  # the tables still print; the report problem is one line
        console.print(f"report: not built: {type(exc).__name__}: {exc}")
        return
    made = ", ".join(f"{v.claim}: {v.verdict}" for v in res.verdicts if v.verdict != "not measured")
    console.print(f"report: {res.html} ({made or 'no claim verdicts'})")


def measure(args: argparse.Namespace, console: Any) -> tuple[list[dict[str, Any]], Path, int]:
    from benchmarks.gpu import parts as P
    from benchmarks.gpu.launch import Recorder
    from benchmarks.gpu.plan import FULL, SMOKE, customize
    from workloads.records import new_run_id
    from workloads.setting import make_setting

    plan = customize(
        SMOKE if args.cpu_smoke else FULL,
        args.train,
        args.precisions,
        args.steps,
        args.warmup,
        args.repeats,
    )
    backends = check_backends(args.backends or default_backends())
    parts = check_parts(args.parts)
    if args.max_minutes is not None and args.max_minutes < 0:
        raise InputError(f"--max-minutes must be >= 0, got {args.max_minutes}")
    setting = make_setting(args.gpu_path, args.exec_env, args.sharing)
    run_id = new_run_id()
    out = args.out or REPO / "results" / f"gpu-{run_id}"
    rec = Recorder(
        out / "records.jsonl",
        run_id,
        SUITE if not args.cpu_smoke else f"{SUITE}-cpu-smoke",
        args.topology,
        args.arm,
        setting,
    )
    limit = args.max_minutes * 60 if args.max_minutes is not None else float("inf")
    ctx = P.Context(
        plan,
        backends,
        parts,
        rec,
        time.monotonic() + limit,
        log=lambda s: console.print(f"[dim]{time.strftime('%H:%M:%S')}[/] {s}"),
    )
    console.print(
        f"plan {plan.name}: parts {','.join(parts)}; backends {','.join(backends)}; "
        f"records -> {rec.path}"
    )
    code = 0
    try:
        if {"train", "bandwidth", "rnn"} & set(parts):
            P.kernels(ctx)
        for name, fn in (
            ("train", P.train),
            ("sharing", P.sharing),
            ("shared", P.shared),
            ("mnist", P.mnist),
        ):
            if name in parts:
                fn(ctx)
    except KeyboardInterrupt:
        console.print("interrupted: finished records are kept")
        code = 130
    finally:
        rec.close()
    if ctx.skipped:
        console.print(f"--max-minutes reached: skipped {', '.join(ctx.skipped)}")
    if code == 0 and any(r["status"] != "ok" for r in rec.records):
        code = 1
    return rec.records, out, code


def main(argv: list[str] | None = None) -> int:
    from rich.console import Console

    console = Console(width=int(os.environ.get("COLUMNS", "160")))
    args = parser().parse_args(argv)
    try:
        if args.from_records:
            from report.load import load_records

            paths = list(args.from_records)
            records = load_records(paths)
            out = args.out or paths[0].parent
            code = 0
        else:
            records, out, code = measure(args, console)
            paths = [out / "records.jsonl"]
    except InputError as exc:
        print(f"h100_suite: error: {exc}", file=sys.stderr)
        return 2
    from benchmarks.gpu.table import render

    console.print(f"{len(records)} record(s) in {', '.join(str(p) for p in paths)}")
    if not args.no_report and records:
        build_report(paths, out / "report", console, pool=args.pool)
    render(records, console, device_name(records))
    return code


if __name__ == "__main__":
    sys.exit(main())
