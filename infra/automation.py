"""The lab lifecycle through Pulumi's Automation API on this repository's project.

``up`` (optionally ``--refresh``: read every resource back first), ``down`` (destroy),
``rebuild`` (destroy, then up with the same stack config), ``measure`` (a fresh
``gpulab:measure_id``, then up: only the workload runs re-run), ``status`` and ``outputs`` for one
stack (``Pulumi.<stack>.yaml`` beside ``Pulumi.yaml``), with the engine's output streamed line by
line. The Automation API drives the Pulumi CLI: without it every command stops with one line
saying so and how to install it.

Results follow :mod:`infra.paths` (``$GPULAB_RESULTS``, else ``./results``; then ``<stack>/``),
resolved where the command runs and handed to the engine as ``GPULAB_RESULTS``, so the program's
workload runs write where the commands read. ``down`` keeps results: the records fetched by
workload runs stay under ``results/<stack>/`` (a workload run's delete never touches them) and
the stack outputs are saved there as ``outputs-<time>.json`` before the destroy starts. Secret
outputs are never written or printed.

The ``auto`` argument is the ``pulumi.automation`` module, or a double of it in tests.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from infra.config import load_stack_file
from infra.errors import UsageError
from infra.lab_faults import (
    Diagnostic,
    InterruptGuard,
    RunOnDisk,
    failure_line,
    newest_partial,
    provider_message,
    runs_since,
)
from infra.paths import PROJECT, RESULTS_ENV, results_root

SECRET_MASK = "[secret]"
INSTALL_HINT = "install it with `curl -fsSL https://get.pulumi.com | sh` (https://www.pulumi.com/docs/install/)"

OnOutput = Callable[[str], None]


class PulumiMissingError(UsageError):
    """The Pulumi CLI is not installed."""


class LabError(RuntimeError):
    """An engine operation failed; the message is one line naming the stack and the cause.

    ``partial``: after a failed ``up``/``measure``, the workload run that failed part-way
    (its ``summary.json`` on disk: the finished hosts' records), if any.
    """

    def __init__(self, message: str, partial: RunOnDisk | None = None) -> None:
        super().__init__(message)
        self.partial = partial


class LabInterrupted(LabError):
    """SIGINT/SIGTERM during ``up``/``measure``: the engine cancelled gracefully; the lab stays.
    ``runs``: the workload runs written during the operation (their records stay on disk)."""

    def __init__(self, message: str, runs: list[RunOnDisk], signum: int = 2) -> None:
        super().__init__(message)
        self.runs = runs
        self.signum = signum  # the first signal received (SIGINT 2, SIGTERM 15)


def find_pulumi() -> str | None:
    """The Pulumi CLI: on PATH, or where get.pulumi.com installs it (~/.pulumi/bin)."""
    found = shutil.which("pulumi")
    if found:
        return found
    home = Path(os.environ.get("PULUMI_HOME", Path.home() / ".pulumi")) / "bin" / "pulumi"
    return str(home) if home.is_file() and os.access(home, os.X_OK) else None


def engine_path() -> str:
    """The engine's ``PATH``: the directory of the Python gpulab runs on first. A project that
    names a ``virtualenv`` (the checkout's ``.venv``) runs its program there all the same; the
    project a wheel carries names none (``infra.paths``), so the program and the dynamic
    provider host run on the ``python3`` found first on ``PATH``: this one."""
    here = str(Path(sys.executable).parent)
    return os.pathsep.join(p for p in (here, os.environ.get("PATH", "")) if p)


def _last_line(text: str) -> str:
    """The provider's exception line if the text carries a traceback, else the last line
    with ``error:`` in it, else the last line."""
    found = provider_message(text)
    if found:
        return " ".join(found.split())
    lines = []
    for ln in (text or "").splitlines():
        ln = ln.strip()
        for prefix in ("stderr:", "stdout:"):  # CommandError's str() labels its streams
            ln = ln.removeprefix(prefix).strip()
        if ln:
            lines.append(ln)
    errs = [ln for ln in lines if "error:" in ln.lower()]
    return (errs or lines or ["no output"])[-1]


def plain_outputs(outputs: dict[str, Any]) -> dict[str, Any]:
    """OutputMap -> plain values, secret values replaced by ``[secret]``."""
    out: dict[str, Any] = {}
    for key, val in outputs.items():
        secret = bool(getattr(val, "secret", False))
        value = getattr(val, "value", val)
        out[key] = SECRET_MASK if secret else value
    return out


class Lab:
    """One stack of this repository's Pulumi project."""

    def __init__(
        self,
        stack: str,
        repo: Path = PROJECT,
        auto: Any = None,
        on_output: OnOutput = print,
        env: dict[str, str] | None = None,
        pulumi_path: str | None = None,
        results: str | os.PathLike[str] | None = None,
        make_project: Callable[[], None] | None = None,
    ) -> None:
        self.stack_name = stack
        self.repo = Path(repo)
        # writes Pulumi.yaml (and the program's entry) into ``repo`` when it has none, before
        # the first update of a stack whose file is there (gpulab up from a lab's directory)
        self.make_project = make_project
        self._auto = auto
        self.on_output = on_output
        self.pulumi_path = pulumi_path
        root = results_root(results)
        self.results_dir = root / stack
        # the engine runs the program in the project directory: tell it where results go
        self.env = {"PATH": engine_path(), **dict(env or {}), RESULTS_ENV: str(root)}

    # -- plumbing -------------------------------------------------------------------------

    def _check_files(self) -> None:
        if not (self.repo / "Pulumi.yaml").is_file():
            raise UsageError(
                f"no Pulumi.yaml in {self.repo}: stack {self.stack_name} was never brought up "
                f"from there (`gpulab up {self.stack_name}` makes it a gpulab project)"
            )
        self._check_stack_file()

    def _check_stack_file(self) -> None:
        stack_file = self.repo / f"Pulumi.{self.stack_name}.yaml"
        if not stack_file.is_file():
            known = sorted(p.name[7:-5] for p in self.repo.glob("Pulumi.*.yaml"))
            raise UsageError(
                f"stack {self.stack_name!r} has no stack file {stack_file.name}; "
                f"known stacks: {', '.join(known) or 'none'}"
            )

    def _check(self, create: bool = False) -> Any:
        self._check_stack_file()
        if self._auto is None:
            pulumi = self.pulumi_path or find_pulumi()
            if pulumi is None:
                raise PulumiMissingError(f"the Pulumi CLI is not installed: {INSTALL_HINT}")
            self.pulumi_path = pulumi
            import pulumi.automation as auto  # lazily: only a lab command drives the engine

            self._auto = auto
        if create and self.make_project and not (self.repo / "Pulumi.yaml").is_file():
            self.make_project()
        self._check_files()
        return self._auto

    def validate_config(self) -> None:
        """Validate the stack file and the Ansible settings before the engine starts."""
        self._check_stack_file()
        load_stack_file(self.repo / f"Pulumi.{self.stack_name}.yaml")
        self.check_ansible()

    def check_ansible(self) -> None:
        """``GPULAB_ANSIBLE_STRATEGY`` as the provider host will read it (this environment and
        the engine's ``env``): a bad value is a UsageError here, not a failed playbook run
        after the hosts were made (or, in ``down``, half of them removed)."""
        from infra.ansible.strategy import check_strategy  # infra.ansible: the runner too

        check_strategy({**os.environ, **self.env})

    def _stack(self, create: bool) -> Any:
        auto = self._check(create)
        opts_kw: dict[str, Any] = {"work_dir": str(self.repo), "env_vars": self.env}
        if self.pulumi_path and not shutil.which("pulumi") and hasattr(auto, "PulumiCommand"):
            opts_kw["pulumi_command"] = auto.PulumiCommand(
                root=str(Path(self.pulumi_path).resolve().parent.parent)
            )
        opts = auto.LocalWorkspaceOptions(**opts_kw)
        try:
            if create:
                return auto.create_or_select_stack(
                    stack_name=self.stack_name, work_dir=str(self.repo), opts=opts
                )
            return auto.select_stack(stack_name=self.stack_name, work_dir=str(self.repo), opts=opts)
        except auto.StackNotFoundError:
            raise UsageError(
                f"stack {self.stack_name!r} does not exist yet: run `gpulab up {self.stack_name}`"
            ) from None
        except auto.CommandError as exc:
            raise LabError(f"stack {self.stack_name}: {_last_line(str(exc))}") from None

    def _engine(
        self, what: str, fn: Callable[[], Any], diags: list[Diagnostic] | None = None
    ) -> Any:
        auto = self._auto
        try:
            return fn()
        except auto.ConcurrentUpdateError:
            raise LabError(
                f"stack {self.stack_name}: another update is in progress "
                f"(wait, or `pulumi cancel --stack {self.stack_name}`)"
            ) from None
        except auto.CommandError as exc:
            line = failure_line(diags or [], _last_line(str(exc)))
            raise LabError(f"{what} {self.stack_name} failed: {line}") from None

    # -- lifecycle ------------------------------------------------------------------------

    def up(self, refresh: bool = False) -> dict[str, Any]:
        """Build (or update) the lab; returns the stack outputs (secrets masked).

        ``refresh``: read every resource back (the dynamic resources' ``read()``) first.
        """
        self.validate_config()
        stack = self._stack(create=True)
        return self._up(stack, refresh, "up")

    def _up(self, stack: Any, refresh: bool, when: str) -> dict[str, Any]:
        self.on_output(f"==> {when} {self.stack_name}" + (" (refresh first)" if refresh else ""))
        guard = InterruptGuard(self.on_output)
        diags: list[Diagnostic] = []

        def on_output(line: str) -> None:
            guard.watch(line)
            self.on_output(line)

        def on_event(event: Any) -> None:
            # the provider's exception arrives as an `error` diagnostic of its resource
            d = getattr(event, "diagnostic_event", None)
            if d is not None and getattr(d, "severity", None) == "error":
                diags.append(Diagnostic(str(d.message or ""), getattr(d, "urn", None)))

        kw: dict[str, Any] = {"on_output": on_output, "on_event": on_event, "color": "never"}
        if refresh:
            kw["refresh"] = True
        started = time.time() - 1.0  # file times have a coarser clock on some file systems
        try:
            with guard:
                result = self._engine(when, lambda: stack.up(**kw), diags)
        except LabError as exc:
            if guard.signals:
                stopped = self._interrupted(when, started)
                stopped.signum = guard.signals[0]
                raise stopped from None
            exc.partial = newest_partial(self.results_dir, since=started)
            raise
        outputs = plain_outputs(getattr(result, "outputs", None) or {})
        self._save_outputs(outputs, when)
        return outputs

    def _interrupted(self, when: str, started: float) -> LabInterrupted:
        return LabInterrupted(
            f"{when} {self.stack_name} interrupted: the engine stopped after the steps in "
            f"flight; the lab stays as it is (`gpulab up {self.stack_name}` carries on, "
            f"`gpulab down {self.stack_name}` removes it)",
            runs_since(self.results_dir, since=started),
        )

    def measure(self, refresh: bool = False) -> dict[str, Any]:
        """Measure a built lab again without rebuilding it: set ``gpulab:measure_id`` to a
        fresh UTC time id in the stack config, then up. Only the workload runs carry it (in
        their triggers), so only they re-run; hosts and the site Ansible run stay."""
        self.validate_config()
        stack = self._stack(create=False)
        try:
            built = plain_outputs(stack.outputs())
        except self._auto.CommandError:
            built = {}
        if not built.get("hosts"):
            raise UsageError(
                f"stack {self.stack_name!r} has no lab built: run `gpulab up {self.stack_name}`"
            )
        measure_id = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        value = self._auto.ConfigValue(value=measure_id)
        self._engine("measure", lambda: stack.set_config("gpulab:measure_id", value))
        self.on_output(f"==> gpulab:measure_id = {measure_id}")
        return self._up(stack, refresh, "measure")

    def down(self) -> str | None:
        """Destroy the lab's resources; the stack, its config and results/<stack>/ stay.

        Returns the path the last outputs were saved to (None when there were none).
        """
        self.check_ansible()  # a CleanupRun's delete runs a playbook
        stack = self._stack(create=False)
        saved = None
        try:
            outputs = plain_outputs(stack.outputs())
        except self._auto.CommandError:
            outputs = {}
        if outputs:
            saved = self._save_outputs(outputs, "down")
            self.on_output(f"==> outputs kept in {saved}")
        self.on_output(f"==> destroy {self.stack_name}")
        self._engine("destroy", lambda: stack.destroy(on_output=self.on_output, color="never"))
        return saved

    def rebuild(self) -> dict[str, Any]:
        """Destroy, then up with the same stack config."""
        self.validate_config()
        self.down()
        return self.up()

    def outputs(self) -> dict[str, Any]:
        """The stack outputs (secrets masked); when the last update failed in a workload run,
        also ``results_partial``: that run as found on disk (a failed create records no
        outputs, so the finished hosts' records are only there)."""
        stack = self._stack(create=False)
        out = plain_outputs(self._engine("outputs", stack.outputs))
        partial = self.partial_of_last_update(stack)
        if partial is not None:
            out["results_partial"] = partial.to_json()
        return out

    def partial_of_last_update(self, stack: Any) -> RunOnDisk | None:
        """The run that failed part-way during the last update, if that update failed."""
        try:
            info = stack.info(show_secrets=False)
        except self._auto.CommandError:
            return None
        if info is None or info.result != "failed" or info.kind != "update":
            return None

        def stamp(value: Any) -> float | None:
            return value.timestamp() if isinstance(value, datetime) else None

        since, until = stamp(info.start_time), stamp(info.end_time)
        return newest_partial(
            self.results_dir,
            since=None if since is None else since - 1.0,
            until=None if until is None else until + 1.0,
        )

    def status(self) -> dict[str, Any]:
        """The last update (kind, result, times, resource changes) and the output names."""
        stack = self._stack(create=False)
        info = self._engine("status", lambda: stack.info(show_secrets=False))
        outputs = plain_outputs(self._engine("outputs", stack.outputs))
        last: dict[str, Any] | None = None
        if info is not None:
            last = {
                "kind": info.kind,
                "result": info.result,
                "started": str(info.start_time),
                "ended": str(info.end_time) if info.end_time else None,
                "resource_changes": dict(info.resource_changes or {}),
            }
        results = outputs.get("results")
        return {
            "stack": self.stack_name,
            "last_update": last,
            "outputs": sorted(outputs),
            "hosts": len(outputs.get("hosts") or []),
            "results_status": results.get("status") if isinstance(results, dict) else None,
        }

    def _save_outputs(self, outputs: dict[str, Any], when: str) -> str:
        self.results_dir.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
        path = self.results_dir / f"outputs-{stamp}-{when}.json"
        path.write_text(json.dumps(outputs, indent=2, sort_keys=True, default=str) + "\n")
        return str(path)
