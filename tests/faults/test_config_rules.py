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
    assert validate({**NOVA, "admin_cidr": cidr, "allow_world": True}).args.allow_world is True
    assert validate(NOVA).args.allow_world is False


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
    cfg = validate({**NOVA, "site": {"nvidia_driver_version": "580.95.05-1"},
                    "workload_variables": {"workload_run_docker_image": "tf:2"}})  # fmt: skip
    assert cfg.site == {"nvidia_driver_version": "580.95.05-1"}


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


PW = "workload_run_registry_password"


def test_a_secret_input_in_workload_variables_is_refused_naming_the_key() -> None:
    text = problem(workload_variables={PW: "hunter2-plain"})
    assert text.startswith("gpulab:workload_variables must be")
    assert "hunter2-plain" not in text  # the error never shows the secret's value
    assert f"{PW!r} is a secret: gpulab:workload_secrets" in text
    assert "pulumi config set --secret --path 'gpulab:workload_secrets.<name>'" in text


@pytest.mark.parametrize(
    ("secrets", "reason"),
    [
        ({PW: "hunter2-plain"}, f"{PW!r} is not encrypted"),
        ({"workload_run_docker_image": {"secure": "v1:abc"}}, "'workload_run_docker_image' is not"),
        ({"ansible_become_pass": {"secure": "v1:abc"}}, "'ansible_become_pass' is not one of"),
        (["x"], "a mapping of secret workload_run role inputs"),
    ],
)
def test_workload_secrets_only_encrypted_no_log_inputs(secrets: Any, reason: str) -> None:
    text = problem(workload_secrets=secrets)
    assert text.startswith("gpulab:workload_secrets must be"), text
    assert reason in text
    assert "hunter2-plain" not in text  # a secret key never shows its value


def test_workload_secrets_accepts_an_encrypted_no_log_input() -> None:
    from infra.config import SecretRef

    cfg = validate({**NOVA, "workload_secrets": {PW: {"secure": "v1:abc"}}})
    assert cfg.workload_secrets == {PW: SecretRef(f"workload_secrets.{PW}")}
    assert validate(NOVA).workload_secrets is None


@pytest.mark.parametrize(
    ("key", "overrides", "reason"),
    [
        # Ansible puts `environment:` names into the target's shell command line unquoted
        ("workload_variables",
         {"workload_run_environment": {"A=1; touch /tmp/PWNED; B": "v"}},
         "holds 'A=1; touch /tmp/PWNED; B', which is not an environment variable name"),
        ("workload_variables", {"workload_run_environment": {"GPULAB DATA": "v"}},
         "is not an environment variable name"),
        ("site", {"docker_engine_daemon_config": {"{{ lookup('pipe', 'id') }}": 1}},
         "holds the key \"{{ lookup('pipe', 'id') }}\""),
        ("site", {"docker_engine_daemon_config": {"log-opts": {"-o": "x"}}},
         "holds the key '-o'"),
    ],
)  # fmt: skip
def test_keys_inside_a_value_are_plain_words(key: str, overrides: Any, reason: str) -> None:
    text = problem(**{key: overrides})
    assert text.startswith(f"gpulab:{key} must be") and reason in text, text


def test_mirrors_and_daemon_settings_stay_plain_data() -> None:
    site = {
        "workload_env_pip_index_url": "http://pypi.lab:3141/root/pypi/+simple/",
        "workload_env_pip_extra_args": "--trusted-host pypi.lab",
        "docker_engine_daemon_config": {"registry-mirrors": ["http://mirror.lab:5000"],
                                        "log-opts": {"max-size": "10m"}},
    }  # fmt: skip
    env = {"workload_run_environment": {"GPULAB_DATA_DIR": "/data/imagenet", "_X1": "{{ x }}"}}
    cfg = validate({**NOVA, "site": site, "workload_variables": env})
    assert cfg.site == site and cfg.workload_variables == env
