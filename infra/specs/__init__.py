"""Files written from the two tables that say what an execution environment and a topology are.

- the execution environments: :mod:`workloads.execenv` (the runner and ``infra/`` share it);
- the topologies: the registry of :mod:`infra.topologies` (one package per topology).

:mod:`infra.specs.ansible_vars` writes the Ansible variables the playbooks read from the first,
:mod:`infra.specs.docs` the tables of ``docs/topologies.md`` from both; ``python -m
infra.specs`` prints the tables. Everything else reads the two tables instead of branching on
a name.
"""
