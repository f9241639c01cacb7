"""The Topology contract: what one topology package gives the rest of gpulab.

Each package ``infra/topologies/<name>/`` defines ``SPEC = Topology(...)`` in its
``__init__.py``; the registry (:mod:`infra.topologies`) finds them (no list to edit). A
topology gives:

- ``args``: its Args dataclass, the keys its builder, preflight and audit take
  (:class:`infra.keys.lab.LabArgs` and its own, each annotated with its
  :class:`~infra.keys.key.Key`): its key table, read by :attr:`Topology.keys`;
- ``builder``: the module whose ``build(args) -> (component, hosts)`` makes its resources,
  imported only when a lab is built (it imports Pulumi and the cloud's provider);
- ``checks``: the module whose ``preflight(args, conns)`` and ``audit(args, conns)`` are its
  cloud-side checks as :class:`infra.clouds.Check` rows, imported only when a lab is checked
  (``gpulab validate`` reads every topology's keys, never its cloud's checks);
- ``gpu_paths`` and ``gpu_path``: every ``gpu_path`` its GPU hosts can have (the runner's
  vocabulary, :data:`workloads.setting.HOST_SETTINGS`), and the one of a stack's args;
- ``default_envs`` / ``mode_envs``: the execution environments it measures in when the stack
  names none (``mode_envs``: per ``gpulab:mode``, for a topology whose keys have a mode);
- ``check_config`` / ``describe`` / ``warnings``: checks across its keys, extra rows of
  ``gpulab validate``, and the warning lines it prints for a valid stack (what the lab will
  not do although the keys read as if it would, such as a security group the cloud does not
  enforce);
- ``stack_file``: its example stack; ``extras``: the pyproject extras it needs (its cloud's SDK
  and Pulumi provider); ``site_secrets``: secret role inputs of the site run from its keys.

A host's setting comes from its ``gpu_path``; a container execution environment on it makes it
``container-on-bm`` / ``container-on-vm`` (:func:`workloads.setting.where`).

Nothing here imports Pulumi or a cloud SDK: a spec package imports its keys; its builder and
its checks are imported by name when they are used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from infra.clouds import Check
from infra.keys.key import Key, keys_of
from infra.keys.lab import LabArgs
from workloads.setting import HOST_SETTINGS, NO_GPU, make_setting, where


@dataclass(frozen=True)
class Conns:
    """Connections handed to a preflight or audit (tests pass doubles); None: made from args."""

    os_conn: Any = None
    bm_conn: Any = None
    si: Any = None
    provide: bool = False  # preflight: move manageable Ironic nodes to available first


def _nothing(_raw: dict[str, Any], _values: dict[str, Any], _problems: list[str]) -> None:
    return None


def _no_rows(_args: Any) -> list[tuple[str, str]]:
    return []


def _no_secrets(_args: Any) -> dict[str, Any]:
    return {}


def _no_warnings(_args: Any) -> list[str]:
    return []


@dataclass(frozen=True)
class Topology:
    """One topology. See the module docstring for what each part is."""

    name: str
    summary: str  # what `pulumi up` builds
    order: int  # position in lists and messages
    args: type[LabArgs]  # its key table: the keys its builder, preflight and audit take
    builder: str  # module with build(args) -> (component, hosts)
    checks: str  # module with preflight(args, conns) and audit(args, conns) -> rows
    gpu_paths: tuple[str, ...]  # every gpu_path its GPU hosts can have
    gpu_path: Callable[[Any], str]  # of its GPU hosts, for a stack's args
    default_envs: tuple[str, ...] = ("native",)
    mode_envs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # by gpulab:mode
    check_config: Callable[[dict[str, Any], dict[str, Any], list[str]], None] = _nothing
    describe: Callable[[Any], list[tuple[str, str]]] = _no_rows
    warnings: Callable[[Any], list[str]] = _no_warnings  # lines for a valid stack
    stack_file: str = ""  # its example stack, Pulumi.<name>.yaml (from the repository root)
    extras: tuple[str, ...] = ()  # pyproject extras it needs (infra.config.extras)
    site_secrets: Callable[[Any], dict[str, Any]] = _no_secrets  # secret site role inputs
    # Nothing to build: this machine is the lab, measured by the local runner (gpulab run local,
    # a study's local arms) instead of the Automation API.
    runs_here: bool = False

    @property
    def keys(self) -> tuple[Key, ...]:
        """Its keys, in its table's order (:func:`infra.keys.key.keys_of`)."""
        return keys_of(self.args)

    @property
    def settings(self) -> dict[str, str]:
        """Each gpu_path of its GPU hosts -> the setting of such a host."""
        return {path: HOST_SETTINGS[path] for path in self.gpu_paths}

    def build(self, args: LabArgs) -> tuple[Any, list[Any]]:
        """Its resources for ``args``: its builder module, imported now (Pulumi, the provider)."""
        build: Callable[[Any], tuple[Any, list[Any]]] = importlib.import_module(self.builder).build
        return build(args)

    def preflight(self, args: LabArgs, conns: Conns) -> list[Check]:
        """Its checks that the cloud can hold the lab: its checks module, imported now."""
        rows: list[Check] = importlib.import_module(self.checks).preflight(args, conns)
        return rows

    def audit(self, args: LabArgs, conns: Conns) -> list[Check]:
        """What of its lab is left in the cloud after teardown: its checks module's audit."""
        rows: list[Check] = importlib.import_module(self.checks).audit(args, conns)
        return rows

    def envs(self, named: Sequence[str], args: Any) -> list[str]:
        """The execution environments a lab measures in: ``named`` (``gpulab:execution_envs``,
        names the config already resolved), else this topology's default (per ``args.mode``
        where its keys have a mode)."""
        default = self.mode_envs.get(getattr(args, "mode", None) or "", self.default_envs)
        return list(named or default)

    def host_setting(self, gpu_path: str) -> str | None:
        """The setting of a host with ``gpu_path`` (None: it measures nothing)."""
        if gpu_path == NO_GPU:
            return None
        if gpu_path not in self.gpu_paths:
            raise ValueError(f"topology {self.name} has no hosts with gpu_path {gpu_path!r}")
        return HOST_SETTINGS[gpu_path]


def facts(spec: Topology, gpu_path: str, env: str) -> dict[str, str]:
    """What the lab knows about a run: the facts a record carries (no guessing)."""
    host = spec.host_setting(gpu_path)
    if host is None:
        raise ValueError(f"hosts with gpu_path {NO_GPU!r} do not run workloads")
    stated = make_setting(gpu_path, env)
    return {
        "topology": spec.name,
        "gpu_path": gpu_path,
        "execution_env": stated.exec_env,
        "setting": where(host, stated.exec_env),
        "virtualization": stated.virtualization,
        "sharing": stated.sharing,  # the host's: a container shares nothing more
    }
