"""MagnumKubeconfig: a Magnum cluster's kubeconfig fetched into a file, as a dynamic resource.

Inputs: ``cluster`` (the Magnum cluster's UUID), ``path`` (the file, default
:func:`infra.clouds.magnum.kubeconfig_path` of the stack), ``os_cloud`` and ``os_password``
(secret) for the connection. ``create``/``update`` fetch the kubeconfig through Magnum's API
(:func:`infra.clouds.magnum.fetch_kubeconfig`: CA + a client certificate signed there) and write
it 0600; outputs ``path``, ``api_address`` and ``kubeconfig`` (secret). ``diff`` sees a file
that is gone (deleted, or another machine's home), so the next ``gpulab up`` fetches it again.
``delete`` removes the file. The site run and the workload Jobs use this file (the API host's
``gpulab_kubeconfig``, which :func:`infra.ansible.runner.kube_env` puts in the run's
environment), never the operator's ``$KUBECONFIG``.

A failure is one line naming the cluster and the step; the cluster stays in the stack for
``gpulab down``. Runs in the engine's provider host: heavy imports inside the methods.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import CreateResult, DiffResult, ReadResult, ResourceProvider, UpdateResult

INPUTS = ("cluster", "path", "os_cloud")


class MagnumKubeconfigProvider(ResourceProvider):
    serialize_as_secret_always = False

    def _fetch(self, props: dict[str, Any]) -> dict[str, Any]:
        # openstacksdk and cryptography, only in the provider host and only when it fetches
        from infra.clouds import magnum
        from infra.clouds.openstack import connect

        overrides = {"password": props["os_password"]} if props.get("os_password") else {}
        conn = connect(props.get("os_cloud") or None, **overrides)
        text, api = magnum.cluster_kubeconfig(conn, props["cluster"])
        magnum.write_kubeconfig(props["path"], text, props["cluster"])
        return {**props, "api_address": api, "kubeconfig": text}

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(f"kubeconfig-{props['cluster']}", self._fetch(props))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        changed = [k for k in INPUTS if olds.get(k) != news.get(k)]
        if not Path(str(news.get("path"))).is_file():
            changed.append("path")  # the file is gone: update fetches it again
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def update(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        if olds.get("path") and olds["path"] != news["path"]:
            Path(olds["path"]).unlink(missing_ok=True)
        return UpdateResult(self._fetch(news))

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, dict(props))

    def delete(self, _id: str, props: dict[str, Any]) -> None:
        if props.get("path"):
            Path(props["path"]).unlink(missing_ok=True)


class MagnumKubeconfig(pulumi.dynamic.Resource, module="gpulab", name="MagnumKubeconfig"):
    """The kubeconfig of ``cluster`` in the file ``path``."""

    path: pulumi.Output[str]
    api_address: pulumi.Output[str]
    kubeconfig: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        cluster: Any,
        path: str,
        os_cloud: str | None = None,
        os_password: Any = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        props = {
            "cluster": cluster,
            "path": path,
            "os_cloud": os_cloud,
            "os_password": pulumi.Output.secret(os_password) if os_password else None,
            "api_address": None,
            "kubeconfig": None,
        }
        opts = pulumi.ResourceOptions.merge(
            opts, pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig", "os_password"])
        )
        super().__init__(MagnumKubeconfigProvider(), name, props, opts)
