"""The Pulumi program: build the configured topology and export what every stack exports.

Outputs of every stack: ``topology``, ``lab``, ``hosts`` (a list of
:meth:`infra.hosts.Host.to_output`); ``magnum-k8s`` also exports ``kubeconfig`` (secret).
"""

from __future__ import annotations

from typing import Any

import pulumi

from infra.config import LabConfig
from infra.hosts import Host
from infra.topologies import builder


def build(cfg: LabConfig) -> tuple[pulumi.ComponentResource, list[Host]]:
    """Create ``cfg.topology``'s resources; returns its component and its hosts."""
    return builder(cfg.topology)(cfg)


def export_lab(cfg: LabConfig, component: Any, hosts: list[Host]) -> None:
    pulumi.export("topology", cfg.topology)
    pulumi.export("lab", cfg.lab)
    pulumi.export("hosts", [h.to_output() for h in hosts])
    kubeconfig = getattr(component, "kubeconfig", None)
    if kubeconfig is not None:
        pulumi.export("kubeconfig", pulumi.Output.secret(kubeconfig))


def run(cfg: LabConfig) -> tuple[pulumi.ComponentResource, list[Host]]:
    """The whole program for a validated config: build, export, then (one call, added by the
    lifecycle work) provision the hosts and run workloads on them."""
    component, hosts = build(cfg)
    export_lab(cfg, component, hosts)
    return component, hosts
