"""The study's journal: ``<results>/study-<name>/study.json``, rewritten atomically on every step.

It holds the plan (the order, and the seed when randomized), each unit's status (``pending``,
``running``, ``done``, ``failed``, ``skipped``) with its reason, record count, file and times,
the stacks the study built (and so must tear down), and the teardown's outcome. A unit's
records are in ``units/<arm>.r<repeat>.jsonl``, written only when the unit has finished (a
temporary file renamed), so a unit in the journal as ``done`` always has all its records and a
unit stopped part-way has none there: ``run`` again re-runs it, and its partial records are
kept aside as ``units/<arm>.r<repeat>.stopped-<n>.jsonl`` (never reported).

Writes are a temporary file in the same directory, fsynced, then ``os.replace``: a crash leaves
either the old journal or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.errors import UsageError
from infra.study.plan import Unit

JOURNAL = "study.json"
STATUSES = ("pending", "running", "done", "failed", "skipped")
FINAL = ("done", "failed", "skipped")


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def atomic_write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


@dataclass
class Journal:
    path: Path
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def units_dir(self) -> Path:
        return self.dir / "units"

    def save(self) -> None:
        self.data["updated"] = now()
        atomic_write(self.path, json.dumps(self.data, indent=2, sort_keys=True) + "\n")

    # -- units ----------------------------------------------------------------------------

    def order(self) -> list[Unit]:
        return [Unit(str(a), int(r)) for a, r in self.data["order"]]

    def unit(self, u: Unit) -> dict[str, Any]:
        got: dict[str, Any] = self.data["units"][u.key]
        return got

    def set_unit(self, u: Unit, status: str, **fields: Any) -> None:
        assert status in STATUSES
        entry = self.unit(u)
        entry["status"] = status
        entry.update(fields)
        self.save()

    def records_file(self, u: Unit) -> Path:
        return self.units_dir / f"{u.arm}.r{u.repeat}.jsonl"

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(STATUSES, 0)
        for entry in self.data["units"].values():
            out[entry["status"]] += 1
        return out

    def record_files(self) -> list[Path]:
        """The finished units' record files, in the plan's order."""
        files = []
        for u in self.order():
            if self.unit(u)["status"] == "done" and self.records_file(u).is_file():
                files.append(self.records_file(u))
        return files

    # -- stacks the study built -----------------------------------------------------------

    def built(self) -> dict[str, Any]:
        got: dict[str, Any] = self.data.setdefault("stacks", {})
        return got


def study_dir(root: Path, name: str) -> Path:
    return root / f"study-{name}"


def open_journal(
    root: Path, study: Any, order: list[Unit], seed: int | None, fresh: bool = False
) -> tuple[Journal, bool]:
    """The study's journal (a new one, or the one on disk to resume); (journal, resumed).

    A journal of another study file (its digest differs) is refused unless ``fresh``: resuming
    it would mix records of two different studies.
    """
    path = study_dir(root, study.name) / JOURNAL
    if path.is_file() and not fresh:
        j = load_journal(path)
        if j.data.get("digest") != study.digest:
            raise UsageError(
                f"study {study.name}: {path} belongs to a different version of the study file; "
                "pass --fresh to start over (finished records are moved aside) or restore it"
            )
        return j, True
    if path.is_file() and fresh:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        path.parent.rename(path.parent.with_name(f"{path.parent.name}.{stamp}"))
    j = Journal(path)
    j.data = {
        "schema": 1,
        "study": study.name,
        "file": str(study.path),
        "digest": study.digest,
        "suite": study.suite,
        "order_kind": study.order,
        "seed": seed,
        "rebuild": study.rebuild,
        "baseline": study.baseline,
        "claims": list(study.claims),
        "arms": {
            a.name: {
                "stack": a.stack,
                "topology": a.topology,
                "exec_env": a.exec_env,
                "label": a.label,
                "suite": a.suite,
            }
            for a in study.arms
        },
        "order": [[u.arm, u.repeat] for u in order],
        "units": {u.key: {"arm": u.arm, "repeat": u.repeat, "status": "pending"} for u in order},
        "stacks": {},
        "teardown": None,
        "started": now(),
        "runs": [],
    }
    j.save()
    return j, False


def load_journal(path: Path) -> Journal:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"study journal {path} does not read: {exc}") from None
    if not isinstance(data, dict) or "units" not in data or "order" not in data:
        raise UsageError(f"study journal {path} is not a study journal")
    return Journal(path, data)


def find_journal(root: Path, name: str) -> Journal:
    path = study_dir(root, name) / JOURNAL
    if not path.is_file():
        raise UsageError(f"study {name}: not run yet (no {path}); `gpulab study run {name}`")
    return load_journal(path)
