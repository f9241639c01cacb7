"""Root test configuration: loads every real-part plugin under tests/parts/, and groups the tests
for the two pytest-xdist workers of scripts/test.sh (``-n 2 --dist loadgroup``).

Grouping: a test that uses the nspawn test hosts (one lab per machine: its bridge, apt cache and
booted hosts are built once, and the first converge is the suite's longest setup) or the chroot
target goes to the group ``machine-parts``, so one worker builds them once and runs every test
that needs them in collection order. Every other test is grouped by its file, so a file's
module-scoped fixtures are built once. Ironic and the vCenter simulator listen on free ports in
per-worker temporary directories, and dockerd has a data root per worker, so each worker may
start its own.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = sorted(
    f"tests.parts.{p.stem}" for p in (Path(__file__).parent / "parts").glob("fixtures_*.py")
)

# Session fixtures that stand for something the machine can hold once, and the markers of the
# tests that use them (some ask for the fixture at run time, with request.getfixturevalue).
MACHINE_PARTS = frozenset({"nspawn_lab", "nspawn_host", "chroot_target"})
MACHINE_MARKERS = frozenset({"nspawn"})
MACHINE_GROUP = "machine-parts"


def xdist_group_of(nodeid: str, fixturenames: list[str], markers: set[str]) -> str:
    """The xdist group of a test: the machine-parts group, or its file."""
    if MACHINE_PARTS.intersection(fixturenames) or MACHINE_MARKERS & markers:
        return MACHINE_GROUP
    return nodeid.split("::", 1)[0]


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            names = list(getattr(item, "fixturenames", ()))
            marks = {m.name for m in item.iter_markers()}
            item.add_marker(pytest.mark.xdist_group(xdist_group_of(item.nodeid, names, marks)))
