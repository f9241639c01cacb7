"""What can go wrong around one unit, with DOUBLES of the runner (no framework): a runner an
earlier (killed) gpulab left measuring, another runner measuring at the same time, a runner
that ends well with records missing, a unit file that no longer holds what the journal
counts, a disk that fills up as the unit ends (a real tmpfs), and a read-only results
directory (a real read-only mount)."""

from __future__ import annotations

import errno
import io
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from infra import local_run, runners
from infra.cli import main
from infra.procs import ProcessRef
from infra.study.driver import Driver, RunOptions
from infra.study.local import UnitResult
from infra.study.model import Arm, load_study
from tests.parts import REPO, need_root
from tests.study.helpers import UnitsDouble, ids, write_study
from workloads.files import OutputError
from workloads.suites import load_suite


def driver(tmp_path: Path, units: Any, results: Path | None = None, **opts: Any) -> Driver:
    st = load_study(str(tmp_path / "t.yaml"))
    console = Console(file=io.StringIO(), width=300)
    d = Driver(st, results or tmp_path / "results", RunOptions(**opts), console)
    d.local = units
    return d


def said(d: Driver) -> str:
    return " ".join(d.console.file.getvalue().split())


@pytest.fixture
def registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "runners"
    monkeypatch.setenv("GPULAB_RUNTIME_DIR", str(path))
    return path


@pytest.fixture
def sleeper() -> Iterator[subprocess.Popen[bytes]]:
    """A process in its own group standing for a runner (it only sleeps)."""
    proc = subprocess.Popen(["sleep", "120"], process_group=0)
    yield proc
    if proc.poll() is None:
        proc.kill()
    proc.wait()


def test_a_runner_left_measuring_by_a_killed_gpulab_is_stopped_before_measuring_double(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], registry: Path
) -> None:
    """The journal still says a unit runs, and its runner (pid and start time) still runs
    (its gpulab was killed and the kernel's parent-death signal did not reach it): it is
    stopped, with one line, before anything is measured again."""
    write_study(tmp_path, repeats=1)
    d = driver(tmp_path, UnitsDouble())
    d.journal.set_unit(d.journal.order()[0], "running", runner=ProcessRef.of(sleeper.pid).to_json())
    j = d.run()
    assert sleeper.wait(timeout=15) == -signal.SIGTERM
    assert (
        f"study t: arm a, repeat 1: the runner an earlier run left (pid {sleeper.pid}) was still "
        "measuring; stopped it before measuring again"
    ) in said(d)
    assert j.counts()["done"] == 2


def test_a_docker_arms_container_left_by_a_killed_gpulab_is_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The docker CLI died with gpulab; its container (run by dockerd, not a child) did not:
    the resume removes it by the name the journal recorded. The Docker engine is a DOUBLE
    that records the command it is given."""
    from infra.study.local import LocalUnits

    write_study(tmp_path, repeats=1)
    d = driver(tmp_path, UnitsDouble())
    gone = ProcessRef(2**22 + 1, 1, ProcessRef.of(os.getpid()).host).to_json()  # no such pid
    d.journal.set_unit(d.journal.order()[0], "running", runner={**gone, "container": "gpulab-x"})
    units = UnitsDouble()
    d.local = units
    assert d.run().counts()["done"] == 2
    assert units.removed == ["gpulab-x"]

    seen: list[tuple[str, ...]] = []

    class Engine:
        def run(self, *args: str, timeout: float | None = None) -> None:
            seen.append(args)

    local = LocalUnits(Console(file=io.StringIO()))
    monkeypatch.setattr(local, "engine", lambda: (Engine(), ""))
    local.remove_container("gpulab-x")
    assert seen == [("rm", "-f", "gpulab-x")]


def test_a_recorded_pid_that_another_process_took_is_left_alone_double(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], registry: Path
) -> None:
    """Same pid, another start time: not the runner (a reused pid is never signalled)."""
    write_study(tmp_path, repeats=1)
    d = driver(tmp_path, UnitsDouble())
    ref = ProcessRef.of(sleeper.pid).to_json()
    ref["start"] -= 1
    d.journal.set_unit(d.journal.order()[0], "running", runner=ref)
    assert d.run().counts()["done"] == 2
    assert sleeper.poll() is None


class StreamUnits:
    """The runner's double in the real child-process path (``local_run.stream``: own process
    group, parent-death signal, the registry of runners): a small Python child that writes
    one record per measurement of the suite, as the runner does, after ``sleep_s``."""

    CODE = (
        "import json, sys, time; from workloads.records import make_record\n"
        "time.sleep(float(sys.argv[3]))\n"
        "with open(sys.argv[1], 'a') as fh:\n"
        "    for i in range(int(sys.argv[2])):\n"
        "        fh.write(json.dumps(make_record(run_id='r', suite='smoke', experiment='e',"
        " model='mnist_cnn', arm='a', topology='local', images_per_sec=1.0, repeat=i)) + '\\n')\n"
    )

    def __init__(self, sleep_s: float = 0.3, after: Any = None) -> None:
        self.sleep_s, self.after, self.calls = sleep_s, after, 0

    def close(self) -> None:
        pass

    def run(self, arm: Arm, suite: str, out: Path, log: Path, run_id: str,
            on_start: Any = None) -> UnitResult:  # fmt: skip
        n = load_suite(suite).measurements
        cmd = [sys.executable, "-c", self.CODE, str(out), str(n), str(self.sleep_s)]
        env = dict(os.environ, PYTHONPATH=str(REPO))
        rc = local_run.stream(cmd, log, out, arm.label, Console(file=io.StringIO()), env,
                              on_start=on_start)  # fmt: skip
        self.calls += 1
        if self.after is not None:
            self.after(self.calls)
        return UnitResult("done" if rc == 0 else "failed", f"exit {rc}" if rc else "")


def test_a_unit_another_runner_overlapped_is_flagged_in_its_records(
    tmp_path: Path, sleeper: subprocess.Popen[bytes], registry: Path
) -> None:
    """Another runner (entered in the registry, alive) measures during the first unit: its
    records say so in ``setting_flags`` (the report shows them beside the arm) and the
    journal keeps the line; it ends before the second unit, which is not flagged."""
    write_study(tmp_path, repeats=1)
    other = runners.register(ProcessRef.of(sleeper.pid), "study u, arm x", tmp_path / "x")
    assert other is not None

    def stop_other(calls: int) -> None:
        if calls == 1:
            sleeper.kill()
            sleeper.wait()

    d = driver(tmp_path, StreamUnits(after=stop_other))
    j = d.run()
    assert j.counts()["done"] == 2
    first, second = j.order()
    flagged = j.unit(first)["overlapped"]
    assert len(flagged) == 1 and flagged[0].startswith(
        f"another runner measured at the same time: pid {sleeper.pid} (study u, arm x) from "
    )
    recs = [json.loads(ln) for ln in j.records_file(first).read_text().splitlines()]
    assert all(r["setting_flags"][-1] == flagged[0] for r in recs)
    assert f"study t: arm {first.arm}, repeat 1: flagged: {flagged[0]}" in said(d)
    assert j.unit(second)["overlapped"] is None
    recs = [json.loads(ln) for ln in j.records_file(second).read_text().splitlines()]
    assert not any("another runner" in f for r in recs for f in r.get("setting_flags") or [])
    # the units' own runners came and went: entered, with their end
    ends = [json.loads(p.read_text())["ended"] for p in registry.glob("*.json")]
    assert len(ends) == 3 and all(isinstance(e, float) for e in ends)


def test_a_runner_that_ends_well_with_records_missing_is_a_failed_unit_double(
    tmp_path: Path,
) -> None:
    write_study(tmp_path, repeats=1)
    j = driver(tmp_path, UnitsDouble(per_unit=1)).run()
    entry = j.unit(j.order()[0])
    assert entry["status"] == "failed" and entry["records"] == 1
    assert entry["reason"] == (
        "the runner ended well but a.r1.jsonl.part holds 1 of the 4 records its suite plans"
    )


def test_a_done_unit_whose_file_lost_records_is_not_reported_and_runs_again_double(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_study(tmp_path, repeats=1)
    j = driver(tmp_path, UnitsDouble()).run()
    f = j.records_file(j.order()[0])
    f.write_text(f.read_text().splitlines()[0] + "\n")  # 1 of its 4 records left
    rc = main(["study", "report", str(tmp_path / "t.yaml"), "--results-dir",
               str(tmp_path / "results")])  # fmt: skip
    assert rc == 1
    assert capsys.readouterr().err == (
        "gpulab: error: study t: arm a, repeat 1 is done with 4 record(s) but a.r1.jsonl holds "
        "1; `gpulab study run t` runs it again\n"
    )
    units = UnitsDouble()
    d = driver(tmp_path, units)
    j = d.run()
    assert units.calls == ["a"] and j.counts()["done"] == 2
    assert "study t: arm a, repeat 1 is done with 4 record(s) but a.r1.jsonl holds 1; it runs " \
        "again" in said(d)  # fmt: skip
    assert (j.units_dir / "a.r1.mismatch-1.jsonl").is_file()


# -- a full disk, a read-only directory (real mounts) ----------------------------------------


@pytest.fixture
def mount(tmp_path: Path) -> Iterator[Any]:
    """``mount(options)``: a fresh tmpfs under tmp_path (unmounted at the end)."""
    need_root("mounting a tmpfs")
    made: list[Path] = []

    def make(options: str) -> Path:
        where = tmp_path / f"mnt{len(made)}"
        where.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], check=True)
        made.append(where)
        return where

    yield make
    for where in reversed(made):
        subprocess.run(["umount", "-l", str(where)], check=False)


class FillingUnits(UnitsDouble):
    """The runner's records (large ones), then the disk fills up: the unit ends on a full
    disk with ``keep_free`` bytes left (a journal fits in 16 KiB; the unit file does not)."""

    def __init__(self, filler: Path, keep_free: int) -> None:
        super().__init__()
        self.filler, self.keep_free = filler, keep_free

    def run(self, arm: Arm, suite: str, out: Path, log: Path, run_id: str,
            on_start: Any = None) -> UnitResult:  # fmt: skip
        res = super().run(arm, suite, out, log, run_id)
        lines = [json.loads(ln) for ln in out.read_text().splitlines()]
        for rec in lines:
            rec["params"] = {"padding": "x" * 60_000}
        out.write_text("".join(json.dumps(r) + "\n" for r in lines))
        with open(self.filler, "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * 65536)
                    fh.flush()
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
        if self.keep_free:
            os.truncate(self.filler, self.filler.stat().st_size - self.keep_free)
        return res


@pytest.mark.parametrize("keep_free", [16384, 0], ids=["journal-fits", "nothing-fits"])
def test_a_disk_full_as_a_unit_ends_is_one_line_and_the_resume_files_its_records(
    tmp_path: Path, mount: Any, keep_free: int
) -> None:
    """The unit file cannot be written: one line naming it and the reason, the unit failed
    with that reason (when even the journal cannot be written, it stays "running"), the
    runner's complete records kept in ``.part``; once there is room, a resume files them
    without measuring again."""
    results = mount("size=1m")
    write_study(tmp_path, repeats=1, arms=[{"name": "a", "stack": "local", "exec_env": "native"}])
    filler = results / "filler"
    d = driver(tmp_path, FillingUnits(filler, keep_free), results=results)
    with pytest.raises(OutputError) as err:
        d.run()
    part = results / "study-t" / "units" / "a.r1.jsonl.part"
    final = results / "study-t" / "units" / "a.r1.jsonl"
    assert str(err.value) == (
        f"study t, arm a, repeat 1: cannot write {str(final)!r}: No space left on device; its "
        f"4 record(s) stay in {part} and `gpulab study run` again files them"
    )
    assert len(ids([part])) == 4 and not final.exists()
    assert not list(part.parent.glob(".*.tmp"))  # no half-written file left behind
    entry = json.loads((results / "study-t" / "study.json").read_text())["units"]["a#1"]
    assert entry["status"] == ("failed" if keep_free else "running")
    if keep_free:
        assert entry["reason"] == str(err.value).split(": ", 1)[1]
    kept = ids([part])
    filler.unlink()
    units = UnitsDouble()
    j = driver(tmp_path, units, results=results).run()
    assert units.calls == []  # filed, not measured again
    assert j.counts()["done"] == 1 and ids([final]) == kept and not part.exists()


def test_a_read_only_results_directory_is_one_line_and_nothing_is_made(
    tmp_path: Path, mount: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    write_study(tmp_path, repeats=1)
    ro = mount("ro,size=64k")
    for results in (ro, ro / "results"):
        rc = main(["study", "run", str(tmp_path / "t.yaml"), "--results-dir", str(results)])
        assert rc == 2
        lock = results / "study-t.lock"
        target = lock if results == ro else results
        assert capsys.readouterr().err == (
            f"gpulab: error: cannot write {str(target)!r}: Read-only file system\n"
        )
    assert list(ro.iterdir()) == []
