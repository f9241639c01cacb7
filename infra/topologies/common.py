"""Small helpers shared by the topologies: naming, tags, cloud-init rendering."""

from __future__ import annotations

from pathlib import Path

from infra.config import LabConfig

TEMPLATES = Path(__file__).resolve().parents[2] / "templates"
TYPE_PREFIX = "gpulab:topology"


def gpu_path(cfg: LabConfig) -> str:
    """The ``gpu_path`` of the lab's GPU hosts, as its topology's spec says."""
    from infra.specs.topology import get

    return get(cfg.topology).gpu_path(cfg)


def lab_tags(cfg: LabConfig) -> list[str]:
    """Neutron/Nova tags naming the lab (Nova tags forbid '/' and ',')."""
    return ["gpulab", f"gpulab-lab={cfg.lab}", f"gpulab-topology={cfg.topology}"]


def lab_metadata(cfg: LabConfig) -> dict[str, str]:
    return {"gpulab_lab": cfg.lab, "gpulab_topology": cfg.topology}


def host_groups(cfg: LabConfig, *extra: str) -> list[str]:
    """Inventory groups of a GPU host: ``gpu_hosts``, the topology's, then ``extra``."""
    return ["gpu_hosts", cfg.topology.replace("-", "_"), *extra]


def render_cloud_init(cfg: LabConfig, hostname: str, gpu_path: str) -> str:
    """The instance user data from ``templates/cloud-init.yaml.j2`` (no secrets in it)."""
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    return env.get_template("cloud-init.yaml.j2").render(
        lab=cfg.lab,
        topology=cfg.topology,
        hostname=hostname,
        ssh_user=cfg.ssh_user,
        ssh_public_key=cfg.ssh_public_key,
        gpu_path=gpu_path,
    )
