"""WorkloadRun: a benchmark suite run on the lab's hosts as a Pulumi dynamic resource.

Inputs: ``hosts`` (the ``hosts`` output entries), ``suite`` (a name under workloads/suites/),
``execution_env`` (an entry of workloads/execenv.py: native, docker, apptainer, k8s,
bitfusion; ``singularity`` is apptainer), ``arm`` (the records' label,
default the execution environment), ``topology``, ``lab``, ``variables`` (more extravars for
``playbooks/workloads.yml``, e.g. a container image), ``secrets`` (secret role inputs, e.g.
``workload_run_registry_password``: a Pulumi secret handed to Ansible only in the private 0600
secrets file of :func:`infra.dynamic.ansible_run.play_in_fresh_process`, never in extravars,
outputs or state, which keep only a salted PBKDF2 digest with its salt, as AnsibleRun does),
``machines`` (the site run's machine id per host: a re-provisioned machine is measured again)
and ``triggers``. The suite file's digest is an input too: editing the suite re-runs it on the
next ``up``; nothing else does.

Where the records go is not an input that counts: ``stack`` (the stack's name) is never
compared in ``diff``, and the results root is the one of the machine running the command
(:func:`infra.paths.stack_results_dir`: ``$GPULAB_RESULTS``, else ``results/`` under the
directory the engine starts the provider host in), so another checkout, another operator or a
changed ``GPULAB_RESULTS`` re-runs nothing. A ``results_dir`` kept in the state by an older
release is ignored.

It waits until each host's sshd answers (``gpulab:host_wait_s``), then runs
``playbooks/workloads.yml``, which runs the runner on every host and fetches the result
records to ``<results root>/<stack>/<run-id>/<host>/`` on this machine, and outputs
``summary`` (the shape of :mod:`infra.summary`: median images/sec and elapsed per model and
scenario, run status),
``records`` (the fetched JSON Lines files), ``records_dir``, ``run_id`` and ``status``.

When the play fails on some hosts, the records the other hosts finished stay where they were
fetched, with a ``summary.json`` of status ``partial``, and the run fails with one line naming
the host and the task (:class:`WorkloadRunError`). ``diff`` compares every input; ``read``
returns the stored outputs; ``delete`` keeps the results: a destroyed lab's measurements stay.

The engine's provider host (``python -m pulumi.dynamic``, cwd = the repository root, the
project's ``.venv``) imports this module as it is: no ``sys.path`` change, heavy imports inside
the methods, a stateless provider pickled by reference.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
)

from infra.ansible.runner import PlaybookError, PlaybookResult
from infra.dynamic.ansible_run import PlayRunProvider, host_objects, kept_inputs
from infra.paths import shown
from workloads.execenv import accepted as accepted_exec_envs
from workloads.suites import SUITES_DIR

EXEC_ENVS = accepted_exec_envs()  # workloads/execenv.py: names, then aliases
RUN_INPUTS = (
    "hosts",
    "suite",
    "suite_digest",
    "execution_env",
    "arm",
    "topology",
    "lab",
    "variables",
    "machines",
    "triggers",
)
# Inputs that never change the diff: where the records go on the controller.
LOCATION = ("stack", "results_dir")
# What create/update add to the inputs; never compared in diff.
OUTPUTS = (
    "secrets_digest",
    "secrets_salt",
    "run_id",
    "records_dir",
    "records",
    "summary",
    "play_status",
    "status",
)
PLAYBOOK = "workloads.yml"


class WorkloadRunError(PlaybookError):
    """The play failed on some host: one line naming the host and the task, and where the
    records the other hosts finished were kept."""

    def __init__(self, result: PlaybookResult, kept: list[str], where: str) -> None:
        super().__init__(result)
        line = " ".join(str(self).split())
        if kept:
            line += f"; kept the finished records of {', '.join(kept)} in {where}"
        self.kept = kept
        self.args = (line,)


class NoHostMatched(RuntimeError):
    """The play matched none of the run's hosts: nothing ran (Ansible skips such a play and
    exits 0); one line naming the execution environment, the pattern and the hosts."""

    def __init__(self, env: str, patterns: list[str], hosts: list[str]) -> None:
        super().__init__(
            f"{PLAYBOOK}: execution environment {env}: no host matched "
            f"{' '.join(sorted(set(patterns)))} among the run's hosts "
            f"({', '.join(hosts) or 'none'}): nothing ran"
        )


def results_dir_of(props: dict[str, Any]) -> Path:
    """``infra.paths.stack_results_dir`` of the ``stack`` input (else of ``lab``) on the machine
    running the command: where this run fetches its records."""
    from infra.paths import stack_results_dir

    return stack_results_dir(props.get("stack") or props.get("lab") or "local")


def suite_file(suite: str) -> Path | None:
    p = Path(suite)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return p
    named = SUITES_DIR / f"{suite}.yaml"
    return named if named.is_file() else None


def play_vars(props: dict[str, Any], run_id: str, fetch_dir: Path) -> dict[str, Any]:
    """The extravars of playbooks/workloads.yml (the workload_run role's interface)."""
    extravars = {
        "workload_run_suite": props["suite"],
        "workload_run_exec_env": props.get("execution_env") or "native",
        "workload_run_arm": props.get("arm") or props.get("execution_env") or "native",
        "workload_run_topology": props.get("topology") or "local",
        "workload_run_id": run_id,
        "workload_run_fetch_dir": str(fetch_dir),
    }
    extravars.update(props.get("variables") or {})
    return extravars


class WorkloadRunProvider(PlayRunProvider):
    """create/update run the suite and fetch its records; delete keeps them (the records on
    disk are the measurement, the stored outputs describe them: `gpulab down` keeps results)."""

    RUN_INPUTS = RUN_INPUTS
    OUTPUTS = OUTPUTS
    NOT_COMPARED = LOCATION

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        if not isinstance(news.get("hosts"), list) or not news.get("hosts"):
            failures.append(CheckFailure("hosts", "hosts must be a non-empty list of hosts"))
        if not isinstance(news.get("suite"), str) or not news.get("suite"):
            failures.append(CheckFailure("suite", "suite must name a suite"))
        env = news.get("execution_env") or "native"
        if env not in EXEC_ENVS:
            failures.append(
                CheckFailure(
                    "execution_env", f"execution_env {env!r} is not one of {', '.join(EXEC_ENVS)}"
                )
            )
        return CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = self._run(props)
        return CreateResult(f"workloads-{outs['run_id']}", outs)

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        import json

        from infra.dynamic.ansible_run import play_in_fresh_process
        from infra.summary import summarize_files
        from workloads import files as files_io
        from workloads.records import new_run_id

        run_id = new_run_id()
        fetch_dir = results_dir_of(props) / run_id
        self.wait_for_hosts(host_objects(props["hosts"]))  # before anything is written
        fetch_dir.mkdir(parents=True, exist_ok=True)
        # In a fresh interpreter: ansible-runner must not fork the engine's gRPC provider host.
        result, _facts = play_in_fresh_process(
            PLAYBOOK,
            props["hosts"],
            extravars=play_vars(props, run_id, fetch_dir),
            secrets=props.get("secrets") or None,
        )
        files = sorted(fetch_dir.rglob("*.jsonl"))
        summary = summarize_files(files, suite=Path(props["suite"]).stem)
        summary["records"] = [shown(f) for f in files]
        if result.ok and result.unmatched:
            names = [str(h.get("name")) for h in props["hosts"]]
            env = str(props.get("execution_env") or "native")
            unmatched = NoHostMatched(env, result.unmatched, names)
            summary.update({"status": "failed", "error": str(unmatched)})
            files_io.write_text(fetch_dir / "summary.json", json.dumps(summary, indent=1) + "\n")
            raise unmatched
        if not result.ok:
            kept = sorted({f.relative_to(fetch_dir).parts[0] for f in files})
            error = WorkloadRunError(result, kept, shown(fetch_dir))
            summary["status"] = "partial" if files else "failed"
            summary["failed_hosts"] = sorted({f.host for f in result.failures})
            summary["error"] = str(error)
            (fetch_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
            raise error
        outs = kept_inputs(props, (*RUN_INPUTS, "stack"))
        outs.update(
            {
                "run_id": run_id,
                "records_dir": shown(fetch_dir),
                "records": summary["records"],
                "summary": summary,
                "play_status": result.status,
                "status": summary["status"],
            }
        )
        return outs


class WorkloadRun(pulumi.dynamic.Resource, module="gpulab", name="WorkloadRun"):
    """Run ``suite`` on ``hosts`` in ``execution_env``; outputs the results summary."""

    summary: pulumi.Output[dict[str, Any]]
    records: pulumi.Output[list[str]]
    records_dir: pulumi.Output[str]
    run_id: pulumi.Output[str]
    status: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        hosts: Any,
        suite: str = "smoke",
        execution_env: str = "native",
        arm: str | None = None,
        topology: str = "local",
        lab: str = "local",
        variables: Any = None,
        secrets: Any = None,
        stack: str | None = None,
        machines: Any = None,
        triggers: Any = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        from infra.dynamic.ansible_run import tree_digest

        sf = suite_file(suite)
        props = {
            "hosts": hosts,
            "suite": suite,
            "suite_digest": tree_digest(sf) if sf else None,
            "execution_env": execution_env,
            "arm": arm or execution_env,
            "topology": topology,
            "lab": lab,
            "variables": variables or {},
            "secrets": pulumi.Output.secret(secrets) if secrets is not None else None,
            "stack": stack,
            "machines": machines or {},
            "triggers": triggers or [],
            "secrets_digest": None,
            "secrets_salt": None,
            "run_id": None,
            "records_dir": None,
            "records": None,
            "summary": None,
            "play_status": None,
            "status": None,
        }
        super().__init__(WorkloadRunProvider(), name, props, opts)
