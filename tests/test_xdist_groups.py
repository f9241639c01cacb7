"""The grouping of tests for the two pytest-xdist workers (tests/conftest.py): the tests that use
the nspawn hosts or the chroot target share one group; the others are grouped by file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import MACHINE_GROUP, xdist_group_of
from tests.parts import REPO


def test_machine_parts_by_fixture_or_marker_share_one_group() -> None:
    assert xdist_group_of("tests/a.py::t", ["tmp_path", "nspawn_lab"], set()) == MACHINE_GROUP
    assert xdist_group_of("tests/b.py::t", ["chroot_target"], set()) == MACHINE_GROUP
    assert xdist_group_of("tests/c.py::t[x]", ["request"], {"nspawn", "slow"}) == MACHINE_GROUP
    # dockerd has a data root per worker: its tests stay with their file
    assert xdist_group_of("tests/d.py::t", ["dockerd"], {"docker"}) == "tests/d.py"


def test_other_tests_are_grouped_by_their_file() -> None:
    assert xdist_group_of("tests/x/test_y.py::test_z[1]", ["ironic", "tmp_path"], {"ironic"}) == (
        "tests/x/test_y.py"
    )
    assert xdist_group_of("tests/x/test_y.py::C::test_w", [], set()) == "tests/x/test_y.py"


PRINT_GROUPS = """
import pytest

@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items):
    for item in items:
        print("GROUP\\t" + item.nodeid + "\\t" + item.get_closest_marker("xdist_group").args[0])
"""


def test_collected_e2e_and_converge_tests_land_in_the_machine_group(tmp_path: Path) -> None:
    """The hook as pytest runs it on a real collection: a plugin that runs after it prints the
    group each test got."""
    (tmp_path / "print_groups.py").write_text(PRINT_GROUPS)
    env = {**os.environ, "PYTHONPATH": str(tmp_path)}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "print_groups",
         "tests/e2e/test_lab_e2e.py", "tests/ansible/test_nspawn_converge.py",
         "tests/lifecycle/test_ansible_run_provider.py", "tests/test_records.py"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    groups = dict(
        line.split("\t")[1:3] for line in r.stdout.splitlines() if line.startswith("GROUP\t")
    )
    machine = {i for i in groups if i.startswith(("tests/e2e/", "tests/ansible/"))}
    machine |= {i for i in groups if "nspawn_host" in i}
    assert len(machine) >= 5, sorted(groups)
    assert {groups[i] for i in machine} == {MACHINE_GROUP}, groups
    records = [i for i in groups if i.startswith("tests/test_records.py")]
    assert records and {groups[i] for i in records} == {"tests/test_records.py"}, groups
    # a file with both kinds: its tests that need no host stay with the file
    provider = {i: g for i, g in groups.items() if i.startswith("tests/lifecycle/")}
    assert set(provider.values()) == {MACHINE_GROUP, "tests/lifecycle/test_ansible_run_provider.py"}
