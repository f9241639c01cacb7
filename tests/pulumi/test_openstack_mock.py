"""Mock-runtime tests (Pulumi engine and OpenStack provider are test doubles): the three
OpenStack example stacks build the right flavors, security rules, tags and hosts."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from infra.clouds.magnum import kubeconfig_path
from infra.config import validate
from tests.pulumi.helpers import Exports, check, resolve, run_stack, settle
from tests.pulumi.mocks import MAGNUM_KUBECONFIG, LabMocks, stack_raw

FLAVOR = "openstack:compute/flavor:Flavor"
INSTANCE = "openstack:compute/instance:Instance"
RULE = "openstack:networking/secGroupRule:SecGroupRule"
SECGROUP = "openstack:networking/secGroup:SecGroup"
SERVER_GROUP = "openstack:compute/serverGroup:ServerGroup"
TAGGED = {
    "openstack:networking/network:Network",
    "openstack:networking/subnet:Subnet",
    "openstack:networking/router:Router",
    "openstack:networking/secGroup:SecGroup",
    "openstack:networking/port:Port",
    "openstack:networking/floatingIp:FloatingIp",
    INSTANCE,
}


def _rules(mocks: LabMocks) -> list[dict[str, Any]]:
    keys = (
        "direction",
        "ethertype",
        "protocol",
        "portRangeMin",
        "portRangeMax",
        "remoteIpPrefix",
        "securityGroupId",
    )
    return sorted(
        ({k: r.inputs.get(k) for k in keys} for r in mocks.of_type(RULE)),
        key=lambda r: str(r["remoteIpPrefix"]),
    )


@pulumi.runtime.test
def test_ironic_bm_mock_flavor_extra_specs_exact(pulumi_mocks: LabMocks) -> Any:
    run_stack("ironic-bm")

    async def go() -> None:
        await settle()
        [flavor] = pulumi_mocks.of_type(FLAVOR)
        assert flavor.inputs["extraSpecs"] == {
            "resources:CUSTOM_BAREMETAL_GPU_P100": "1",
            "resources:VCPU": "0",
            "resources:MEMORY_MB": "0",
            "resources:DISK_GB": "0",
            "trait:CUSTOM_GPU_NVIDIA_P100": "required",
        }
        assert (flavor.inputs["vcpus"], flavor.inputs["ram"], flavor.inputs["disk"]) == (
            40,
            262144,
            400,
        )
        servers = pulumi_mocks.of_type(INSTANCE)
        assert [s.name for s in servers] == ["bm-lab-gpu-0", "bm-lab-gpu-1"]
        for s in servers:
            assert s.inputs["flavorId"] == "bm-lab-bm-id"
            assert s.inputs["imageId"] == "image-id"
            assert s.inputs["configDrive"] is True
            assert s.inputs["keyPair"] == "bm-lab-key"
            ud = s.inputs["userData"]
            assert ud.startswith("#cloud-config\n") and f"hostname: {s.name}\n" in ud
            assert "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIReplaceWithYourOwnPublicKey" in ud
            assert "gpu_path=whole-machine" in ud

    return check(go())


@pytest.mark.parametrize(
    ("resource_class", "spec"),
    [
        ("baremetal.gpu-p100", "CUSTOM_BAREMETAL_GPU_P100"),
        ("gpu_v100", "CUSTOM_GPU_V100"),
        ("CUSTOM_GPU_A100", "CUSTOM_GPU_A100"),
        ("Bm.Gpu.2", "CUSTOM_BM_GPU_2"),
    ],
)
def test_resource_class_normalized_like_nova(resource_class: str, spec: str) -> None:
    cfg = validate(stack_raw("ironic-bm", resource_class=resource_class, required_traits=None))
    from infra.topologies.ironic_bm.build import baremetal_extra_specs

    assert baremetal_extra_specs(cfg.args) == {
        f"resources:{spec}": "1",
        "resources:VCPU": "0",
        "resources:MEMORY_MB": "0",
        "resources:DISK_GB": "0",
    }


@pulumi.runtime.test
def test_nova_pci_mock_flavor_and_anti_affinity(pulumi_mocks: LabMocks) -> Any:
    run_stack("nova-pci")

    async def go() -> None:
        await settle()
        [flavor] = pulumi_mocks.of_type(FLAVOR)
        assert flavor.inputs["extraSpecs"] == {
            "pci_passthrough:alias": "p100:1",
            "hw:cpu_policy": "dedicated",
            "hw:numa_nodes": "1",
        }
        [group] = pulumi_mocks.of_type(SERVER_GROUP)
        assert group.inputs["policies"] == "anti-affinity"
        servers = pulumi_mocks.of_type(INSTANCE)
        assert len(servers) == 2
        for s in servers:
            assert s.inputs["schedulerHints"] == [{"group": "pci-lab-spread-id"}]
            assert s.inputs.get("configDrive") is False

    return check(go())


@pulumi.runtime.test
def test_nova_pci_mock_minimal_flavor_without_pinning_numa_or_group(
    pulumi_mocks: LabMocks,
) -> Any:
    run_stack(
        "nova-pci",
        pci_alias="a100:4",
        cpu_pinning=False,
        numa_nodes=None,
        anti_affinity=False,
        host_count=3,
    )

    async def go() -> None:
        await settle()
        [flavor] = pulumi_mocks.of_type(FLAVOR)
        assert flavor.inputs["extraSpecs"] == {"pci_passthrough:alias": "a100:4"}
        assert pulumi_mocks.of_type(SERVER_GROUP) == []
        servers = pulumi_mocks.of_type(INSTANCE)
        assert len(servers) == 3
        assert all("schedulerHints" not in s.inputs for s in servers)

    return check(go())


@pytest.mark.parametrize("topology", ["ironic-bm", "nova-pci"])
def test_security_group_rules_exact_mock(topology: str, pulumi_mocks: LabMocks) -> None:
    @pulumi.runtime.test
    def body() -> Any:
        cfg, _, _ = run_stack(topology)

        async def go() -> None:
            await settle()
            [group] = pulumi_mocks.of_type(SECGROUP)
            gid = f"{group.name}-id"
            assert _rules(pulumi_mocks) == [
                {
                    "direction": "ingress",
                    "ethertype": "IPv4",
                    "protocol": None,
                    "portRangeMin": None,
                    "portRangeMax": None,
                    "remoteIpPrefix": cfg.args.lab_cidr,
                    "securityGroupId": gid,
                },
                {
                    "direction": "ingress",
                    "ethertype": "IPv4",
                    "protocol": "tcp",
                    "portRangeMin": 22,
                    "portRangeMax": 22,
                    "remoteIpPrefix": "203.0.113.0/24",
                    "securityGroupId": gid,
                },
            ]
            # every server port carries the lab group and only it
            ports = pulumi_mocks.of_type("openstack:networking/port:Port")
            assert ports and all(p.inputs["securityGroupIds"] == [gid] for p in ports)
            assert all(p.inputs["networkId"] == f"{cfg.lab}-net-id" for p in ports)

        return check(go())

    body()


@pulumi.runtime.test
def test_security_group_mock_has_no_open_world_rule_unless_configured(
    pulumi_mocks: LabMocks,
) -> Any:
    run_stack("nova-pci", admin_cidr="2001:db8::/48")

    async def go() -> None:
        await settle()
        prefixes = {r["remoteIpPrefix"] for r in _rules(pulumi_mocks)}
        assert prefixes == {"2001:db8::/48", "10.42.2.0/24"}
        assert not prefixes & {"0.0.0.0/0", "::/0", None}
        ssh = [r for r in _rules(pulumi_mocks) if r["protocol"] == "tcp"]
        assert ssh[0]["ethertype"] == "IPv6"

    return check(go())


@pytest.mark.parametrize("topology", ["ironic-bm", "nova-pci", "magnum-k8s"])
def test_every_openstack_resource_names_the_lab_mock(topology: str, pulumi_mocks: LabMocks) -> None:
    @pulumi.runtime.test
    def body() -> Any:
        cfg, _, _ = run_stack(topology)

        async def go() -> None:
            await settle()
            made = [r for r in pulumi_mocks.resources if r.typ.startswith("openstack:")]
            assert made
            for r in made:
                assert r.name.startswith(f"{cfg.lab}-"), r
                if "name" in r.inputs:
                    assert r.inputs["name"].startswith(f"{cfg.lab}-"), r
                if r.typ in TAGGED:
                    assert f"gpulab-lab={cfg.lab}" in r.inputs["tags"], r
            for s in pulumi_mocks.of_type(INSTANCE):
                assert s.inputs["metadata"]["gpulab_lab"] == cfg.lab
            # the router uplinks to the configured external network
            [router] = pulumi_mocks.of_type("openstack:networking/router:Router")
            assert router.inputs["externalNetworkId"] == "ext-net-id"
            lookups = dict(pulumi_mocks.calls)
            assert lookups["openstack:networking/getNetwork:getNetwork"] == {
                "name": "public",
                "external": True,
            }

        return check(go())

    body()


@pulumi.runtime.test
def test_magnum_mock_template_cluster_and_secret_kubeconfig(
    pulumi_mocks: LabMocks, monkeypatch: pytest.MonkeyPatch
) -> Any:
    # what each dynamic resource asks the engine to keep secret (the mock runtime does not
    # mark outputs itself)
    secret_outputs: dict[str, list[str]] = {}
    register = pulumi.dynamic.Resource.__init__

    def spy(self: Any, provider: Any, name: str, props: Any, opts: Any = None) -> None:
        secret_outputs[name] = list((opts and opts.additional_secret_outputs) or [])
        register(self, provider, name, props, opts)

    monkeypatch.setattr(pulumi.dynamic.Resource, "__init__", spy)
    exports = Exports()
    run_stack("magnum-k8s", exports)

    async def go() -> None:
        await settle()
        [tpl] = pulumi_mocks.of_type("openstack:containerinfra/clusterTemplate:ClusterTemplate")
        i = tpl.inputs
        assert (i["coe"], i["serverType"], i["flavor"], i["masterFlavor"], i["image"]) == (
            "kubernetes",
            "vm",
            "g1.p100",
            "m1.large",
            "ubuntu-2204-kube-v1.30.4",
        )
        assert (i["networkDriver"], i["dockerVolumeSize"]) == ("calico", 50)
        assert (i["fixedNetwork"], i["fixedSubnet"]) == ("k8s-lab-net-id", "k8s-lab-subnet-id")
        assert i["externalNetworkId"] == "ext-net-id" and i["keypairId"] == "k8s-lab-key"
        # the Cluster API driver's labels (magnum-cluster-api docs/user/labels.md)
        assert i["labels"] == {
            "gpulab_lab": "k8s-lab",
            "gpulab_topology": "magnum-k8s",
            "auto_healing_enabled": "false",
            "auto_scaling_enabled": "false",
            "kube_tag": "v1.30.4",
        }
        assert "fedora" not in str(i).lower() and "coreos" not in str(i).lower()
        print("cluster template:", {k: i[k] for k in sorted(i) if k != "__defaults"})
        [cluster] = pulumi_mocks.of_type("openstack:containerinfra/cluster:Cluster")
        assert cluster.inputs["clusterTemplateId"] == "k8s-lab-k8s-template-id"
        assert (cluster.inputs["masterCount"], cluster.inputs["nodeCount"]) == (1, 2)
        # Magnum makes its own security groups: the lab makes none
        assert pulumi_mocks.of_type(SECGROUP) == [] and pulumi_mocks.of_type(RULE) == []
        # the kubeconfig is a file and the fetching resource's secret, never a stack output
        assert "kubeconfig" not in exports
        assert {"kubeconfig", "os_password"} <= set(secret_outputs["k8s-lab-kubeconfig"])
        hosts, hosts_secret = await resolve(exports["hosts"])
        assert not hosts_secret
        # the API host on the controller only: the nodes are never logged in to
        assert [(h["name"], h["address"], h["gpu_path"], h["groups"]) for h in hosts] == [
            ("k8s-lab-k8s-api", "198.51.100.200", "none", ["k8s_control"]),
        ]
        v = hosts[0]["vars"]
        assert v["api_url"] == "https://198.51.100.200:6443"
        assert v["ansible_connection"] == "local" and v["ansible_become"] is False
        # the kubeconfig the lab fetched from Magnum, never the operator's $KUBECONFIG
        path = str(kubeconfig_path("test"))  # the mock runtime's stack
        assert v["gpulab_kubeconfig"] == path and path.endswith("/.kube/gpulab-test.yaml")
        assert v["workload_run_k8s_kubeconfig"] == v["k8s_gpu_kubeconfig"] == path
        # fetched from Magnum's API by the lab's own resource, after the cluster
        [kc] = pulumi_mocks.of_type(MAGNUM_KUBECONFIG)
        assert (kc.inputs["cluster"], kc.inputs["path"]) == ("k8s-lab-k8s-id", path)
        assert "KUBECONFIG" not in str(v)
        assert all(h["ssh_user"] == "ubuntu" for h in hosts)

    return check(go())


@pulumi.runtime.test
def test_magnum_mock_bare_metal_nodes(pulumi_mocks: LabMocks) -> Any:
    _, _, hosts = run_stack("magnum-k8s", server_type="bm", docker_volume_size=None, node_count=1)

    async def go() -> None:
        await settle()
        [tpl] = pulumi_mocks.of_type("openstack:containerinfra/clusterTemplate:ClusterTemplate")
        # the driver provides server type vm only: bare-metal workers are an Ironic flavor
        assert tpl.inputs["serverType"] == "vm" and "dockerVolumeSize" not in tpl.inputs
        assert [h.gpu_path for h in hosts] == ["none"]
        assert hosts[0].vars["workload_run_k8s_gpu_path"] == "container-bm"

    return check(go())


NET = "openstack:networking/network:Network"
SUBNET = "openstack:networking/subnet:Subnet"
ROUTER = "openstack:networking/router:Router"
ROUTER_IF = "openstack:networking/routerInterface:RouterInterface"
FIP = "openstack:networking/floatingIp:FloatingIp"
PORT = "openstack:networking/port:Port"
GET_NETWORK = "openstack:networking/getNetwork:getNetwork"
# ironic-bm on the provider network its nodes are cabled to (Ironic's flat network interface)
ON_FLAT = {"network": "provisioning", "lab_cidr": None, "dns_nameservers": None}


@pulumi.runtime.test
def test_ironic_bm_on_existing_flat_network_makes_no_network_router_or_fip_mock(
    pulumi_mocks: LabMocks,
) -> Any:
    exports = Exports()
    run_stack("ironic-bm", exports, external_network=None, **ON_FLAT)

    async def go() -> None:
        await settle()
        for typ in (NET, SUBNET, ROUTER, ROUTER_IF, FIP):
            assert pulumi_mocks.of_type(typ) == [], typ
        # the network is looked up by name; no external network is asked for
        assert [a for t, a in pulumi_mocks.calls if t == GET_NETWORK] == [{"name": "provisioning"}]
        ports = pulumi_mocks.of_type(PORT)
        assert [p.name for p in ports] == ["bm-lab-gpu-0-port", "bm-lab-gpu-1-port"]
        for p in ports:
            assert p.inputs["networkId"] == "provisioning-id"
            assert "fixedIps" not in p.inputs  # Neutron picks the provider subnet's address
            assert p.inputs["securityGroupIds"] == ["bm-lab-secgroup-id"]
        # between lab hosts: members of the lab group only (others share a provider network)
        rules = sorted(
            (
                r.inputs["ethertype"],
                r.inputs.get("remoteGroupId") or "",
                r.inputs.get("remoteIpPrefix") or "",
            )
            for r in pulumi_mocks.of_type(RULE)
        )
        assert rules == [
            ("IPv4", "", "203.0.113.0/24"),
            ("IPv4", "bm-lab-secgroup-id", ""),
            ("IPv6", "bm-lab-secgroup-id", ""),
        ]
        # the host's address is its fixed IP on the provider network
        hosts, _ = await resolve(exports["hosts"])
        for h in hosts:
            assert h["address"].startswith("10.42.0.")
            assert h["vars"]["private_address"] == h["address"]
        assert len(pulumi_mocks.of_type(INSTANCE)) == 2

    return check(go())


@pulumi.runtime.test
def test_nova_pci_on_existing_routed_network_with_floating_ips_mock(
    pulumi_mocks: LabMocks,
) -> Any:
    exports = Exports()
    run_stack("nova-pci", exports, network="project-net", lab_cidr=None, floating_ips=True)

    async def go() -> None:
        await settle()
        for typ in (NET, SUBNET, ROUTER, ROUTER_IF):
            assert pulumi_mocks.of_type(typ) == [], typ
        calls = [a for t, a in pulumi_mocks.calls if t == GET_NETWORK]
        assert {"name": "project-net"} in calls and {"name": "public", "external": True} in calls
        fips = pulumi_mocks.of_type(FIP)
        assert [f.inputs["pool"] for f in fips] == ["public", "public"]
        assert all(p.inputs["networkId"] == "project-net-id" for p in pulumi_mocks.of_type(PORT))
        hosts, _ = await resolve(exports["hosts"])
        assert all(h["address"].startswith("198.51.100.") for h in hosts)

    return check(go())


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        (
            {"network": "provisioning", "dns_nameservers": None},
            "gpulab:lab_cidr is for the subnet the lab makes; with gpulab:network provisioning "
            "the lab makes none and the hosts take addresses from a subnet of that network: "
            "remove gpulab:lab_cidr",
        ),
        (
            {"network": "provisioning", "lab_cidr": None},
            "gpulab:dns_nameservers is for the subnet the lab makes; with gpulab:network "
            "provisioning the lab makes none and its subnet's DNS servers are the network "
            "owner's (openstack subnet set --dns-nameserver): remove gpulab:dns_nameservers",
        ),
        (
            {**ON_FLAT, "external_network": None, "floating_ips": True},
            "gpulab:external_network is required for ironic-bm: floating IPs come from it",
        ),
        (
            {"external_network": None},
            "gpulab:external_network is required for ironic-bm: the lab router uplinks to it",
        ),
    ],
)
def test_network_keys_refused_with_one_line_each(overrides: dict[str, Any], problem: str) -> None:
    from infra.config import ConfigError

    with pytest.raises(ConfigError) as err:
        validate(stack_raw("ironic-bm", **overrides))
    assert err.value.problems == [problem]


def test_floating_ips_default_follows_the_network() -> None:
    made = validate(stack_raw("ironic-bm"))
    existing = validate(stack_raw("ironic-bm", external_network=None, **ON_FLAT))
    assert (made.args.floating_ips, existing.args.floating_ips) == (True, False)
    assert existing.args.network == "provisioning" and made.args.network is None
