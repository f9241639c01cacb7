"""Pulumi dynamic resources for the lab flow (see docs/lifecycle.md).

:func:`measure` is the step after a topology, called by :func:`infra.program.run` on every
topology: ``AnsibleRun`` (playbooks/site.yml) on every host once every host resource (and, on
vsphere-gpu mode vgpu, every vGPU attach) exists, preparing every execution environment of
``gpulab:execution_envs``, then one ``WorkloadRun`` (playbooks/workloads.yml) per environment of
``gpulab:measure_envs`` (default: all of them), one after another (each waits
for the previous one: the environments share the same GPUs), then the ``provision`` and
``results`` stack outputs. Only the site run reads ``execution_envs`` and only the workload runs
read ``measure_envs``: measuring in another prepared environment re-runs no site play. Each
workload run gets the hosts its environment starts the runner on (:func:`run_hosts`: the GPU
hosts, or the Kubernetes API host for a Job); a play that matches none fails its run.
A lab whose topology takes ``gpulab:cleanup_on_down`` (machines gpulab did not make) also holds
a ``CleanupRun``, which ``down`` uses to remove what gpulab installed, when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from infra.config import LabConfig
    from infra.hosts import Host

DEFAULT_SUITE = "smoke"


def execution_envs(cfg: LabConfig) -> list[str]:
    """The stack's ``gpulab:execution_envs``, else its topology's default (its spec's
    ``default_envs``/``mode_envs``); aliases resolved by the config (singularity -> apptainer)."""
    from infra.topologies import get

    return get(cfg.topology).envs(cfg.execution_envs, cfg.args)


def measure_envs(cfg: LabConfig) -> list[str]:
    """The environments the workload runs measure in: those of :func:`execution_envs` that
    ``gpulab:measure_envs`` names (all of them when it names none), in their order."""
    from infra.config.model import unprepared_envs

    prepared = execution_envs(cfg)
    named = cfg.measure_envs
    problem = unprepared_envs(prepared, named)
    if problem:  # the config's validation refuses this first
        raise ValueError(problem)
    return [e for e in prepared if not named or e in named]


def site_variables(cfg: LabConfig, envs: list[str]) -> dict[str, Any]:
    """The site run's extravars: ``gpulab:site``'s plain role inputs under the program's own
    ``gpulab_*`` variables (the program's win), the proxy and the names its hosts resolve
    (:func:`infra.lab_net.site_variables`). Its secret role inputs are not here:
    :func:`site_secrets`."""
    from infra import lab_net
    from infra.config.roles import split_site

    variables, _secrets = split_site(cfg.site)
    variables.update(
        {
            "gpulab_topology": cfg.topology,
            "gpulab_lab": cfg.lab,
            "gpulab_exec_envs": envs,  # site.yml prepares these execution environments
            **lab_net.site_variables(cfg),
        }
    )
    return variables


def site_secrets(cfg: LabConfig) -> dict[str, Any]:
    """The site run's secret role inputs (its 0600 secrets file only): those of
    ``gpulab:site`` (secret Outputs) and the topology's own (the vGPU license token)."""
    from infra.config.roles import split_site
    from infra.topologies import get

    _plain, secrets = split_site(cfg.site)
    secrets.update(get(cfg.topology).site_secrets(cfg.args))
    return secrets


def _in_group(host: Host, group: str) -> bool:
    from infra.ansible.inventory import group_name

    if group == "all":
        return True
    groups = {group_name(g) for g in host.groups} | {group_name(f"gpu_path_{host.gpu_path}")}
    return group in groups


def matches(pattern: str, host: Host) -> bool:
    """Whether ``host`` is in the inventory pattern ``pattern`` (an execution environment's
    ``runs_on``: groups joined by ``:``, ``&`` for "and also", ``!`` for "but not", as Ansible
    reads them; groups as :mod:`infra.ansible.inventory` names them, ``gpu_path_<path>``
    included)."""
    union = [p for p in pattern.split(":") if p and p[0] not in "&!"]
    inter = [p[1:] for p in pattern.split(":") if p.startswith("&")]
    excl = [p[1:] for p in pattern.split(":") if p.startswith("!")]
    return (
        any(_in_group(host, g) for g in union)
        and all(_in_group(host, g) for g in inter)
        and not any(_in_group(host, g) for g in excl)
    )


def run_hosts(env: str, hosts: list[Host]) -> list[Host]:
    """The hosts a workload run in ``env`` starts the runner on (its ``runs_on``): the GPU
    hosts for an argv launch, the Kubernetes API host on the controller for a Job."""
    from workloads import execenv

    pattern = execenv.get(env).runs_on
    return [h for h in hosts if matches(pattern, h)]


def measure(cfg: LabConfig, component: Any, hosts: list[Host]) -> dict[str, Any]:
    """Configure the hosts, run the suite on them, export ``provision`` and ``results``.

    The workload runs fetch their records to ``<results root>/<stack>/`` of the machine that
    runs the command (:func:`infra.paths.stack_results_dir`): the stack's name is their input,
    the results root is not (where records go changes no diff).
    """
    import pulumi

    from infra.dynamic.ansible_run import AnsibleRun
    from infra.dynamic.cleanup_run import CleanupRun
    from infra.dynamic.workload_run import WorkloadRun
    from infra.summary import merge_summaries

    all_hosts = [h.to_output() for h in hosts]
    envs = execution_envs(cfg)  # what the site prepares
    secrets = site_secrets(cfg)
    # Depending on the (local) component resource means depending on every resource it
    # holds: the hosts, and the vGPU attach, which powers a VM off and must finish first.
    # Not a child of the component: a child cannot depend on its own parent.
    site = AnsibleRun(
        f"{cfg.lab}-site",
        hosts=all_hosts,
        playbook="site.yml",
        variables=site_variables(cfg, envs),
        secrets=secrets or None,
        opts=pulumi.ResourceOptions(
            depends_on=[component, *(getattr(component, "vgpus", None) or [])]
        ),
    )
    cleanup_on_down = getattr(cfg.args, "cleanup_on_down", None)
    if cleanup_on_down is not None:
        # Beside the site run, not after it: a site run that fails half way has still
        # installed something, which `down` then removes when asked.
        CleanupRun(
            f"{cfg.lab}-cleanup",
            hosts=all_hosts,
            enabled=cleanup_on_down,
            variables=site_variables(cfg, envs),
            opts=pulumi.ResourceOptions(depends_on=[component]),
        )
    runs: list[Any] = []
    previous: Any = site
    measure_id = cfg.measure_id
    for env in measure_envs(cfg):
        # One after another: every environment measures the same GPUs.
        previous = WorkloadRun(
            f"{cfg.lab}-workloads-{env}",
            # the hosts its play starts the runner on; none: the run fails, naming the pattern
            hosts=[h.to_output() for h in run_hosts(env, hosts)] or all_hosts,
            suite=cfg.suite or DEFAULT_SUITE,
            execution_env=env,
            topology=cfg.topology,
            lab=cfg.lab,
            variables=dict(cfg.workload_variables),
            secrets=cfg.workload_secrets,  # secret Output: only the play's secrets file
            stack=pulumi.get_stack(),
            machines=site.machines,  # a re-provisioned machine is measured again
            triggers=[measure_id],  # `gpulab measure` changes it: only these runs re-run
            opts=pulumi.ResourceOptions(depends_on=[previous]),
        )
        runs.append(previous)
    provision = pulumi.Output.all(site.status, site.summary, site.facts, site.waited).apply(
        lambda a: {"status": a[0], "hosts": a[1], "facts": a[2], "waited": a[3]}
    )
    results = pulumi.Output.all(*[r.summary for r in runs]).apply(merge_summaries)
    pulumi.export("provision", provision)
    pulumi.export("results", results)
    return {"site": site, "workloads": runs, "provision": provision, "results": results}
