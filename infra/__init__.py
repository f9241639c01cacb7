"""gpulab infrastructure side: Pulumi program, config schema, topologies, dynamic resources,
cloud helpers, Ansible driver and the ``gpulab`` CLI."""
