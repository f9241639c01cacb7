"""The chart repositories the double's helm modules know: NVIDIA's two, with chart versions
NVIDIA published (from the GPU Operator's and the device plugin's release notes; not their
whole index). Any other repository or version is refused, as helm refuses it."""

import os


def repo_config() -> str:
    """Where the added repositories are kept: helm's $HELM_REPOSITORY_CONFIG, else a file
    beside helm's own under the user's home."""
    return os.environ.get("HELM_REPOSITORY_CONFIG") or os.path.join(
        os.environ["HOME"], ".config", "helm", "repositories.json"
    )


REPOS = {
    "https://helm.ngc.nvidia.com/nvidia": {
        "gpu-operator": [
            "v24.9.0",
            "v24.9.1",
            "v24.9.2",
            "v25.3.0",
            "v25.3.1",
            "v25.10.0",
            "v25.10.1",
        ],
    },
    "https://nvidia.github.io/k8s-device-plugin": {
        "nvidia-device-plugin": ["0.16.2", "0.17.0", "0.17.1"],
    },
}
