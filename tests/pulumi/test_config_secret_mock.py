import pulumi
import pytest

from infra.config import ConfigError, from_pulumi_config
from tests.pulumi.mocks import engine_config, stack_raw


def test_site_stored_as_secret_is_refused_mock():
    config, keys = engine_config(stack_raw("nova-pci"))
    config["gpulab:site"] = '{"nvidia_driver_cuda_repo_url": "http://m/x"}'
    pulumi.runtime.set_all_config(config, [*keys, "gpulab:site"])
    with pytest.raises(ConfigError) as e:
        from_pulumi_config()
    assert str(e.value).startswith("gpulab:site is stored as a secret but is not a secret key")
    assert "http://m/x" not in str(e.value)


@pulumi.runtime.test
def test_workload_secrets_stay_a_secret_output_mock():
    """Engine double: the decrypted mapping of ``--secret --path`` values reaches the program
    as a secret Output of the checked mapping, never as plain text."""
    import json

    from tests.pulumi.helpers import check, resolve

    config, keys = engine_config(stack_raw("nova-pci"))
    value = {"workload_run_registry_password": "s3cr3t-pw"}
    config["gpulab:workload_secrets"] = json.dumps(value)
    pulumi.runtime.set_all_config(config, [*keys, "gpulab:workload_secrets"])
    cfg = from_pulumi_config()
    assert isinstance(cfg.workload_secrets, pulumi.Output)
    assert "s3cr3t-pw" not in repr(cfg)

    async def body() -> None:
        data, secret = await resolve(cfg.workload_secrets)
        assert data == value and secret is True

    return check(body())


def test_workload_secrets_in_plain_text_is_refused_mock():
    config, keys = engine_config(stack_raw("nova-pci"))
    config["gpulab:workload_secrets"] = '{"workload_run_registry_password": "plain-pw"}'
    pulumi.runtime.set_all_config(config, keys)
    with pytest.raises(ConfigError) as e:
        from_pulumi_config()
    assert "'workload_run_registry_password' is not encrypted" in str(e.value)
    assert "plain-pw" not in str(e.value)
