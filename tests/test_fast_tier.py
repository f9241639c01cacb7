"""``bash scripts/test.sh --fast``: the first tier, picked by marker, run the way a developer
runs it. Every marker declared in pyproject.toml names something heavy (a real part, TensorFlow,
a slow test, the network), so the first tier must leave out a test carrying any one of them."""

from __future__ import annotations

import os
import re
import subprocess
import tomllib
from pathlib import Path

from tests.parts import REPO

SCRIPT = REPO / "scripts" / "test.sh"


def declared_markers() -> list[str]:
    conf = tomllib.loads((REPO / "pyproject.toml").read_text())
    lines: list[str] = conf["tool"]["pytest"]["ini_options"]["markers"]
    return [line.split(":", 1)[0].strip() for line in lines]


def test_help_names_the_fast_tier_and_its_marker_expression() -> None:
    r = subprocess.run(
        ["bash", str(SCRIPT), "--help"], capture_output=True, text=True, timeout=60, check=False
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: bash scripts/test.sh [--fast]")
    m = re.search(r'--fast .*?pytest -m "([^"]+)"', r.stdout, re.S)
    assert m, r.stdout
    excluded = set(re.findall(r"\bnot (\w+)", m.group(1)))
    assert excluded == set(declared_markers()), (excluded, declared_markers())


def test_fast_collects_the_unmarked_test_and_none_with_a_heavy_marker(tmp_path: Path) -> None:
    """One test per declared marker and one with none: ``--fast`` collects only the last
    (pytest in one process, on a file of its own, with the repository's settings)."""
    body = ["import pytest", "", "", "def test_plain() -> None:", "    assert True", ""]
    for name in declared_markers():
        body += ["", f"@pytest.mark.{name}", f"def test_{name}() -> None:", "    assert True", ""]
    (tmp_path / "test_tiers.py").write_text("\n".join(body))
    r = subprocess.run(
        ["bash", str(SCRIPT), "--fast", "--collect-only", "-q", "-p", "no:cacheprovider",
         "-c", str(REPO / "pyproject.toml"), "--rootdir", str(tmp_path),
         str(tmp_path / "test_tiers.py")],
        capture_output=True, text=True, timeout=300, check=False, cwd=tmp_path,
        env={**os.environ, "GPULAB_TEST_WORKERS": "0"},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    collected = [ln for ln in r.stdout.splitlines() if "::" in ln]
    assert collected == ["test_tiers.py::test_plain"], r.stdout
    assert f"1/{len(declared_markers()) + 1} tests collected" in r.stdout, r.stdout
