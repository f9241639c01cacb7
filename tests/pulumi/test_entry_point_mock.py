"""The program as the Pulumi engine starts it, under the MOCK runtime (the Pulumi CLI and engine
cannot run here; ``pulumi.runtime.set_mocks`` stands in for the engine and the clouds).

The Python language host runs the program directory as ``__main__`` (``runpy.run_path`` of the
directory) with cwd = that directory and ``sys.path[0]`` = that directory. Pulumi.yaml has no
``main:``, so that is the repository root: these tests do exactly that, for the config of every
``Pulumi.*.yaml`` at the root and under ``examples/`` (found by glob, so a new stack file is
covered), and check the exports and the dependency chain the engine would see in each
``RegisterResource`` request: site AnsibleRun after every host resource (and every vGPU
attach), each WorkloadRun after the previous one, the first after the site run.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pulumi
import pytest
import yaml

from infra import access
from infra.config import raw_from_stack_file, validate
from infra.dynamic import execution_envs
from tests.pulumi.entry import RecordingMonitor, run_entry_point, stack_config
from tests.pulumi.helpers import check, settle
from tests.pulumi.mocks import REPO

ANSIBLE = "pulumi-python:dynamic/gpulab:AnsibleRun"
WORKLOAD = "pulumi-python:dynamic/gpulab:WorkloadRun"
VGPU = "pulumi-python:dynamic/gpulab:VgpuProfile"
SDK_DEFAULT = "pulumi-python:dynamic:Resource"  # a dynamic resource without a name of its own
REQUIRED_EXPORTS = {"topology", "lab", "hosts", "provision", "results"}
# the root's real stacks and every example stack (examples/<topology>/Pulumi.<topology>.yaml)
STACK_FILES = sorted(REPO.glob("Pulumi.*.yaml")) + sorted(REPO.glob("examples/*/Pulumi.*.yaml"))
VGPU_MODE = {
    "mode": "vgpu",
    "vgpu_profile": "grid_p100-4q",
    "gpu_host": None,
    "pci_device_ids": None,
    "gpus_per_vm": None,
    "gpu_bar_gb": None,
}
# (stack name, stack file, config overrides): every stack file, plus vsphere-gpu in vGPU mode
CASES: list[tuple[str, Path, dict[str, Any]]] = [
    (p.name[len("Pulumi.") : -len(".yaml")], p, {}) for p in STACK_FILES
] + [("vsphere-gpu-vgpu", REPO / "examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml", VGPU_MODE)]


def check_flow(
    stack: str, raw: dict[str, Any], monitor: RecordingMonitor, exports: dict[str, Any]
) -> None:
    """What every stack must show the engine; raises AssertionError naming what is missing."""
    missing = REQUIRED_EXPORTS - set(exports)
    assert not missing, f"{stack}: the program does not export {sorted(missing)}"
    sites = monitor.of_type(ANSIBLE)
    assert [s.inputs["playbook"] for s in sites] == ["site.yml"], f"{stack}: one site run"
    site = sites[0]
    (component,) = [r for r in monitor.regs if r.typ.startswith("gpulab:topology:")]
    # every custom resource the topology made (hosts, networks, providers, vGPU attach)
    held = {
        r.urn
        for r in monitor.regs
        if r.custom and r.urn.split("::")[2].startswith(component.typ + "$")
    }
    assert held <= site.deps, f"{stack}: site run does not wait for {sorted(held - site.deps)}"
    if raw.get("topology") not in ("local", "static"):  # those two build nothing
        assert held, f"{stack}: the topology made no resource"
    unnamed = [r.name for r in monitor.regs if r.typ == SDK_DEFAULT]
    assert not unnamed, f"{stack}: dynamic resources of the SDK's default type: {unnamed}"
    vgpus = {r.urn for r in monitor.regs if r.typ == VGPU}
    if raw.get("mode") == "vgpu":
        assert len(vgpus) == int(raw.get("host_count", 1)), f"{stack}: vGPU attach missing"
    assert vgpus <= site.deps, f"{stack}: site run does not wait for the vGPU attach"
    # registrations reach the engine in any order: the chain follows the configured order
    envs = execution_envs(validate(raw))
    runs = sorted(monitor.of_type(WORKLOAD), key=lambda r: envs.index(r.inputs["execution_env"]))
    assert [r.inputs["execution_env"] for r in runs] == envs, f"{stack}: one run per environment"
    previous = site
    for run in runs:
        assert previous.urn in run.deps, f"{stack}: {run.name} does not wait for {previous.name}"
        previous = run


@pytest.mark.parametrize(("stack", "path", "overrides"), CASES, ids=[c[0] for c in CASES])
def test_entry_point_runs_the_whole_flow_mock(
    stack: str, path: Path, overrides: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    raw = stack_config(path, overrides)
    # The machines a static stack lists do not exist here: the SSH logins that check them
    # before anything is built are doubled (tests/e2e/test_static_e2e.py runs them for real).
    logins: list[list[str]] = []
    monkeypatch.setattr(access, "_ssh", lambda argv: logins.append(argv))
    monkeypatch.setattr(access, "key_problem", lambda path: None)

    @pulumi.runtime.test
    def body() -> Any:
        monitor, exports = run_entry_point(stack, raw, monkeypatch)

        async def go() -> None:
            await settle()
            check_flow(stack, raw, monitor, exports)
            for name in ("provision", "results"):
                value = await pulumi.Output.from_input(exports[name]).future()
                assert isinstance(value, dict), name
            for run in monitor.of_type(WORKLOAD):
                # the stack's name: where its records go on the controller is no input
                assert run.inputs["stack"] == stack and "results_dir" not in run.inputs
                assert run.inputs["triggers"] == [raw.get("measure_id", "")]
            # the program and everything it imports come from this checkout
            assert Path(sys.modules["infra"].__file__ or "").resolve().parent == REPO / "infra"

        return check(go())

    body()


def test_every_example_stack_is_covered() -> None:
    names = {c[0] for c in CASES}
    assert {"ironic-bm", "nova-pci", "magnum-k8s", "vsphere-gpu", "static", "local"} <= names


def test_site_config_reaches_the_site_run_under_the_program_variables_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    site = {
        "nvidia_driver_cuda_repo_url": "http://mirror.example/nvidia",
        "workload_env_pip_extra_args": "--trusted-host mirror.example",
        "gpulab_topology": "not-this",
    }
    raw = stack_config(
        REPO / "examples/nova-pci/Pulumi.nova-pci.yaml",
        {
            "site": site,
            "execution_envs": ["native", "docker", "singularity"],
            "measure_id": "20260101T000000Z",
        },
    )

    @pulumi.runtime.test
    def body() -> Any:
        monitor, exports = run_entry_point("nova-pci", raw, monkeypatch)

        async def go() -> None:
            await settle()
            check_flow("nova-pci", raw, monitor, exports)
            (s,) = monitor.of_type(ANSIBLE)
            variables = s.inputs["variables"]
            assert variables["nvidia_driver_cuda_repo_url"] == site["nvidia_driver_cuda_repo_url"]
            assert variables["workload_env_pip_extra_args"] == site["workload_env_pip_extra_args"]
            assert variables["gpulab_topology"] == "nova-pci"  # the program's own win
            # singularity is accepted and runs as the one name, apptainer
            assert [r.inputs["execution_env"] for r in monitor.of_type(WORKLOAD)] == [
                "native",
                "docker",
                "apptainer",
            ]
            assert all(
                r.inputs["triggers"] == ["20260101T000000Z"] for r in monitor.of_type(WORKLOAD)
            )
            assert "20260101T000000Z" not in repr(s.inputs)  # measure_id is not an Ansible input

        return check(go())

    body()


# -- the checks can fail --------------------------------------------------------------------


def _flow_problem(monkeypatch: pytest.MonkeyPatch, stack: str, raw: dict[str, Any]) -> str:
    problems: list[str] = []

    @pulumi.runtime.test
    def body() -> Any:
        monitor, exports = run_entry_point(stack, raw, monkeypatch)

        async def go() -> None:
            await settle()
            try:
                check_flow(stack, raw, monitor, exports)
            except AssertionError as exc:
                problems.append(str(exc).splitlines()[0])

        return check(go())

    body()
    assert problems, "check_flow accepted a broken program"
    return problems[0]


def test_a_program_that_stops_after_the_topology_fails_the_check_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from infra import program

    def topology_only(cfg: Any) -> Any:
        component, hosts = program.build(cfg)
        program.export_lab(cfg, component, hosts)

    monkeypatch.setattr(program, "run", topology_only)
    raw = raw_from_stack_file(REPO / "Pulumi.local.yaml")
    assert "does not export ['provision', 'results']" in _flow_problem(monkeypatch, "local", raw)


def test_parallel_workload_runs_fail_the_check_mock(monkeypatch: pytest.MonkeyPatch) -> None:
    from infra.dynamic import workload_run

    original: Any = workload_run.WorkloadRun.__init__

    def no_depends_on(self: Any, *args: Any, opts: Any = None, **kw: Any) -> None:
        original(self, *args, opts=pulumi.ResourceOptions(), **kw)

    monkeypatch.setattr(workload_run.WorkloadRun, "__init__", no_depends_on)
    raw = stack_config(
        REPO / "examples/nova-pci/Pulumi.nova-pci.yaml", {"execution_envs": ["native", "docker"]}
    )
    problem = _flow_problem(monkeypatch, "nova-pci", raw)
    assert "workloads-native does not wait for" in problem and "site" in problem


def test_a_site_run_before_the_vgpu_attach_fails_the_check_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from infra.dynamic import ansible_run

    original: Any = ansible_run.AnsibleRun.__init__

    def no_depends_on(self: Any, *args: Any, opts: Any = None, **kw: Any) -> None:
        original(self, *args, opts=pulumi.ResourceOptions(), **kw)

    monkeypatch.setattr(ansible_run.AnsibleRun, "__init__", no_depends_on)
    raw = stack_config(REPO / "examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml", VGPU_MODE)
    assert "site run does not wait for" in _flow_problem(monkeypatch, "vsphere-gpu", raw)


# -- the layout the engine starts ------------------------------------------------------------


def test_layout_program_and_virtualenv_at_the_project_root() -> None:
    """Pulumi.yaml has no ``main:``: the language host and the dynamic-provider host both
    start in the project root and resolve ``virtualenv: .venv`` there."""
    project = yaml.safe_load((REPO / "Pulumi.yaml").read_text())
    assert "main" not in project
    assert project["runtime"] == {
        "name": "python",
        "options": {"toolchain": "pip", "virtualenv": ".venv"},
    }
    assert (REPO / "__main__.py").is_file()
    assert not (REPO / "infra" / "__main__.py").exists()
    assert "sys.path" not in (REPO / "__main__.py").read_text()


def test_nothing_at_the_root_shadows_an_installed_module() -> None:
    """With cwd = the project root first on sys.path, a top-level module or package named like
    an installed or standard module would replace it in the program and the provider host.

    A directory without ``__init__.py`` (``collections/``, Ansible's standard place for
    ``requirements.yml``) is only a namespace portion: the import system keeps looking and a
    regular module of that name found later wins, so it shadows only another namespace
    package."""
    ours = {"infra", "workloads", "report"}
    others = [p for p in sys.path if p and Path(p).resolve() != REPO]
    shadowing = []
    for entry in REPO.iterdir():
        name = entry.stem if entry.suffix == ".py" else entry.name
        if not name.isidentifier() or name in ours or name.startswith("__"):
            continue
        if entry.is_dir() and not (entry / "__init__.py").exists():
            spec = importlib.machinery.PathFinder.find_spec(name, others)
            if spec is not None and spec.origin is None:  # another namespace package
                shadowing.append(name)
            continue
        if name in sys.stdlib_module_names:
            shadowing.append(name)
            continue
        spec = importlib.machinery.PathFinder.find_spec(name, others)
        if spec is not None:
            shadowing.append(name)
    assert shadowing == []


def test_collections_directory_does_not_replace_the_standard_collections(tmp_path: Path) -> None:
    """The program's interpreter, started in the project root, still imports the standard
    library's ``collections`` (not the root's ``collections/`` directory)."""
    import subprocess

    out = subprocess.run(
        [sys.executable, "-c", "import collections, sys; print(collections.__file__)"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert out and Path(out).parent.parent != REPO, out
    assert Path(out).name == "__init__.py"


def test_vsphere_vms_are_deleted_before_they_are_replaced_mock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A vSphere VM's name is fixed and unique in its folder, so its replacement must delete
    the old VM first (deleteBeforeReplace in the request the engine would get); the vGPU attach
    too. Other resources keep Pulumi's create-before-delete."""
    raw = stack_config(REPO / "examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml", VGPU_MODE)

    @pulumi.runtime.test
    def body() -> Any:
        monitor, _ = run_entry_point("vsphere-gpu-vgpu", raw, monkeypatch)

        async def go() -> None:
            await settle()
            vms = monitor.of_type("vsphere:index/virtualMachine:VirtualMachine")
            assert vms and all(vm.delete_before_replace for vm in vms)
            others = [r for r in monitor.regs if r.custom and r not in vms]
            assert others and not all(r.delete_before_replace for r in others)

        return check(go())

    body()
