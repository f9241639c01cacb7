"""The two tables that say what an execution environment and a topology are.

- :mod:`workloads.execenv`: one :class:`~workloads.execenv.ExecEnv` entry per execution
  environment (native, docker, apptainer, k8s, bitfusion): container or not, the site roles
  that prepare it, its launch command, its image, the label its records carry.
- :mod:`infra.specs.topology`: the :class:`~infra.specs.topology.Topology` contract and its
  registry; one module per topology under :mod:`infra.specs.topologies` (config fields,
  builder, preflight, audit, default execution environments, the setting of each host).

Everything else reads these tables instead of branching on a name. Nothing here imports
Pulumi or a cloud SDK at import time.
"""
