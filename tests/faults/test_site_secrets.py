"""Secret role inputs in ``gpulab:site`` only as Pulumi secrets, and never printed.

The secret inputs are read from the roles (``no_log: true`` in a role's
``meta/argument_specs.yml``: :func:`infra.config.roles.secret_role_inputs`). One in plain text
is refused with one line naming it and the `pulumi config set --secret` that sets it, without its
value; an encrypted one (``secure:``) is accepted, shown by ``validate`` (text and JSON) only as
"(secret, set)", never written by ``inventory``, and reaches the site run only as a secret
(mock runtime: no Pulumi engine here; the engine hands the program the decrypted mapping and
marks the whole key secret, as it does for a ``--secret --path`` value).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from infra.config import ConfigError, SecretRef, from_pulumi_config, validate
from infra.config.roles import ROLES_DIR, secret_role_inputs
from tests.ansible.test_no_log_guard import is_secret_name
from tests.pulumi.mocks import LabMocks, engine_config, stack_raw

GPULAB = str(Path(sys.executable).parent / "gpulab")
TOKEN = "plain-license-token-5f1c0e"
CIPHER = "v1:AAAABBBBccccDDDDeeee0123456789abcdef"
LOCAL = {"topology": "local", "lab": "lab-s"}


def test_the_secret_inputs_are_the_roles_no_log_options() -> None:
    """Read from the roles, and complete: every option named like a secret is no_log."""
    no_log: dict[str, str] = {}
    named: set[str] = set()
    for spec in sorted(ROLES_DIR.glob("*/meta/argument_specs.yml")):
        doc = yaml.safe_load(spec.read_text()) or {}
        for entry in (doc.get("argument_specs") or {}).values():
            for name, opt in ((entry or {}).get("options") or {}).items():
                if (opt or {}).get("no_log") is True:
                    no_log[name] = spec.parents[1].name
                if is_secret_name(name):
                    named.add(name)
    assert secret_role_inputs() == no_log
    assert named <= set(no_log), named - set(no_log)
    assert {"nvidia_vgpu_guest_client_token", "bitfusion_client_token_files"} <= set(no_log)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("nvidia_vgpu_guest_client_token", TOKEN),
        ("bitfusion_client_token_files", {"client.yaml": f"token: {TOKEN}\n"}),
    ],
)
def test_a_secret_input_in_plain_text_is_refused_without_its_value(key: str, value: Any) -> None:
    with pytest.raises(ConfigError) as err:
        validate({**LOCAL, "site": {key: value, "workload_env_pip_index_url": "http://m/s"}})
    text = str(err.value)
    assert "\n" not in text and TOKEN not in text
    assert f"{key!r} (no_log in role " in text
    assert f"pulumi config set --secret --path 'gpulab:site.{key}' VALUE" in text


def test_other_misuses_of_secrets_in_site_are_refused() -> None:
    def problem(site: Any) -> str:
        with pytest.raises(ConfigError) as err:
            validate({**LOCAL, "site": site})
        assert TOKEN not in str(err.value)
        return str(err.value)

    assert "gpulab:workload_secrets" in problem({"workload_run_registry_password": TOKEN})
    enc = problem({"workload_env_pip_index_url": {"secure": CIPHER}})
    assert "'workload_env_pip_index_url' is not a plain value: encrypted, but its role" in enc
    assert "does not keep it secret" in enc
    whole = problem(SecretRef("site"))
    assert "not one encrypted value" in whole and "--secret --path 'gpulab:site.<name>'" in whole


def test_the_vgpu_token_is_given_once() -> None:
    raw = stack_raw(
        "vsphere-gpu", mode="vgpu", vgpu_profile="grid_p100-4q", gpu_host=None,
        pci_device_ids=None, gpus_per_vm=None, gpu_bar_gb=None,
        vgpu_license_token=SecretRef("vgpu_license_token"),
        site={"nvidia_vgpu_guest_client_token": {"secure": CIPHER}},
    )  # fmt: skip
    with pytest.raises(ConfigError) as err:
        validate(raw)
    assert "both set the vGPU license token: keep one" in str(err.value)
    del raw["vgpu_license_token"]
    assert isinstance(validate(raw).site["nvidia_vgpu_guest_client_token"], SecretRef)


def test_an_encrypted_secret_input_is_kept_as_a_placeholder() -> None:
    cfg = validate(
        {**LOCAL, "site": {"nvidia_vgpu_guest_client_token": {"secure": CIPHER},
                           "workload_env_pip_index_url": "http://m/simple"}}
    )  # fmt: skip
    token = cfg.site["nvidia_vgpu_guest_client_token"]
    assert isinstance(token, SecretRef) and CIPHER not in repr(cfg)
    assert cfg.site["workload_env_pip_index_url"] == "http://m/simple"  # mirrors stay plain


def _stack(tmp_path: Path, site: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.lab-s.yaml"
    path.write_text(yaml.safe_dump({"config": {
        "gpulab:topology": "local", "gpulab:lab": "lab-s", "gpulab:site": site}}))  # fmt: skip
    return path


def _gpulab(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, NO_COLOR="1", COLUMNS="250")
    return subprocess.run([GPULAB, *args], capture_output=True, text=True, timeout=120,
                          cwd=cwd, env=env)  # fmt: skip


def test_validate_refuses_a_plain_token_in_one_line(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {"nvidia_vgpu_guest_client_token": TOKEN})
    for json_flag in ([], ["--json"]):
        r = _gpulab("validate", str(stack), *json_flag, cwd=tmp_path)
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stdout + r.stderr
        assert TOKEN not in r.stdout + r.stderr and "Traceback" not in r.stderr
        assert "gpulab:site.nvidia_vgpu_guest_client_token" in r.stderr
        assert "pulumi config set --secret" in r.stderr


def test_validate_and_inventory_never_print_an_encrypted_token(tmp_path: Path) -> None:
    stack = _stack(tmp_path, {"nvidia_vgpu_guest_client_token": {"secure": CIPHER},
                              "workload_env_pip_index_url": "http://m/simple"})  # fmt: skip
    text = _gpulab("validate", str(stack), cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert "nvidia_vgpu_guest_client_token=(secret, set)" in text.stdout
    assert "workload_env_pip_index_url=http://m/simple" in text.stdout
    as_json = _gpulab("validate", str(stack), "--json", cwd=tmp_path)
    assert as_json.returncode == 0, as_json.stderr
    site = json.loads(as_json.stdout)["data"]["settings"]["gpulab:site"]  # typed: a mapping
    assert site["nvidia_vgpu_guest_client_token"] == "[secret]"
    outputs = tmp_path / "outputs.json"
    host = {"name": "h", "address": "10.0.0.5", "ssh_user": "ubuntu", "gpu_path": "vgpu"}
    outputs.write_text(json.dumps({"hosts": [host]}))
    inv = _gpulab("inventory", str(stack), "--outputs", str(outputs), cwd=tmp_path)
    assert inv.returncode == 0, inv.stderr
    assert "http://m/simple" in inv.stdout  # the plain inputs are there
    for out in (text, as_json, inv):
        assert CIPHER not in out.stdout + out.stderr
    assert "nvidia_vgpu_guest_client_token" not in inv.stdout


def test_a_secret_site_input_reaches_the_site_run_only_as_a_secret_mock() -> None:
    """Engine double: ``gpulab:site`` with a ``--secret --path`` token arrives decrypted and
    marked secret as a whole; the token goes to AnsibleRun's secrets (a secret Output), the
    mirror to its variables, and neither the variables nor the outputs hold the token."""
    from infra import program

    mocks = LabMocks()
    pulumi.runtime.set_mocks(mocks, project="gpulab", stack="test", preview=False)
    raw = stack_raw("local", lab="lab-s")
    config, keys = engine_config(raw)
    config["gpulab:site"] = json.dumps(
        {"nvidia_vgpu_guest_client_token": TOKEN, "workload_env_pip_index_url": "http://m/s"}
    )
    pulumi.runtime.set_all_config(config, [*keys, "gpulab:site"])
    cfg = from_pulumi_config()
    assert isinstance(cfg.site["nvidia_vgpu_guest_client_token"], pulumi.Output)
    assert TOKEN not in repr(cfg.site)

    @pulumi.runtime.test
    def body() -> Any:
        exports: dict[str, Any] = {}
        original = pulumi.export
        pulumi.export = exports.__setitem__  # type: ignore[assignment]
        try:
            program.run(cfg)
        finally:
            pulumi.export = original  # type: ignore[assignment]

        async def go() -> None:
            from pulumi.runtime.stack import wait_for_rpcs

            await wait_for_rpcs(await_all_outstanding_tasks=False)
            (site,) = mocks.of_type("pulumi-python:dynamic/gpulab:AnsibleRun")
            wrapped = site.inputs["secrets"]
            secret_sig = "4dabf18193072939515e22adb298388d"  # Pulumi's secret envelope
            assert wrapped[secret_sig] and wrapped["value"] == {
                "nvidia_vgpu_guest_client_token": TOKEN
            }
            assert site.inputs["variables"]["workload_env_pip_index_url"] == "http://m/s"
            rest = {k: v for k, v in site.inputs.items() if k != "secrets"}
            assert TOKEN not in json.dumps(rest, default=str)

        return pulumi.Output.from_input(go())

    body()


def test_a_site_stored_as_a_secret_without_a_secret_input_is_refused_mock() -> None:
    config, keys = engine_config(stack_raw("local", lab="lab-s"))
    config["gpulab:site"] = json.dumps({"workload_env_pip_index_url": "http://m/s"})
    pulumi.runtime.set_all_config(config, [*keys, "gpulab:site"])
    with pytest.raises(ConfigError) as err:
        from_pulumi_config()
    assert str(err.value).startswith("gpulab:site is stored as a secret but is not a secret key")
