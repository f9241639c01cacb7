"""WorkloadRun: a benchmark suite run on the lab's hosts as a Pulumi dynamic resource.

Inputs: ``hosts`` (the ``hosts`` output entries), ``suite`` (a name under workloads/suites/),
``execution_env`` (native, docker, singularity, k8s, bitfusion), ``arm`` (the records' label,
default the execution environment), ``topology``, ``lab``, ``variables`` (more extravars for
``playbooks/workloads.yml``, e.g. a container image) and ``triggers``. The suite file's digest
is an input too: editing the suite re-runs it on the next ``up``; nothing else does.

It runs ``playbooks/workloads.yml``, which runs the runner on every host and fetches the result
records to ``results/<lab>/<run-id>/`` on this machine, and outputs ``summary`` (the shape of
:mod:`infra.summary`: median images/sec and elapsed per model and scenario, run status),
``records`` (the fetched JSON Lines files), ``records_dir``, ``run_id`` and ``status``.

``delete`` keeps the results: a destroyed lab's measurements stay under ``results/<lab>/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ResourceProvider,
    UpdateResult,
)

REPO = Path(__file__).resolve().parents[2]
EXEC_ENVS = ("native", "docker", "singularity", "k8s", "bitfusion")
RUN_INPUTS = (
    "hosts",
    "suite",
    "suite_digest",
    "execution_env",
    "arm",
    "topology",
    "lab",
    "variables",
    "triggers",
)
PLAYBOOK = "workloads.yml"


def suite_file(suite: str) -> Path | None:
    p = Path(suite)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return p
    named = REPO / "workloads" / "suites" / f"{suite}.yaml"
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


class WorkloadRunProvider(ResourceProvider):
    """create/update run the suite and fetch its records; delete keeps them."""

    serialize_as_secret_always = False

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

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in RUN_INPUTS if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def create(self, props: dict[str, Any]) -> CreateResult:
        outs = self._run(props)
        return CreateResult(f"workloads-{outs['run_id']}", outs)

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._run(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None  # results/<lab>/ stays: `gpulab down` keeps results

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        from infra.ansible import PlaybookError, run_playbook
        from infra.dynamic.ansible_run import host_objects
        from infra.summary import summarize_files
        from workloads.records import new_run_id

        run_id = new_run_id()
        lab = props.get("lab") or "local"
        results_dir = Path(props.get("results_dir") or REPO / "results" / lab)
        fetch_dir = results_dir / run_id
        fetch_dir.mkdir(parents=True, exist_ok=True)
        result = run_playbook(
            PLAYBOOK,
            host_objects(props["hosts"]),
            extravars=play_vars(props, run_id, fetch_dir),
            check=False,
        )
        files = sorted(fetch_dir.rglob("*.jsonl"))
        if not files and not result.ok:
            raise PlaybookError(result)
        summary = summarize_files(files, suite=Path(props["suite"]).stem)
        summary["records"] = [_rel(f) for f in files]
        outs = {k: props.get(k) for k in RUN_INPUTS}
        outs.update(
            {
                "results_dir": props.get("results_dir"),
                "run_id": run_id,
                "records_dir": _rel(fetch_dir),
                "records": summary["records"],
                "summary": summary,
                "play_status": result.status,
                "status": summary["status"] if result.ok else "failed",
            }
        )
        return outs


def _rel(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(REPO))
    except ValueError:
        return str(path)


class WorkloadRun(pulumi.dynamic.Resource, module="gpulab", name="WorkloadRun"):
    """Run ``suite`` on ``hosts`` in ``execution_env``; outputs the results summary."""

    summary: pulumi.Output[dict]
    records: pulumi.Output[list]
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
        results_dir: str | None = None,
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
            "results_dir": results_dir,
            "triggers": triggers or [],
            "run_id": None,
            "records_dir": None,
            "records": None,
            "summary": None,
            "play_status": None,
            "status": None,
        }
        super().__init__(WorkloadRunProvider(), name, props, opts)
