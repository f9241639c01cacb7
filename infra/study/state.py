"""The study's journal: ``<results>/study-<name>/study.json``, rewritten atomically on every step.

It holds the plan (the order, and the seed when randomized), each unit's status (``pending``,
``running``, ``done``, ``failed``, ``skipped``) with its reason, record count, file and times,
the stacks the study built (and so must tear down), and the teardown's outcome. A unit's
records are in ``units/<arm>.r<repeat>.jsonl``, written only when the unit has finished (a
temporary file renamed), so a unit in the journal as ``done`` always has all its records and a
unit stopped part-way has none there: ``run`` again re-runs it, and its partial records are
kept aside as ``units/<arm>.r<repeat>.stopped-<n>.jsonl`` (never reported).

Writes go through :func:`workloads.files.write_text` (a temporary file in the same directory,
fsynced, then renamed): a crash leaves either the old journal or the new one, never half of one.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.errors import UsageError
from infra.study.journal_check import MAX_JOURNAL_BYTES, STATUSES, JournalError, check_journal
from infra.study.plan import Unit
from workloads.files import OutputError, reason, write_text
from workloads.suites import SUITES_DIR

JOURNAL = "study.json"


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


@dataclass
class Journal:
    path: Path
    data: dict[str, Any] = field(default_factory=dict)
    edited: list[str] = field(default_factory=list)  # keys an edit of the study file changed

    @property
    def dir(self) -> Path:
        return self.path.parent

    @property
    def units_dir(self) -> Path:
        return self.dir / "units"

    def save(self) -> None:
        self.data["updated"] = now()
        write_text(self.path, json.dumps(self.data, indent=2, sort_keys=True) + "\n")

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


def arm_info(arm: Any) -> dict[str, Any]:
    """What a unit of the arm is measured with: an edit of one of these after a unit finished
    would make its records no longer the arm the study file describes (refused, naming it)."""
    return {
        "stack": arm.stack,
        "topology": arm.topology,
        "exec_env": arm.exec_env,
        "label": arm.label,
        "suite": arm.suite,
        "sharing": arm.sharing,
        "config": dict(getattr(arm, "config", ())),
    }


def suite_digest(ref: str) -> str | None:
    """sha256 (16 hex) of a suite's file: a .yaml path, or a suite shipped in workloads/suites/."""
    import hashlib

    path = Path(ref)
    if path.suffix not in (".yaml", ".yml"):
        path = SUITES_DIR / f"{ref}.yaml"
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    except OSError:
        return None


def suite_digests(study: Any) -> dict[str, str | None]:
    return {ref: suite_digest(ref) for ref in sorted({study.suite, *(a.suite for a in study.arms)})}


def _refuse(study: Any, path: Path, key: str, what: str) -> UsageError:
    return UsageError(
        f"study {study.name}: {key} {what}, but finished units in {path} ran with the old "
        "value; restore it, or pass --fresh to start over (finished records are moved aside)"
    )


def _check_suites(j: Journal, study: Any, finished: list[dict[str, Any]]) -> None:
    """A suite file whose content changed since finished units ran it is refused."""
    before = j.data.get("suite_digests") or {}
    used = {j.data["arms"].get(e["arm"], {}).get("suite") for e in finished}
    for ref, digest in suite_digests(study).items():
        old = before.get(ref)
        if ref in used and old is not None and digest != old:
            raise _refuse(study, j.path, "suite", f"file {ref} changed since")


def reconcile(j: Journal, study: Any, seed: int | None) -> list[str]:
    """Continue a journal under an edited study file; the keys the edit changed.

    Finished units (done or failed: their records are reported) are kept as they are when the
    edit leaves what they measured alone: new claims, another baseline, more repeats, new arms,
    another description. An edit of what a finished unit ran with is refused (UsageError naming
    the key): the suite (or a suite file's content), an arm's stack, topology, execution
    environment, label, suite or sharing, the order, the seed, the rebuild policy, fewer repeats
    than finished, or an arm with finished units removed.
    """
    from infra.study.plan import plan

    data = j.data
    finished = [e for e in data["units"].values() if e["status"] in ("done", "failed")]
    arms_done = {e["arm"] for e in finished}
    changed: list[str] = []

    def edit(key: str, old: Any, new: Any, fixed: bool = True) -> None:
        if old == new:
            return
        if fixed and finished:
            raise _refuse(study, j.path, key, f"changed ({old!r} -> {new!r})")
        changed.append(key)

    edit("suite", data.get("suite"), study.suite)
    edit("order", data.get("order_kind"), study.order)
    if study.seed is not None:
        edit("seed", data.get("seed"), study.seed)
    edit("rebuild", data.get("rebuild"), study.rebuild)
    top = max((int(e["repeat"]) for e in finished), default=0)
    if study.repeats < top:
        what = f"is {study.repeats}, fewer than the {top} with finished units"
        raise _refuse(study, j.path, "repeats", what)
    old_repeats = max((int(r) for _, r in data["order"]), default=0)
    edit("repeats", old_repeats, study.repeats, fixed=False)
    edit("baseline", data.get("baseline"), study.baseline, fixed=False)
    edit("claims", list(data.get("claims") or []), list(study.claims), fixed=False)
    new_arms = {a.name: (i, a) for i, a in enumerate(study.arms)}
    for name, info in data["arms"].items():
        if name not in new_arms:
            if name in arms_done:
                raise _refuse(study, j.path, "arms", f"no longer list arm {name!r}")
            changed.append(f"arms: {name} removed")
            continue
        i, arm = new_arms[name]
        for key, new in arm_info(arm).items():
            if key in info and info[key] != new:
                if name in arms_done:
                    raise _refuse(
                        study, j.path, f"arms[{i}].{key}", f"of arm {name} changed "
                        f"({info[key]!r} -> {new!r})"
                    )  # fmt: skip
                changed.append(f"arms[{i}].{key}")
    changed += [f"arms[{i}]: {n} added" for n, (i, _) in new_arms.items() if n not in data["arms"]]
    _check_suites(j, study, finished)

    if data.get("seed") is None and study.order == "randomized":
        data["seed"] = seed
    order = plan(study, data.get("seed"))
    units = data["units"]
    data["units"] = {
        u.key: units.get(u.key) or {"arm": u.arm, "repeat": u.repeat, "status": "pending"}
        for u in order
    }
    data["order"] = [[u.arm, u.repeat] for u in order]
    data["arms"] = {a.name: {**data["arms"].get(a.name, {}), **arm_info(a)} for a in study.arms}
    digests = data.setdefault("suite_digests", {})
    for ref, digest in suite_digests(study).items():
        digests.setdefault(ref, digest)
    data.setdefault("edits", []).append(
        {"at": now(), "from": data.get("digest"), "to": study.digest, "changed": changed}
    )
    data.update(
        digest=study.digest,
        file=str(study.path),
        suite=study.suite,
        order_kind=study.order,
        rebuild=study.rebuild,
        baseline=study.baseline,
        claims=list(study.claims),
    )
    j.save()
    return changed


def open_journal(
    root: Path, study: Any, order: list[Unit], seed: int | None, fresh: bool = False
) -> tuple[Journal, bool]:
    """The study's journal (a new one, or the one on disk to resume); (journal, resumed).

    A journal of another version of the study file is continued when the edit leaves the
    finished units alone, and refused naming the key otherwise (:func:`reconcile`); ``fresh``
    moves the old directory aside and starts over. ``Journal.edited``: the keys an edit changed.
    """
    path = study_dir(root, study.name) / JOURNAL
    if (path.exists() or path.is_symlink()) and not fresh:
        j = load_journal(path)
        if j.data.get("digest") != study.digest:
            j.edited = reconcile(j, study, seed)
        else:
            finished = [e for e in j.data["units"].values() if e["status"] in ("done", "failed")]
            _check_suites(j, study, finished)
        return j, True
    if fresh and (path.parent.exists() or path.parent.is_symlink()):
        move_aside(path.parent)
    j = Journal(path)
    j.data = {
        "schema": 1,
        "study": study.name,
        "file": str(study.path),
        "digest": study.digest,
        "suite": study.suite,
        "suite_digests": suite_digests(study),
        "order_kind": study.order,
        "seed": seed,
        "rebuild": study.rebuild,
        "baseline": study.baseline,
        "claims": list(study.claims),
        "arms": {a.name: arm_info(a) for a in study.arms},
        "order": [[u.arm, u.repeat] for u in order],
        "units": {u.key: {"arm": u.arm, "repeat": u.repeat, "status": "pending"} for u in order},
        "stacks": {},
        "teardown": None,
        "started": now(),
        "runs": [],
    }
    j.save()
    return j, False


def move_aside(folder: Path) -> Path:
    """``study-<name>`` -> ``study-<name>.<UTC time>[-n]`` (one rename: an interrupted
    ``--fresh`` leaves the old directory whole, under one name or the other)."""
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    target = folder.with_name(f"{folder.name}.{stamp}")
    n = 1
    while target.exists() or target.is_symlink():
        n += 1
        target = folder.with_name(f"{folder.name}.{stamp}-{n}")
    try:
        folder.rename(target)
    except OSError as exc:
        raise OutputError(f"cannot move {str(folder)!r} aside: {reason(exc)}") from None
    return target


def record_count(path: Path) -> int:
    """The whole records (JSON objects, one a line) in a unit's file; 0 when there is none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    n = 0
    for line in text.split("\n"):
        try:
            n += isinstance(json.loads(line), dict)
        except (ValueError, RecursionError):
            continue
    return n


def unit_file_problem(j: Journal, u: Unit) -> str:
    """Why a ``done`` unit's file does not hold the records the journal counts ("" if it does)."""
    entry = j.unit(u)
    want = entry.get("records")
    if entry["status"] != "done" or want is None:
        return ""
    f = j.records_file(u)
    got = record_count(f)
    if got == want:
        return ""
    held = f"{f.name} holds {got}" if f.is_file() else f"{f.name} is missing"
    return f"arm {u.arm}, repeat {u.repeat} is done with {want} record(s) but {held}"


def unit_file_problems(j: Journal) -> list[str]:
    return [p for p in (unit_file_problem(j, u) for u in j.order()) if p]


def load_journal(path: Path) -> Journal:
    """The journal at ``path``, checked key by key (:func:`check_journal`)."""
    try:
        raw = path.read_bytes()
    except IsADirectoryError:
        raise JournalError(path, "", "is a directory, not a study journal") from None
    except OSError as exc:
        raise UsageError(f"study journal {path} does not read: {exc.strerror}") from None
    if len(raw) > MAX_JOURNAL_BYTES:
        raise JournalError(path, "", f"is larger than {MAX_JOURNAL_BYTES} bytes")
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise JournalError(path, "", "is not UTF-8 JSON") from None
    except RecursionError:
        raise JournalError(path, "", "nests too deep to be a study journal") from None
    except ValueError as exc:
        at = f" at line {exc.lineno}" if isinstance(exc, json.JSONDecodeError) else ""
        raise JournalError(path, "", f"is not valid JSON{at}") from None
    check_journal(data, path)
    return Journal(path, data)


def find_journal(root: Path, name: str) -> Journal:
    path = study_dir(root, name) / JOURNAL
    if not path.is_file():
        raise UsageError(f"study {name}: not run yet (no {path}); `gpulab study run {name}`")
    return load_journal(path)
