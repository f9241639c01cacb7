"""Test doubles for the Pulumi engine and the OpenStack/vSphere providers (mock runtime)."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulumi

from infra.config import SecretRef, raw_from_stack_file

REPO = Path(__file__).resolve().parents[2]
STACKS = {
    t: (REPO if t == "local" else REPO / "examples" / t) / f"Pulumi.{t}.yaml"
    for t in ("ironic-bm", "nova-pci", "magnum-k8s", "vsphere-gpu", "local")
}
# Plaintext the tests hand the program as decrypted secrets; no output may show them.
SECRET_VALUES = {
    "vsphere_password": "mock-vcenter-Pa55word",
    "os_password": "mock-openstack-Pa55word",
    "vgpu_license_token": "mock-license-token-0123456789",
}
# The types of the dynamic resources the mocks answer for (each its own module/name):
# infra.topologies.magnum_k8s.kubeconfig.MagnumKubeconfig, infra.dynamic.vgpu_policy.VgpuPolicy
MAGNUM_KUBECONFIG = "pulumi-python:dynamic/gpulab:MagnumKubeconfig"
VGPU_POLICY = "pulumi-python:dynamic/gpulab:VgpuPolicy"
KUBECONFIG = "apiVersion: v1\nkind: Config\nusers:\n- user:\n    client-key-data: MOCKPRIVATEKEY\n"

TEMPLATE_VM = {
    "id": "4217d2f0-template-uuid",
    "name": "template",
    "guestId": "ubuntu64Guest",
    "scsiType": "pvscsi",
    "firmware": "efi",
    "networkInterfaceTypes": ["vmxnet3"],
    "disks": [
        {
            "label": "disk0",
            "size": 40,
            "thinProvisioned": True,
            "eagerlyScrub": False,
            "unitNumber": 0,
        }
    ],
}


@dataclass
class Registered:
    typ: str
    name: str
    inputs: dict[str, Any]


class LabMocks(pulumi.runtime.Mocks):
    """Records resources and calls; computes outputs the programs read."""

    def __init__(self) -> None:
        self.resources: list[Registered] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self._n = 0

    def of_type(self, typ: str) -> list[Registered]:
        return sorted((r for r in self.resources if r.typ == typ), key=lambda r: r.name)

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        self.resources.append(Registered(args.typ, args.name, dict(args.inputs)))
        self._n += 1
        n = self._n
        outs = dict(args.inputs)
        typ = args.typ
        if typ == "openstack:networking/floatingIp:FloatingIp":
            outs["address"] = f"198.51.100.{n}"
        elif typ == "openstack:networking/port:Port":
            outs["allFixedIps"] = [f"10.42.0.{n}"]
        elif typ == "openstack:containerinfra/cluster:Cluster":
            count = int(args.inputs.get("nodeCount", 1))
            outs["apiAddress"] = "https://198.51.100.200:6443"
            outs["nodeAddresses"] = [f"198.51.100.{201 + i}" for i in range(count)]
            outs["masterAddresses"] = ["198.51.100.199"]
            outs["kubeconfig"] = {"raw_config": KUBECONFIG, "host": outs["apiAddress"]}
        elif typ == MAGNUM_KUBECONFIG:
            # its provider talks to Magnum, which the mock runtime skips
            outs["api_address"] = "https://198.51.100.200:6443"
            outs["kubeconfig"] = KUBECONFIG
        elif typ == VGPU_POLICY:
            # the hosts report the arm's policy in effect (the real provider reads
            # it back or fails: tests/cloud/test_vgpu_policy_vcsim.py)
            outs["in_effect"] = outs["policy"]
        elif typ == "vsphere:index/virtualMachine:VirtualMachine":
            outs["defaultIpAddress"] = f"192.0.2.{n}"
            outs["moid"] = f"vm-{n}"
            # the BIOS UUID pulumi-vsphere reports; stable per VM name (VgpuProfile's vm_uuid)
            outs["uuid"] = str(uuid.uuid5(uuid.NAMESPACE_URL, f"gpulab-mock-vm/{args.name}"))
        return f"{args.name}-id", outs

    def call(self, args: pulumi.runtime.MockCallArgs) -> dict:
        self.calls.append((args.token, dict(args.args)))
        token = args.token
        results: dict[str, dict[str, Any]] = {
            "openstack:networking/getNetwork:getNetwork": {"id": "ext-net-id"},
            "openstack:images/getImage:getImage": {"id": "image-id"},
            "vsphere:index/getDatacenter:getDatacenter": {"id": "datacenter-1"},
            "vsphere:index/getComputeCluster:getComputeCluster": {
                "id": "domain-c1",
                "resourcePoolId": "resgroup-1",
            },
            "vsphere:index/getDatastore:getDatastore": {"id": "datastore-1"},
            "vsphere:index/getNetwork:getNetwork": {"id": "network-1", "type": "Network"},
            "vsphere:index/getVirtualMachine:getVirtualMachine": TEMPLATE_VM,
            "vsphere:index/getHost:getHost": {"id": "host-21", "resourcePoolId": "resgroup-1"},
        }
        if token not in results:
            raise AssertionError(f"unexpected invoke {token}")
        if token == "openstack:networking/getNetwork:getNetwork" and not args.args.get("external"):
            # an existing network by name (gpulab:network), with one subnet
            name = args.args.get("name")
            return {**dict(args.args), "id": f"{name}-id", "subnets": [f"{name}-subnet-id"]}
        return {**dict(args.args), **results[token]}


def engine_config(raw: dict[str, Any]) -> tuple[dict[str, str], list[str]]:
    """What the Pulumi engine would hand the program: strings (JSON for structured values),
    secrets decrypted and listed as secret keys."""
    config: dict[str, str] = {}
    secret_keys: list[str] = []
    for key, value in raw.items():
        full = f"gpulab:{key}"
        if isinstance(value, SecretRef):
            value = SECRET_VALUES[key]
            secret_keys.append(full)
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, list | dict):
            value = json.dumps(value)
        config[full] = str(value)
    return config, secret_keys


def stack_raw(topology: str, /, **overrides: Any) -> dict[str, Any]:
    """An example stack's gpulab keys with ``overrides`` (None removes a key)."""
    raw = raw_from_stack_file(STACKS[topology])
    for key, value in overrides.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return raw


def use_config(raw: dict[str, Any]) -> None:
    """Install ``raw`` as the running program's config (as the engine would)."""
    config, secret_keys = engine_config(raw)
    pulumi.runtime.set_all_config(config, secret_keys)
