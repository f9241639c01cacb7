"""The keys of ``local``: only the shared ones; its hosts' login user defaults to root (a local
connection runs as whoever runs gpulab)."""

from dataclasses import dataclass
from typing import Annotated as A  # the key tables' lines stay short

from infra.keys.lab import SSH_USER, LabArgs


@dataclass(frozen=True, kw_only=True)
class LocalArgs(LabArgs):
    """What ``local`` takes."""

    ssh_user: A[str, SSH_USER.but(default="root")] = "root"
