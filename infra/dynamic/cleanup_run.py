"""CleanupRun: what ``gpulab down`` does to machines gpulab did not make (a ``static`` lab).

A cloud lab's hosts go away with the lab. A ``static`` lab's machines stay, and by default
``down`` leaves them exactly as they are. With ``gpulab:cleanup_on_down: true`` the lab holds
this resource, whose ``delete`` (``gpulab down`` / ``pulumi destroy``) runs
``playbooks/cleanup.yml`` on its hosts: it removes gpulab's own directories (the runner and its
venv, downloads, records on the hosts); packages such as the driver, CUDA or Docker stay, since
on a machine you own they may predate the lab.

Inputs: ``hosts`` (the ``hosts`` output entries), ``enabled`` (``gpulab:cleanup_on_down``) and
``variables`` (the site run's plain role inputs: a moved ``workload_env_dir`` is where the
runner is). ``create`` and ``update`` run nothing; turning ``enabled`` off is an update, so it
never cleans by itself. ``delete`` with ``enabled`` runs the play in a fresh interpreter (the
provider host is a gRPC server that must not fork) and fails with one line naming the host if
a machine cannot be cleaned (the resource stays in the state: fix it, or set the key false,
``up``, then ``down``).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.dynamic import CheckFailure, CheckResult, CreateResult

from infra.dynamic.ansible_run import PlayRunProvider

PLAYBOOK = "cleanup.yml"
RUN_INPUTS = ("hosts", "enabled", "variables")


class CleanupRunProvider(PlayRunProvider):
    """create/update keep the inputs; delete runs the cleanup play when enabled."""

    RUN_INPUTS = RUN_INPUTS
    OUTPUTS = ()

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        if not isinstance(news.get("hosts"), list) or not news.get("hosts"):
            failures.append(CheckFailure("hosts", "hosts must be a non-empty list of hosts"))
        if not isinstance(news.get("enabled"), bool):
            failures.append(CheckFailure("enabled", "enabled must be true or false"))
        return CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> CreateResult:
        import uuid

        return CreateResult(f"cleanup-{uuid.uuid4().hex[:12]}", self._run(props))

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        return {k: props.get(k) for k in RUN_INPUTS}

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if not props.get("enabled"):
            return None
        from infra.ansible.runner import PlaybookError
        from infra.dynamic.ansible_run import play_in_fresh_process

        result, _facts = play_in_fresh_process(
            PLAYBOOK, props["hosts"], extravars=props.get("variables") or None
        )
        if not result.ok:
            raise PlaybookError(result)
        return None


class CleanupRun(pulumi.dynamic.Resource, module="gpulab", name="CleanupRun"):
    """On delete, remove gpulab's own directories from ``hosts`` when ``enabled``."""

    enabled: pulumi.Output[bool]

    def __init__(
        self,
        name: str,
        hosts: Any,
        enabled: bool,
        variables: Any = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {"hosts": hosts, "enabled": enabled, "variables": variables or {}}
        super().__init__(CleanupRunProvider(), name, props, opts)
