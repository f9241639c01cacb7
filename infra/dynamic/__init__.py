"""Pulumi dynamic resources: Ansible runs and workload runs (see docs/lifecycle.md)."""
