"""Run ``gpulab`` the way a user does: the venv's console script in a subprocess, from an empty
directory outside the checkout, stdin not a terminal (no prompts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
GPULAB = str(Path(sys.executable).parent / "gpulab")
SCHEMA = REPO / "docs" / "cli-json.schema.json"


@pytest.fixture
def gpulab(tmp_path: Path):  # type: ignore[no-untyped-def]
    """``gpulab(*args, cwd=..., env=...)`` -> CompletedProcess; cwd an empty directory."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: int = 120) -> subprocess.CompletedProcess[str]:  # fmt: skip
        full = dict(os.environ, NO_COLOR="1", COLUMNS="200", GPULAB_RESULTS=str(tmp_path / "res"))
        full.pop("PULUMI_BACKEND_URL", None)
        full.update(env or {})
        return subprocess.run(
            [GPULAB, *args], cwd=cwd or tmp_path, capture_output=True, text=True,
            timeout=timeout, env=full, stdin=subprocess.DEVNULL,
        )  # fmt: skip

    return run


@cache
def _validator() -> Any:
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def envelope(stdout: str, returncode: int) -> dict[str, Any]:
    """stdout as the one JSON object of docs/cli-json.schema.json, checked against the schema
    and against the exit code (0: ok, else error.code)."""
    data: dict[str, Any] = json.loads(stdout)  # exactly one JSON document, nothing else
    errors = sorted(_validator().iter_errors(data), key=str)
    assert not errors, [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"[:300] for e in errors]
    assert data["ok"] is (returncode == 0), (returncode, data["error"])
    if returncode:
        assert data["error"]["code"] == returncode
    return data
