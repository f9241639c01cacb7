"""The Topology contract, its registry, and the setting vocabulary.

Each module under :mod:`infra.specs.topologies` defines ``SPEC = Topology(...)``; the registry
finds them (no list to edit). A topology gives:

- ``fields``: its ``gpulab:*`` keys, read from :data:`infra.config.fields.FIELDS` (one table);
- ``builder``: the module whose ``build(cfg) -> (component, hosts)`` makes its resources;
- ``preflight`` / ``audit``: its cloud-side checks as :class:`infra.clouds.Check` rows;
- ``default_envs`` / ``mode_envs``: the execution environments it measures in when the stack
  names none (``mode_envs``: per ``gpulab:mode``);
- ``gpu_path`` and ``settings``: the ``gpu_path`` of its GPU hosts and the setting each means;
- ``check_config`` / ``describe``: cross-key config checks, and extra rows of ``gpulab validate``;
- ``defaults``: its own defaults of keys it shares with others (``ssh_user`` root for local).

Settings (where a measurement ran, as the lab knows it) are
:data:`workloads.setting.SETTINGS`. A host's setting comes from its ``gpu_path``; a container
execution environment on a bare-metal or VM host makes it ``container-on-bm`` /
``container-on-vm`` (:func:`setting`).

Spec modules import nothing heavy at import time (no Pulumi, no cloud SDK, not infra.config):
the config table itself takes the topology names from here.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Protocol

from workloads import execenv
from workloads.setting import CONTAINER_ON, IN_CONTAINER, NO_GPU, SETTINGS


class EnvConfig(Protocol):
    """What :meth:`Topology.envs` reads of a config (:class:`infra.config.LabConfig` has it)."""

    @property
    def execution_envs(self) -> tuple[str, ...]: ...

    @property
    def mode(self) -> str | None: ...


@dataclass(frozen=True)
class Conns:
    """Connections handed to a preflight or audit (tests pass doubles); None: made from cfg."""

    os_conn: Any = None
    bm_conn: Any = None
    si: Any = None
    provide: bool = False  # preflight: move manageable Ironic nodes to available first


Checks = Callable[[Any, Conns], list[Any]]


def _nothing(_raw: dict[str, Any], _values: dict[str, Any], _problems: list[str]) -> None:
    return None


def _no_rows(_cfg: Any) -> list[tuple[str, str]]:
    return []


@dataclass(frozen=True)
class Topology:
    """One topology. See the module docstring for what each part is."""

    name: str
    summary: str  # what `pulumi up` builds
    order: int  # position in lists and messages
    builder: str  # module with build(cfg) -> (component, hosts)
    gpu_path: Callable[[Any], str]  # of its GPU hosts, for a validated config
    settings: Mapping[str, str]  # every gpu_path its GPU hosts can have -> setting
    preflight: Checks
    audit: Checks
    default_envs: tuple[str, ...] = ("native",)
    mode_envs: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # by gpulab:mode
    check_config: Callable[[dict[str, Any], dict[str, Any], list[str]], None] = _nothing
    describe: Callable[[Any], list[tuple[str, str]]] = _no_rows
    stack_file: str = field(default="")  # the example stack, Pulumi.<name>.yaml
    # Its own defaults of shared keys (the key table's default is for every other topology).
    defaults: Mapping[str, Any] = field(default_factory=dict)
    # Nothing to build: this machine is the lab, measured by the local runner (gpulab run local,
    # a study's local arms) instead of the Automation API.
    runs_here: bool = False

    @property
    def fields(self) -> tuple[Any, ...]:
        """Its keys, from the one config table (:data:`infra.config.fields.FIELDS`)."""
        from infra.config.fields import FIELDS

        return tuple(f for f in FIELDS if self.name in f.topologies)

    def build(self, cfg: Any) -> tuple[Any, list[Any]]:
        build: Callable[[Any], tuple[Any, list[Any]]] = importlib.import_module(self.builder).build
        return build(cfg)

    def envs(self, cfg: EnvConfig) -> list[str]:
        """The execution environments ``cfg`` measures in: its own, else this default."""
        named = cfg.execution_envs
        default = self.mode_envs.get(cfg.mode or "", self.default_envs)
        return [execenv.canonical(e) for e in (named or default)]

    def host_setting(self, gpu_path: str) -> str | None:
        """The setting of a host with ``gpu_path`` (None: it measures nothing)."""
        if gpu_path == NO_GPU:
            return None
        if gpu_path not in self.settings:
            raise ValueError(f"topology {self.name} has no hosts with gpu_path {gpu_path!r}")
        return self.settings[gpu_path]


def setting(host_setting: str, env: str) -> str:
    """Where a run in execution environment ``env`` on a host of ``host_setting`` ran."""
    if execenv.get(env).container:
        return CONTAINER_ON.get(host_setting, host_setting)
    return host_setting


def facts(spec: Topology, gpu_path: str, env: str) -> dict[str, str]:
    """What the lab knows about a run: the facts a record carries (no guessing)."""
    host = spec.host_setting(gpu_path)
    if host is None:
        raise ValueError(f"hosts with gpu_path {NO_GPU!r} do not run workloads")
    where, exec_env = setting(host, env), execenv.get(env)
    virtualization = SETTINGS[where]["virtualization"]
    if exec_env.container:
        virtualization = IN_CONTAINER.get(virtualization, virtualization)
    return {
        "topology": spec.name,
        "gpu_path": gpu_path,
        "execution_env": exec_env.name,
        "setting": where,
        "virtualization": virtualization,
        "sharing": SETTINGS[host]["sharing"],  # the host's: a container shares nothing more
    }


@cache
def registry() -> dict[str, Topology]:
    """Every topology, by name, in their ``order``: the modules of infra.specs.topologies."""
    import infra.specs.topologies as pkg

    specs: list[Topology] = []
    for info in pkgutil.iter_modules(pkg.__path__):
        spec = getattr(importlib.import_module(f"{pkg.__name__}.{info.name}"), "SPEC", None)
        if not isinstance(spec, Topology):
            raise TypeError(f"infra/specs/topologies/{info.name}.py has no SPEC = Topology(...)")
        specs.append(spec)
    specs.sort(key=lambda s: (s.order, s.name))
    return {s.name: s for s in specs}


def names() -> tuple[str, ...]:
    return tuple(registry())


def get(name: str) -> Topology:
    try:
        return registry()[name]
    except KeyError:
        raise ValueError(f"topology {name!r} is not one of {', '.join(registry())}") from None
