"""``bash scripts/test.sh`` (the whole suite, as CI): in what order its steps run and how their
failures end it, on a stand-in clone whose venv, parts, static checks and pytest are stubs that
log when they start and end (the real ones take minutes: they run in every CI run); and
``scripts/venv.sh``'s hand-over of pip's index settings to uv."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.parts import REPO

STUB = """#!/usr/bin/env bash
echo "$(date +%s.%N) start {name}" >> "$STEPS"
sleep "${{{var}_SLEEP:-0}}"
echo "{name} says ${{{var}_SAY:-ok}}"
echo "$(date +%s.%N) end {name}" >> "$STEPS"
exit "${{{var}_RC:-0}}"
"""


def _clone(root: Path) -> Path:
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "test.sh", root / "scripts" / "test.sh")
    stubs = {
        root / "scripts" / "venv.sh": ("venv", "VENV"),
        root / "scripts" / "test-parts.sh": ("parts", "PARTS"),
        root / "scripts" / "lint.sh": ("lint", "LINT_STUB"),
        root / ".venv" / "bin" / "python": ("pytest", "PYTEST"),
    }
    for path, (name, var) in stubs.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(STUB.format(name=name, var=var))
        path.chmod(0o755)
    return root


def _run(clone: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[tuple[str, str]]]:
    steps = clone / "steps.log"
    r = subprocess.run(
        ["bash", "scripts/test.sh"],
        cwd=clone,
        env=dict(os.environ, STEPS=str(steps), **env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    lines = steps.read_text().splitlines() if steps.exists() else []
    return r, [(ln.split()[1], ln.split()[2]) for ln in lines]


def test_the_tests_do_not_wait_for_the_static_checks(tmp_path: Path) -> None:
    # the venv's install and the checks take a while, as theirs do (a stub that ends at once
    # could end before the parts' stub has started: seen beside a busy first tier)
    r, steps = _run(_clone(tmp_path), VENV_SLEEP="2", LINT_STUB_SLEEP="4")
    assert r.returncode == 0, r.stderr
    order = [f"{what} {name}" for what, name in steps]
    # the parts start before the venv's install; the static checks after it, and they are
    # still running when the tests start
    assert order.index("start parts") < order.index("end venv") < order.index("start lint")
    assert order.index("start pytest") < order.index("end lint")
    assert "lint says ok" in r.stderr and "pytest says ok" in r.stdout


def test_failed_static_checks_fail_a_run_whose_tests_passed(tmp_path: Path) -> None:
    r, steps = _run(_clone(tmp_path), LINT_STUB_RC="1", LINT_STUB_SAY="E501 line too long")
    assert r.returncode == 1
    assert ("end", "pytest") in steps
    assert "lint says E501 line too long" in r.stderr
    assert "static checks failed (scripts/lint.sh, above)" in r.stderr


def test_failed_tests_give_the_tests_exit_status(tmp_path: Path) -> None:
    r, _ = _run(_clone(tmp_path), LINT_STUB_RC="1", PYTEST_RC="2")
    assert r.returncode == 2


def test_a_part_that_fails_stops_before_the_tests(tmp_path: Path) -> None:
    r, steps = _run(_clone(tmp_path), PARTS_RC="3")
    assert r.returncode == 3
    assert "no tests run" in r.stderr
    assert ("start", "pytest") not in steps


def test_uv_gets_the_package_index_settings_pip_has(tmp_path: Path) -> None:
    """scripts/venv.sh installs with uv, which reads no pip configuration: the index settings
    that ``pip config list`` shows (pip.conf and PIP_* variables) are handed to it as flags."""
    script = (REPO / "scripts" / "venv.sh").read_text()
    start = script.index("uv_args() {")
    func = script[start : script.index("\n}\n", start) + 3]
    pip = tmp_path / ".venv" / "bin" / "pip"
    pip.parent.mkdir(parents=True)
    pip.write_text(
        "#!/bin/sh\ncat <<'CFG'\n"
        "global.index-url='https://mirror.lab.example/simple'\n"
        "global.extra-index-url='file:///srv/a/simple file:///srv/b/simple'\n"
        "global.timeout='60'\n"
        ":env:.find-links='/srv/wheels'\n"
        "CFG\n"
    )
    pip.chmod(0o755)
    r = subprocess.run(
        ["bash", "-c", func + "uv_args"], cwd=tmp_path, capture_output=True, text=True, check=True
    )
    assert r.stdout.split("\n")[:-1] == [
        "--index-url",
        "https://mirror.lab.example/simple",
        "--extra-index-url",
        "file:///srv/a/simple",
        "--extra-index-url",
        "file:///srv/b/simple",
        "--find-links",
        "/srv/wheels",
    ]
