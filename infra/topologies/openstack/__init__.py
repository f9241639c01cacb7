"""What the OpenStack topologies share: their keys (:mod:`.args`), the lab network, router,
security group, keypair and servers (:mod:`.base`, a builder's parts), and the preflight and
audit rows of an OpenStack cloud (:mod:`.checks`). Not a topology itself."""

SPEC = None  # parts of topologies, not one: the registry passes over it
