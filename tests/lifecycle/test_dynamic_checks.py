"""The dynamic resources' input checks (what `pulumi preview` refuses before anything runs),
each failure named by its property and reason. The providers are called directly: no engine."""

from __future__ import annotations

from typing import Any

import pytest

from infra.dynamic.ansible_run import AnsibleRunProvider
from infra.dynamic.vgpu import VgpuPolicyProvider, VgpuProfileProvider
from infra.dynamic.workload_run import WorkloadRunProvider

HOST = {"name": "gpu-0", "address": "10.0.0.5"}


def failures(provider: Any, news: dict[str, Any]) -> list[tuple[str, str]]:
    result = provider.check({}, news)
    assert result.inputs == news
    return [(f.property, f.reason) for f in result.failures]


def test_ansible_run_check() -> None:
    p = AnsibleRunProvider()
    good = {"hosts": [HOST], "playbook": "site.yml", "variables": {"a": 1}}
    assert failures(p, good) == []
    assert failures(p, dict(good, variables=None)) == []
    assert failures(p, {"hosts": [], "playbook": "", "variables": ["x"]}) == [
        ("hosts", "hosts must be a non-empty list of hosts"),
        ("playbook", "playbook must name a playbook file"),
        ("variables", "variables must be a mapping"),
    ]
    assert failures(p, dict(good, hosts={"a": HOST}, playbook=3)) == [
        ("hosts", "hosts must be a non-empty list of hosts"),
        ("playbook", "playbook must name a playbook file"),
    ]


def test_workload_run_check() -> None:
    p = WorkloadRunProvider()
    good = {"hosts": [HOST], "suite": "smoke", "execution_env": "docker"}
    assert failures(p, good) == []
    assert failures(p, dict(good, execution_env=None)) == []  # native
    assert failures(p, dict(good, execution_env="singularity")) == []  # an alias
    bad = failures(p, {"hosts": [], "suite": "", "execution_env": "podman"})
    assert bad[:2] == [
        ("hosts", "hosts must be a non-empty list of hosts"),
        ("suite", "suite must name a suite"),
    ]
    assert bad[2][0] == "execution_env"
    assert bad[2][1].startswith("execution_env 'podman' is not one of native, docker")
    assert failures(p, dict(good, hosts="gpu-0", suite=["smoke"])) == [
        ("hosts", "hosts must be a non-empty list of hosts"),
        ("suite", "suite must name a suite"),
    ]


VGPU = {
    "vm_uuid": "u-1",
    "vm_name": "vm",
    "profile": "grid_p100-4q",
    "server": "vc:443",
    "user": "admin",
    "password": "pw",
}


def test_vgpu_profile_check() -> None:
    p = VgpuProfileProvider()
    assert failures(p, VGPU) == []
    assert failures(p, dict(VGPU, profile="p100")) == [
        ("profile", "not a vGPU profile name: 'p100'")
    ]
    assert failures(p, dict(VGPU, profile=None)) == [("profile", "not a vGPU profile name: None")]


@pytest.mark.parametrize("key", ["vm_uuid", "vm_name", "server", "user", "password"])
def test_vgpu_profile_requires(key: str) -> None:
    assert failures(VgpuProfileProvider(), dict(VGPU, **{key: ""})) == [(key, f"{key} is required")]


POLICY = {"cluster": "c", "policy": "equal-share", "server": "vc", "user": "u", "password": "p"}


def test_vgpu_policy_check() -> None:
    p = VgpuPolicyProvider()
    assert failures(p, POLICY) == []
    assert failures(p, dict(POLICY, policy="fair")) == [
        ("policy", "not one of best-effort, equal-share, fixed-share: 'fair'")
    ]
    for key in ("cluster", "server", "user", "password"):
        assert failures(p, dict(POLICY, **{key: None})) == [(key, f"{key} is required")]


def test_vgpu_policy_diff_replaces_on_host_settings_and_updates_credentials() -> None:
    p = VgpuPolicyProvider()
    olds = dict(POLICY, profile="grid_p100-4q", apply=False, insecure=False)
    assert p.diff("id", olds, dict(olds)).changes is False
    d = p.diff("id", olds, dict(olds, apply=True))
    assert d.changes is True and d.replaces == ["apply"]
    d = p.diff("id", olds, dict(olds, password="p2"))
    assert d.changes is True and d.replaces == []


def test_secrets_digest_is_order_free_takes_any_value_and_needs_secrets_and_salt() -> None:
    from datetime import date

    from infra.dynamic.ansible_run import new_salt, secrets_digest

    salt = new_salt()
    assert secrets_digest({"a": 1, "b": 2}, salt) == secrets_digest({"b": 2, "a": 1}, salt)
    assert secrets_digest({"a": 1}, salt) != secrets_digest({"a": 2}, salt)
    assert secrets_digest({"a": 1}, salt) != secrets_digest({"a": 1}, new_salt())
    assert len(secrets_digest({"d": date(2026, 1, 1)}, salt) or "") == 64
    assert secrets_digest({"a": 1}, None) is None
    assert secrets_digest({}, salt) is None and secrets_digest(None, salt) is None


def test_ansible_run_names_a_changed_secret_and_ignores_engine_keys() -> None:
    from infra.dynamic.ansible_run import new_salt, secrets_digest

    p = AnsibleRunProvider()
    salt = new_salt()
    base = {"hosts": [HOST], "playbook": "site.yml", "variables": {}, "triggers": []}
    olds = dict(base, secrets_salt=salt, secrets_digest=secrets_digest({"t": "1"}, salt))
    assert p.changed_inputs(olds, dict(base, secrets={"t": "2"})) == ["secrets"]
    assert p.changed_inputs(olds, dict(base, secrets={"t": "1"})) == []
    # the engine's own keys (the serialized provider) are not inputs
    assert p.changed_inputs(olds, dict(base, secrets={"t": "1"}, __provider="x")) == []
    assert p.diff("id", olds, dict(base, secrets={"t": "1"}, __provider="y")).changes is False


def test_a_replaced_vgpu_is_detached_before_the_new_one_is_attached() -> None:
    p = VgpuProfileProvider()
    d = p.diff("id", VGPU, dict(VGPU, profile="grid_p100-8q"))
    assert d.replaces == ["profile"] and d.delete_before_replace is True
