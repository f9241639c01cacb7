"""``python -m workloads``: the runner's command line (a stable interface).

Used by Ansible's ``workload_run`` role and by ``gpulab run local``; keep it stable::

    python -m workloads bench --suite NAME --out FILE
                              [--steps T] [--warmup W] [--repeats R]     (override every entry)
                              [--topology T] [--arm LABEL] [--keras-backend tensorflow|jax|torch]
    python -m workloads bench --model M [--batch N] [--steps T] [--warmup W] [--repeats R]
                              [--image-size PX] --out FILE
                              [--topology T] [--arm LABEL] [--keras-backend tensorflow|jax|torch]
         (both) [--gpu-path P] [--exec-env E] [--sharing S]   (the setting, as the lab states it)
                [--sync-every auto|N|tf_cnn]                 (timed steps per host sync)
    python -m workloads fingerprint        # this machine's environment fingerprint as JSON
    python -m workloads list               # models (default batch, input size) and suites

``--suite`` takes a name under ``workloads/suites/`` or a path to a ``.yaml`` file. ``--out``
is a JSON Lines file that records are appended to, one per measurement as it finishes.
Defaults: the model's batch and full image size, 100 timed steps, 10 warm-up steps, 3 repeats
(a suite's own count where it gives one), topology ``local``, arm ``native``, backend
TensorFlow (JAX or PyTorch only when named with --keras-backend or KERAS_BACKEND, or with
GPULAB_BACKEND_FALLBACK=1 where TensorFlow is absent).
``--topology``, ``--arm``, ``--gpu-path``, ``--exec-env`` and ``--sharing`` default to
``GPULAB_TOPOLOGY``, ``GPULAB_ARM``, ``GPULAB_GPU_PATH``, ``GPULAB_EXEC_ENV`` and
``GPULAB_SHARING`` (workloads/setting.py): every record carries that setting, cross-checked
against the fingerprint (``setting_flags``). Without a gpu_path the records carry no setting
(a warning; the report says "unknown setting"); exec_env defaults to ``native``.
The options are defined once, in ``workloads/bench_options.py`` (``gpulab bench`` has the same).
Each repetition runs in its own process (``python -m workloads _measure``, internal).

``--sync-every`` (default ``GPULAB_SYNC_EVERY``, else ``auto``): the timed loop waits for the
device every K steps and after the last, never after each step unless asked (``tf_cnn``, or
1); ``auto`` makes each block last at least a second at the warm-up steps' speed. Every record
carries ``sync_every``, ``startup_s``, ``first_step_s``, ``timed_s`` and ``block_times_s``.
``GPULAB_MIN_TIMED_S`` (default 1): a timed window shorter than this is flagged in the
record (``params.timing.short_window``).

``GPULAB_RUN_ID`` (set by the workload_run role): the run id every record carries, the same on
every host of one lab run (default: a new one).

``GPULAB_EXPECT_DEVICE`` (gpu|cpu|auto, default auto): with ``gpu``, a measurement whose
framework sees no GPU fails (record error naming the host) instead of training on the CPU;
every record carries the device really used in ``params.device`` (workloads/expect_device.py).

Exit codes: 0 every measurement ok; 1 some measurement failed (its record says why); 2 bad
input (one line on stderr naming the key or value); 130 interrupted by Ctrl-C or SIGTERM
(finished records kept, the running one written with status ``interrupted``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from datetime import UTC, datetime
from typing import Any, NoReturn

from workloads.errors import InputError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


def add_bench_arguments(p: argparse.ArgumentParser) -> None:
    """The bench options of :mod:`workloads.bench_options` (defined once, also for gpulab)."""
    from workloads.bench_options import add_arguments

    add_arguments(p)


def progress_line(event: Any) -> str | None:
    """The line printed when a measurement finishes: its status, its rate when it has one, and
    its error when it did not end ``ok`` (a refused result keeps its rate; the reason is what
    the reader needs)."""
    if event.kind != "finish":
        return None
    rec = event.record
    ips = rec.get("images_per_sec")
    parts = [f"{ips:.1f} images/sec"] if ips else []
    if rec.get("status") != "ok" and rec.get("error"):
        parts.append(str(rec["error"]))
    return (
        f"[{event.index + 1}/{event.total}] {rec['experiment']} repeat "
        f"{rec['repeat']}: {rec['status']} {': '.join(parts)}"
    )


def _bench(args: argparse.Namespace) -> int:
    from workloads.bench import run_bench
    from workloads.bench_options import finish
    from workloads.expect_device import expected_device
    from workloads.records import run_id_from_env
    from workloads.setting import setting_from_options
    from workloads.suites import resolve_suite

    opts = finish(vars(args))
    expected_device()  # a bad GPULAB_EXPECT_DEVICE fails here, before anything runs
    suite = resolve_suite(
        opts["suite"],
        opts["model"],
        opts["batch"],
        opts["steps"],
        opts["warmup"],
        opts["repeats"],
        opts["image_size"],
    )

    def progress(event: Any) -> None:
        line = progress_line(event)
        if line is not None:
            print(line, file=sys.stderr, flush=True)

    setting = setting_from_options(opts["gpu_path"], opts["exec_env"], opts["sharing"])
    result = run_bench(
        suite,
        opts["out"],
        run_id=run_id_from_env(),
        topology=opts["topology"],
        arm=opts["arm"],
        backend=opts["keras_backend"],
        progress=progress,
        setting=setting,
        sync_every=opts["sync_every"],
        process_start=opts["process_start"],
    )
    print(f"{len(result.records)} record(s) -> {result.out}", file=sys.stderr)
    if setting is None and result.records:
        print(
            "python -m workloads: warning: no --gpu-path (GPULAB_GPU_PATH): the records carry "
            "no setting (reported as unknown setting)",
            file=sys.stderr,
        )
    return result.exit_code


def protocol_stream() -> Any:
    """The measuring child's protocol channel: the real stdout. Anything else printed to
    stdout from here on (framework noise) goes to stderr."""
    proto = os.fdopen(os.dup(1), "w", buffering=1, encoding="utf-8")
    os.dup2(2, 1)
    return proto


def emit_result(proto: Any, fields: dict[str, Any], backend: dict[str, Any] | None = None) -> None:
    """Add the environment fingerprint to a measurement and write its result line.

    ``backend``: the fingerprint's ``software.backend`` as a child job reported it (a scenario
    that measures only in children does not import the framework itself)."""
    from workloads.bench import PREFIX

    try:
        from workloads.fingerprint import collect

        fields["fingerprint"] = collect()
        if backend is not None:
            fields["fingerprint"]["software"]["backend"] = backend
    except Exception as exc:  # a fingerprint problem must not lose the measurement
        fields["fingerprint"] = {"error": f"{type(exc).__name__}: {exc}"}
    proto.write(PREFIX + "result " + json.dumps(fields, default=str) + "\n")
    proto.flush()


def _measure() -> int:
    """Internal: run one job (JSON on stdin) and print the protocol lines (see bench.py)."""
    proto = protocol_stream()
    from workloads import expect_device
    from workloads.bench import PREFIX
    from workloads.scenarios import MEASURED_IN_CHILDREN, Job, get_scenario, jobs

    job = Job.from_json(json.loads(sys.stdin.read()))
    from workloads.lean_imports import keep_out

    keep_out(job.backend)  # before the framework's import: 0.8 s of CPU a process

    def progress(phase: str, step: int, total: int) -> None:
        proto.write(
            PREFIX + "progress " + json.dumps({"phase": phase, "step": step, "total": total}) + "\n"
        )

    job.progress = progress
    fields: dict[str, Any]
    device: dict[str, Any] | None = None
    backend: dict[str, Any] | None = None
    # a scenario that measures only in child jobs leaves the device check to them and takes
    # their device and backend (its own process skips the framework's import: seconds a job)
    in_children = job.scenario in MEASURED_IN_CHILDREN
    try:
        if not in_children:
            # a GPU host never trains on the CPU silently
            device = expect_device.check(job.backend)
        fields = get_scenario(job.scenario)(job)
        fields.setdefault("status", "ok")
    except expect_device.DeviceMissing as exc:
        device = exc.device
        fields = {"status": "failed", "error": str(exc)}
    except Exception as exc:
        traceback.print_exc()
        fields = {"status": "failed", "error": f"{type(exc).__name__}: {exc}"[:2000]}
    if in_children:
        device, backend = jobs.children_device()
        if device is None:  # no child got as far as its device check
            try:
                device = expect_device.check(job.backend)
            except expect_device.DeviceMissing as exc:
                device = exc.device
                fields = {"status": "failed", "error": str(exc)}
    if device is not None:
        fields.setdefault("params", {})["device"] = device
    fields["elapsed_s"] = time.time() - job.launched_at
    fields.setdefault("params", {})["pid"] = os.getpid()  # each repetition is its own process
    from workloads import zygote

    # forked from the run's zygote (the framework imported before the fork), or its own
    # interpreter (the import in the process)
    fields["params"]["process_start"] = "fork" if zygote.FORKED else "exec"
    fields["started_at"] = datetime.fromtimestamp(job.launched_at, UTC).isoformat(
        timespec="milliseconds"
    )
    fields["finished_at"] = datetime.now(UTC).isoformat(timespec="milliseconds")
    emit_result(proto, fields, backend)
    return 0


def _list() -> int:
    from workloads.models import MODELS
    from workloads.suites import list_suites

    for spec in MODELS.values():
        print(
            f"model {spec.name}: batch {spec.default_batch}, input "
            f"{spec.image_size}x{spec.image_size}x{spec.channels}, min {spec.min_image_size} px"
        )
    for name in list_suites():
        print(f"suite {name}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="python -m workloads", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    add_bench_arguments(sub.add_parser("bench", help="run a suite or one model"))
    sub.add_parser("fingerprint", help="print this machine's environment fingerprint")
    sub.add_parser("list", help="list models and suites")
    sub.add_parser("_measure")
    zygote = sub.add_parser("_zygote")
    zygote.add_argument("socket")
    zygote.add_argument("backend")
    args = parser.parse_args(argv)
    try:
        if args.command == "bench":
            return _bench(args)
        if args.command == "_measure":
            return _measure()
        if args.command == "_zygote":
            from workloads.zygote_serve import serve

            return serve(args.socket, args.backend, lambda: main(["_measure"]))
        if args.command == "list":
            return _list()
        from workloads.fingerprint import collect

        print(json.dumps(collect(), indent=2, sort_keys=True))
        return 0
    except InputError as exc:
        print(f"python -m workloads: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("python -m workloads: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    code = main()
    if sys.argv[1:2] in (["_measure"], ["_zygote"]):  # nothing left to write: no teardown
        from workloads.quick_exit import exit_now

        exit_now(code)
    sys.exit(code)
