"""Child processes with a kill deadline, and the records they become.

``run_child`` starts ``benchmarks/gpu/child.py MODE`` (own session, dies with the parent, killed
at its deadline), feeds it JSON, and returns the fields of its ``@gpulab result`` line (a failed
result with the stderr tail when there is none). ``Recorder`` turns fields into schema records
(workloads.records.make_record) and appends each to the JSON Lines file as it is made.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from workloads.records import OPTIONAL, REQUIRED, RecordWriter, make_record, utc_now
from workloads.setting import Setting, setting_record_fields

REPO = Path(__file__).resolve().parents[2]
CHILD = Path(__file__).resolve().parent / "child.py"
PREFIX = "@gpulab result "


def _die_with_parent() -> None:
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.update(extra or {})
    return env


def _tail(text: str, lines: int = 3, limit: int = 600) -> str:
    keep = [ln for ln in text.splitlines() if ln.strip() and "absl::InitializeLog" not in ln]
    return " | ".join(keep[-lines:])[-limit:]


def run_child(
    mode: str, payload: dict[str, Any], env: dict[str, str] | None = None, timeout_s: float = 900.0
) -> dict[str, Any]:
    """Run one child measurement; its result fields (``status`` always set)."""
    payload = dict(payload)
    payload["launched_at"] = time.time()
    with tempfile.TemporaryFile("w+", encoding="utf-8") as err:
        proc = subprocess.Popen(
            [sys.executable, str(CHILD), mode],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=child_env(env),
            cwd=str(REPO),
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        try:
            out, _ = proc.communicate(json.dumps(payload), timeout=timeout_s)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            return {
                "status": "failed",
                "error": f"{mode} child killed after {timeout_s:g} s",
                "elapsed_s": time.time() - payload["launched_at"],
            }
        except BaseException:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            raise
        err.seek(0)
        errtext = err.read()
    for line in reversed(out.splitlines()):
        if line.startswith(PREFIX):
            try:
                fields = json.loads(line[len(PREFIX) :])
            except json.JSONDecodeError:
                break
            fields.setdefault("status", "ok")
            return fields
    return {
        "status": "failed",
        "error": f"{mode} child exited {proc.returncode} with no result: "
        f"{_tail(errtext) or 'no output'}",
        "elapsed_s": time.time() - payload["launched_at"],
    }


class Recorder:
    """Records of one suite run, written as they are made."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        run_id: str,
        suite: str,
        topology: str,
        arm: str,
        setting: Setting | None = None,
    ) -> None:
        self.writer = RecordWriter(path)
        self.path = Path(path)
        self.run_id, self.suite, self.topology, self.arm = run_id, suite, topology, arm
        self.setting = setting
        self.records: list[dict[str, Any]] = []
        self._fingerprint: dict[str, Any] | None = None

    def parent_fingerprint(self) -> dict[str, Any]:
        if self._fingerprint is None:
            try:
                from workloads.fingerprint import collect

                self._fingerprint = collect()
            except Exception as exc:
                self._fingerprint = {"error": f"{type(exc).__name__}: {exc}"}
        return self._fingerprint

    def write(self, fields: dict[str, Any], **base: Any) -> dict[str, Any]:
        """One record from a child's (or scenario's) ``fields`` over the ``base`` fields."""
        known = set(REQUIRED) | set(OPTIONAL)
        params = dict(base.pop("params", {}) or {})
        metrics = dict(base.pop("metrics", {}) or {})
        rec: dict[str, Any] = {
            "run_id": self.run_id,
            "suite": self.suite,
            "topology": self.topology,
            "arm": self.arm,
            "data": "synthetic",
            "finished_at": utc_now(),
        }
        rec.update(base)
        for key, value in fields.items():
            if key == "params":
                params.update(value or {})
            elif key == "metrics":
                metrics.update(value or {})
            elif key in known:
                rec[key] = value
            else:
                params[key] = value
        rec["params"], rec["metrics"] = params, metrics
        if not rec.get("fingerprint") or "error" in rec["fingerprint"]:
            rec["fingerprint"] = self.parent_fingerprint()
        rec.setdefault("host", rec["fingerprint"].get("host") or socket.gethostname())
        for key, value in setting_record_fields(self.setting, rec["fingerprint"]).items():
            rec.setdefault(key, value)
        if rec.get("status", "ok") == "ok":
            rec.pop("error", None)
        rec = make_record(**rec)
        self.writer.write(rec)
        self.records.append(rec)
        return rec

    def close(self) -> None:
        self.writer.close()
