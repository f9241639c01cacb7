"""Root test configuration: loads every real-part plugin under tests/parts/, and groups the tests
for the two pytest-xdist workers of scripts/test.sh (``-n 2 --dist loadgroup``).

Grouping: a test that uses the nspawn test hosts (a lab per worker: its bridge, apt cache and
booted hosts are built once per worker, and the first converge is the suite's longest setup) or
the chroot target goes to one of two machine groups, so each group's worker builds its lab once
and runs the group's tests in collection order: ``machine-parts-e2e`` (tests/e2e/: the
topologies' and studies' ``up``, about 9 minutes) and ``machine-parts`` (the others: converges,
logins, proxy, chroot, distributed runs, about 7 minutes). The two start first, one on each
worker (one group alone was 16 minutes, longer than the rest of the suite on the other
worker). Every other test is grouped by its file, so a file's module-scoped fixtures are built
once; an explicit ``xdist_group`` mark names its own group.
Ironic and the vCenter simulator listen on free ports in per-worker temporary directories, and
dockerd has a data root per worker, so each worker may start its own.

How: pytest-xdist's own loadgroup renames each test (``nodeid@group``) in the workers, which
pytest 9.2 no longer lets take effect (pytest-xdist issue 1386: the groups are silently
ignored). So the workers write the group of each test id to a file in a directory the
controller names (``GPULAB_XDIST_GROUPS``), and the controller's scheduler reads it.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest_plugins = sorted(
    f"tests.parts.{p.stem}" for p in (Path(__file__).parent / "parts").glob("fixtures_*.py")
)

# Session fixtures that stand for something the machine can hold once, and the marker of the
# tests that use them (some ask for the fixture at run time, with request.getfixturevalue).
MACHINE_PARTS = frozenset({"nspawn_lab", "nspawn_host", "chroot_target"})
MACHINE_MARKERS = frozenset({"nspawn"})
MACHINE_GROUP = "machine-parts"
E2E_MACHINE_GROUP = "machine-parts-e2e"  # tests/e2e/: a lab of their own on the other worker
MACHINE_GROUPS = frozenset({MACHINE_GROUP, E2E_MACHINE_GROUP})
GROUPS_ENV = "GPULAB_XDIST_GROUPS"


def xdist_group_of(nodeid: str, fixturenames: list[str], markers: set[str]) -> str:
    """The xdist group of a test: one of the two machine groups, or its file."""
    path = nodeid.split("::", 1)[0]
    if MACHINE_PARTS.intersection(fixturenames) or MACHINE_MARKERS & markers:
        return E2E_MACHINE_GROUP if path.startswith("tests/e2e/") else MACHINE_GROUP
    return path


def group_of_item(item: pytest.Item) -> str:
    mark = item.get_closest_marker("xdist_group")
    if mark is not None:
        return str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
    names = list(getattr(item, "fixturenames", ()))
    marks = {m.name for m in item.iter_markers()}
    return xdist_group_of(item.nodeid, names, marks)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    where = os.environ.get(GROUPS_ENV)
    if not where:
        return
    groups = {item.nodeid: group_of_item(item) for item in items}
    # Longest first (so the last work handed out is short): the host tests, then every group
    # holding a slow test, then the rest, each kept in collection order. The scheduler hands out
    # groups in this order (FileGroupScheduling turns xdist's by-size reordering off).
    slow = {groups[i.nodeid] for i in items if i.get_closest_marker("slow") is not None}

    def rank(item: pytest.Item) -> int:
        g = groups[item.nodeid]
        return 0 if g in MACHINE_GROUPS else 1 if g in slow else 2

    items.sort(key=rank)  # stable: each group's own order is kept
    groups = {item.nodeid: groups[item.nodeid] for item in items}
    out = Path(where) / f"groups-{os.environ.get('PYTEST_XDIST_WORKER', 'main')}.json"
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(groups))
    tmp.replace(out)  # the controller never reads half a file


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput") or getattr(config.option, "dist", "no") != "loadgroup":
        return
    if not getattr(config.option, "numprocesses", None):
        return
    where = tempfile.mkdtemp(prefix="gpulab-xdist-groups-")
    os.environ[GROUPS_ENV] = where  # the workers start after this and inherit it
    config.stash[_GROUPS_DIR] = where


def pytest_unconfigure(config: pytest.Config) -> None:
    for key in (_RUNNER_REGISTRY, _TMPDIRS):
        made = config.stash.get(key, None)
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
    where = config.stash.get(_GROUPS_DIR, None)
    if where:
        shutil.rmtree(where, ignore_errors=True)
        os.environ.pop(GROUPS_ENV, None)


_GROUPS_DIR = pytest.StashKey[str]()

RUNTIME_ENV = "GPULAB_RUNTIME_DIR"
_RUNNER_REGISTRY = pytest.StashKey[Path]()
_TEST_NUMBER = itertools.count()


@pytest.fixture(autouse=True)
def own_runner_registry(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test enters the runners it starts (``gpulab run local``, ``gpulab study run``) in a
    registry of its own (``$GPULAB_RUNTIME_DIR``, inherited by the processes it starts): not in
    the machine's ``/tmp/gpulab-<uid>/runners``, where they would be left behind and where the
    runners of the other worker's tests would flag its measurements as overlapped. A test that
    wants another registry sets the variable itself. The folder is made by the first runner;
    the session's folder of them is removed at its end."""
    own = _test_folder(request.config, _RUNNER_REGISTRY, "gpulab-test-runners-")
    monkeypatch.setenv(RUNTIME_ENV, str(own))
    return own


def _test_folder(config: pytest.Config, key: pytest.StashKey[Path], prefix: str) -> Path:
    """A folder (not made) numbered for this test, under the session's folder kept in the
    config's stash at ``key`` (made on first use, named ``prefix...``, removed at its end)."""
    base = config.stash.get(key, None)
    if base is None:
        base = Path(tempfile.mkdtemp(prefix=prefix))
        config.stash[key] = base
    return base / f"test-{next(_TEST_NUMBER)}"


_TMPDIRS = pytest.StashKey[Path]()


@pytest.fixture(autouse=True)
def own_tmpdir_for_tf_processes(request: pytest.FixtureRequest) -> Iterator[None]:
    """A test that runs TensorFlow processes without the runner (a scenario called in this
    process: its background job is stopped by a signal) gives them a ``TMPDIR`` of its own:
    TensorFlow's autograph writes its generated modules there and removes them in an exit
    handler that a killed process never runs. The runner gives each measurement such a
    directory itself (workloads/bench.py); these tests bypass it, and left their files in
    /tmp. Only for ``tf`` tests without the machine parts (their session's labs must not
    inherit one test's directory); the session's folder of them is removed at its end. This
    process's own ``tempfile`` keeps its directory."""
    item = request.node
    names = set(getattr(item, "fixturenames", ()))
    marks = {m.name for m in item.iter_markers()}
    if "tf" not in marks or MACHINE_PARTS & names or MACHINE_MARKERS & marks:
        yield
        return
    own = _test_folder(request.config, _TMPDIRS, "gpulab-test-tmp-")
    own.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TMPDIR", str(own))
        yield


def read_groups() -> dict[str, str]:
    """The group of each test id, as the workers wrote it (empty before they have)."""
    where = Path(os.environ.get(GROUPS_ENV, "/nonexistent"))
    for f in sorted(where.glob("groups-*.json")):
        groups: dict[str, str] = json.loads(f.read_text())
        return groups
    return {}


class WorkerTimes:
    """Per worker, what it ran (the controller sees every report): test count, seconds of
    setup + call + teardown, and when its last report came, from the start of the session; and
    the seconds of each machine group. Printed at the end, to see how the workers balance."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.tests: dict[str, int] = {}
        self.busy: dict[str, float] = {}
        self.last: dict[str, float] = {}
        self.groups: dict[str, float] = {}
        self._group_of: dict[str, str] = {}

    def add(self, worker: str, nodeid: str, when: str, duration: float) -> None:
        if not self._group_of:
            self._group_of = read_groups()  # written by the workers before their first test
        group = self._group_of.get(nodeid, "")
        if when == "call":
            self.tests[worker] = self.tests.get(worker, 0) + 1
        self.busy[worker] = self.busy.get(worker, 0.0) + duration
        self.last[worker] = time.monotonic() - self.t0
        if group in MACHINE_GROUPS:
            self.groups[group] = self.groups.get(group, 0.0) + duration

    def lines(self) -> list[str]:
        out = [
            f"{w}: {self.tests.get(w, 0)} tests, {self.busy[w]:.0f} s of tests,"
            f" last at {self.last[w]:.0f} s"
            for w in sorted(self.busy)
        ]
        out += [f"{g}: {s:.0f} s of tests" for g, s in sorted(self.groups.items())]
        return out


_TIMES = pytest.StashKey[WorkerTimes]()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    if session.config.stash.get(_GROUPS_DIR, None):
        session.config.stash[_TIMES] = WorkerTimes()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    node = getattr(report, "node", None)  # set on the controller's copy of a worker's report
    config = getattr(node, "config", None)
    times = config.stash.get(_TIMES, None) if config is not None else None
    if times is None or node is None:
        return
    times.add(node.gateway.id, report.nodeid, report.when, report.duration)


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    times = config.stash.get(_TIMES, None)
    if times is not None and times.busy:
        terminalreporter.section("time per worker")
        for line in times.lines():
            terminalreporter.write_line(line)


try:
    from xdist.scheduler import LoadScopeScheduling  # type: ignore[import-untyped]
except ImportError:  # pragma: no cover - the test extra installs pytest-xdist
    pass
else:

    class FileGroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        """LoadScope with the scope of each test read from the workers' group files."""

        def __init__(self, config: pytest.Config, log: Any = None) -> None:
            super().__init__(config, log)
            self._groups: dict[str, str] | None = None
            # Hand the groups out in the workers' collection order (longest first, see
            # pytest_collection_modifyitems), not xdist's largest-count-first.
            config.option.loadscopereorder = False

        def _split_scope(self, nodeid: str) -> str:
            if self._groups is None:
                self._groups = read_groups()
            group = self._groups.get(nodeid)
            if group is None and "@" in nodeid:  # a pytest where xdist's renaming still works
                group = self._groups.get(nodeid[: nodeid.rfind("@")], nodeid.rsplit("@", 1)[1])
            return group if group is not None else nodeid.split("::", 1)[0]

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
        if config.getvalue("dist") == "loadgroup" and os.environ.get(GROUPS_ENV):
            return FileGroupScheduling(config, log)
        return None
