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
