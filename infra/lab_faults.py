"""What a failed or interrupted ``gpulab up|measure`` tells the user.

- :func:`failure_line`: the engine reports a dynamic provider's exception as an ``error``
  diagnostic whose message is the provider host's Python traceback (``python -m
  pulumi.dynamic`` aborts the gRPC call with ``traceback.format_exc()``). The useful part is the
  traceback's last line, e.g. ``infra.ansible.runner.PlaybookError: workloads.yml: host 'gpu-1'
  failed at task 'Run the workloads': ...``; it already names the host and the task
  (:class:`infra.ansible.runner.PlaybookError`, also for an unreachable host and a sudo that
  asks for a password). The line adds the resource (``WorkloadRun <lab>-workloads-native``).
- :func:`runs_since` / :func:`newest_partial`: the runs a workload run left in
  ``results/<stack>/<run-id>/`` (per host ``<host>/...jsonl``; a failed run adds
  ``summary.json`` with status ``partial`` or ``failed``). A failed create records no outputs in
  the state, so these files are where the finished hosts' records are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# The last line of a Python traceback: `[module.]ExceptionClass: message`.
EXC_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*(?:Error|Exception|Interrupt|Exit|Failure))"
    r"(?::\s*(?P<msg>.*))?$"
)
# The provider's own failures: their message names the host and the task (or what the wait
# for the host was: infra/wait.py).
STEP_ERRORS = ("PlaybookError", "WorkloadRunError", "HostWaitError")
GRPC_PREFIXES = ("error:", "Exception calling application:")


def _one_line(text: str) -> str:
    return " ".join(text.split())


def provider_message(text: str) -> str | None:
    """The provider's exception message in an engine diagnostic (its traceback's last line,
    class name dropped); ``None`` when the text holds no exception line."""
    found: list[tuple[str, str]] = []
    for raw in (text or "").splitlines():
        line = raw.strip()
        for prefix in GRPC_PREFIXES:
            line = line.removeprefix(prefix).strip()
        m = EXC_LINE.match(line)
        if m and m.group("msg"):
            found.append((m.group("cls"), m.group("msg").strip()))
    if not found:
        return None
    steps = [msg for cls, msg in found if cls in STEP_ERRORS]
    return (steps or [msg for _, msg in found])[-1]


def resource_of(urn: str | None) -> str | None:
    """``urn:pulumi:s::p::pulumi-python:dynamic/gpulab:WorkloadRun::lab-workloads-native`` ->
    ``WorkloadRun lab-workloads-native``; None for the stack itself or no URN."""
    if not urn or "::" not in urn:
        return None
    parts = urn.split("::")
    typ, name = parts[-2], parts[-1]
    kind = typ.rsplit(":", 1)[-1]
    if typ == "pulumi:pulumi:Stack":
        return None
    return f"{kind} {name}"


@dataclass
class Diagnostic:
    """An engine ``error`` diagnostic (from the Automation API's ``on_event``)."""

    message: str
    urn: str | None = None


def failure_line(diagnostics: Iterable[Diagnostic], fallback: str) -> str:
    """One line: the failing resource and the provider's message (host and task), from the
    first error diagnostic that carries a provider exception; else the first error
    diagnostic of a resource; else ``fallback`` (the engine's last ``error:`` line)."""
    diags = list(diagnostics)
    for d in diags:
        msg = provider_message(d.message)
        if msg:
            where = resource_of(d.urn)
            return _one_line(f"{where}: {msg}" if where else msg)
    for d in diags:
        where = resource_of(d.urn)
        lines = [ln.strip() for ln in d.message.splitlines() if ln.strip()]
        if where and lines:
            return _one_line(f"{where}: {lines[-1].removeprefix('error:').strip()}")
    return _one_line(fallback)


@dataclass
class RunOnDisk:
    """One workload run's directory under ``results/<stack>/``."""

    run_dir: Path
    records: dict[str, list[str]] = field(default_factory=dict)  # host -> record files
    summary: dict[str, Any] | None = None  # summary.json of a failed run

    @property
    def status(self) -> str:
        if self.summary is not None:
            return str(self.summary.get("status") or "failed")
        return "records" if self.records else "empty"

    def to_json(self) -> dict[str, Any]:
        """The partial run as ``gpulab outputs`` shows it."""
        s = self.summary or {}
        out: dict[str, Any] = {
            "status": self.status,
            "source": str(self.run_dir / "summary.json")
            if self.summary is not None
            else str(self.run_dir),
            "run_id": self.run_dir.name,
            "finished_hosts": sorted(self.records),
            "failed_hosts": list(s.get("failed_hosts") or []),
            "records_dir": str(self.run_dir),
            "records": sorted(f for files in self.records.values() for f in files),
        }
        if s.get("error"):
            out["error"] = s["error"]
        if s.get("rows"):
            out["rows"] = s["rows"]
        return out

    def lines(self) -> list[str]:
        """What the terminal shows: where the finished hosts' records are."""
        head = f"{self.run_dir.name}: {self.status}"
        if self.summary is not None:
            head += f" (summary: {self.run_dir / 'summary.json'})"
        out = [head]
        for host, files in sorted(self.records.items()):
            out.append(f"  finished {host}: {len(files)} record file(s) in {self.run_dir / host}")
        for host in (self.summary or {}).get("failed_hosts") or []:
            out.append(f"  failed   {host}")
        if not self.records:
            out.append("  no host finished")
        return out


def _load(run_dir: Path) -> RunOnDisk:
    run = RunOnDisk(run_dir)
    for f in sorted(run_dir.glob("*/**/*.jsonl")):
        host = f.relative_to(run_dir).parts[0]
        run.records.setdefault(host, []).append(str(f))
    summary = run_dir / "summary.json"
    if summary.is_file():
        try:
            data = json.loads(summary.read_text(encoding="utf-8"))
        except ValueError:
            data = {"status": "failed", "error": f"{summary} is not valid JSON"}
        run.summary = data if isinstance(data, dict) else {"status": "failed"}
    return run


def runs_since(
    stack_dir: Path, since: float | None = None, until: float | None = None
) -> list[RunOnDisk]:
    """Workload run directories of a stack last written in [since, until], oldest first."""
    runs: list[tuple[float, RunOnDisk]] = []
    if not stack_dir.is_dir():
        return []
    for d in stack_dir.iterdir():
        if not d.is_dir():
            continue
        files = [p for p in d.rglob("*") if p.is_file()]
        if not files:
            continue
        mtime = max(p.stat().st_mtime for p in files)
        if since is not None and mtime < since:
            continue
        if until is not None and mtime > until:
            continue
        runs.append((mtime, _load(d)))
    return [r for _, r in sorted(runs, key=lambda t: (t[0], t[1].run_dir.name))]


def newest_partial(
    stack_dir: Path, since: float | None = None, until: float | None = None
) -> RunOnDisk | None:
    """The newest run in the window whose ``summary.json`` says it failed part-way."""
    failed = [r for r in runs_since(stack_dir, since, until) if r.summary is not None]
    return failed[-1] if failed else None


# How the Pulumi CLI acknowledges a signal on its output (`^C received; cancelling. ...`,
# `SIGTERM received; terminating`): it counts the first as "cancel gracefully", the second as
# "terminate now".
ENGINE_ACK = "received; "


def engine_pids() -> list[int]:
    """This process's children that are the Pulumi CLI (the Automation API starts one per
    operation); Linux /proc, empty elsewhere."""
    pids: list[int] = []
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids.extend(int(p) for p in children.read_text().split())
        except (OSError, ValueError):
            continue
    out = []
    for pid in pids:
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        names = [Path(a.decode(errors="replace")).name for a in argv[:2]]  # binary or script
        if "pulumi" in names:
            out.append(pid)
    return sorted(set(out))


class InterruptGuard:
    """While the engine runs, SIGINT and SIGTERM do not stop gpulab: dying would close the
    engine's output pipe in the middle of an update. The engine cancels gracefully on its first
    interrupt (it finishes the steps in flight, starts no new one, and records what it made) and
    terminates on the second, as ``pulumi up`` does. A Ctrl-C in a terminal reaches the engine
    too (same process group) and it says so on its output; when it has not said so within
    ``grace_s`` (a signal sent to gpulab alone, e.g. ``kill <pid>``), gpulab forwards one
    SIGINT to it. Only in the main thread (signal handlers can only be set there)."""

    def __init__(
        self,
        on_output: Any,
        grace_s: float = 2.0,
        find_engine: Any = engine_pids,
    ) -> None:
        self.on_output = on_output
        self.grace_s = grace_s
        self.find_engine = find_engine
        self.signals: list[int] = []
        self.acks = 0
        self.forwarded: list[int] = []
        self._previous: dict[int, Any] = {}
        self._timers: list[Any] = []

    def watch(self, line: str) -> None:
        """Every engine output line passes here: count the engine's acknowledgements."""
        if ENGINE_ACK in line and ("cancelling" in line or "terminating" in line):
            self.acks += 1

    def __enter__(self) -> InterruptGuard:
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *_exc: object) -> None:
        import signal

        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        for t in self._timers:
            t.cancel()

    def _handle(self, signum: int, _frame: object) -> None:
        import signal
        import threading

        self.signals.append(signum)
        n = len(self.signals)
        name = signal.Signals(signum).name
        if n == 1:
            self.on_output(
                f"==> {name}: the engine finishes the steps in flight and stops; the lab and "
                "the finished records stay (once more: stop at once, which may leave "
                "operations pending)"
            )
        else:
            self.on_output(f"==> {name} again: the engine stops at once")
        t = threading.Timer(self.grace_s, self._forward_unless_acknowledged, args=(n,))
        t.daemon = True
        self._timers.append(t)
        t.start()

    def _forward_unless_acknowledged(self, n: int) -> None:
        import os
        import signal

        if self.acks >= n:
            return
        for pid in self.find_engine():
            try:
                os.kill(pid, signal.SIGINT)
                self.forwarded.append(pid)
            except ProcessLookupError:
                continue
