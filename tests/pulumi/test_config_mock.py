"""Stack config validation, through the program's own path under the Pulumi mock runtime
(config handed over as the engine does: strings, JSON for lists/maps, secrets marked).

Each bad case yields exactly one message naming ``gpulab:<key>`` and what is allowed, and the
program creates no resource."""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

import pulumi
import pytest

from infra.config import ConfigError, from_pulumi_config, load_stack_file
from tests.pulumi.helpers import check, settle
from tests.pulumi.mocks import REPO, STACKS, LabMocks, stack_raw, use_config

PT = {"gpu_host": None, "pci_device_ids": None, "gpus_per_vm": None, "gpu_bar_gb": None}
CASES: list[tuple[str, dict[str, Any], str]] = [
    # unknown keys
    (
        "nova-pci",
        {"hostcount": 2},
        "gpulab:hostcount is not a known key (did you mean "
        "gpulab:host_count?); allowed for nova-pci: admin_cidr, allow_world, anti_affinity,",
    ),
    (
        "nova-pci",
        {"resource_class": "gpu"},
        "gpulab:resource_class is not used by topology nova-pci (only by ironic-bm)",
    ),
    (
        "local",
        {"image": "x"},
        "gpulab:image is not used by topology local (only by ironic-bm, nova-pci, magnum-k8s)",
    ),
    # wrong types
    ("nova-pci", {"host_count": "two"}, "gpulab:host_count must be an integer >= 1, got 'two'"),
    # YAML `true` is a bool (a subclass of int in Python): never the count 1
    ("nova-pci", {"host_count": True}, "gpulab:host_count must be an integer >= 1, got 'true'"),
    ("vsphere-gpu", {"vm_cpus": True}, "gpulab:vm_cpus must be"),
    ("nova-pci", {"cpu_pinning": "yes"}, "gpulab:cpu_pinning must be true or false, got 'yes'"),
    (
        "ironic-bm",
        {"required_traits": "CUSTOM_X"},
        "gpulab:required_traits must be a list of trait names, got 'CUSTOM_X'",
    ),
    (
        "ironic-bm",
        {"required_traits": ["custom_gpu"]},
        "gpulab:required_traits must be a list of trait names",
    ),
    (
        "nova-pci",
        {"dns_nameservers": ["8.8.8"]},
        "gpulab:dns_nameservers must be a list of IP addresses",
    ),
    (
        "magnum-k8s",
        {"labels": ["kube_tag"]},
        "gpulab:labels must be a mapping of label names to string values",
    ),
    (
        "nova-pci",
        {"lab": "My_Lab"},
        "gpulab:lab must be 2-32 characters: lowercase letters, "
        "digits and '-', starting with a letter, got 'My_Lab'",
    ),
    (
        "nova-pci",
        {"ssh_public_key": "not a key"},
        "gpulab:ssh_public_key must be an OpenSSH public key line",
    ),
    # missing required keys
    (
        "nova-pci",
        {"pci_alias": None},
        "gpulab:pci_alias is required for nova-pci: GPU alias and count per VM",
    ),
    ("ironic-bm", {"resource_class": None}, "gpulab:resource_class is required for ironic-bm"),
    ("magnum-k8s", {"server_type": None}, "gpulab:server_type is required for magnum-k8s"),
    (
        "vsphere-gpu",
        {"vsphere_password": None},
        "gpulab:vsphere_password is required for vsphere-gpu: vCenter password",
    ),
    (
        "nova-pci",
        {"topology": None},
        "gpulab:topology is required: one of ironic-bm, nova-pci, magnum-k8s, vsphere-gpu, "
        "static, local",
    ),
    (
        "vsphere-gpu",
        {"gpu_bar_gb": None},
        "gpulab:gpu_bar_gb is required for vsphere-gpu mode passthrough",
    ),
    (
        "vsphere-gpu",
        {"mode": "vgpu", **PT},
        "gpulab:vgpu_profile is required for vsphere-gpu mode vgpu",
    ),
    (
        "vsphere-gpu",
        {"mode": "bitfusion", **PT},
        "gpulab:bitfusion_server is required for vsphere-gpu mode bitfusion",
    ),
    # bad enum values
    (
        "nova-pci",
        {"topology": "openstack"},
        "gpulab:topology must be one of ironic-bm, "
        "nova-pci, magnum-k8s, vsphere-gpu, static, local, got 'openstack'",
    ),
    (
        "vsphere-gpu",
        {"mode": "sriov"},
        "gpulab:mode must be one of passthrough, vgpu, bitfusion, got 'sriov'",
    ),
    (
        "magnum-k8s",
        {"server_type": "metal"},
        "gpulab:server_type must be one of vm, bm, got 'metal'",
    ),
    (
        "magnum-k8s",
        {"network_driver": "weave"},
        "gpulab:network_driver must be one of calico, cilium, got 'weave'",
    ),
    # invalid CIDRs
    (
        "nova-pci",
        {"admin_cidr": "10.0.0.0/33"},
        "gpulab:admin_cidr must be an IPv4/IPv6 "
        "network in CIDR notation with host bits zero, e.g. 203.0.113.0/24, got '10.0.0.0/33'",
    ),
    (
        "nova-pci",
        {"admin_cidr": "203.0.113.5/24"},
        "gpulab:admin_cidr must be an IPv4/IPv6 network in CIDR notation",
    ),
    ("ironic-bm", {"lab_cidr": "10.42.0.0"}, "gpulab:lab_cidr must be an IPv4/IPv6 network"),
    ("magnum-k8s", {"admin_cidr": "anywhere"}, "gpulab:admin_cidr must be an IPv4/IPv6"),
    # counts below 1
    ("nova-pci", {"host_count": 0}, "gpulab:host_count must be an integer >= 1, got '0'"),
    ("magnum-k8s", {"node_count": 0}, "gpulab:node_count must be an integer >= 1, got '0'"),
    ("magnum-k8s", {"master_count": -1}, "gpulab:master_count must be an integer >= 1"),
    ("nova-pci", {"flavor_vcpus": 0}, "gpulab:flavor_vcpus must be an integer >= 1"),
    ("nova-pci", {"numa_nodes": 0}, "gpulab:numa_nodes must be an integer >= 1"),
    ("vsphere-gpu", {"gpus_per_vm": 0}, "gpulab:gpus_per_vm must be an integer >= 1"),
    ("vsphere-gpu", {"vm_memory_mb": 0}, "gpulab:vm_memory_mb must be an integer >= 1"),
    # malformed alias:count
    *(
        (
            "nova-pci",
            {"pci_alias": bad},
            "gpulab:pci_alias must be <alias>:<count> with a "
            f"nova.conf [pci] alias name and a count >= 1, e.g. a100:1, got '{bad}'",
        )
        for bad in ("p100", "p100:0", "p100:x", ":1", "p100:1:2", "p 100:1")
    ),
    # malformed vGPU profile names
    *(
        (
            "vsphere-gpu",
            {"mode": "vgpu", **PT, "vgpu_profile": bad},
            "gpulab:vgpu_profile must be an NVIDIA vGPU profile name like grid_p100-4q, "
            f"grid_t4-8c or grid_a100-3-20c, got '{bad}'",
        )
        for bad in ("p100-4q", "grid_p100", "GRID_P100-4Q", "grid_p100-4x", "grid_-4q")
    ),
    # what the lab measures
    ("local", {"suite": "smokey"}, "gpulab:suite must be one of the suites in workloads/suites/:"),
    (
        "nova-pci",
        {"execution_envs": ["native", "lxc"]},
        "gpulab:execution_envs must be a list of native, docker, apptainer, k8s, bitfusion, "
        "singularity",
    ),
    (
        "local",
        {"workload_variables": ["x"]},
        "gpulab:workload_variables must be a mapping of Ansible variable names to values",
    ),
    (
        "local",
        {"site": ["x"]},
        "gpulab:site must be a mapping of role inputs named <role>_... "
        "(a role under playbooks/roles/: apptainer, ",
    ),
    ("local", {"site": {"ansible_user": "x"}}, "gpulab:site must be a mapping of role inputs"),
    ("local", {"site": {"apt_mirror": "x"}}, "gpulab:site must be a mapping of role inputs"),
    ("local", {"site": {"nvidia driver": "x"}}, "gpulab:site must be a mapping of role inputs"),
    (
        "local",
        {"site": {"nvidia_driver_x": {"secure": "v1:abc"}}},
        "gpulab:site must be a mapping of role inputs",
    ),
    (
        "local",
        {"site": {f"gpulab_k{i}": i for i in range(65)}},
        "gpulab:site must be a mapping of role inputs",
    ),
    ("local", {"measure_id": "a b"}, "gpulab:measure_id must be up to 64 letters, digits"),
    # cross-key rules
    (
        "vsphere-gpu",
        {
            "mode": "vgpu",
            "vgpu_profile": "grid_p100-4q",
            "gpu_host": None,
            "gpus_per_vm": None,
            "gpu_bar_gb": None,
        },
        "gpulab:pci_device_ids is only used with gpulab:mode passthrough, not vgpu",
    ),
    (
        "vsphere-gpu",
        {"pci_device_ids": ["0000:3b:00.0"]},
        "gpulab:pci_device_ids must list host_count x gpus_per_vm = 2 devices, got 1",
    ),
    (
        "vsphere-gpu",
        {"pci_device_ids": ["0000:3b:00.0", "0000:3b:00.0"]},
        "gpulab:pci_device_ids must not repeat a device",
    ),
    (
        "vsphere-gpu",
        {"pci_device_ids": ["3b:00.0", "0000:d8:00.0"]},
        "gpulab:pci_device_ids must be a list of PCI addresses like 0000:3b:00.0",
    ),
    (
        "magnum-k8s",
        {"server_type": "bm"},
        "gpulab:docker_volume_size is only allowed with gpulab:server_type vm",
    ),
]


def _problems(topology: str, overrides: dict[str, Any]) -> list[str]:
    use_config(stack_raw(topology, **overrides))
    with pytest.raises(ConfigError) as err:
        from_pulumi_config()
    assert str(err.value) == "; ".join(err.value.problems)
    return err.value.problems


@pytest.mark.parametrize(
    ("topology", "overrides", "message"),
    CASES,
    ids=[f"{t}-{next(iter(o))}-{i}" for i, (t, o, _) in enumerate(CASES)],
)
def test_bad_config_one_message_naming_the_key_mock(
    topology: str, overrides: dict[str, Any], message: str
) -> None:
    problems = _problems(topology, overrides)
    assert len(problems) == 1, problems
    assert problems[0].startswith(message), problems[0]


def test_plaintext_secret_is_rejected_without_echoing_it_mock() -> None:
    [problem] = _problems("vsphere-gpu", {"vsphere_password": "hunter2-plain"})
    assert problem.startswith(
        "gpulab:vsphere_password must be a secret: set it with `pulumi config set --secret`"
    )
    assert "hunter2" not in problem


def test_several_problems_are_all_reported_mock() -> None:
    problems = _problems("nova-pci", {"host_count": 0, "pci_alias": "p100", "bogus": 1})
    assert [p.split(" ")[0] for p in problems] == [
        "gpulab:bogus",
        "gpulab:host_count",
        "gpulab:pci_alias",
    ]


@pytest.mark.parametrize(
    "overrides", [{"pci_alias": "p100"}, {"topology": "aws"}, {"admin_cidr": "0.0.0.0/99"}]
)
def test_program_creates_no_resource_on_bad_config_mock(
    overrides: dict[str, Any], pulumi_mocks: LabMocks
) -> None:
    @pulumi.runtime.test
    def body() -> Any:
        use_config(stack_raw("nova-pci", **overrides))
        with pytest.raises(pulumi.RunError, match=r"^invalid stack config: gpulab:"):
            runpy.run_path(str(REPO), run_name="__main__")

        async def go() -> None:
            await settle()
            assert pulumi_mocks.resources == [] and pulumi_mocks.calls == []

        return check(go())

    body()


@pytest.mark.parametrize("topology", sorted(STACKS))
def test_example_stack_files_validate_without_pulumi(topology: str) -> None:
    cfg = load_stack_file(STACKS[topology], allow_placeholders=True)
    assert cfg.topology == topology
    for key in ("vsphere_password", "os_password", "vgpu_license_token"):
        value = getattr(cfg.args, key, None)  # a key of the topology's, if it takes it
        assert value is None or repr(value) == f"<secret gpulab:{key}>"


def test_stack_file_errors_name_the_file(tmp_path: Path) -> None:
    from infra.cli.errors import UsageError

    with pytest.raises(UsageError, match="does not exist"):
        load_stack_file(tmp_path / "Pulumi.none.yaml")
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text("config:\n  gpulab:topology: [\n")
    with pytest.raises(UsageError, match=r"is not valid YAML at line \d+"):
        load_stack_file(bad)
    typed = tmp_path / "Pulumi.typed.yaml"
    typed.write_text(
        "config:\n  gpulab:topology: local\n  gpulab:lab: l1\n"
        "  gpulab:ssh_user: [x]\n  aws:region: us-east-1\n"
    )
    with pytest.raises(ConfigError, match=r"^gpulab:ssh_user must be a name of letters"):
        load_stack_file(typed)


@pytest.mark.parametrize("topology", ["nova-pci", "local"])
def test_entry_point_builds_topology_then_ansible_then_workloads_mock(
    topology: str, pulumi_mocks: LabMocks
) -> None:
    @pulumi.runtime.test
    def body() -> Any:
        use_config(stack_raw(topology))
        runpy.run_path(str(REPO), run_name="__main__")

        async def go() -> None:
            await settle()
            kinds = {r.typ for r in pulumi_mocks.resources}
            flow = {
                "pulumi-python:dynamic/gpulab:AnsibleRun",
                "pulumi-python:dynamic/gpulab:WorkloadRun",
            }
            if topology == "local":  # nothing in any cloud: the component, Ansible, workloads
                assert kinds == {"gpulab:topology:LocalLab", *flow}
            else:
                assert {
                    "gpulab:topology:NovaPciLab",
                    "openstack:compute/flavor:Flavor",
                    "openstack:compute/instance:Instance",
                    *flow,
                } <= kinds

        return check(go())

    body()


def test_config_from_engine_environment_with_secret_keys_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from tests.pulumi.mocks import SECRET_VALUES, engine_config

    config, secret_keys = engine_config(stack_raw("vsphere-gpu"))
    pulumi.runtime.set_all_config({}, [])
    monkeypatch.setenv("PULUMI_CONFIG", json.dumps(config))
    monkeypatch.setenv("PULUMI_CONFIG_SECRET_KEYS", json.dumps(secret_keys))
    cfg = from_pulumi_config()
    args = cfg.args
    assert args.mode == "passthrough" and args.pci_device_ids == ("0000:3b:00.0", "0000:d8:00.0")
    assert isinstance(args.vsphere_password, pulumi.Output)
    assert SECRET_VALUES["vsphere_password"] not in repr(cfg)


def test_workload_keys_reach_the_config_mock() -> None:
    use_config(
        stack_raw(
            "nova-pci",
            suite="closer2018",
            execution_envs=["native", "docker"],
            workload_variables={"workload_run_docker_image": "tf:2"},
        )
    )
    cfg = from_pulumi_config()
    assert cfg.suite == "closer2018"
    assert cfg.execution_envs == ("native", "docker")
    assert cfg.workload_variables == {"workload_run_docker_image": "tf:2"}
    use_config(stack_raw("local"))
    assert from_pulumi_config().suite == "smoke"


@pytest.mark.parametrize(
    ("site", "reason"),
    [
        (
            {"ansible_user": "x"},
            "'ansible_user': ansible_* connection variables are not role inputs",
        ),
        ({"apt_mirror": "x"}, "'apt_mirror' names no role"),
        ({"nvidia driver": "x"}, "'nvidia driver' is not an Ansible variable name"),
        ({"nvidia_driver_x": {"secure": "v1:abc"}}, "'nvidia_driver_x' is not a plain value"),
        ({f"gpulab_k{i}": i for i in range(65)}, "at most 64 keys"),
        ({"gpulab_big": "x" * 20000}, "at most 16384 characters as JSON"),
    ],
)
def test_site_key_names_the_bad_variable_mock(site: dict[str, Any], reason: str) -> None:
    [problem] = _problems("local", {"site": site})
    assert reason in problem, problem


def test_site_and_measure_id_reach_the_config_mock() -> None:
    site = {
        "nvidia_driver_cuda_repo_url": "http://mirror.example/nvidia",
        "workload_env_pip_index_url": "http://mirror.example/simple",
        "gpulab_extra": {"a": [1, 2.5, True, None]},
    }
    use_config(stack_raw("nova-pci", site=site, measure_id="20260101T000000Z"))
    cfg = from_pulumi_config()
    assert cfg.site == site and cfg.measure_id == "20260101T000000Z"
    use_config(stack_raw("local"))
    cfg = from_pulumi_config()
    assert cfg.site == {} and cfg.measure_id == ""
