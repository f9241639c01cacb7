"""The name of the Job image of a magnum-k8s lab: ``<gpulab:registry>/gpulab-workloads:<tag>``,
the tag a digest of what the image holds (the runner, ``workloads/``, and its Dockerfile
template), so an edited runner is a new image the cluster pulls, and an unchanged one is not
pushed again. The site run (k8s_gpu) builds and pushes it; the Jobs run it."""

from __future__ import annotations

import hashlib

from infra.dynamic.ansible_run import tree_digest
from infra.paths import PROJECT
from workloads.paths import PACKAGES_DIR

IMAGE_NAME = "gpulab-workloads"
# what k8s_gpu builds the image from: the project's Dockerfile template, the runner's package
DOCKERFILE = PROJECT / "templates" / "Dockerfile.j2"
WORKLOADS = PACKAGES_DIR / "workloads"


def image_tag() -> str:
    """12 hex digits of sha256 over the Dockerfile template and the workloads/ tree."""
    h = hashlib.sha256(DOCKERFILE.read_bytes())
    h.update(tree_digest(WORKLOADS).encode())
    return h.hexdigest()[:12]


def job_image(registry: str) -> str:
    """``<registry>/gpulab-workloads:<tag>``."""
    return f"{registry.rstrip('/')}/{IMAGE_NAME}:{image_tag()}"
