"""``gpulab:proxy`` and the names a lab's hosts resolve: the key's checks (one line naming
what is wrong, never a proxy password), and what the program hands the site run (Pulumi
engine and OpenStack provider mocked: the mock runtime).

The hosts' side (the proxy as the only way out, lab_network stopping the play) runs on real
nspawn hosts in tests/ansible/test_proxy_nspawn.py."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.config import ConfigError, validate
from infra.config.proxy import bypasses, proxy_env
from infra.lab_net import lab_names
from tests.pulumi.mocks import stack_raw
from tests.topologies.test_site_inputs_stable import site_inputs

PROXY = {"http": "http://proxy.lab.example:3128", "no_proxy": [".lab.example", "10.0.0.0/8"]}
SITE = {
    "workload_env_pip_index_url": "http://pypi.lab.example/simple/",
    "nvidia_driver_cuda_repo_url": "https://developer.download.nvidia.com/compute/cuda/repos/",
    "docker_engine_repo_url": "http://10.1.2.3/docker",
}


def test_proxy_key_parsed_https_defaults_to_http() -> None:
    cfg = validate(stack_raw("nova-pci", proxy=PROXY))
    assert cfg.proxy == {
        "http": "http://proxy.lab.example:3128",
        "https": "http://proxy.lab.example:3128",
        "no_proxy": [".lab.example", "10.0.0.0/8"],
    }
    assert proxy_env(cfg.proxy) == {
        "http_proxy": "http://proxy.lab.example:3128",
        "HTTP_PROXY": "http://proxy.lab.example:3128",
        "https_proxy": "http://proxy.lab.example:3128",
        "HTTPS_PROXY": "http://proxy.lab.example:3128",
        "no_proxy": ".lab.example,10.0.0.0/8,localhost,127.0.0.1,::1",
        "NO_PROXY": ".lab.example,10.0.0.0/8,localhost,127.0.0.1,::1",
    }
    assert validate(stack_raw("nova-pci")).proxy == {}  # no proxy: nothing in the env
    assert proxy_env({}) == {}


@pytest.mark.parametrize(
    ("proxy", "problem"),
    [
        ("http://proxy:3128", "a mapping with http (the proxy's URL, http://host:port)"),
        ({"https": "http://p:3128"}, "; http is required"),
        ({"http": "http://p:3128", "ftp": "x"}, "; 'ftp' is not one of http, https, no_proxy"),
        ({"http": "socks5://p:1080"}, "; http must be an http(s)://host[:port] URL"),
        ({"http": "http://p:99999"}, "; http must be an http(s)://host[:port] URL"),
        ({"http": "http://p:3128/path"}, "; http must be an http(s)://host[:port] URL"),
        ({"http": "http://p:3128", "https": "http://p 1"}, "; https must be an http(s)://"),
        (
            {"http": "http://p:3128", "no_proxy": ["ok.example", "bad name"]},
            "; no_proxy entry 'bad name' is not a name, .domain, address or CIDR",
        ),
    ],
)
def test_bad_proxy_is_one_line_naming_the_key(proxy: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as err:
        validate(stack_raw("nova-pci", proxy=proxy))
    [line] = err.value.problems
    assert line.startswith("gpulab:proxy must be ") and problem in line, line


def test_proxy_with_a_password_is_refused_without_showing_it() -> None:
    with pytest.raises(ConfigError) as err:
        validate(stack_raw("nova-pci", proxy={"http": "http://me:S3cretPw@proxy:3128"}))
    [line] = err.value.problems
    assert "http holds a user or password" in line
    assert "S3cretPw" not in line and "me:" not in line


@pytest.mark.parametrize(
    ("name", "direct"),
    [
        ("pypi.lab.example", True),  # .lab.example
        ("lab.example", True),
        ("notlab.example", False),
        ("10.1.2.3", True),  # 10.0.0.0/8
        ("192.0.2.1", False),
        ("localhost", True),
        ("developer.download.nvidia.com", False),
    ],
)
def test_no_proxy_matches_names_domains_and_cidrs(name: str, direct: bool) -> None:
    proxy = validate(stack_raw("nova-pci", proxy=PROXY)).proxy
    assert bypasses(name, proxy) is direct


def test_lab_names_are_the_proxy_and_the_site_names_reached_directly() -> None:
    with_proxy = validate(stack_raw("nova-pci", proxy=PROXY, site=SITE))
    # the CUDA repository is behind the proxy (the proxy resolves it), the docker mirror an
    # address: neither is the hosts' to resolve
    assert lab_names(with_proxy) == {
        "proxy.lab.example": "gpulab:proxy.http",
        "pypi.lab.example": "gpulab:site.workload_env_pip_index_url",
    }
    without = validate(stack_raw("nova-pci", site=SITE))
    assert lab_names(without) == {
        "pypi.lab.example": "gpulab:site.workload_env_pip_index_url",
        "developer.download.nvidia.com": "gpulab:site.nvidia_driver_cuda_repo_url",
    }


def test_site_run_gets_the_proxy_env_and_names_only_when_set_mock() -> None:
    """The whole program under the mocks: the site AnsibleRun's variables carry the proxy
    environment and the names; without them its inputs hold neither (a stack without a proxy
    hands the site run what it did before)."""
    plain = site_inputs("nova-pci")
    assert "gpulab_proxy_env" not in plain["variables"]
    assert "gpulab_lab_names" not in plain["variables"]
    proxied = site_inputs("nova-pci", proxy=PROXY, site=SITE)["variables"]
    assert proxied["gpulab_proxy_env"]["https_proxy"] == "http://proxy.lab.example:3128"
    assert proxied["gpulab_lab_names"] == {
        "proxy.lab.example": "gpulab:proxy.http",
        "pypi.lab.example": "gpulab:site.workload_env_pip_index_url",
    }


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"proxy": {"http": "http://{{ lookup('pipe', 'id') }}:3128"}}, "gpulab:proxy must be"),
        ({"proxy": {"http": "http://p:3128", "no_proxy": ["{{ x }}"]}}, "gpulab:proxy must be"),
        ({"dns_nameservers": ["{{ lookup('pipe', 'id') }}"]}, "gpulab:dns_nameservers must be"),
        ({"dns_nameservers": ["-x"]}, "gpulab:dns_nameservers must be"),
    ],
)
def test_templates_in_the_network_keys_are_refused_in_one_line(raw: Any, key: str) -> None:
    """The proxy (every host play's environment) and the DNS servers (the lab subnet) are
    checked before anything reaches Ansible or the cloud: a Jinja template or an option-like
    value is one line naming the key."""
    with pytest.raises(ConfigError) as err:
        validate(stack_raw("nova-pci", **raw))
    [line] = err.value.problems
    assert line.startswith(key) and "\n" not in line, line


@pytest.mark.parametrize(
    "url",
    [
        "http://{{ lookup('pipe', 'id') }}/simple/",
        "http://-o/simple/",
        "http://pypi lab/simple/",
        "http:///simple/",
    ],
)
def test_site_url_whose_host_is_not_a_name_is_refused_naming_its_key(url: str) -> None:
    """Each host of a gpulab:site URL is resolved on every host (lab_network: getent), so it
    must be a DNS name or an address; anything else is one line naming the site key."""
    with pytest.raises(ConfigError) as err:
        validate(stack_raw("nova-pci", site={"workload_env_pip_index_url": url}))
    [line] = err.value.problems
    assert line.startswith(
        "gpulab:site.workload_env_pip_index_url must be an http(s) URL whose host is a DNS "
        "name or an IP address, got "
    ), line


def test_docs_proxy_example_is_a_valid_stack_and_means_what_the_docs_say() -> None:
    """docs/ansible.md's gpulab:proxy example, validated as a stack would be."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "ansible.md").read_text()
    [block] = [b for b in re.findall(r"```yaml\n(.*?)```", doc, re.S) if "gpulab:proxy" in b]
    proxy = yaml.safe_load(block)["config"]["gpulab:proxy"]
    cfg = validate(stack_raw("nova-pci", proxy=proxy))
    assert proxy_env(cfg.proxy)["no_proxy"] == ".lab.example,10.0.0.0/8,localhost,127.0.0.1,::1"
    assert bypasses("mirror.lab.example", cfg.proxy) and not bypasses("pypi.org", cfg.proxy)
