"""Training jobs as child processes, for the scenarios that run several at once.

Each job is the runner's own one-measurement process (``python -m workloads _measure``, the
``single`` scenario, see workloads/bench.py) started in a :class:`ProcGroup` so it can be
killed by deadline; its protocol lines (``@gpulab progress`` / ``@gpulab result``) are read
back from its log. ``wrapper`` prefixes the command line (e.g. ``bitfusion run -n 1 -p 0.25
--``), ``env`` adds variables (e.g. ``CUDA_VISIBLE_DEVICES``).
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from workloads.errors import InputError
from workloads.options import with_defaults
from workloads.scenarios.procs import Proc, ProcGroup

PREFIX = "@gpulab "
SINGLE_OPTIONS = ("seed", "learning_rate")


def single_job(job: Any, **changes: Any) -> Any:
    """A copy of ``job`` as a ``single`` measurement (options it does not take dropped)."""
    opts = {k: v for k, v in job.options.items() if k in SINGLE_OPTIONS}
    fields = {"scenario": "single", "options": opts, "progress": None, **changes}
    return replace(job, **fields)


def start_job(
    group: ProcGroup,
    name: str,
    job: Any,
    wrapper: list[str] | None = None,
    env: Mapping[str, str] | None = None,
    pass_fds: tuple[int, ...] = (),
) -> Proc:
    job.launched_at = time.time()
    extra = {"KERAS_BACKEND": job.backend, **(env or {})}
    if not wrapper:  # forked from the run's zygote when one answers
        return group.start_measure(name, extra, json.dumps(job.to_json()), pass_fds)
    argv = [*wrapper, sys.executable, "-m", "workloads", "_measure"]
    return group.start(name, argv, extra, stdin=json.dumps(job.to_json()), pass_fds=pass_fds)


def protocol(proc: Proc) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    """(progress events, result fields or None) from a job's log so far."""
    try:
        text = proc.log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return [], None
    events: list[dict[str, Any]] = []
    result = None
    for line in text.splitlines():
        if not line.startswith(PREFIX):
            continue
        kind, _, payload = line[len(PREFIX) :].partition(" ")
        try:
            value = json.loads(payload)
        except json.JSONDecodeError:
            continue
        if kind == "progress":
            events.append(value)
        elif kind == "result":
            result = value
    return events, result


def wait_timed(proc: Proc, deadline: float) -> bool:
    """Wait until ``proc`` reports its first timed step (its warm-up is over)."""
    while time.monotonic() < deadline:
        events, _ = protocol(proc)
        if any(e.get("phase") == "timed" for e in events):
            return True
        if proc.popen.poll() is not None:
            return False
        time.sleep(0.2)
    return False


# Every result a child job of this process reported, in order (see children_device).
REPORTED: list[dict[str, Any]] = []


def children_device() -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """(device, backend) of the first child job that reported its device: what the record of
    a scenario that measures only in children carries (``params.device`` and the
    fingerprint's ``software.backend``, which its own process, without the framework, lacks).
    (None, None) when no child got that far."""
    for result in REPORTED:
        device = (result.get("params") or {}).get("device")
        if isinstance(device, dict):
            backend = ((result.get("fingerprint") or {}).get("software") or {}).get("backend")
            return device, backend if isinstance(backend, dict) else None
    return None, None


def finish(group: ProcGroup, procs: list[Proc], deadline: float) -> list[dict[str, Any]]:
    """Wait for ``procs`` until ``deadline``; each one's result fields (failed when none)."""
    group.wait(procs, deadline)
    out = []
    for proc in procs:
        _, result = protocol(proc)
        if proc.popen.poll() is None:
            group.kill(proc)
            result = {"status": "failed", "error": f"{proc.name} killed at the deadline"}
        elif result is None:
            result = {
                "status": "failed",
                "error": f"{proc.name} exited {proc.popen.returncode}: {proc.tail()}",
            }
        out.append(result)
    REPORTED.extend(out)
    return out


def check_common(
    options: Mapping[str, Any], known: Mapping[str, Any], scenario: str
) -> dict[str, Any]:
    """Fill defaults and reject unknown keys; values are checked by the caller."""
    return with_defaults(options, known, scenario, also=SINGLE_OPTIONS)


def check_wrapper(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"option 'wrapper' must be a list of strings, got {value!r}")
    return value
