"""Ansible from Python: inventories from ``infra.hosts.Host`` and playbook runs through
ansible-runner (see docs/ansible.md)."""

from infra.ansible.inventory import InventoryError, build_inventory
from infra.ansible.runner import (
    HostSummary,
    PlaybookError,
    PlaybookResult,
    TaskFailure,
    run_playbook,
)

__all__ = [
    "HostSummary",
    "InventoryError",
    "PlaybookError",
    "PlaybookResult",
    "TaskFailure",
    "build_inventory",
    "run_playbook",
]
