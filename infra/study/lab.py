"""One study unit on a lab stack, through the Automation API path of ``gpulab up``.

Per unit: the arm's suite and the execution environment it measures are set in the stack
config (``gpulab:suite``, ``gpulab:measure_envs``), beside what the site prepares on that stack:
``gpulab:execution_envs``, the environments of every arm of the study on the stack, the same for
all its units, so switching between them never re-runs the site play. Then the lab is built
(``up``: hosts, site run, the workload run) when the study has not built it yet, rebuilt
(``down`` + ``up``) when the study asks, or else measured again (``measure``: only the workload
run re-runs). The records
the workload run fetched to ``results/<stack>/<run-id>/`` are the unit's. At the end,
:meth:`LabUnits.teardown` runs ``down`` on every stack the study built, unless ``--keep``.

``auto``: the ``pulumi.automation`` module, or a double of it in tests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from infra.automation import Lab, LabError, LabInterrupted
from infra.errors import UsageError
from infra.lab_faults import runs_since
from infra.paths import PROJECT
from infra.signals import Stopped
from infra.study.local import UnitResult
from infra.study.model import OWNER_KEY, Arm, stack_owner
from infra.study.state import Journal, now
from workloads.execenv import canonical
from workloads.files import write_text
from workloads.inputs import load_yaml


class LabUnits:
    def __init__(
        self,
        journal: Journal,
        results_root: Path,
        on_output: Callable[[str], None],
        auto: Any = None,
        env: dict[str, str] | None = None,
        repo: Path | None = None,
    ) -> None:
        self.journal = journal
        self.root = results_root
        self.on_output = on_output
        self.auto = auto
        self.env = env or {}
        self.repo = repo  # a fixed project (tests); else each arm's own
        self.projects: dict[str, Path] = {}

    def lab(self, stack: str, project: Path | None = None) -> Lab:
        return Lab(
            stack,
            repo=self.repo or project or PROJECT,
            auto=self.auto,
            on_output=self.on_output,
            env=self.env,
            results=self.root,
        )

    def _copy_stack_file(self, arm: Arm) -> None:
        """The arm's stack file as ``Pulumi.<stack>.yaml`` in the project, marked as this
        study's arm (OWNER_KEY), with the arm's ``config`` keys set (infra.study.arm_config);
        one already there is used only when it carries that mark (its config keys set again)."""
        assert arm.stack_file is not None
        target = (self.repo or PROJECT) / f"Pulumi.{arm.stack}.yaml"
        mine = f"{self.journal.data['study']}/{arm.name}"
        if target.exists() or target.is_symlink():
            owner = stack_owner(target)
            if owner != mine:
                raise UsageError(
                    f"stack {arm.stack} already exists ({target}) and belongs to "
                    f"{owner or 'no study'}, not to study/arm {mine}"
                )
            if not arm.config:
                return
            doc = load_yaml(target, "stack file")
        else:
            doc = load_yaml(arm.stack_file, "stack file")  # checked when the study was loaded
        config = {**(doc.get("config") or {}), OWNER_KEY: mine}
        for key, value in arm.config:
            config.pop(key, None)  # a gpulab key may be written without its namespace
            config.pop(f"gpulab:{key}", None)
            if value is not None:
                config[f"gpulab:{key}"] = value
        doc["config"] = config
        write_text(target, yaml.safe_dump(doc, sort_keys=False))

    def _configure(self, lab: Lab, arm: Arm) -> None:
        if arm.stack_file is not None:
            self._copy_stack_file(arm)
        stack = lab._stack(create=True)
        cv = lab._auto.ConfigValue
        if arm.suite.endswith((".yaml", ".yml")):
            # gpulab:suite names a shipped suite only; a suite file goes to the workload run
            # as the workload_run role's workload_run_suite (copied to each host from here)
            from infra.config import raw_from_stack_file

            stack_file = (self.repo or arm.project) / f"Pulumi.{arm.stack}.yaml"
            current = raw_from_stack_file(stack_file).get("workload_variables") or {}
            if isinstance(current, str):
                current = json.loads(current)
            variables = {**dict(current), "workload_run_suite": str(Path(arm.suite).resolve())}
            stack.set_config("gpulab:workload_variables", cv(value=json.dumps(variables)))
        else:
            stack.set_config("gpulab:suite", cv(value=arm.suite))
        envs = json.dumps(self.stack_envs(arm))
        stack.set_config("gpulab:execution_envs", cv(value=envs))
        stack.set_config("gpulab:measure_envs", cv(value=json.dumps([canonical(arm.exec_env)])))

    def stack_envs(self, arm: Arm) -> list[str]:
        """What the site prepares on the arm's stack: the execution environment of every arm
        of the study on it (the journal's arms: the study file's, in its order), each once."""
        own = {"stack": arm.stack, "exec_env": arm.exec_env}  # in the journal's arms too
        infos = [*self.journal.data.get("arms", {}).values(), own]
        envs: list[str] = []
        for info in infos:
            env = canonical(info["exec_env"])
            if info["stack"] == arm.stack and env not in envs:
                envs.append(env)
        return envs

    def run(self, arm: Arm, rebuild: bool, out: Path) -> UnitResult:
        self.projects[arm.stack] = arm.project
        lab = self.lab(arm.stack, arm.project)
        built = self.journal.built()
        started = time.time() - 1.0
        try:
            self._configure(lab, arm)
            if arm.stack in built and built[arm.stack].get("up") and rebuild:
                self.on_output(f"==> study: rebuild {arm.stack} before {arm.name}")
                lab.down()
                built[arm.stack]["up"] = False
                self.journal.save()
            if not built.get(arm.stack, {}).get("up"):
                built.setdefault(arm.stack, {}).update(
                    up=True, since=now(), project=str(arm.project)
                )
                built[arm.stack].setdefault("arms", []).append(arm.name)
                self.journal.save()  # before up: a failed up may leave resources to remove
                outputs = lab.up()
            else:
                built[arm.stack].setdefault("arms", []).append(arm.name)
                outputs = lab.measure()
        except LabInterrupted as exc:  # the engine stopped after a signal: so does the study
            raise Stopped(exc.signum) from None
        except LabError as exc:
            n = self._collect(lab, arm, started, out)
            return self._after(lab, arm, UnitResult("failed", f"{exc} ({n} record(s) kept)"))
        n = self._collect(lab, arm, started, out)
        status = (outputs.get("results") or {}).get("status") if isinstance(outputs, dict) else None
        if n == 0:
            res = UnitResult("failed", f"the workload run of {arm.stack} wrote no records")
        elif status not in (None, "ok"):
            res = UnitResult("failed", f"the workload run's status is {status}")
        else:
            res = UnitResult("done")
        return self._after(lab, arm, res)

    def _after(self, lab: Lab, arm: Arm, res: UnitResult) -> UnitResult:
        """``rebuild: every-unit``: the unit's lab is destroyed before the next unit builds
        its own (one lab at a time); a ``down`` that fails leaves it for the teardown, and the
        unit says so."""
        if self.journal.data.get("rebuild") != "every-unit":
            return res
        info = self.journal.built().setdefault(arm.stack, {})
        if not info.get("up"):
            return res
        self.on_output(f"==> study: down {arm.stack} after {arm.name} (rebuild: every-unit)")
        try:
            lab.down()
        except LabInterrupted as exc:
            raise Stopped(exc.signum) from None
        except LabError as exc:
            why = f"{res.reason}; " if res.reason else ""
            return UnitResult("failed", f"{why}down after the unit failed: {exc}")
        info["up"] = False
        self.journal.save()
        return res

    def _collect(self, lab: Lab, arm: Arm, since: float, out: Path) -> int:
        """Copy the records of the workload runs since ``since``, labelled with the arm."""
        n = 0
        seen = self.journal.built().setdefault(arm.stack, {}).setdefault("runs", [])
        with out.open("a", encoding="utf-8") as fh:
            for run in runs_since(lab.results_dir, since=since):
                if run.run_dir.name in seen:  # an earlier unit's run (same second)
                    continue
                seen.append(run.run_dir.name)
                for files in run.records.values():
                    for f in files:
                        for line in Path(f).read_text(encoding="utf-8").splitlines():
                            if not line.strip():
                                continue
                            rec = json.loads(line)
                            rec.setdefault("params", {})["lab_arm"] = rec.get("arm")
                            rec["arm"] = arm.label
                            fh.write(json.dumps(rec, sort_keys=True) + "\n")
                            n += 1
        return n

    def _project(self, stack: str, info: dict[str, Any]) -> Path | None:
        if stack in self.projects:
            return self.projects[stack]
        return Path(info["project"]) if info.get("project") else None

    def teardown(self, keep: bool) -> list[dict[str, Any]]:
        """``down`` on every stack the study built (it stays with ``keep``); one row each."""
        rows = []
        for stack, info in self.journal.built().items():
            if not info.get("up"):
                continue
            if keep:
                rows.append({"stack": stack, "status": "kept", "reason": "--keep"})
                continue
            try:
                self.lab(stack, self._project(stack, info)).down()
                info["up"] = False
                rows.append({"stack": stack, "status": "destroyed", "reason": ""})
            except (LabError, Exception) as exc:  # every stack gets its down, whatever fails
                rows.append({"stack": stack, "status": "left", "reason": str(exc)})
            self.journal.save()
        return rows
