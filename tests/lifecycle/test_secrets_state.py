"""What the lab keeps of its secrets: the salt and the inputs a run keeps in the state
(infra.dynamic.ansible_run), the site run's secret inputs (infra.dynamic.site_secrets, the
topologies' own), and the facts of no_log tasks, which are never kept.

The digest itself and diff's use of it: test_dynamic_checks.py. The stack config is a plain
namespace with the fields these functions read (no Pulumi engine runs here).
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

import pytest

from infra import dynamic
from infra.dynamic import ansible_run
from infra.dynamic.ansible_run import (
    SECRETS_DIGEST_ROUNDS,
    FactCollector,
    kept_inputs,
    new_salt,
    secrets_digest,
)
from infra.topologies import magnum_k8s, vsphere_gpu
from infra.topologies.vsphere_gpu.args import VGPU_TOKEN_INPUT
from infra.wait import WAIT_PLAY


def test_a_salt_is_128_random_bits_in_hex_new_each_time() -> None:
    salts = {new_salt() for _ in range(50)}
    assert len(salts) == 50
    assert all(re.fullmatch(r"[0-9a-f]{32}", s) for s in salts)


def test_the_digest_is_slow_salted_pbkdf2_of_the_sorted_secrets() -> None:
    """The strength kept in the state: PBKDF2-HMAC-SHA256, the salt's bytes, at least 100 000
    rounds (an independent computation, not the function's own)."""
    assert SECRETS_DIGEST_ROUNDS >= 100_000
    salt = "00112233445566778899aabbccddeeff"
    blob = json.dumps({"a": "1", "b": "2"}, sort_keys=True).encode()
    want = hashlib.pbkdf2_hmac(
        "sha256", b"gpulab-ansible-run\0" + blob, bytes.fromhex(salt), SECRETS_DIGEST_ROUNDS
    ).hex()
    assert secrets_digest({"b": "2", "a": "1"}, salt) == want


def test_a_run_keeps_its_inputs_and_of_its_secrets_only_a_fresh_salted_digest() -> None:
    props = {"hosts": ["h"], "playbook": "site.yml", "secrets": {"token": "SENTINEL"}, "x": 1}
    kept = kept_inputs(props, ("hosts", "playbook", "variables"))
    assert set(kept) == {"hosts", "playbook", "variables", "secrets_digest", "secrets_salt"}
    assert (kept["hosts"], kept["playbook"], kept["variables"]) == (["h"], "site.yml", None)
    assert "SENTINEL" not in json.dumps(kept)
    salt = kept["secrets_salt"]
    assert isinstance(salt, str) and re.fullmatch(r"[0-9a-f]{32}", salt)
    assert kept["secrets_digest"] == secrets_digest({"token": "SENTINEL"}, salt)
    again = kept_inputs(props, ("hosts",))
    assert again["secrets_salt"] != salt and again["secrets_digest"] != kept["secrets_digest"]


@pytest.mark.parametrize("secrets", [None, {}])
def test_a_run_without_secrets_keeps_no_salt_and_no_digest(secrets: Any) -> None:
    kept = kept_inputs({"hosts": ["h"], "secrets": secrets}, ("hosts",))
    assert kept == {"hosts": ["h"], "secrets_digest": None, "secrets_salt": None}


def _cfg(topology: str, site: dict[str, Any], **args: Any) -> Any:
    return SimpleNamespace(
        topology=topology, site=site, args=SimpleNamespace(**args), lab="lab1", proxy=None
    )


def test_the_site_runs_secrets_are_the_stacks_secret_inputs_and_the_topologys() -> None:
    site = {"k8s_gpu_registry_password": "pw-site", "gpu_driver_version": "550"}
    cfg = _cfg("magnum-k8s", site, registry_password="pw-args")
    # the topology's own comes last: the registry password of gpulab:registry_password wins
    assert dynamic.site_secrets(cfg) == {"k8s_gpu_registry_password": "pw-args"}
    plain = _cfg("magnum-k8s", site, registry_password=None)
    assert dynamic.site_secrets(plain) == {"k8s_gpu_registry_password": "pw-site"}
    vs = _cfg("vsphere-gpu", {"bitfusion_client_token_files": ["/t"]}, vgpu_license_token="tok")
    assert dynamic.site_secrets(vs) == {
        "bitfusion_client_token_files": ["/t"],
        VGPU_TOKEN_INPUT: "tok",
    }
    assert dynamic.site_secrets(_cfg("magnum-k8s", {}, registry_password=None)) == {}


def test_the_site_runs_variables_hold_no_secret_input() -> None:
    site = {"k8s_gpu_registry_password": "SENTINEL", "gpu_driver_version": "550"}
    cfg = _cfg("magnum-k8s", site, registry_password=None)
    got = dynamic.site_variables(cfg, ["k8s"])
    assert got == {
        "gpu_driver_version": "550",
        "gpulab_topology": "magnum-k8s",
        "gpulab_lab": "lab1",
        "gpulab_exec_envs": ["k8s"],
    }
    # the program's own variables win over a role input of the same name
    clash = _cfg("magnum-k8s", {"gpulab_lab": "other"}, registry_password=None)
    assert dynamic.site_variables(clash, [])["gpulab_lab"] == "lab1"


def test_each_topologys_secret_inputs() -> None:
    assert magnum_k8s.site_secrets(SimpleNamespace(registry_password="p")) == {  # type: ignore[arg-type]
        "k8s_gpu_registry_password": "p"
    }
    assert magnum_k8s.site_secrets(SimpleNamespace(registry_password=None)) == {}  # type: ignore[arg-type]
    assert magnum_k8s.site_secrets(SimpleNamespace(registry_password="")) == {  # type: ignore[arg-type]
        "k8s_gpu_registry_password": ""
    }
    assert vsphere_gpu.site_secrets(SimpleNamespace(vgpu_license_token="t")) == {  # type: ignore[arg-type]
        VGPU_TOKEN_INPUT: "t"
    }
    assert vsphere_gpu.site_secrets(SimpleNamespace(vgpu_license_token=None)) == {}  # type: ignore[arg-type]
    assert VGPU_TOKEN_INPUT == "nvidia_vgpu_guest_client_token"


def _ok(host: str, facts: Any, **res: Any) -> dict[str, Any]:
    return {
        "event": "runner_on_ok",
        "event_data": {"host": host, "res": {"ansible_facts": facts, **res}},
    }


def test_facts_of_no_log_tasks_are_never_kept() -> None:
    c = FactCollector()
    assert c(_ok("h1", {"nvidia_driver_version": "550.1"})) is True
    assert c(_ok("h1", {"token": "SENTINEL"}, _ansible_no_log=True)) is True
    assert c(_ok("h1", {"cuda": "12.4"})) is True
    assert c(_ok("h2", ["not", "a", "mapping"])) is True
    assert c({"event": "runner_on_failed", "event_data": {"host": "h2", "res": {}}}) is True
    assert c({"event": "runner_on_ok"}) is True  # no event data: nothing kept
    assert c.facts == {"h1": {"nvidia_driver_version": "550.1", "cuda": "12.4"}}
    c(_ok("h3", {"a": 1}, _ansible_no_log=False))
    c({"event": "runner_on_ok", "event_data": {"res": {"ansible_facts": {"b": 2}}}})
    assert c.facts["h3"] == {"a": 1} and c.facts["?"] == {"b": 2}


def test_the_module_keeps_no_secret_in_its_outputs_list() -> None:
    assert "secrets" not in ansible_run.OUTPUTS and "secrets" not in ansible_run.RUN_INPUTS
    assert {"secrets_digest", "secrets_salt"} <= set(ansible_run.OUTPUTS)


def test_the_collector_keeps_each_hosts_first_task_after_the_wait_play() -> None:
    """The same handler that drops no_log facts notes when each host's first task started."""
    c = FactCollector()

    def start(host: str, play: str, created: str) -> dict[str, Any]:
        return {
            "event": "runner_on_start",
            "created": created,
            "event_data": {"host": host, "play": play},
        }

    assert c(start("h1", WAIT_PLAY, "2026-01-01T00:00:00")) is True
    assert c.facts == {}
    assert c(start("h1", "Site", "2026-01-01T00:00:10")) is True
    assert c(start("h1", "Site", "2026-01-01T00:00:20")) is True  # not the first any more
    assert c(_ok("h1", {"cuda": "12.4"})) is True
    at = datetime(2026, 1, 1, 0, 0, 10, tzinfo=UTC).timestamp()
    assert c.facts == {"h1": {"gpulab_first_task_at": at, "cuda": "12.4"}}
    # a task's end is not its start
    c({"event": "runner_on_ok", "created": "2026-01-01T00:00:30", "event_data": {"host": "h2"}})
    assert "h2" not in c.facts
