"""Pulumi dynamic resources for the lab flow (see docs/lifecycle.md).

:func:`measure` is the step after a topology: ``AnsibleRun`` (playbooks/site.yml) on every host,
then one ``WorkloadRun`` (playbooks/workloads.yml) per execution environment on the GPU hosts,
then the ``provision`` and ``results`` stack outputs. ``infra/__main__.py`` calls it.
"""

from __future__ import annotations

from typing import Any

# Execution environments a topology measures in unless the config names others.
DEFAULT_ENVS = {"magnum-k8s": ("k8s",)}
DEFAULT_SUITE = "smoke"


def execution_envs(cfg: Any) -> list[str]:
    envs = getattr(cfg, "execution_envs", None)
    if envs:
        return list(envs)
    if cfg.topology == "vsphere-gpu" and getattr(cfg, "mode", None) == "bitfusion":
        return ["bitfusion"]
    return list(DEFAULT_ENVS.get(cfg.topology, ("native",)))


def measure(cfg: Any, component: Any, hosts: list[Any]) -> dict[str, Any]:
    """Configure the hosts, run the suite on them, export ``provision`` and ``results``."""
    import pulumi

    from infra.dynamic.ansible_run import AnsibleRun
    from infra.dynamic.workload_run import WorkloadRun
    from infra.summary import merge_summaries

    all_hosts = [h.to_output() for h in hosts]
    gpu_hosts = [h.to_output() for h in hosts if h.gpu_path != "none"]
    envs = execution_envs(cfg)
    secrets: dict[str, Any] = {}
    token = getattr(cfg, "vgpu_license_token", None)
    if token is not None:
        secrets["nvidia_vgpu_guest_client_token"] = token
    site = AnsibleRun(
        f"{cfg.lab}-site",
        hosts=all_hosts,
        playbook="site.yml",
        variables={
            "gpulab_topology": cfg.topology,
            "gpulab_lab": cfg.lab,
            "gpulab_exec_envs": envs,  # site.yml prepares these execution environments
        },
        secrets=secrets or None,
        opts=pulumi.ResourceOptions(parent=component),
    )
    runs = [
        WorkloadRun(
            f"{cfg.lab}-workloads-{env}",
            hosts=gpu_hosts,
            suite=getattr(cfg, "suite", None) or DEFAULT_SUITE,
            execution_env=env,
            topology=cfg.topology,
            lab=cfg.lab,
            variables=dict(getattr(cfg, "workload_variables", None) or {}),
            opts=pulumi.ResourceOptions(parent=component, depends_on=[site]),
        )
        for env in envs
    ]
    provision = pulumi.Output.all(site.status, site.summary, site.facts).apply(
        lambda a: {"status": a[0], "hosts": a[1], "facts": a[2]}
    )
    results = pulumi.Output.all(*[r.summary for r in runs]).apply(merge_summaries)
    pulumi.export("provision", provision)
    pulumi.export("results", results)
    return {"site": site, "workloads": runs, "provision": provision, "results": results}
