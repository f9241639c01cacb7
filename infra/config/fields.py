"""The keys of what every lab measures, and :class:`LabConfig`: a stack's validated config.

A stack's keys are its topology's (its Args dataclass, ``infra/topologies/<name>/args.py``:
the shared :class:`~infra.keys.lab.LabArgs` keys and the topology's own) and the keys below,
which every topology has: how long to wait for the hosts, the suite, the execution
environments, the role inputs of the site and workload runs, the measure id. Each field's
annotation carries its :class:`~infra.keys.key.Key` (value type, help, required, default,
secret).
:mod:`infra.config.model` validates a stack with them, :mod:`infra.config.schema` writes the
``config:`` blocks of the Pulumi project files from them.
"""

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Annotated as A  # the key table's lines stay short
from typing import Any

from infra.config.proxy import WHAT as PROXY_WHAT
from infra.config.proxy import p_proxy
from infra.config.roles import p_site, p_variables, p_workload_secrets
from infra.keys.key import K, Key, keys_of
from infra.keys.lab import LabArgs
from infra.keys.types import Int, List, Parsed, _exec_env, _measure_id, _suite
from workloads import execenv

__all__ = ["RUN_KEYS", "LabConfig"]

ENVS_ALLOWED = ", ".join(execenv.accepted())  # names, then aliases


@dataclass(frozen=True, kw_only=True)
class LabConfig:
    """A lab's validated ``gpulab:*`` config: ``args``, its topology's Args (every key its
    builder, preflight and audit take, ``topology`` and ``lab`` among them), and the keys of
    what every lab measures below.

    Secrets are a ``pulumi.Output[str]`` (from :func:`infra.config.from_pulumi_config`, made
    with ``require_secret``) or a :class:`~infra.keys.types.SecretRef` placeholder (from
    :func:`infra.config.load_stack_file`, which cannot decrypt); never plaintext.
    """

    args: LabArgs
    # fmt: off
    host_wait_s: A[int, K(Int(10, 86400), "seconds to wait for each host to answer SSH and for "
                          "cloud-init to finish, after the cloud reports it ready; changes no "
                          "diff", default=600)] = 600
    # what the lab measures once its hosts are ready
    suite: A[str, K(Parsed(_suite, "a suite in workloads/suites/"),
                    "workload suite to run on the GPU hosts", default="smoke")] = "smoke"
    execution_envs: A[tuple[str, ...], K(
        List(Parsed(_exec_env, ""), ENVS_ALLOWED),
        "execution environments the site prepares and, unless measure_envs says fewer, "
        "measures in (default: the topology's own, docs/topologies.md)", default=())] = ()
    measure_envs: A[tuple[str, ...], K(
        List(Parsed(_exec_env, ""), ENVS_ALLOWED),
        "execution environments the workload runs measure in, a subset of execution_envs "
        "(default: all of them); changing it re-runs no site play", default=())] = ()
    workload_variables: A[dict[str, Any], K(
        Parsed(p_variables, "a mapping of workload_run role inputs", dict[str, Any]),
        "extra workload_run role variables (e.g. workload_run_docker_image)",
        default={})] = field(default_factory=dict)
    workload_secrets: A[Any, K(
        Parsed(p_workload_secrets, "a mapping of secret workload_run role inputs", Any),
        "secret workload_run role inputs (no_log: true in its meta/argument_specs.yml, e.g. "
        "workload_run_registry_password), each set with `pulumi config set --secret --path "
        "'gpulab:workload_secrets.<name>' VALUE`", secret=True)] = None
    site: A[dict[str, Any], K(
        Parsed(p_site, "a mapping of role inputs", dict[str, Any]),
        "role inputs of the site Ansible run (<role>_* or gpulab_* variables, "
        "e.g. nvidia_driver_cuda_repo_url, workload_env_pip_index_url)",
        default={})] = field(default_factory=dict)
    proxy: A[dict[str, Any], K(
        Parsed(p_proxy, PROXY_WHAT, dict[str, Any]),
        "HTTP/HTTPS proxy of the site run's package, pip, download and image steps "
        "(http, https, no_proxy; docs/ansible.md)", default={})] = field(default_factory=dict)
    measure_id: A[str, K(Parsed(_measure_id, "up to 64 letters, digits, '.', '_', ':' or '-' "
                                "(gpulab measure sets it)"),
                         "a change re-runs only the workload runs (gpulab measure sets it)",
                         default="")] = ""
    # fmt: on

    @property
    def topology(self) -> str:
        return self.args.topology

    @property
    def lab(self) -> str:
        return self.args.lab

    @property
    def ssh_user(self) -> str:
        return self.args.ssh_user

    def items(self) -> Iterator[tuple[Key, Any]]:
        """Every key of the stack with its value: its topology's, then :data:`RUN_KEYS`."""
        for key in keys_of(type(self.args)):
            yield key, getattr(self.args, key.key)
        for key in RUN_KEYS:
            yield key, getattr(self, key.key)


RUN_KEYS: tuple[Key, ...] = keys_of(LabConfig)  # the keys above (``args`` is none)
