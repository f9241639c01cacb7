"""``gpulab study run``: every (arm, repeat) unit of the plan, resumable, then the teardown.

Units already ``done`` in the journal are never re-run; any other unit (pending, stopped
part-way, failed, skipped) runs again. A unit that fails is recorded as failed with its reason
and the study goes on (``fail_fast``: it stops there). The teardown (``down`` of every stack
the study built) runs at the end whether units failed or not, unless ``keep``; after Ctrl-C the
labs stay as they are so that ``run`` again carries on. Progress (unit, arm, repeat, elapsed,
the estimate left) goes to the console given (stderr in the CLI).
"""

from __future__ import annotations

import dataclasses
import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.study.lab import LabUnits
from infra.study.local import LocalUnits, UnitResult
from infra.study.model import Arm, Study
from infra.study.plan import Unit, new_seed, plan
from infra.study.state import Journal, now, open_journal


class StudyInterrupted(Exception):
    """Ctrl-C (SIGINT) during a unit: the unit goes back to pending, finished ones stay."""


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
            dataclasses.replace(a, stack="local", topology="local", stack_file=None) for a in arms
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


def tag_records(part: Path, final: Path, study: str, unit: Unit) -> tuple[int, int]:
    """Copy a unit's records to its final file with ``params.study`` set; (records, ok)."""
    from workloads.files import write_text

    lines, ok = [], 0
    if part.is_file():
        for line in part.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue  # a torn last line of a killed writer: not a finished record
            if not isinstance(rec, dict):
                continue
            params: dict[str, Any] = rec["params"] if isinstance(rec.get("params"), dict) else {}
            params["study"] = {"name": study, "arm": unit.arm, "repeat": unit.repeat}
            rec["params"] = params
            ok += rec.get("status") == "ok"
            lines.append(json.dumps(rec, sort_keys=True))
    write_text(final, "".join(f"{ln}\n" for ln in lines))
    part.unlink(missing_ok=True)
    return len(lines), ok


def _aside(path: Path, kind: str) -> None:
    if not path.is_file():
        return
    n = 1
    stem = path.name.removesuffix(".part").removesuffix(".jsonl")
    while (path.parent / f"{stem}.{kind}-{n}.jsonl").exists():
        n += 1
    path.rename(path.parent / f"{stem}.{kind}-{n}.jsonl")


class Driver:
    def __init__(self, study: Study, root: Path, opts: RunOptions, console: Any) -> None:
        self.study = localize(study, opts)
        self.root = root
        self.opts = opts
        self.console = console
        seed = self.study.seed
        if self.study.order == "randomized" and seed is None:
            seed = new_seed()
        self.journal, self.resumed = open_journal(
            root, self.study, plan(self.study, seed), seed, fresh=opts.fresh
        )
        if self.resumed:  # a resumed randomized study keeps its recorded order and seed
            seed = self.journal.data.get("seed")
        self.local = LocalUnits(
            console, opts.docker, opts.docker_host, opts.base_image, opts.python_mode
        )
        self.labs = LabUnits(self.journal, root, self._echo, auto=opts.auto, repo=opts.repo)

    def _echo(self, line: str) -> None:
        self.console.print(line.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)

    # -- the run ------------------------------------------------------------------------

    def run(self) -> Journal:
        j = self.journal
        run: dict[str, Any] = {"started": now(), "resumed": self.resumed}
        if j.edited:
            run["edited"] = list(j.edited)
        j.data.setdefault("runs", []).append(run)
        j.save()
        if j.edited:
            self.console.print(
                f"study {self.study.name}: the study file changed ({', '.join(j.edited)}); "
                "continuing with the finished units kept",
                highlight=False,
                markup=False,
            )
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
        interrupted = False
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
        except StudyInterrupted:
            interrupted = True
            raise
        finally:
            if not interrupted:
                self._teardown()
            j.data["runs"][-1]["ended"] = now()
            j.data["runs"][-1]["interrupted"] = interrupted
            j.save()
        return j

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

    def _needs_rebuild(self, arm: Arm, u: Unit) -> bool:
        last = self.journal.built().get(arm.stack, {}).get("last")
        if not last:
            return False
        if self.study.rebuild == "between-arms":
            return bool(last[0] != u.arm)
        if self.study.rebuild == "between-repeats":
            return bool(last[1] != u.repeat)
        return False

    def _unit(self, u: Unit) -> UnitResult:
        j, arm = self.journal, self.study.arm(u.arm)
        final = j.records_file(u)
        part = final.with_name(final.name + ".part")
        j.units_dir.mkdir(parents=True, exist_ok=True)
        _aside(part, "stopped")
        _aside(final, "retried")
        entry = j.unit(u)
        j.set_unit(u, "running", started=now(), attempts=int(entry.get("attempts", 0)) + 1)
        t0 = time.monotonic()
        log = j.units_dir / f"{u.arm}.r{u.repeat}.log"
        try:
            if arm.is_local:
                res = self.local.run(arm, arm.suite, part, log, f"{self.study.name}-r{u.repeat}")
            else:
                res = self.labs.run(arm, self._needs_rebuild(arm, u), part)
                j.built().setdefault(arm.stack, {})["last"] = [u.arm, u.repeat]
        except KeyboardInterrupt:
            _aside(part, "stopped")
            j.set_unit(u, "pending", reason="stopped part-way (interrupted); run again re-runs it")
            raise StudyInterrupted(
                f"study {self.study.name} interrupted in arm {u.arm}, repeat {u.repeat}: "
                f"finished units kept; `gpulab study run` again continues"
            ) from None
        except Exception as exc:  # a unit's fault is the unit's, never the study's
            res = UnitResult("failed", f"{type(exc).__name__}: {exc}")
        n, ok = tag_records(part, final, self.study.name, u) if res.status != "skipped" else (0, 0)
        if res.status == "skipped":
            part.unlink(missing_ok=True)
            final.unlink(missing_ok=True)
        elapsed = time.monotonic() - t0
        j.set_unit(
            u,
            res.status,
            reason=res.reason,
            records=n,
            ok=ok,
            elapsed_s=round(elapsed, 1) if res.status != "skipped" else None,
            finished=now(),
        )
        colour = {"done": "green", "failed": "red", "skipped": "yellow"}[res.status]
        why = f": {res.reason}" if res.reason else ""
        self.console.print(
            f"  [{colour}]{res.status}[/{colour}] arm {u.arm}, repeat {u.repeat}: {n} record(s), "
            f"{ok} ok, {elapsed:.1f} s{why}",
            highlight=False,
            soft_wrap=True,
        )
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
