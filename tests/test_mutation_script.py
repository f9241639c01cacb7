"""scripts/mutation.sh as a user runs it (without starting mutmut): the modules it knows, the
files they map to, and a bad module name refused with one line and exit code 2."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "mutation.sh"
CORE = {"config", "records", "timing", "table", "stats", "checks", "fingerprint", "dynamic",
        "runner", "scenarios-shared", "scenarios-sharing", "scenarios-barrier", "verdicts",
        "secrets", "study-model", "study-journal", "study-verdicts", "study-early",
        "launch"}  # fmt: skip


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, cwd=REPO, timeout=60, check=False
    )


def test_list_names_every_core_module_and_its_files() -> None:
    r = run("--list")
    assert r.returncode == 0, r.stderr
    listed = dict(line.split(": ", 1) for line in r.stdout.splitlines())
    assert set(listed) == CORE
    assert listed["stats"] == "report/stats.py"
    scenarios = " ".join(listed[f"scenarios-{m}"] for m in ("shared", "sharing", "barrier")).split()
    assert sorted(scenarios) == [
        f"workloads/scenarios/{m}.py" for m in ("barrier", "shared", "sharing")
    ]
    for files in listed.values():
        assert all((REPO / f).is_file() for f in files.split()), files


def test_every_mapped_test_file_exists_and_none_needs_a_slow_part() -> None:
    conf = tomllib.loads((REPO / "scripts" / "mutation.toml").read_text())
    for name, module in conf["modules"].items():
        assert module["tests"], name
        for t in module["tests"]:
            assert (REPO / t).is_file(), (name, t)
            text = (REPO / t).read_text()
            assert "pytestmark = pytest.mark.nspawn" not in text, (name, t)
    assert "not nspawn" in conf["settings"]["markers"] and "not tf" in conf["settings"]["markers"]


def test_an_unknown_module_is_one_line_and_exit_2() -> None:
    r = run("no-such-module")
    assert r.returncode == 2
    assert r.stdout == ""
    assert r.stderr.splitlines() == [
        "unknown module 'no-such-module'; one of: "
        + ", ".join(tomllib.loads((REPO / "scripts" / "mutation.toml").read_text())["modules"])
    ]
