"""A study journal (``study.json``) checked key by key before any command reads it: a hand
edit, a truncated copy or another program's file is one line naming the first key that is
wrong and the file (exit 2), never a traceback; ``--fresh`` is the way out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.errors import UsageError

STATUSES = ("pending", "running", "done", "failed", "skipped")

MAX_JOURNAL_BYTES = 64 << 20


class JournalError(UsageError):
    """A study journal that is not one gpulab wrote: one line naming the key and the file."""

    def __init__(self, path: Path, key: str, what: str) -> None:
        name = path.parent.name.removeprefix("study-")
        where = f"{key}: " if key else ""
        super().__init__(
            f"study journal {path}: {where}{what}; restore it, or `gpulab study run {name} "
            "--fresh` starts the study over (the old directory is moved aside)"
        )


def _is_int(v: Any, lo: int = 0) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= lo


def _text(v: Any) -> bool:
    return isinstance(v, str)


def check_journal(data: Any, path: Path) -> None:
    """Every key the study commands read, with the type they read it as; one line naming the
    first that is not (a hand edit, a truncated copy, another program's file)."""

    def bad(key: str, what: str) -> JournalError:
        return JournalError(path, key, what)

    if not isinstance(data, dict):
        raise bad("", f"is a JSON {type(data).__name__}, not a study journal (an object)")
    for key in ("study", "order", "units", "arms", "baseline"):
        if key not in data:
            raise bad(key, "missing")
    if not _text(data["study"]):
        raise bad("study", "not a name")
    order = data["order"]
    if not isinstance(order, list):
        raise bad("order", "not a list of [arm, repeat] pairs")
    keys: list[str] = []
    for i, pair in enumerate(order):
        if (
            not isinstance(pair, list)
            or len(pair) != 2
            or not _text(pair[0])
            or not _is_int(pair[1], 1)
        ):
            raise bad(f"order[{i}]", f"{_short(pair)} is not an [arm, repeat] pair")
        keys.append(f"{pair[0]}#{pair[1]}")
    if len(set(keys)) != len(keys):
        raise bad("order", "lists a unit twice")
    arms = data["arms"]
    if not isinstance(arms, dict):
        raise bad("arms", "not a mapping of arm names")
    for name, info in arms.items():
        if not isinstance(info, dict):
            raise bad(f"arms.{name}", "not a mapping")
        for key in ("stack", "topology", "exec_env", "label"):
            if not _text(info.get(key)):
                raise bad(f"arms.{name}.{key}", f"{_short(info.get(key))} is not text")
        for key in ("suite", "sharing"):
            if info.get(key) is not None and not _text(info[key]):
                raise bad(f"arms.{name}.{key}", f"{_short(info[key])} is not text")
    if not _text(data["baseline"]) or (arms and data["baseline"] not in arms):
        raise bad("baseline", f"{_short(data['baseline'])} is not one of the arms")
    units = data["units"]
    if not isinstance(units, dict):
        raise bad("units", "not a mapping of units")
    for key in keys:
        if key not in units:
            raise bad("units", f"no entry for unit {key} of the order")
    for key, entry in units.items():
        _check_unit(bad, key, entry, arms, keys)
    _check_rest(bad, data)


def _check_unit(bad: Any, key: str, entry: Any, arms: dict[str, Any], keys: list[str]) -> None:
    at = f"units.{key}"
    if key not in keys:
        raise bad(at, "is not in the order")
    if not isinstance(entry, dict):
        raise bad(at, "not a mapping")
    arm, _, repeat = key.rpartition("#")
    if entry.get("arm") != arm or entry.get("repeat") != int(repeat):
        raise bad(at, f"arm/repeat {entry.get('arm')!r}/{entry.get('repeat')!r} is not {key}")
    if arm not in arms:
        raise bad(at, f"arm {arm!r} is not in arms")
    if entry.get("status") not in STATUSES:
        raise bad(f"{at}.status", f"{_short(entry.get('status'))} is not one of {STATUSES}")
    for field_ in ("records", "ok", "attempts", "measured"):
        if entry.get(field_) is not None and not _is_int(entry[field_]):
            raise bad(f"{at}.{field_}", f"{_short(entry[field_])} is not a count")
    for field_ in ("reason", "started", "finished"):
        if entry.get(field_) is not None and not _text(entry[field_]):
            raise bad(f"{at}.{field_}", f"{_short(entry[field_])} is not text")
    elapsed = entry.get("elapsed_s")
    if elapsed is not None and (isinstance(elapsed, bool) or not isinstance(elapsed, (int, float))):
        raise bad(f"{at}.elapsed_s", f"{_short(elapsed)} is not a number")
    if entry.get("runner") is not None and not isinstance(entry["runner"], dict):
        raise bad(f"{at}.runner", "not a mapping")
    if entry.get("overlapped") is not None and not _texts(entry["overlapped"]):
        raise bad(f"{at}.overlapped", "not a list of text")


def _texts(v: Any) -> bool:
    return isinstance(v, list) and all(_text(x) for x in v)


def _check_rest(bad: Any, data: dict[str, Any]) -> None:
    if data.get("seed") is not None and not _is_int(data["seed"]):
        raise bad("seed", f"{_short(data['seed'])} is not an integer")
    for key in ("digest", "file", "suite", "order_kind", "rebuild", "started", "updated"):
        if data.get(key) is not None and not _text(data[key]):
            raise bad(key, f"{_short(data[key])} is not text")
    if data.get("claims") is not None and not _texts(data["claims"]):
        raise bad("claims", "not a list of claim ids")
    digests = data.get("suite_digests")
    if digests is not None and (
        not isinstance(digests, dict) or not all(v is None or _text(v) for v in digests.values())
    ):
        raise bad("suite_digests", "not a mapping of suites to digests")
    stacks = data.get("stacks")
    if stacks is not None:
        if not isinstance(stacks, dict):
            raise bad("stacks", "not a mapping of stacks")
        for name, info in stacks.items():
            if not isinstance(info, dict):
                raise bad(f"stacks.{name}", "not a mapping")
            if info.get("runs") is not None and not _texts(info["runs"]):
                raise bad(f"stacks.{name}.runs", "not a list of run ids")
            if info.get("arms") is not None and not _texts(info["arms"]):
                raise bad(f"stacks.{name}.arms", "not a list of arm names")
            last = info.get("last")
            if last is not None and not (
                isinstance(last, list) and len(last) == 2 and _text(last[0]) and _is_int(last[1])
            ):
                raise bad(f"stacks.{name}.last", "not an [arm, repeat] pair")
    for key in ("runs", "edits"):
        got = data.get(key)
        if got is not None and not (
            isinstance(got, list) and all(isinstance(x, dict) for x in got)
        ):
            raise bad(key, "not a list of mappings")
    teardown = data.get("teardown")
    if teardown is not None:
        rows = teardown.get("stacks") if isinstance(teardown, dict) else None
        if not isinstance(rows, list) or not all(
            isinstance(r, dict) and all(_text(r.get(k)) for k in ("stack", "status", "reason"))
            for r in rows
        ):
            raise bad("teardown", "not a teardown (stacks: rows of stack, status, reason)")


def _short(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."
