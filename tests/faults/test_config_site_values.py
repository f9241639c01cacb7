"""What ``gpulab:site`` and ``gpulab:workload_variables`` values become, and how a bad one is
refused: role-prefixed Ansible variables, keys nested inside a value, and secret role inputs,
which stay apart from the plain inputs and whose values no error line or repr ever shows.

Everything goes through :func:`infra.config.validate` (or the stack file reader) as a user's
stack does; the roles' argument specs are the repository's.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pulumi
import pytest

from infra.config import ConfigError, SecretRef, load_stack_file, validate
from infra.config.roles import ROLES_DIR, EngineSecret, split_site

NOVA: dict[str, Any] = {
    "topology": "nova-pci", "lab": "sitevals", "ssh_public_key": "ssh-ed25519 AAAA k",
    "external_network": "public", "admin_cidr": "203.0.113.0/24", "image": "ubuntu-22.04",
    "flavor_vcpus": 8, "flavor_ram_mb": 65536, "flavor_disk_gb": 100, "pci_alias": "p100:1",
}  # fmt: skip

ROLES = ", ".join(sorted(d.name for d in ROLES_DIR.iterdir() if d.is_dir()))
SITE = (
    "gpulab:site must be a mapping of role inputs named <role>_... (a role under "
    f"playbooks/roles/: {ROLES}) or gpulab_..., with plain YAML values"
)
VARIABLES = (
    "gpulab:workload_variables must be a mapping of Ansible variable names to values: "
    "workload_run role inputs (its meta/argument_specs.yml lists them)"
)
# A secret (no_log: true) input of a role the site runs, and one of workload_run.
TOKEN = "k8s_gpu_registry_password"
RUN_PW = "workload_run_registry_password"
ENCRYPTED = {"secure": "v1:AAAAcipher"}
DRIVER = "580.95.05-1"


def site_of(raw: Any) -> dict[str, Any]:
    return validate({**NOVA, "site": raw}).site


def problem(**overrides: Any) -> str:
    with pytest.raises(ConfigError) as err:
        validate({**NOVA, **overrides})
    assert len(err.value.problems) == 1, err.value.problems
    return err.value.problems[0]


def nest(value: Any, levels: int, key: str | None = "k") -> Any:
    """``value`` wrapped in ``levels`` mappings (``key``) or lists (``key`` None)."""
    for _ in range(levels):
        value = [value] if key is None else {key: value}
    return value


def run(coro: Any) -> Any:
    """Run ``coro`` on a loop of its own, leaving the thread's event loop (which the Pulumi
    tests use) as it was."""
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


# --- secret role inputs in gpulab:site ------------------------------------------------------------


def test_an_encrypted_secret_input_stays_a_reference_beside_the_plain_ones() -> None:
    site = site_of({TOKEN: ENCRYPTED, "gpulab_mirror": "http://m", "nvidia_driver_version": DRIVER})
    ref = site[TOKEN]
    assert ref == SecretRef(f"site.{TOKEN}", placeholder=False)
    assert repr(ref) == str(ref) == f"<secret gpulab:site.{TOKEN}>"
    plain, secret = split_site(site)
    assert plain == {"gpulab_mirror": "http://m", "nvidia_driver_version": DRIVER}
    assert secret == {TOKEN: ref}
    assert "cipher" not in repr(site)


@pytest.mark.parametrize(
    ("cipher", "placeholder"),
    [("ReplaceWithYourOwnToken", True), ("CHANGEME", True), ("v1:AAAA", False), (7, False)],
)
def test_an_example_placeholder_secret_is_marked(cipher: Any, placeholder: bool) -> None:
    assert site_of({TOKEN: {"secure": cipher}})[TOKEN].placeholder is placeholder


def test_a_secret_site_input_from_a_stack_file(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.lab.yaml"
    lines = [f"  gpulab:{k}: {json.dumps(v)}" for k, v in NOVA.items()]
    site = f"  gpulab:site:\n    {TOKEN}:\n      secure: v1:Zm9v\n    gpulab_x: 1\n"
    stack.write_text("config:\n" + "\n".join(lines) + "\n" + site)
    cfg = load_stack_file(stack)
    assert cfg.site == {TOKEN: SecretRef(f"site.{TOKEN}"), "gpulab_x": 1}


@pytest.mark.parametrize("plain", ["hunter2-plain", 12345, {"user": "hunter2-plain"}])
def test_a_secret_input_in_plain_text_is_refused_without_its_value(plain: Any) -> None:
    assert problem(site={"gpulab_x": 1, TOKEN: plain}) == (
        f"gpulab:site must be role inputs with secrets as Pulumi secrets; '{TOKEN}' (no_log in "
        f"role k8s_gpu) is in plain text: set it with `pulumi config set --secret --path "
        f"'gpulab:site.{TOKEN}' VALUE`"
    )


@pytest.mark.parametrize("value", [ENCRYPTED, "hunter2-plain"])
def test_a_secret_input_of_workload_run_belongs_in_workload_secrets(value: Any) -> None:
    assert problem(site={RUN_PW: value}) == (
        f"gpulab:site must be role inputs of the site run; '{RUN_PW}' is a secret input of role "
        "workload_run, which the site does not run: gpulab:workload_secrets, set it with "
        "`pulumi config set --secret --path 'gpulab:workload_secrets.<name>' VALUE`"
    )


def test_a_whole_site_mapping_encrypted_at_once_is_refused() -> None:
    assert problem(site=SecretRef("site")) == (
        f"{SITE}, not one encrypted value: set each secret role input on its own, set it with "
        "`pulumi config set --secret --path 'gpulab:site.<name>' VALUE`"
    )


def test_an_encrypted_value_of_an_input_its_role_prints_is_refused() -> None:
    text = problem(site={"nvidia_driver_version": {"secure": "v1:AAAA"}})
    assert text == (
        f"{SITE}; 'nvidia_driver_version' is not a plain value: encrypted, but its role does not "
        "keep it secret (not no_log in its meta/argument_specs.yml: Ansible would print it); set "
        "it in plain text (secrets: `pulumi config set --secret` for bitfusion_client_token_files, "
        "k8s_gpu_registry_password, nvidia_vgpu_guest_client_token, "
        "workload_run_registry_password)"
    )


def test_a_non_mapping_site_is_shown_as_given() -> None:
    assert problem(site=3) == f"{SITE}, got 3"
    assert problem(site=[TOKEN]) == f"{SITE}, got ['{TOKEN}']"


# Each refusal of a site that also holds a secret input: the line never shows the value.
BAD_BESIDE_A_SECRET = [
    ({f"gpulab_{i}": 1 for i in range(64)}, "; at most 64 keys"),
    ({"1x": 1}, "; '1x' is not an Ansible variable name"),
    ({"ansible_user": "x"}, "; 'ansible_user': ansible_* connection variables are not role inputs"),
    ({"nothing_x": 1}, "; 'nothing_x' names no role"),
    (
        {"gpulab_x": {1}},
        "; 'gpulab_x' is not a plain value (secrets: `pulumi config set --secret`)",
    ),
    (
        {"workload_run_bogus": 1},
        "; 'workload_run_bogus' is not an input of role workload_run "
        "(its meta/argument_specs.yml lists them)",
    ),
    ({"gpulab_x": "x" * 16400}, "; at most 16384 characters as JSON"),
]


@pytest.mark.parametrize(("bad", "reason"), BAD_BESIDE_A_SECRET)
def test_a_site_holding_a_secret_never_shows_its_value(bad: dict[str, Any], reason: str) -> None:
    assert problem(site={TOKEN: ENCRYPTED, **bad}) == SITE + reason
    # the same mistake with a plain input in the secret's place shows what it got
    assert problem(site={"gpulab_extra": 1, **bad}).startswith(SITE + reason + ", got {")


# --- the program: the engine hands the decrypted gpulab:site ---------------------------------


def engine_site(value: Any) -> Any:
    """``gpulab:site`` as the running program validates it when the engine marked it secret:
    (the validated mapping, each Output in it resolved to (value, is secret))."""

    async def body() -> Any:
        site = site_of(EngineSecret(json.dumps(value)))
        out = {}
        for k, v in site.items():
            if isinstance(v, pulumi.Output):
                v = (await v.future(), await v.is_secret())
            out[k] = v
        return out

    return run(body())


def test_a_decrypted_site_keeps_its_secret_input_a_secret_output() -> None:
    site = engine_site({TOKEN: "s3cr3t", "gpulab_x": {"a": [1]}})
    assert site == {TOKEN: ("s3cr3t", True), "gpulab_x": {"a": [1]}}
    nested = engine_site({"gpulab_x": 1, TOKEN: {"user": "u", "token": "s3cr3t"}})
    assert nested == {"gpulab_x": 1, TOKEN: ({"user": "u", "token": "s3cr3t"}, True)}


def test_a_decrypted_site_is_still_checked() -> None:
    with pytest.raises(ConfigError) as err:
        engine_site({TOKEN: nest("s3cr3t", 9, key=None)})  # nine lists deep: not plain
    assert err.value.problems == [
        f"gpulab:site must be role inputs with secrets as Pulumi secrets; '{TOKEN}' (no_log in "
        f"role k8s_gpu) is in plain text: set it with `pulumi config set --secret --path "
        f"'gpulab:site.{TOKEN}' VALUE`"
    ]
    with pytest.raises(ConfigError) as err:
        engine_site({RUN_PW: "s3cr3t"})
    assert "is a secret input of role workload_run" in err.value.problems[0]
    assert "s3cr3t" not in str(err.value)


def test_the_program_reads_a_site_the_engine_holds_as_a_secret() -> None:
    """A ``--secret --path 'gpulab:site.<input>'`` value makes the engine mark the whole key
    secret: the program still takes it, its secret input a secret Output, the rest plain."""
    from infra.config import from_pulumi_config

    config = {f"gpulab:{k}": v if isinstance(v, str) else json.dumps(v) for k, v in NOVA.items()}
    config["gpulab:site"] = json.dumps({TOKEN: "s3cr3t", "gpulab_x": 1})

    async def body() -> tuple[Any, ...]:
        # set inside the task: the config is the task's own and is gone when it ends
        pulumi.runtime.set_all_config(config, ["gpulab:site"])
        site = from_pulumi_config().site
        return await site[TOKEN].future(), await site[TOKEN].is_secret(), site["gpulab_x"]

    assert run(body()) == ("s3cr3t", True, 1)


def test_the_decrypted_mapping_never_prints() -> None:
    held = EngineSecret({TOKEN: "s3cr3t"})
    assert repr(held) == str(held) == "<secret>"
    assert held.value == {TOKEN: "s3cr3t"}


# --- keys inside a value ----------------------------------------------------------------------


def test_nested_keys_are_checked_inside_lists_and_mappings() -> None:
    ok = {"gpulab_x": [{"a.b": 1, "log-opts": {"max-size": "10m"}}, "s"]}
    assert site_of(ok) == ok
    assert problem(site={"gpulab_x": [1, {"-o": 1}]}) == (
        f"{SITE}; 'gpulab_x' holds the key '-o': keys are letters, digits and _ . : / @ + - "
        "(not first), got {'gpulab_x': [1, {'-o': 1}]}"
    )


@pytest.mark.parametrize("levels", [4, 5, 7])
def test_a_bad_nested_key_is_found_at_any_depth_a_plain_value_allows(levels: int) -> None:
    for wrapper in ("k", None):  # under mappings, then under lists
        text = problem(site={"gpulab_x": nest({"a b": 1}, levels, key=wrapper)})
        assert "'gpulab_x' holds the key 'a b': keys are letters" in text


def test_a_long_bad_nested_key_is_cut_in_the_line() -> None:
    key = "-" + "k" * 69
    text = problem(site={"gpulab_x": {key: 1}})
    assert f"'gpulab_x' holds the key {key[:60]!r}: keys are letters" in text
    env = "A B" + "C" * 67
    text = problem(workload_variables={"workload_run_environment": {env: "v"}})
    assert f"'workload_run_environment' holds {env[:60]!r}, which is not an environment" in text


def test_environment_mappings_take_environment_variable_names() -> None:
    # "a.b" and "A-B" are fine keys of a mapping, not names a shell can export
    assert site_of({"gpulab_x": {"a.b": 1}}) == {"gpulab_x": {"a.b": 1}}
    for name in ("a.b", "A-B"):
        assert problem(site={"gpulab_environment": {name: "v"}}) == (
            f"{SITE}; 'gpulab_environment' holds {name!r}, which is not an environment variable "
            f"name, got {{'gpulab_environment': {{{name!r}: 'v'}}}}"
        )
    # only the top mapping holds names: below it, values are plain mappings again
    deeper = {"gpulab_environment": {"A": {"a.b": 1}}}
    assert site_of(deeper) == deeper


# --- gpulab:workload_variables --------------------------------------------------------------


BAD_VARIABLES = [
    ({"1x": 1}, "; '1x' is not an Ansible variable name"),
    ({"ansible_user": "x"}, "; 'ansible_user': ansible_* connection variables are not role inputs"),
    ({"workload_run_bogus": 1}, "; 'workload_run_bogus' is not one of its inputs"),
    (
        {"workload_run_arm": {1}},
        "; 'workload_run_arm' is not a plain value (secrets: gpulab:workload_secrets, set it "
        "with `pulumi config set --secret --path 'gpulab:workload_secrets.<name>' VALUE`)",
    ),
    (
        {"workload_run_environment": {"A B": "v"}},
        "; 'workload_run_environment' holds 'A B', which is not an environment variable name",
    ),
]


@pytest.mark.parametrize(("bad", "reason"), BAD_VARIABLES)
def test_variables_holding_a_secret_never_show_it(bad: dict[str, Any], reason: str) -> None:
    # the bad key comes first, so its refusal is the one made
    assert problem(workload_variables={**bad, RUN_PW: "hunter2-plain"}) == VARIABLES + reason
    assert problem(workload_variables=bad).startswith(VARIABLES + reason + ", got {")


def test_a_secret_input_in_workload_variables_points_at_workload_secrets() -> None:
    assert problem(workload_variables={RUN_PW: "hunter2-plain"}) == (
        f"{VARIABLES}; '{RUN_PW}' is a secret: gpulab:workload_secrets, set it with "
        "`pulumi config set --secret --path 'gpulab:workload_secrets.<name>' VALUE`"
    )


# --- the stack file -----------------------------------------------------------------------------


def test_a_stack_file_with_an_unknown_topology_names_it(tmp_path: Path) -> None:
    stack = tmp_path / "Pulumi.lab.yaml"
    stack.write_text("config:\n  gpulab:topology: nova-nope\n  gpulab:lab: x\n")
    with pytest.raises(ConfigError) as err:
        load_stack_file(stack)
    assert any("gpulab:topology" in p and "nova-nope" in p for p in err.value.problems)
