"""What a ``gpulab:*`` key is, and the keys every topology's builder takes.

- :mod:`infra.keys.key`: :class:`~infra.keys.key.Key` (a key's value type, help, whether it is
  required, its default, its vSphere modes, whether it is a secret) and :func:`keys_of`, which
  reads a key table: a dataclass whose fields are annotated with their ``Key``;
- :mod:`infra.keys.types`: the value types (bounds, patterns, parsers) and their error text;
- :mod:`infra.keys.lab`: :class:`~infra.keys.lab.LabArgs`, the keys every topology's Args
  dataclass starts with (``topology``, ``lab``, ``ssh_user``), and keys several topologies take.

Each topology declares its own keys with these (``infra/topologies/<name>/args.py``); the keys
of what a lab measures are :mod:`infra.config.fields`. Nothing here imports a topology, the
config's validator, Pulumi or a cloud SDK.
"""
