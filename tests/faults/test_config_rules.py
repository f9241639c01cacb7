"""Config rules of the secrets and bounds work, one line each: admin_cidr of the whole internet
needs allow_world, workload_variables / site take only a role's argument_specs inputs, and an
oversized number names its key and range."""

from __future__ import annotations

from typing import Any

import pytest

from infra.config import ConfigError, validate

NOVA = {
    "topology": "nova-pci", "lab": "rules", "ssh_public_key": "ssh-ed25519 AAAA k",
    "external_network": "public", "admin_cidr": "203.0.113.0/24", "image": "ubuntu-22.04",
    "flavor_vcpus": 8, "flavor_ram_mb": 65536, "flavor_disk_gb": 100, "pci_alias": "p100:1",
}  # fmt: skip


def problem(**overrides: Any) -> str:
    with pytest.raises(ConfigError) as err:
        validate({**NOVA, **overrides})
    assert len(err.value.problems) == 1, err.value.problems
    return err.value.problems[0]


@pytest.mark.parametrize("cidr", ["0.0.0.0/0", "::/0"])
def test_world_admin_cidr_needs_allow_world(cidr: str) -> None:
    assert problem(admin_cidr=cidr).startswith(f"gpulab:admin_cidr {cidr} opens SSH to the whole")
    assert validate({**NOVA, "admin_cidr": cidr, "allow_world": True}).allow_world is True
    assert validate(NOVA).allow_world is False


@pytest.mark.parametrize(
    ("variables", "reason"),
    [
        ({"ansible_become_pass": "x"}, "ansible_* connection variables are not role inputs"),
        ({"workload_run_records_out": "/x"}, "'workload_run_records_out' is not one of its inputs"),
        ({"nvidia_driver_version": "550"}, "'nvidia_driver_version' is not one of its inputs"),
    ],
)
def test_workload_variables_only_role_inputs(variables: dict[str, Any], reason: str) -> None:
    assert reason in problem(workload_variables=variables)


def test_site_only_the_roles_inputs() -> None:
    text = problem(site={"nvidia_driver_internal_thing": "x"})
    assert "'nvidia_driver_internal_thing' is not an input of role nvidia_driver" in text
    cfg = validate({**NOVA, "site": {"nvidia_driver_version": "550"},
                    "workload_variables": {"workload_run_docker_image": "tf:2"}})  # fmt: skip
    assert cfg.site == {"nvidia_driver_version": "550"}


@pytest.mark.parametrize(
    ("key", "value", "text"),
    [
        ("host_count", 10**26, "gpulab:host_count must be an integer from 1 to 64"),
        ("flavor_ram_mb", 10**20, "gpulab:flavor_ram_mb must be an integer from 1 to 25165824"),
        ("pci_alias", "p100:999999999999999999", "gpulab:pci_alias must be <alias>:<count> with "
         "a count from 1 to 16"),
        ("host_count", "9" * 5000, "gpulab:host_count must be an integer >= 1"),
    ],
)  # fmt: skip
def test_oversized_numbers_name_key_and_range(key: str, value: Any, text: str) -> None:
    assert problem(**{key: value}).startswith(text)
