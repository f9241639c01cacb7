"""One study unit on the ``local`` topology: the runner as ``gpulab run local`` starts it.

``native`` runs ``python -m workloads bench`` here; ``docker`` runs it in the container that
``gpulab run local`` builds (the one docker launcher of ``workloads/execenv.py``). Without a
Docker engine a docker unit is ``skipped`` with the reason. Other execution environments need
a lab (a Kubernetes cluster, Apptainer, Bitfusion): on ``local`` they are skipped, named.

The native units of suites with ``process_start: fork`` share one zygote (workloads/zygote.py)
for the whole study, started at the first of them: each unit's runner forks its measuring
processes from it (``$GPULAB_ZYGOTE``) instead of starting its own, so the study imports the
framework once, not once a unit. It ends with the study (:meth:`LocalUnits.close`, or with
gpulab's end: it dies with its parent), and one that died is started again at the next unit.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra import local_run
from infra.runner_child import Child
from infra.signals import Stopped
from infra.study.model import Arm
from workloads.errors import InputError
from workloads.execenv import container_name
from workloads.zygote import Zygote, exported

LOCAL_ENVS = ("native", "docker")


@dataclass
class UnitResult:
    status: str  # done | failed | skipped
    reason: str = ""


class LocalUnits:
    """Runs units of local arms; finds (once) and keeps the Docker engine and image."""

    def __init__(
        self,
        console: Any,
        docker: bool = True,
        docker_host: str | None = None,
        base_image: str | None = None,
        python_mode: str = "image",
    ) -> None:
        self.console = console
        self.docker = docker
        self.docker_host = docker_host
        self.base_image = base_image
        self.python_mode = python_mode
        self._engine: Any = None
        self._why = ""
        self._tag: str | None = None
        self._looked = False
        self._zygote: Zygote | None = None
        self._zygote_failed = False

    def zygote(self, suite: str) -> Zygote | None:
        """The study's zygote when ``suite``'s measuring processes fork (its
        ``process_start``, or ``$GPULAB_PROCESS_START``), started at the first such unit and
        again when it died; None when they exec or it cannot come up (its runner says why)."""
        from workloads.bench import job_env
        from workloads.step import default_backend
        from workloads.suites import load_suite

        try:
            start = os.environ.get("GPULAB_PROCESS_START") or load_suite(suite).process_start
        except (InputError, OSError, ValueError):
            return None  # the unit's runner names what is wrong with it
        if start != "fork" or self._zygote_failed:
            return None
        if self._zygote is not None and self._zygote.proc.poll() is not None:
            self._zygote.close()
            self._zygote = None
        if self._zygote is None:
            backend = default_backend()
            self._zygote = Zygote.start(backend, job_env(backend), sys.executable)
            self._zygote_failed = self._zygote is None
        return self._zygote

    def close(self) -> None:
        """End the study's zygote (if one was started)."""
        if self._zygote is not None:
            self._zygote.close()
            self._zygote = None

    def engine(self) -> tuple[Any, str]:
        if not self._looked:
            self._looked = True
            if not self.docker:
                self._why = "docker arms turned off (--no-docker)"
            else:
                self._engine, self._why = local_run.find_docker(self.docker_host)
        return self._engine, self._why

    def remove_container(self, name: str) -> None:
        """``docker rm -f`` a container an earlier run left (its gpulab was killed)."""
        engine, _why = self.engine()
        if engine is not None:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                engine.run("rm", "-f", name, timeout=60)

    def run(
        self,
        arm: Arm,
        suite: str,
        out: Path,
        log: Path,
        run_id: str,
        on_start: Callable[[Child], None] | None = None,
    ) -> UnitResult:
        sharing = arm.sharing or "exclusive"
        if arm.exec_env not in LOCAL_ENVS:
            return UnitResult(
                "skipped",
                f"execution environment {arm.exec_env} needs a lab; the local topology runs "
                f"{' and '.join(LOCAL_ENVS)}",
            )
        if arm.exec_env == "native":
            with exported(self.zygote(suite)):
                rc = local_run.run_native(
                    suite, out, log, self.console, arm.label, sharing, on_start=on_start
                )
            return self._result(rc, log)
        engine, why = self.engine()
        if engine is None:
            return UnitResult("skipped", why)
        name = container_name(run_id, arm.name)

        def started(child: Child) -> None:
            child.container = name  # a killed gpulab's container is removed by the resume
            if on_start is not None:
                on_start(child)

        try:
            if self._tag is None:
                base = self.base_image or local_run.default_base_image()
                self._tag = local_run.build_image(engine, base, self.python_mode, log)
            rc = local_run.run_docker(
                engine,
                self._tag,
                suite,
                out,
                log,
                self.python_mode,
                self.console,
                name=name,
                label=arm.label,
                sharing=sharing,
                on_start=started,
            )
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            return UnitResult("failed", f"docker arm did not run: {exc}")
        return self._result(rc, log)

    @staticmethod
    def _result(rc: int, log: Path) -> UnitResult:
        if rc == 130:  # the runner was stopped by a signal sent to it alone (it exits 130)
            raise Stopped()
        if rc == 0:
            return UnitResult("done")
        line = local_run._fail_line(log) if log.is_file() else "no output"
        return UnitResult("failed", f"runner exited {rc}: {line}")
