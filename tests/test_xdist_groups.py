"""The grouping of tests for the two pytest-xdist workers (tests/conftest.py): the tests that use
the nspawn hosts or the chroot target form two groups (tests/e2e/ and the others, a lab on each
worker); the others are grouped by file."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (
    E2E_MACHINE_GROUP,
    GROUPS_ENV,
    MACHINE_GROUP,
    MACHINE_GROUPS,
    xdist_group_of,
)
from tests.parts import REPO


def test_machine_parts_by_fixture_or_marker_share_one_group() -> None:
    assert xdist_group_of("tests/a.py::t", ["tmp_path", "nspawn_lab"], set()) == MACHINE_GROUP
    assert xdist_group_of("tests/b.py::t", ["chroot_target"], set()) == MACHINE_GROUP
    assert xdist_group_of("tests/c.py::t[x]", ["request"], {"nspawn", "slow"}) == MACHINE_GROUP
    # dockerd has a data root per worker: its tests stay with their file
    assert xdist_group_of("tests/d.py::t", ["dockerd"], {"docker"}) == "tests/d.py"


def test_e2e_machine_tests_are_a_group_of_their_own() -> None:
    """The topologies' and studies' ``up`` on the other worker, with a lab of its own."""
    assert xdist_group_of("tests/e2e/test_x.py::t", ["nspawn_lab"], set()) == E2E_MACHINE_GROUP
    assert xdist_group_of("tests/e2e/test_y.py::t[1]", ["request"], {"nspawn"}) == (
        E2E_MACHINE_GROUP
    )
    assert xdist_group_of("tests/e2e/test_z.py::t", ["tmp_path"], set()) == "tests/e2e/test_z.py"
    assert xdist_group_of("tests/ansible/test_e2e.py::t", ["nspawn_host"], set()) == MACHINE_GROUP


def test_other_tests_are_grouped_by_their_file() -> None:
    assert xdist_group_of("tests/x/test_y.py::test_z[1]", ["ironic", "tmp_path"], {"ironic"}) == (
        "tests/x/test_y.py"
    )
    assert xdist_group_of("tests/x/test_y.py::C::test_w", [], set()) == "tests/x/test_y.py"


@pytest.mark.integration
def test_collected_e2e_and_converge_tests_land_in_the_machine_group(tmp_path: Path) -> None:
    """The hook as pytest runs it on a real collection: with GPULAB_XDIST_GROUPS set, the group
    of every collected test is written where the scheduler reads it."""
    env = {**os.environ, GROUPS_ENV: str(tmp_path)}
    env.pop("PYTEST_XDIST_WORKER", None)
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
         "tests/e2e/test_lab_e2e.py", "tests/ansible/test_nspawn_converge.py",
         "tests/lifecycle/test_ansible_run_provider.py", "tests/test_records.py"],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    groups: dict[str, str] = json.loads((tmp_path / "groups-main.json").read_text())
    # longest first: the host tests, then the groups with a slow test, then the rest
    order = list(groups.values())
    last_machine = max(i for i, g in enumerate(order) if g in MACHINE_GROUPS)
    assert set(order[: last_machine + 1]) == MACHINE_GROUPS, order
    assert order[-1] == "tests/test_records.py", order  # no slow test in it
    e2e = {i for i in groups if i.startswith("tests/e2e/")}
    assert len(e2e) >= 5 and {groups[i] for i in e2e} == {E2E_MACHINE_GROUP}, groups
    machine = {i for i in groups if i.startswith("tests/ansible/")}
    machine |= {i for i in groups if "nspawn_host" in i}
    assert len(machine) >= 5, sorted(groups)
    assert {groups[i] for i in machine} == {MACHINE_GROUP}, groups
    records = [i for i in groups if i.startswith("tests/test_records.py")]
    assert records and {groups[i] for i in records} == {"tests/test_records.py"}, groups
    # a file with both kinds: its tests that need no host stay with the file
    provider = {i: g for i, g in groups.items() if i.startswith("tests/lifecycle/")}
    assert set(provider.values()) == {MACHINE_GROUP, "tests/lifecycle/test_ansible_run_provider.py"}


@pytest.mark.integration
def test_two_workers_run_each_group_on_one_worker(tmp_path: Path) -> None:
    """What scripts/test.sh runs, on two small files: every test of a file on the same worker
    (pytest-xdist's own loadgroup spreads them over both under pytest 9.2)."""
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup", "-v",
         "-p", "no:cacheprovider", "tests/test_records.py", "tests/cli/test_stack_ref.py"],
        capture_output=True, text=True, cwd=REPO, timeout=300, check=False,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )  # fmt: skip
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "scheduling tests via FileGroupScheduling" in r.stdout
    ran: dict[str, set[str]] = {}
    for m in re.finditer(r"^\[(gw\d)\] .*?PASSED (\S+?)::", r.stdout, re.M):
        ran.setdefault(m.group(2), set()).add(m.group(1))
    assert set(ran) == {"tests/test_records.py", "tests/cli/test_stack_ref.py"}, r.stdout[-3000:]
    assert all(len(workers) == 1 for workers in ran.values()), ran
    # the controller's summary: per worker, its tests and seconds, adding up to the run
    summary = r.stdout[r.stdout.index("time per worker") :]
    counts = re.findall(r"^gw\d: (\d+) tests, \d+ s of tests, last at \d+ s$", summary, re.M)
    passed = re.search(r"(\d+) passed", r.stdout)
    assert passed and sum(map(int, counts)) == int(passed.group(1)), summary
    assert not list(tmp_path.glob("gpulab-xdist-groups-*"))  # the controller removed its files
