"""magnum-k8s from the controller, as ``gpulab up`` runs it after the cluster exists: the
kubeconfig from Magnum's API into its file, the real site.yml (k8s_gpu: Job image built and
pushed, namespace and pull secret, GPU chart), then the real WorkloadRun of the k8s
environment (Job created, records fetched from its log), all through real ansible-runner.

Mocked, because they cannot run here: Magnum's API (tests/cloud/magnum_api.py, spoken to by
the real openstacksdk over HTTP), the cluster's API (tests/ansible/k8s_double: the
kubernetes.core modules replaced, no friendlier than the API: a missing namespace, a
kubeconfig its CA did not sign and an image the registry does not hold are refused), the
registry and the docker client (k8s_double/bin/docker). No kube-apiserver can be installed
from the registries this machine reaches (PyPI, Debian, npm carry none).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from infra.ansible import PlaybookError, run_playbook
from infra.ansible.inventory import InventoryError
from infra.clouds import magnum
from infra.dynamic.workload_run import WorkloadRunError, WorkloadRunProvider
from infra.hosts import Host
from infra.topologies.magnum_k8s import REGISTRY_PASSWORD_INPUT
from infra.topologies.magnum_k8s.args import MagnumK8sArgs
from infra.topologies.magnum_k8s.build import api_host_vars
from tests.cloud.magnum_api import Cluster, MagnumAPI, serve
from tests.report import synth

DOUBLE = Path(__file__).resolve().parent / "k8s_double"
REGISTRY = "registry.test:5000"
# one valid record, as the runner in the Job's pod prints it between the markers
RECORD = synth.reps(
    "magnum-k8s", "k8s", experiment="e", model="resnet50", ips=100.0, elapsed=10.0,
    suite="smoke", repeats=1,
)[0]  # fmt: skip


@dataclass
class Lab:
    api: Path  # the cluster's API (k8s double)
    registry: Path  # the registry double
    kubeconfig: Path
    host: Host
    results: Path


def _args(**over: Any) -> MagnumK8sArgs:
    base: dict[str, Any] = {
        "topology": "magnum-k8s",
        "lab": "k8s-lab",
        "node_count": 2,
        "k8s_gpu_mode": "operator",
        "registry": f"{REGISTRY}/gpulab",
        "registry_user": "lab",
    }
    base.update(over)
    return MagnumK8sArgs(**base)


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Lab]:
    root, registry, home = tmp_path / "k8s", tmp_path / "registry", tmp_path / "home"
    api = root / "127.0.0.1_6443"
    for d in (api, registry, home):
        d.mkdir(parents=True)
    (registry / "registries.json").write_text(
        json.dumps({REGISTRY: {"users": {"lab": "s3cret-pw"}}})
    )
    (api / "nodes.json").write_text(
        json.dumps([{"name": f"k8s-lab-node-{i}", "gpus": 1} for i in (0, 1)])
    )
    (api / "outcome").write_text("succeeded\n")
    begin, end = "--- gpulab records begin {run_id} ---", "--- gpulab records end {run_id} ---"
    (api / "pod.log").write_text(f"bench output\n{begin}\n{json.dumps(RECORD)}\n{end}\n")
    monkeypatch.setenv("GPULAB_TEST_K8S", str(root))
    monkeypatch.setenv("GPULAB_TEST_REGISTRY", str(registry))
    monkeypatch.setenv("ANSIBLE_COLLECTIONS_PATH", str(DOUBLE))
    monkeypatch.setenv("PATH", f"{DOUBLE / 'bin'}:{__import__('os').environ['PATH']}")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GPULAB_RESULTS", str(tmp_path / "results"))  # records: <root>/<stack>/
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "operators-own-cluster.yaml"))  # never used
    with serve(MagnumAPI()) as magnum_api:
        cluster = magnum_api.add(Cluster("c0ffee-uuid", "k8s-lab-k8s"))
        (api / "ca.pem").write_text(cluster.ca.pem)  # the cluster's API trusts its own CA only
        kubeconfig = magnum.kubeconfig_path("k8s-lab", home=home)
        server = magnum.fetch_kubeconfig(magnum_api.connection(), "k8s-lab-k8s", kubeconfig)
        assert server == "https://127.0.0.1:6443"
        host = Host(
            "k8s-lab-k8s-api",
            "127.0.0.1",
            ssh_user="ubuntu",
            groups=["k8s_control"],
            gpu_path="none",
            vars=api_host_vars(_args(), "k8s-lab-k8s", str(kubeconfig)),
        )
        yield Lab(api, registry, kubeconfig, host, tmp_path / "results")


def _site(lab: Lab, password: str = "s3cret-pw") -> Any:
    extra = {"gpulab_exec_envs": ["k8s"], "k8s_gpu_wait_timeout_s": 10}
    return run_playbook("site.yml", [lab.host], extravars=extra,
                        secrets={REGISTRY_PASSWORD_INPUT: password})  # fmt: skip


def _workloads(lab: Lab) -> dict[str, Any]:
    props = {
        "hosts": [lab.host.to_output()],
        "suite": "smoke",
        "execution_env": "k8s",
        "topology": "magnum-k8s",
        "lab": "k8s-lab",
        "variables": {"workload_run_timeout_s": 60},
        "stack": "k8s-lab",
    }
    return WorkloadRunProvider()._run(props)


@pytest.mark.slow  # two playbook runs, about 40 s on 2 cores
def test_magnum_k8s_flow_kubeconfig_chart_image_namespace_job_records(lab: Lab) -> None:
    result = _site(lab)
    assert result.ok, result.summary()
    image = lab.host.vars["workload_run_k8s_image"]
    assert image.startswith(f"{REGISTRY}/gpulab/gpulab-workloads:")
    # image pushed to the registry the config names
    assert (lab.registry / "images" / image.replace("/", "%2F")).exists()
    # its build context holds the runner's sources as they are, and no byte code
    context = lab.results.parent / "home/.cache/gpulab/k8s_image"
    source = Path(__import__("workloads").__file__).parent
    files = {p.relative_to(source) for p in source.rglob("*") if p.is_file()}
    wanted = {f for f in files if "__pycache__" not in f.parts and f.suffix != ".pyc"}
    built = {p.relative_to(context / "workloads") for p in (context / "workloads").rglob("*")}
    assert {f for f in built if (context / "workloads" / f).is_file()} == wanted
    assert (context / "workloads/__main__.py").read_bytes() == (source / "__main__.py").read_bytes()
    # namespace and pull secret with the registry's credentials, chart installed
    assert (lab.api / "namespaces" / "gpulab").exists()
    secret = json.loads((lab.api / "objects/Secret/gpulab/gpulab-registry.json").read_text())
    assert secret["type"] == "kubernetes.io/dockerconfigjson"
    release = json.loads((lab.api / "helm/releases/gpu-operator/gpu-operator.json").read_text())
    assert (release["chart"], release["version"]) == ("nvidia/gpu-operator", "v25.10.1")
    # driver and toolkit in containers: the nodes' image has neither
    assert release["values"]["driver"]["enabled"] is True
    assert release["values"]["toolkit"]["enabled"] is True
    print("site:", result.summary())

    outs = _workloads(lab)
    assert outs["status"] == "ok" and len(outs["records"]) == 1
    [job_file] = (lab.api / "jobs" / "gpulab").glob("*.json")
    job = json.loads(job_file.read_text())
    pod = job["spec"]["template"]["spec"]
    assert pod["containers"][0]["image"] == image
    assert pod["imagePullSecrets"] == [{"name": "gpulab-registry"}]
    files = list(lab.results.rglob("*.jsonl"))
    fetched = [json.loads(ln) for f in files for ln in f.read_text().splitlines()]
    assert fetched == [RECORD], files
    print("workloads:", outs["summary"])


@pytest.mark.slow
def test_magnum_k8s_job_that_cannot_pull_its_image_fails_in_one_line(lab: Lab) -> None:
    lab.host.vars["workload_run_k8s_image"] = f"{REGISTRY}/gpulab/gpulab-workloads:not-pushed"
    (lab.api / "namespaces").mkdir()
    (lab.api / "namespaces" / "gpulab").touch()
    with pytest.raises(WorkloadRunError) as exc:
        _workloads(lab)
    msg = str(exc.value)
    print(msg)
    assert "\n" not in msg
    assert "cluster k8s-lab-k8s: Job gpulab-k8s-" in msg
    assert (
        f"image {REGISTRY}/gpulab/gpulab-workloads:not-pushed cannot be pulled (ErrImagePull" in msg
    )
    assert "the Job is kept" in msg
    # the Job stays (for gpulab down / kubectl delete job), it was never reported a success
    assert list((lab.api / "jobs" / "gpulab").glob("*.json"))


@pytest.mark.integration
def test_magnum_k8s_job_in_a_missing_namespace_is_refused(lab: Lab) -> None:
    with pytest.raises(WorkloadRunError) as exc:
        _workloads(lab)
    assert 'namespaces \\"gpulab\\" not found' in str(exc.value) or (
        'namespaces "gpulab" not found' in str(exc.value)
    )
    assert "cluster k8s-lab-k8s: create Job" in str(exc.value)


@pytest.mark.slow
def test_magnum_k8s_registry_that_refuses_the_push_is_one_line(lab: Lab) -> None:
    regs = json.loads((lab.registry / "registries.json").read_text())
    regs[REGISTRY]["refuse_push"] = True
    (lab.registry / "registries.json").write_text(json.dumps(regs))
    with pytest.raises(PlaybookError) as exc:
        run_playbook("site.yml", [lab.host], extravars={"gpulab_exec_envs": ["k8s"]},
                     secrets={REGISTRY_PASSWORD_INPUT: "s3cret-pw"})  # fmt: skip
    msg = str(exc.value)
    print(msg)
    assert "\n" not in msg and "s3cret-pw" not in msg
    assert f"cluster k8s-lab-k8s: push the Job image {REGISTRY}/gpulab/" in msg
    assert "denied: requested access to the resource is denied" in msg


@pytest.mark.slow  # the site run until the API refuses it: 50 to 220 s on 2 cores
def test_magnum_k8s_kubeconfig_of_another_cluster_is_refused(lab: Lab, tmp_path: Path) -> None:
    """A kubeconfig the cluster's CA did not sign gets the API's 401, as the real API's TLS."""
    other = yaml.safe_load(lab.kubeconfig.read_text())
    with serve(MagnumAPI()) as api2:
        api2.add(Cluster("other-uuid", "other"))
        text, _ = magnum.cluster_kubeconfig(api2.connection(), "other")
    other["users"] = yaml.safe_load(text)["users"]
    lab.kubeconfig.write_text(yaml.safe_dump(other))
    with pytest.raises(PlaybookError) as exc:
        _site(lab)
    assert "Unauthorized" in str(exc.value)


def test_ansible_runs_never_see_the_operators_kubeconfig(tmp_path: Path) -> None:
    """Without a lab kubeconfig, a run names none (/dev/null), not the operator's $KUBECONFIG."""
    from infra.ansible.runner import kube_env

    assert kube_env([Host("gpu-0", "10.0.0.5", gpu_path="whole-machine")]) == {
        "KUBECONFIG": "/dev/null",
        "K8S_AUTH_KUBECONFIG": "/dev/null",
    }
    h = Host("api", "127.0.0.1", gpu_path="none", vars={"gpulab_kubeconfig": "/k/lab.yaml"})
    assert kube_env([h])["KUBECONFIG"] == "/k/lab.yaml"
    # the path comes from the stack's hosts output: a plain absolute path, one per run
    bad = Host("api", "127.0.0.1", gpu_path="none", vars={"gpulab_kubeconfig": "~/x; id"})
    with pytest.raises(InventoryError, match="gpulab_kubeconfig must be an absolute path"):
        kube_env([bad])
    other = Host("api2", "127.0.0.1", gpu_path="none", vars={"gpulab_kubeconfig": "/k/b.yaml"})
    with pytest.raises(InventoryError, match="the hosts name 2 kubeconfigs"):
        kube_env([h, other])
