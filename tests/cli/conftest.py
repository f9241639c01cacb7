"""Run ``gpulab`` the way a user does: the venv's console script in a subprocess."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
GPULAB = str(Path(sys.executable).parent / "gpulab")


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
            timeout=timeout, env=full,
        )  # fmt: skip

    return run
