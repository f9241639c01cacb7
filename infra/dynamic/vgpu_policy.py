"""VgpuPolicy: a vsphere-gpu arm's vGPU scheduling policy in effect on the cluster's GPU hosts,
or the ``up`` refused, as a Pulumi dynamic resource (:mod:`infra.clouds.vgpu_policy`).

Inputs: ``cluster``, ``policy`` (best-effort, equal-share, fixed-share), ``profile`` (the
hosts that support it; None: every GPU host of the cluster), ``apply`` (may gpulab set the
policy and reboot a host in maintenance mode), ``timeout_s`` (the bound on each host's
maintenance mode and reboot), ``check_id`` (``gpulab:measure_id``: every ``gpulab measure``
checks the policy again before the workload runs, which depend on this resource), ``server``,
``user``, ``password`` (a secret, kept secret in state), ``insecure``.

``create`` and ``update`` read each host; where the policy is not in effect they refuse with
one line naming the host (``apply`` false), or set it, reboot the host in maintenance mode,
wait for it (bounded), read the options back and mark the host. Outputs: ``in_effect`` (the
policy, read from the hosts) and ``plan`` (the hosts, what each reports, the hosts changed and
one line per host of what was waited for). ``read`` (refresh) reads the hosts again; when the
policy is no longer in effect it says so (``in_effect`` none) and changes the stored check id,
so the next ``up`` updates the resource (checks again: refuses, or sets the policy) before any
workload run. The lab's VMs are made after this resource, so a
first ``up`` finds none of its own VMs on the hosts it reboots; gpulab moves and powers off no
VM, so a host with powered-on VMs (another lab's, anyone's, or this lab's own when the policy
changes under a built lab) is refused. ``delete``
leaves the hosts as they are: the policy is a host setting shared by every VM on them, and
changing it back is a reboot of its own.

The engine runs the provider in its own host process: it holds no state, imports the vSphere
SDK inside its methods, and dill pickles it by reference.
"""

from __future__ import annotations

import contextlib
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from infra.dynamic.aliases import formerly_default_typed

REPLACE_ON = ("policy", "cluster", "profile", "apply", "server")
UPDATE_ON = ("timeout_s", "check_id", "user", "password", "insecure")
DEFAULT_TIMEOUT_S = 1800
MAX_TIMEOUT_S = 86400


def _say(line: str) -> None:
    with contextlib.suppress(Exception):  # no engine to tell: the line is in the plan too
        pulumi.log.info(line)


def _connect(props: dict[str, Any]) -> Any:
    from infra.clouds import vsphere

    return vsphere.connect_server(
        str(props["server"]),
        str(props["user"]),
        str(props["password"]),
        insecure=bool(props.get("insecure", False)),
    )


def _timeout(props: dict[str, Any]) -> float:
    value = props.get("timeout_s")
    return float(DEFAULT_TIMEOUT_S if value is None else value)


class VgpuPolicyProvider(ResourceProvider):
    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        from infra.clouds.vgpu_policy import RMPVMRL

        failures = []
        if news.get("policy") not in RMPVMRL:
            failures.append(
                CheckFailure("policy", f"not one of {', '.join(RMPVMRL)}: {news.get('policy')!r}")
            )
        for key in ("cluster", "server", "user", "password"):
            if not news.get(key):
                failures.append(CheckFailure(key, f"{key} is required"))
        t = news.get("timeout_s")
        if t is not None and (
            isinstance(t, bool) or not isinstance(t, int | float) or not 1 <= t <= MAX_TIMEOUT_S
        ):
            failures.append(
                CheckFailure("timeout_s", f"seconds between 1 and {MAX_TIMEOUT_S}: {t!r}")
            )
        return CheckResult(news, failures)

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        replaces = [k for k in REPLACE_ON if olds.get(k) != news.get(k)]
        changed = replaces or [k for k in UPDATE_ON if olds.get(k) != news.get(k)]
        return DiffResult(changes=bool(changed), replaces=replaces)

    def _ensure(self, props: dict[str, Any]) -> dict[str, Any]:
        from infra.clouds import vgpu_policy, vsphere

        si = _connect(props)
        try:
            plan = vgpu_policy.plan_policy(
                si, str(props["cluster"]), str(props["policy"]), props.get("profile") or None
            )
            plan = vgpu_policy.ensure_policy(
                si, plan, bool(props.get("apply")), _timeout(props), say=_say
            )
        finally:
            vsphere.disconnect(si)
        return {**props, "plan": plan.as_dict(), "in_effect": plan.in_effect}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(f"{props['cluster']}/{props['policy']}", self._ensure(props))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        from infra.clouds import CloudError, vgpu_policy, vsphere

        plan = dict(props.get("plan") or {})
        try:
            si = _connect(props)
        except CloudError as exc:
            pulumi.log.warn(f"VgpuPolicy {id_}: not refreshed, vCenter unreachable: {exc}")
            return ReadResult(id_, dict(props))
        try:
            states = [vgpu_policy.read_host(si, h).as_dict() for h in plan.get("hosts") or []]
        finally:
            vsphere.disconnect(si)
        running = {s["in_effect"] for s in states}
        in_effect = props.get("policy") if states and running == {props.get("policy")} else None
        outs = {**props, "plan": {**plan, "states": states}, "in_effect": in_effect}
        if in_effect is None:  # the next up updates it (checks again) before any workload runs
            outs["check_id"] = f"{props.get('check_id') or ''}+not-in-effect"
        return ReadResult(id_, outs)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._ensure(news))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        return None


class VgpuPolicy(pulumi.dynamic.Resource, module="gpulab", name="VgpuPolicy"):
    """The vGPU scheduling ``policy`` of ``cluster``'s GPU hosts, in effect (``in_effect``:
    as the hosts report it) or the resource fails; ``plan``: the hosts, what each reports,
    the hosts changed and what was waited for. Type ``pulumi-python:dynamic/gpulab:VgpuPolicy``,
    aliased to the SDK's default type it had before (:mod:`infra.dynamic.aliases`)."""

    plan: pulumi.Output[dict[str, Any]]
    in_effect: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        *,
        cluster: pulumi.Input[str],
        policy: pulumi.Input[str],
        profile: pulumi.Input[str] | None,
        apply: pulumi.Input[bool],
        server: pulumi.Input[str],
        user: pulumi.Input[str],
        password: pulumi.Input[str],
        insecure: pulumi.Input[bool] = False,
        timeout_s: pulumi.Input[int] = DEFAULT_TIMEOUT_S,
        check_id: pulumi.Input[str] = "",
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        opts = pulumi.ResourceOptions.merge(
            formerly_default_typed(opts),
            pulumi.ResourceOptions(additional_secret_outputs=["password"]),
        )
        super().__init__(
            VgpuPolicyProvider(),
            name,
            {
                "cluster": cluster,
                "policy": policy,
                "profile": profile,
                "apply": apply,
                "timeout_s": timeout_s,
                "check_id": check_id,
                "server": server,
                "user": user,
                "password": password,
                "insecure": insecure,
                "plan": None,
                "in_effect": None,
            },
            opts,
        )
