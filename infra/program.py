"""The Pulumi program: build the configured topology, provision it, measure it, export.

Outputs of every stack: ``topology``, ``lab``, ``hosts`` (a list of
:meth:`infra.hosts.Host.to_output`), ``provision`` (the site Ansible run: status, per-host
recap, GPU facts) and ``results`` (the merged summary of the workload runs). No output holds a
credential: ``magnum-k8s``'s kubeconfig is a file (``~/.kube/gpulab-<stack>.yaml``, 0600; see
:mod:`infra.clouds.magnum`), kept in the state only as a secret of the resource that fetched it.

The entry point is ``__main__.py`` at the repository root (Pulumi.yaml has no ``main:``).
"""

from __future__ import annotations

from typing import Any

import pulumi

from infra import access
from infra.config import LabConfig
from infra.dynamic import measure
from infra.hosts import Host
from infra.topologies import get


def build(cfg: LabConfig) -> tuple[pulumi.ComponentResource, list[Host]]:
    """Create ``cfg.topology``'s resources from its Args; returns its component and hosts, each
    with its SSH route (key file, bastion) as inventory variables (:func:`infra.access.apply`)."""
    component, hosts = get(cfg.topology).build(cfg.args)
    return component, access.apply(cfg.args.routes(), hosts)


def export_lab(cfg: LabConfig, component: Any, hosts: list[Host]) -> None:
    pulumi.export("topology", cfg.topology)
    pulumi.export("lab", cfg.lab)
    pulumi.export("hosts", [h.to_output() for h in hosts])


def run(cfg: LabConfig) -> dict[str, Any]:
    """The whole program for a validated config: topology -> (vGPU attach) -> site
    ``AnsibleRun`` -> one ``WorkloadRun`` per execution environment, one after another ->
    outputs. Returns the component, the hosts and what :func:`infra.dynamic.measure` made.

    Before any resource: the SSH routes to the hosts are checked (a key file ssh would refuse,
    a bastion that refuses, a listed machine that does not answer: :class:`AccessError`, one
    line each), so nothing is built that could not be reached."""
    access.check(cfg.args.routes())
    component, hosts = build(cfg)
    export_lab(cfg, component, hosts)
    made = measure(cfg, component, hosts)
    return {"component": component, "hosts": hosts, **made}
