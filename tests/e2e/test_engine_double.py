"""The engine double itself (tests/e2e/engine.py), on the real nova-pci program, with a
recording provider in place of the provider host and a small OpenStack double that refuses what
Nova refuses: fast, no hosts. What it must do, as the Pulumi engine does: a preview that
changes nothing, "same" for what did not change, replacement with the old server deleted
first where the program asks for it (Nova refuses a port another server holds), the
create-before-delete order otherwise, Check again before a replacement, a failing Check that
stops ``up`` before anything is made, independent resources made at the same time, secret
inputs handed over as secrets, ``down`` dependents first."""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

import pytest

from infra.keys.types import SecretRef
from tests.e2e.engine import Engine
from tests.parts.provider_host import is_secret, reveal
from tests.pulumi import mocks
from tests.pulumi.mocks import stack_raw

SERVER = "openstack:compute/instance:Instance"
IMAGE = "openstack:images/getImage:getImage"


class Provider:
    """Stands in for the provider host: records every call; ``replace`` names resources whose
    Diff asks for a replacement (create-before-delete)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.replace: set[str] = set()
        self.refuse: set[str] = set()  # resources whose Check fails
        self.news: dict[str, dict[str, Any]] = {}  # the last inputs Check got, by resource
        self.ids = itertools.count()

    def configure(self, config: dict[str, str]) -> None:
        self.calls.append(("configure", "-"))

    def check(self, name: str, olds: dict[str, Any], news: dict[str, Any]) -> tuple[Any, list]:  # type: ignore[type-arg]
        self.calls.append(("check-olds" if olds else "check", name))
        self.news[name] = news
        if name in self.refuse:
            return dict(news), [{"property": "hosts", "reason": "hosts must be a list"}]
        return dict(news), []

    def diff(self, name: str, rid: str, olds: dict[str, Any], news: dict[str, Any]) -> Any:
        self.calls.append(("diff", name))
        changed = [k for k in news if not k.startswith("__") and olds.get(k) != news.get(k)]
        replaces = changed if name in self.replace and changed else []
        return {"changes": bool(changed), "replaces": replaces, "delete_before_replace": False}

    def create(self, name: str, inputs: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        self.calls.append(("create", name))
        return f"{name}-{next(self.ids)}", {**inputs, "status": "successful", "summary": {},
                                            "facts": {}, "machines": {}}  # fmt: skip

    def update(self, name: str, rid: str, olds: dict[str, Any], news: dict[str, Any]) -> Any:
        self.calls.append(("update", name))
        return {**news, "status": "successful", "summary": {}, "facts": {}, "machines": {}}

    def delete(self, name: str, rid: str, outs: dict[str, Any]) -> None:
        self.calls.append(("delete", name))


class Nova:
    """Servers hold their port; a second server on a held port is refused (PortInUse)."""

    def __init__(self) -> None:
        self.image = "img-1"
        self.held: dict[str, str] = {}  # port id -> server id
        self.log: list[tuple[str, str]] = []
        self.boot_s = 0.0  # how long a server create takes

    def call(self, token: str, args: dict[str, Any]) -> dict[str, Any] | None:
        return {**args, "id": self.image} if token == IMAGE else None

    def create(self, typ: str, name: str, inputs: dict[str, Any], outs: dict[str, Any],
               rid: str = "") -> None:  # fmt: skip
        if typ != SERVER:
            return
        port = inputs["networks"][0]["port"]
        if port in self.held:
            raise RuntimeError(f"Nova: Port {port} is still in use (HTTP 409 PortInUse)")
        self.held[port] = rid
        self.log.append(("create", rid))
        time.sleep(self.boot_s)

    def delete(self, res: Any) -> None:
        if res.typ == SERVER:
            self.held = {p: s for p, s in self.held.items() if s != res.id}
            self.log.append(("delete", res.id))


def lab() -> tuple[Engine, Provider, Nova, dict[str, Any]]:
    provider, nova = Provider(), Nova()
    engine = Engine(provider, ["192.0.2.10", "192.0.2.11"], log=lambda _: None, cloud=nova)
    return engine, provider, nova, stack_raw("nova-pci", lab="dbl", host_count=2)


@pytest.mark.integration
def test_preview_first_then_same_for_what_did_not_change() -> None:
    engine, provider, _nova, raw = lab()
    first = engine.up("nova-pci", raw)
    assert first.error is None, first.error
    assert {s.op for s in first.plan} == {"create"} and first.ops()["dbl-site"] == "create"
    # the preview only checked: the first create comes after every preview check
    site_calls = [c for c in provider.calls if c[1] == "dbl-site"]
    assert site_calls[:2] == [("check", "dbl-site"), ("check", "dbl-site")]
    assert site_calls[2] == ("create", "dbl-site")
    ids = {r.name: r.id for r in engine.state.values()}
    provider.calls.clear()
    again = engine.up("nova-pci", raw)
    assert {s.op for s in again.plan} == {s.op for s in again.steps} == {"same"}
    assert not [c for c in provider.calls if c[0] in ("create", "update", "delete")]
    assert {r.name: r.id for r in engine.state.values()} == ids


@pytest.mark.integration
def test_a_newer_image_replaces_each_server_old_one_first() -> None:
    """imageId is ForceNew: each server is replaced; the program asks for delete-before-
    replace (the port), so the old server goes before the new one is created, and the site
    run, whose hosts carry the servers' ids, is updated."""
    engine, _provider, nova, raw = lab()
    assert engine.up("nova-pci", raw).error is None
    old = {r.name: r.id for r in engine.state.values() if r.typ == SERVER}
    nova.image, nova.log = "img-2", []
    result = engine.up("nova-pci", raw)
    assert result.error is None, result.error
    plan = {s.name: s for s in result.plan if s.op != "same"}
    assert {n: s.op for n, s in plan.items()} == {
        "dbl-gpu-0": "replace", "dbl-gpu-1": "replace",
        "dbl-site": "update", "dbl-workloads-native": "update",
    }  # fmt: skip
    assert "imageId" in plan["dbl-gpu-0"].detail and "delete first" in plan["dbl-gpu-0"].detail
    new = {r.name: r.id for r in engine.state.values() if r.typ == SERVER}
    for name in old:
        assert new[name] != old[name]
        assert nova.log.index(("delete", old[name])) < nova.log.index(("create", new[name]))
    assert engine.changed_inputs["dbl-site"] == ["hosts"]


@pytest.mark.integration
def test_create_before_delete_unless_asked_and_check_again_before_the_replacement() -> None:
    engine, provider, _nova, raw = lab()
    assert engine.up("nova-pci", raw).error is None
    provider.replace = {"dbl-workloads-native"}
    provider.calls.clear()
    result = engine.up("nova-pci", dict(raw, measure_id="m2"))
    assert result.error is None, result.error
    ops = [c for c in provider.calls if c[1] == "dbl-workloads-native"]
    # preview: check + diff; update: check + diff, Check again with no olds, create; the old
    # one is deleted after every other step
    assert ops[-3:] == [("check", "dbl-workloads-native"), ("create", "dbl-workloads-native"),
                        ("delete", "dbl-workloads-native")]  # fmt: skip
    assert result.steps[-1].op == "delete-replaced"


@pytest.mark.integration
def test_down_deletes_dependents_first() -> None:
    engine, _provider, nova, raw = lab()
    assert engine.up("nova-pci", raw).error is None
    deleted = engine.down()
    assert engine.state == {} and nova.held == {}
    assert deleted.index("dbl-workloads-native") < deleted.index("dbl-site")
    assert deleted.index("dbl-site") < deleted.index("dbl-gpu-0") < deleted.index("dbl-gpu-0-port")
    assert deleted.index("dbl-gpu-0") < deleted.index("dbl")  # children before their parent


def test_a_failing_check_stops_up_before_anything_is_made() -> None:
    engine, provider, nova, raw = lab()
    provider.refuse = {"dbl-site"}
    result = engine.up("nova-pci", raw)
    assert result.error is not None and result.error.startswith("preview failed: dbl-site")
    assert "hosts must be a list" in result.error
    assert result.steps == [] and engine.state == {}
    assert nova.log == [] and not [c for c in provider.calls if c[0] == "create"]


@pytest.mark.integration
def test_independent_servers_are_made_at_the_same_time() -> None:
    """The two servers depend on nothing of each other: the engine makes them at once (each
    create takes 1 s here); the site run, which needs both, starts after both."""
    engine, _provider, nova, raw = lab()
    nova.boot_s = 1.0
    result = engine.up("nova-pci", raw)
    assert result.error is None, result.error
    steps = {s.name: s for s in result.steps}
    gpu0, gpu1, site = steps["dbl-gpu-0"], steps["dbl-gpu-1"], steps["dbl-site"]
    assert gpu0.seconds >= 1.0 and gpu1.seconds >= 1.0
    assert max(gpu0.start, gpu1.start) < min(gpu0.end, gpu1.end)  # they overlap
    assert site.start >= max(gpu0.end, gpu1.end)


def test_secret_inputs_reach_the_provider_as_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    password = {"workload_run_registry_password": "registry-pw-0123"}
    monkeypatch.setitem(mocks.SECRET_VALUES, "workload_secrets", json.dumps(password))
    engine, provider, _nova, raw = lab()
    raw["workload_secrets"] = SecretRef("workload_secrets")
    assert engine.up("nova-pci", raw).error is None
    sent = provider.news["dbl-workloads-native"]
    assert is_secret(sent["secrets"]) and reveal(sent["secrets"]) == password
    assert not is_secret(sent["suite"])
