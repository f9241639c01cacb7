"""One module per topology, each defining ``SPEC = Topology(...)`` (see infra.specs.topology).

The registry imports every module here: adding a topology is a module here, its builder
(``infra/topologies/<name>.py``) and its example stack (``Pulumi.<name>.yaml``).
"""
