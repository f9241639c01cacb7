"""One JSON contract for every ``gpulab COMMAND --json``: one object on stdout, success or not.

The envelope (docs/cli-json.schema.json, tested against every command)::

    {"ok": true,  "command": "validate", "data": {...}, "error": null}
    {"ok": false, "command": "validate", "data": {...} | null,
     "error": {"message": "gpulab:image is required for nova-pci: ...", "code": 2}}

``command`` is the command as typed after ``gpulab`` (``"study status"``), ``data`` the command's
result with typed values (numbers as numbers, lists as lists, secrets as ``"[secret]"``), and
``error.code`` the exit code (1 a step or check failed, 2 bad input, 130/143 interrupted).
Logs, progress and the one-line ``gpulab: error: ...`` stay on stderr.

A command calls :func:`emit` (success) or :func:`emit_failure` (a failure that still has data,
e.g. preflight's checks); :func:`infra.cli.main` prints the envelope of any other failure (bad
input, a parse error, an interrupt) when ``--json`` was given, so no failure leaves stdout
empty.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

SECRET = "[secret]"  # how a secret value is shown in every JSON output (as `gpulab outputs`)


@dataclass
class _State:
    json: bool = False  # --json was given on this command line
    command: str = ""  # the command as typed after `gpulab`
    emitted: bool = False  # the envelope is on stdout already
    error: str = ""  # the last `gpulab: error:` line's message (infra.cli.errors.fail)
    unprinted: str = ""  # an emitted failure's message not yet on stderr


STATE = _State()


def start(command: str, as_json: bool) -> None:
    """A command line begins (:func:`infra.cli.main`): what it is, whether it wants JSON."""
    STATE.json, STATE.command, STATE.emitted = as_json, command, False
    STATE.error = STATE.unprinted = ""


def note_error(message: str) -> None:
    """The message of the error line just printed: the envelope's, if the command then exits."""
    STATE.error = message
    if message == STATE.unprinted:
        STATE.unprinted = ""


def last_error() -> str:
    return STATE.error


def plain(value: Any) -> Any:
    """``value`` as JSON's own types: paths as strings, tuples and sets as lists, a float that
    is not finite as null (JSON has no NaN), dataclass-free containers walked."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [plain(v) for v in value]
        return sorted(items, key=str) if isinstance(value, set | frozenset) else items
    return str(value)


def envelope(command: str, data: Any, message: str | None = None, code: int = 0) -> dict[str, Any]:
    """The envelope of ``command``'s result: ok when ``message`` is None."""
    error = None if message is None else {"message": message, "code": int(code)}
    return {"ok": error is None, "command": command, "data": plain(data), "error": error}


def _command() -> str:
    if STATE.command:
        return STATE.command
    from typer._click import globals as click_globals  # only outside main(): a test's runner

    ctx = click_globals.get_current_context(silent=True)
    return " ".join(ctx.command_path.split()[1:]) if ctx is not None else ""


def _write(env: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(env, sort_keys=True, indent=2, allow_nan=False) + "\n")
    sys.stdout.flush()
    STATE.emitted = True


def emit(data: Any) -> None:
    """The command succeeded: its envelope, ``data`` inside, on stdout."""
    _write(envelope(_command(), data))


def emit_failure(data: Any, message: str, code: int) -> None:
    """The command failed but has a result to show (checks, a comparison): its envelope with
    ``data`` and the error; the caller then exits with ``code`` (and :func:`infra.cli.main`
    prints the message on stderr, as for every failure)."""
    _write(envelope(_command(), data, message, code))
    STATE.unprinted = message


def emit_error(message: str, code: int) -> None:
    """Called by :func:`infra.cli.main` for a failure: the envelope (``data`` null), when
    ``--json`` was given and the command printed none."""
    if STATE.json and not STATE.emitted:
        _write(envelope(STATE.command, None, message, code))
