"""``gpulab study run``: every (arm, repeat) unit of the plan, resumable, then the teardown.

Units already ``done`` in the journal are never re-run; any other unit (pending, stopped
part-way, failed, skipped) runs again. A unit that fails is recorded as failed with its reason
and the study goes on (``fail_fast``: it stops there). The teardown (``down`` of every stack
the study built) runs at the end whether units failed or not, unless ``keep``; after a stop
signal the labs stay as they are so that ``run`` again carries on. Progress (unit, arm, repeat,
elapsed, the estimate left) and the ratios each done unit completes (:mod:`infra.study.early`)
go to the console given (stderr in the CLI).

The command holds the study's lock (:mod:`infra.study.lock`) the whole time; the driver
assumes it. A unit is ``done`` only with the records it reports: the runner's count is checked
against its suite, the unit file against that count when it is written, and every ``done``
unit's file again when a run resumes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import runners
from infra.errors import UsageError
from infra.procs import ProcessRef, stop_process
from infra.runner_child import Child
from infra.signals import deferred, signum_of
from infra.study.early import EarlyLines
from infra.study.lab import LabUnits
from infra.study.local import LocalUnits, UnitResult
from infra.study.model import Arm, Study, check_stack_files
from infra.study.plan import Unit, new_seed, plan
from infra.study.state import Journal, now, open_journal, unit_file_problem
from infra.study.unit_files import read_part, set_aside, tag_records
from workloads.errors import InputError
from workloads.files import OutputError, make_dirs


class StudyInterrupted(Exception):
    """A stop signal during a unit: the unit goes back to pending, finished ones stay."""

    def __init__(self, message: str, signum: int = signal.SIGINT) -> None:
        super().__init__(message)
        self.signum = signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum


@dataclass
class RunOptions:
    keep: bool = False
    fail_fast: bool = False
    fresh: bool = False
    on_local: bool = False  # every arm on the local topology (its execution environment)
    suite: str | None = None  # every arm runs this suite instead (e.g. CPU-sized)
    docker: bool = True
    docker_host: str | None = None
    base_image: str | None = None
    python_mode: str = "image"
    auto: Any = None  # pulumi.automation or a double
    repo: Path | None = None  # the Pulumi project (default: this repository)


def localize(study: Study, opts: RunOptions) -> Study:
    """The study as this run makes it: on the local topology, or with another suite."""
    arms = list(study.arms)
    digest = study.digest
    if opts.on_local:
        arms = [
            dataclasses.replace(a, stack="local", topology="local", stack_file=None, config=())
            for a in arms
        ]
        digest += "+local"
    if opts.suite:
        arms = [dataclasses.replace(a, suite=opts.suite) for a in arms]
        digest += f"+suite={opts.suite}"
    return dataclasses.replace(study, arms=tuple(arms), digest=digest)


def _fmt(seconds: float) -> str:
    s = round(seconds)
    return (
        f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"
    )


def check_ansible(study: Study) -> None:
    """A study with an arm on a lab (not ``local``) runs Ansible: a bad
    ``GPULAB_ANSIBLE_STRATEGY`` is one line (UsageError) before any lab is built."""
    if any(not arm.is_local for arm in study.arms):
        from infra.ansible.strategy import check_strategy  # infra.ansible: the runner too

        check_strategy()


class Driver:
    def __init__(self, study: Study, root: Path, opts: RunOptions, console: Any) -> None:
        self.study = localize(study, opts)
        check_ansible(self.study)
        check_stack_files(self.study, opts.repo)
        self.root = root
        self.opts = opts
        self.console = console
        seed = self.study.seed
        if self.study.order == "randomized" and seed is None:
            seed = new_seed()
        self.journal, self.resumed = open_journal(
            root, self.study, plan(self.study, seed), seed, fresh=opts.fresh
        )
        self.local = LocalUnits(
            console, opts.docker, opts.docker_host, opts.base_image, opts.python_mode
        )
        self.labs = LabUnits(self.journal, root, self._echo, auto=opts.auto, repo=opts.repo)
        self._child: Child | None = None
        self._planned: dict[str, int | None] = {}
        self.early = EarlyLines(self.journal)

    def _echo(self, line: str) -> None:
        self.console.print(line.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)

    def _say(self, text: str) -> None:
        self.console.print(f"study {self.study.name}: {text}", markup=False, highlight=False)

    # -- the run ------------------------------------------------------------------------

    def run(self) -> Journal:
        j = self.journal
        run: dict[str, Any] = {"started": now(), "resumed": self.resumed}
        if j.edited:
            run["edited"] = list(j.edited)
        j.data.setdefault("runs", []).append(run)
        j.save()
        if j.edited:
            self._say(
                f"the study file changed ({', '.join(j.edited)}); "
                "continuing with the finished units kept"
            )
        self._recover()
        order = j.order()
        todo = [u for u in order if j.unit(u)["status"] != "done"]
        self.console.rule(
            f"study {self.study.name}: {len(order)} units ({len(self.study.arms)} arms x "
            f"{self.study.repeats} repeats, {self.study.order}"
            + (f", seed {j.data['seed']}" if j.data.get("seed") is not None else "")
            + f"), {len(order) - len(todo)} done"
            + (", resuming" if self.resumed else "")
        )
        t0 = time.monotonic()
        stopped: BaseException | None = None
        try:
            for i, u in enumerate(todo):
                self._progress(u, order, t0, i, len(todo))
                res = self._unit(u)
                if res.status == "failed" and self.opts.fail_fast:
                    self.console.print(
                        f"[red]study {self.study.name}: stopping at the failed unit "
                        f"(--fail-fast)[/red]"
                    )
                    break
        except (KeyboardInterrupt, StudyInterrupted, InputError) as exc:
            stopped = exc
            raise self._stopped(exc) from None
        finally:
            self._close(stopped)
        return j

    def _stopped(self, exc: BaseException) -> BaseException:
        """What the run raises after ``exc`` stopped it (every unit left ``running`` is made
        pending first: the journal never says a unit runs that no one runs)."""
        if isinstance(exc, InputError):
            return exc
        if isinstance(exc, StudyInterrupted):
            return exc
        sig = signum_of(exc)
        for u in self.journal.order():
            if self.journal.unit(u)["status"] == "running":
                self._pending(u, f"stopped part-way ({signal.Signals(sig).name})")
        return StudyInterrupted(
            f"study {self.study.name} interrupted ({signal.Signals(sig).name}): finished "
            "units kept; `gpulab study run` again continues",
            sig,
        )

    def _close(self, stopped: BaseException | None) -> None:
        """The teardown (a run that ended, not one stopped), then the run's end in the journal
        (a signal waits for that write)."""
        j = self.journal
        self.local.close()
        if stopped is None:
            self._teardown()
        with deferred():
            j.data["runs"][-1]["ended"] = now()
            j.data["runs"][-1]["interrupted"] = isinstance(
                stopped, (KeyboardInterrupt, StudyInterrupted)
            )
            if stopped is not None:
                j.data["runs"][-1]["stopped_by"] = str(stopped)[:300]
            try:
                j.save()
            except OutputError:
                if stopped is None:
                    raise
                # else the error that stopped the run is the one line to show

    def _pending(self, u: Unit, why: str) -> None:
        part = self.journal.records_file(u).with_name(self.journal.records_file(u).name + ".part")
        with contextlib.suppress(OutputError):  # else kept as .part: the next run sets it aside
            set_aside(part, "stopped")
        self.journal.set_unit(
            u, "pending", reason=f"{why}; run again re-runs it", runner=None, measured=None
        )

    def _progress(self, u: Unit, order: list[Unit], t0: float, i: int, n: int) -> None:
        j = self.journal
        done = [j.unit(x) for x in order if j.unit(x)["status"] in ("done", "failed")]
        times = [float(e["elapsed_s"]) for e in done if e.get("elapsed_s")]
        left = ""
        if times:
            left = f", about {_fmt(sum(times) / len(times) * (n - i))} left"
        pos = order.index(u) + 1
        self.console.print(
            f"[bold]study {self.study.name} [{pos}/{len(order)}][/bold] arm {u.arm}, repeat "
            f"{u.repeat}/{self.study.repeats} (elapsed {_fmt(time.monotonic() - t0)}{left})",
            highlight=False,
        )

    # -- what an earlier run left ---------------------------------------------------------

    def _recover(self) -> None:
        """Before measuring: a runner an earlier run left alive is stopped (or the run refused,
        one line), a unit it left ``running`` becomes pending, and a ``done`` unit whose file
        does not hold the records the journal counts runs again."""
        j = self.journal
        for u in j.order():
            entry = j.unit(u)
            ref = ProcessRef.from_json(entry.get("runner"))
            if entry["status"] == "running" and ref is not None:
                self._stop_left(u, ref, entry.get("runner") or {})
            if entry["status"] == "running":
                self._say(
                    f"arm {u.arm}, repeat {u.repeat} was left running by a run that ended "
                    "without recording it; it runs again"
                )
                entry.update(status="pending", runner=None, reason="left running by a run that "
                             "ended without recording it; run again re-runs it")  # fmt: skip
                j.save()
            elif entry["status"] == "done":
                why = unit_file_problem(j, u)
                if why:
                    self._say(f"{why}; it runs again")
                    set_aside(j.records_file(u), "mismatch")
                    j.set_unit(u, "pending", reason=f"{why}; run again re-runs it")

    def _stop_left(self, u: Unit, ref: ProcessRef, info: dict[str, Any]) -> None:
        where = f"arm {u.arm}, repeat {u.repeat}"
        container = info.get("container")
        if isinstance(container, str) and container:
            self.local.remove_container(container)
        if not ref.here():
            self._say(
                f"{where}: its runner (pid {ref.pid}) ran on host {ref.host}, which this host "
                "cannot check; it dies with the gpulab that started it"
            )
            return
        if not ref.alive():
            return
        if not stop_process(ref):
            raise UsageError(
                f"study {self.study.name}: the runner of {where} from an earlier run is still "
                f"measuring (pid {ref.pid}) and cannot be stopped from here; stop it "
                f"(kill {ref.pid}), then run again"
            )
        self._say(
            f"{where}: the runner an earlier run left (pid {ref.pid}) was still measuring; "
            "stopped it before measuring again"
        )

    def _planned_records(self, arm: Arm) -> int | None:
        """How many records the runner writes for the arm's suite (one per measurement)."""
        if arm.suite not in self._planned:
            from workloads.suites import load_suite

            suite = self.study.suites.get(arm.suite)
            try:
                self._planned[arm.suite] = (suite or load_suite(arm.suite)).measurements
            except InputError:
                self._planned[arm.suite] = None
        return self._planned[arm.suite]

    def _complete_part(self, u: Unit, arm: Arm, part: Path) -> int | None:
        """The records of a ``.part`` file that an earlier run measured whole but could not
        file (a full disk, a kill right after the runner ended); None when it is partial."""
        recs = read_part(part)
        if not recs or any(r.get("status") in ("interrupted", "failed") for r in recs):
            return None
        measured = self.journal.unit(u).get("measured")
        if measured is not None:
            return len(recs) if measured == len(recs) else None
        if arm.is_local and len(recs) == self._planned_records(arm):
            return len(recs)
        return None

    # -- one unit ---------------------------------------------------------------------------

    def _needs_rebuild(self, arm: Arm, u: Unit) -> bool:
        last = self.journal.built().get(arm.stack, {}).get("last")
        if not last:
            return False
        if self.study.rebuild == "between-arms":
            return bool(last[0] != u.arm)
        if self.study.rebuild == "between-repeats":
            return bool(last[1] != u.repeat)
        return False

    def _started(self, u: Unit, child: Child) -> None:
        self._child = child
        runner = child.ref.to_json()
        if child.container:
            runner["container"] = child.container
        self.journal.set_unit(u, "running", runner=runner)

    def _unit(self, u: Unit) -> UnitResult:
        j, arm = self.journal, self.study.arm(u.arm)
        final = j.records_file(u)
        part = final.with_name(final.name + ".part")
        make_dirs(j.units_dir)
        if part.is_file():
            n = self._complete_part(u, arm, part)
            if n is not None:
                self._say(
                    f"arm {u.arm}, repeat {u.repeat}: an earlier run measured it whole "
                    f"({n} record(s) in {part.name}) but could not file them; filed now"
                )
                set_aside(final, "retried")
                return self._finish(u, arm, UnitResult("done"), part, final, None)
            set_aside(part, "stopped")
        set_aside(final, "retried")
        entry = j.unit(u)
        j.set_unit(
            u, "running", started=now(), attempts=int(entry.get("attempts") or 0) + 1,
            runner=None, measured=None, overlapped=None,
        )  # fmt: skip
        self._child = None
        t0 = time.monotonic()
        log = j.units_dir / f"{u.arm}.r{u.repeat}.log"
        try:
            if arm.is_local:
                res = self.local.run(
                    arm, arm.suite, part, log, f"{self.study.name}-r{u.repeat}",
                    on_start=lambda child: self._started(u, child),
                )  # fmt: skip
            else:
                res = self.labs.run(arm, self._needs_rebuild(arm, u), part)
                j.built().setdefault(arm.stack, {})["last"] = [u.arm, u.repeat]
        except KeyboardInterrupt as exc:
            sig = signum_of(exc)
            with deferred():
                self._pending(u, f"stopped part-way ({signal.Signals(sig).name})")
            raise StudyInterrupted(
                f"study {self.study.name} interrupted in arm {u.arm}, repeat {u.repeat} "
                f"({signal.Signals(sig).name}): finished units kept; `gpulab study run` again "
                "continues",
                sig,
            ) from None
        except OutputError:
            raise  # the results directory cannot be written: the study stops (one line)
        except Exception as exc:  # a unit's fault is the unit's, never the study's
            res = UnitResult("failed", f"{type(exc).__name__}: {exc}")
        with deferred():  # a signal now waits until the unit's records and entry are written
            return self._finish(u, arm, res, part, final, t0)

    def _finish(
        self, u: Unit, arm: Arm, res: UnitResult, part: Path, final: Path, t0: float | None
    ) -> UnitResult:
        j = self.journal
        elapsed = time.monotonic() - t0 if t0 is not None else None
        flags: list[str] = []
        if res.status == "skipped":
            part.unlink(missing_ok=True)
            final.unlink(missing_ok=True)
            n = ok = 0
        else:
            got = len(read_part(part))
            planned = self._planned_records(arm) if arm.is_local else None
            if res.status == "done" and t0 is not None and planned is not None and got != planned:
                res = UnitResult(
                    "failed",
                    f"the runner ended well but {part.name} holds {got} of the {planned} "
                    "records its suite plans",
                )
            if res.status == "done":
                j.unit(u)["measured"] = got
            child = self._child if t0 is not None else None
            if child is not None:
                flags = runners.overlapping(child.entry, child.started, time.time())
            try:
                n, ok = tag_records(part, final, self.study.name, u, flags)
            except OutputError as exc:
                reason = (
                    f"{exc}; its {got} record(s) stay in {part} and `gpulab study run` again "
                    "files them"
                )
                with contextlib.suppress(OutputError):  # then a resume finds it "running"
                    j.set_unit(u, "failed", reason=reason, records=None, runner=None)
                raise OutputError(f"study {self.study.name}, arm {u.arm}, repeat {u.repeat}: "
                                  f"{reason}") from None  # fmt: skip
        j.set_unit(
            u,
            res.status,
            reason=res.reason,
            records=n,
            ok=ok,
            elapsed_s=None if elapsed is None or res.status == "skipped" else round(elapsed, 1),
            finished=now(),
            runner=None,
            overlapped=flags or None,
        )
        colour = {"done": "green", "failed": "red", "skipped": "yellow"}[res.status]
        why = f": {res.reason}" if res.reason else ""
        took = f", {elapsed:.1f} s" if elapsed is not None else ""
        self.console.print(
            f"  [{colour}]{res.status}[/{colour}] arm {u.arm}, repeat {u.repeat}: {n} record(s), "
            f"{ok} ok{took}{why}",
            highlight=False,
            soft_wrap=True,
        )
        for flag in flags:
            self._say(f"arm {u.arm}, repeat {u.repeat}: flagged: {flag}")
        if res.status == "done":
            for line in self.early.after(u):  # the ratios this unit completes, shown now
                self._echo(line)
        return res

    def _teardown(self) -> None:
        rows = self.labs.teardown(self.opts.keep)
        self.journal.data["teardown"] = {"at": now(), "stacks": rows}
        self.journal.save()
        for r in rows:
            self.console.print(
                f"teardown {r['stack']}: {r['status']}"
                + (f" ({r['reason']})" if r["reason"] else ""),
                highlight=False,
            )


__all__ = ["Driver", "RunOptions", "StudyInterrupted", "localize", "tag_records"]
