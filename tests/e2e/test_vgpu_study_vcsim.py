"""studies/vmware-vgpu.yaml's vGPU arms (scheduling policy, profile sweep, knowledge-worker
VMs) run as ``gpulab study run`` does, against the vCenter simulator: how far the study gets
without NVIDIA guests.

Real: the study driver, its journal and teardown; the program (the real ``__main__.py`` under
the engine double, tests/e2e/engine.py); the VgpuPolicy and VgpuProfile resources in the real
provider host, against govmomi's vCenter simulator with the ESXi behaviour of
tests/parts/vcsim/esx_host.go (policy read from the hosts, maintenance mode, reboots, read-back,
the vGPU attach with its power cycle); the VMs cloned and destroyed in it (VcsimCloud); the
runner, which writes each measurement's record with the setting the lab states.

Doubled, and why: pulumi.automation and the engine (no Pulumi CLI here, as in
tests/e2e/test_study_closer2018_e2e.py); the GUESTS. The simulator's VMs are not machines: no
SSH, no guest OS, no NVIDIA vGPU driver. So the site run is not run (the double says so in its
status), and the workload run runs the real runner on this machine, once per GPU host, with the
environment the workload_run role gives it on that host (GPULAB_SHARING from the host's vars,
GPULAB_EXPECT_DEVICE=gpu for a vGPU host): it finds no GPU and writes a failed record saying so,
with the setting the lab stated. Every unit therefore fails with "the workload run's status is
failed": that is where the study stops without GPUs. The arms' suite is vmware-mnist with one
repeat (tests/e2e/vmware-mnist-tiny.yaml) and the study one repeat: the runner fails before it
trains, so more would only repeat the failure.

Sized to what it checks: the knowledge-worker arms keep their structure and ratios (one ML VM
beside 32, 64, 96 CPU-only VMs in the study) with a sixteenth of the VMs (2, 4, 6): what is
checked is that each arm builds its knowledge-worker VMs, records its factor and destroys them
all, which 6 VMs show as well as 96 (the program's 96-VM lab is checked under the mock runtime,
tests/pulumi/test_vsphere_mock.py). The simulator's guests boot 0.3 s after their power-on and
its hosts reboot in 0.3 s: still late (the guest wait and the reboot wait poll at least once),
not the 2 s and 1 s of the default, which only made every VM clone and vGPU attach a 3.5 s
wait (tests/cloud/test_vgpu_guest_wait_vcsim.py checks the guest wait itself).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import yaml
from pulumi.automation import (
    CommandError,
    CommandResult,
    ConcurrentUpdateError,
    ConfigValue,
    OutputValue,
    StackNotFoundError,
)
from rich.console import Console

from infra.config import raw_from_stack_file
from infra.dynamic.workload_run import results_dir_of
from infra.study.driver import Driver, RunOptions
from infra.study.model import load_study
from infra.study.state import Journal
from infra.summary import summarize_files
from tests.e2e.engine import Engine, Res, Step, UpResult
from tests.e2e.vcsim_cloud import VcsimCloud
from tests.parts import REPO
from tests.parts.fixtures_vcsim import VcsimPart, running_vcsim
from tests.parts.provider_host import ProviderHost
from workloads.vgpu_factors import parse

pytestmark = [pytest.mark.vcsim, pytest.mark.slow, pytest.mark.timeout(1200)]

HERE = Path(__file__).resolve().parent
TINY = HERE / "vmware-mnist-tiny.yaml"
GUEST = "guest-double:"  # the type prefix of what the guest doubles made (down skips them)
ADDRESSES = [f"192.0.2.{i + 1}" for i in range(120)]  # never dialled: no guest answers
KW_SCALE = 16  # the knowledge-worker arms here clone 1/16 of the study's VMs (docstring)
GUEST_BOOT_S = 0.3  # the module's simulator: a guest is back this long after its power-on
REBOOT_S = 0.3  # and a host this long after its reboot
VM_STEP = re.compile(r"-(?:gpu|kw)-\d+(?:-vgpu)?$")  # a VM clone or a vGPU attach
Run = dict[str, Any]  # what the study_run fixture gives the tests


def say(line: str) -> None:
    print(line, flush=True)


class GuestEngine(Engine):
    """The engine double, with the site and workload runs going to guest doubles (see the
    module docstring); every other dynamic resource goes to the real provider host."""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.policies: list[dict[str, Any]] = []  # each VgpuPolicy's outputs, in order

    def step_dynamic(
        self, mocks: Any, typ: str, name: str, inputs: dict[str, Any], opts: Any
    ) -> tuple[str, dict[str, Any]]:
        if typ.endswith(":AnsibleRun"):
            return self._guest(mocks, typ, name, inputs, opts, self._site)
        if typ.endswith(":WorkloadRun"):
            return self._guest(mocks, typ, name, inputs, opts, self._workloads)
        rid, outs = super().step_dynamic(mocks, typ, name, inputs, opts)
        if typ.endswith(":VgpuPolicy") and not mocks.preview:
            self.policies.append(outs)
        return rid, outs

    def _guest(
        self,
        mocks: Any,
        typ: str,
        name: str,
        inputs: dict[str, Any],
        opts: Any,
        run: Callable[[Run], Run],
    ) -> tuple[str, Run]:
        t0 = time.monotonic()
        if mocks.preview:  # planned as the engine plans a new resource: outputs unknown
            self._record(Step(name, "create", t0, t0), preview=True)
            return "", {k: v for k, v in inputs.items() if v is not None}
        outs = run(inputs)
        self._remember(Res(GUEST + typ, name, f"{name}-id", inputs, outs, set(opts.deps)))
        self._record(Step(name, "guest", t0, time.monotonic()))
        self.log(f"    guest  {name} ({typ.split(':')[-1]}) {time.monotonic() - t0:6.1f} s")
        return f"{name}-id", outs

    @staticmethod
    def _site(inputs: dict[str, Any]) -> dict[str, Any]:
        return {**inputs, "status": "not run: the simulator's VMs are not machines",
                "summary": {}, "facts": {}}  # fmt: skip

    @staticmethod
    def _workloads(inputs: dict[str, Any]) -> dict[str, Any]:
        run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + f"-{time.monotonic_ns()}"
        fetch = results_dir_of(inputs) / run_id  # <results root>/<stack>/, as the provider
        runs = []  # one runner per host, all at once, as the play runs on every host at once
        for host in inputs["hosts"]:
            hv = host.get("vars") or {}
            env = {
                **os.environ,
                "GPULAB_TOPOLOGY": str(inputs["topology"]),
                "GPULAB_ARM": str(inputs["execution_env"]),
                "GPULAB_RUN_ID": run_id,
                "GPULAB_GPU_PATH": str(host["gpu_path"]),
                "GPULAB_EXEC_ENV": str(inputs["execution_env"]),
                "GPULAB_SHARING": str(hv.get("workload_run_sharing") or ""),
                "GPULAB_EXPECT_DEVICE": "gpu",
            }
            out = fetch / host["name"] / "records.jsonl"
            out.parent.mkdir(parents=True)
            suite = (inputs.get("variables") or {}).get("workload_run_suite") or inputs["suite"]
            runs.append(subprocess.Popen(
                [sys.executable, "-m", "workloads", "bench", "--suite", suite, "--out", str(out)],
                cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            ))  # fmt: skip
        try:
            for proc in runs:
                proc.wait(timeout=300)
        finally:
            for proc in runs:  # one past its deadline is stopped, never left running
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        files = sorted(fetch.rglob("*.jsonl"))
        summary = summarize_files(files, suite=Path(inputs["suite"]).stem)
        summary["records"] = [str(f) for f in files]
        return {**inputs, "run_id": run_id, "records": summary["records"], "summary": summary,
                "status": summary["status"]}  # fmt: skip

    def down(self) -> list[str]:
        for key in [k for k, r in self.state.items() if r.typ.startswith(GUEST)]:
            del self.state[key]
        return super().down()


class _Stack:
    def __init__(self, auto: EngineAuto, name: str) -> None:
        self.auto, self.name = auto, name

    @property
    def file(self) -> Path:
        return self.auto.work_dir / f"Pulumi.{self.name}.yaml"

    def set_config(self, key: str, value: ConfigValue, path: bool = False) -> None:
        data = yaml.safe_load(self.file.read_text()) or {}
        data.setdefault("config", {})[key] = value.value
        self.file.write_text(yaml.safe_dump(data, sort_keys=False))

    def up(self, on_output: Any = None, on_event: Any = None, color: Any = None, **kw: Any) -> Any:
        self.auto.calls.append(("up", self.name))
        engine = self.auto.engine(self.name)
        result = self.auto.ups[self.name] = engine.up(
            self.name, raw_from_stack_file(self.file), secret_values=self.auto.secrets
        )
        for name, op, dt in result.steps:
            on_output(f"    {op:7s} {name} ({dt:.1f} s)")
        if result.error is not None:
            raise CommandError(CommandResult("Updating:\n", f"error: {result.error}", 255))
        self.auto.outputs[self.name] = dict(result.exports)
        return SimpleNamespace(
            outputs={k: OutputValue(v, False) for k, v in result.exports.items()}, summary=None
        )

    def destroy(self, on_output: Any = None, color: Any = None) -> Any:
        self.auto.calls.append(("destroy", self.name))
        deleted = self.auto.engine(self.name).down()
        on_output(f"Destroying: {len(deleted)} resources deleted")
        self.auto.outputs[self.name] = {}
        return SimpleNamespace(summary=None)

    def outputs(self) -> dict[str, OutputValue]:
        return {k: OutputValue(v, False) for k, v in self.auto.outputs.get(self.name, {}).items()}

    def info(self, show_secrets: bool = True) -> Any:
        return None


class EngineAuto:
    """Stands in for the pulumi.automation module; one engine double per stack."""

    CommandError = CommandError
    StackNotFoundError = StackNotFoundError
    ConcurrentUpdateError = ConcurrentUpdateError
    ConfigValue = ConfigValue

    def __init__(self, work_dir: Path, provider: Any, cloud: Any, secrets: dict[str, str]) -> None:
        self.work_dir, self.provider, self.cloud, self.secrets = work_dir, provider, cloud, secrets
        self.engines: dict[str, GuestEngine] = {}
        self.outputs: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[str, str]] = []
        self.ups: dict[str, UpResult] = {}  # each stack's last up, as the engine double gave it

    def engine(self, stack: str) -> GuestEngine:
        if stack not in self.engines:
            self.engines[stack] = GuestEngine(self.provider, ADDRESSES, log=say, cloud=self.cloud)
        return self.engines[stack]

    @staticmethod
    def LocalWorkspaceOptions(**kw: Any) -> dict[str, Any]:  # the SDK's class name
        return kw

    def create_or_select_stack(self, stack_name: str, work_dir: str, opts: Any) -> _Stack:
        assert Path(work_dir) == self.work_dir, work_dir
        return _Stack(self, stack_name)

    def select_stack(self, stack_name: str, work_dir: str, opts: Any) -> _Stack:
        if stack_name not in self.engines:
            raise StackNotFoundError(CommandResult("", f"no stack named '{stack_name}'", 255))
        return _Stack(self, stack_name)


def vcsim_stack(path: Path, vcsim: Any) -> Path:
    """The user's vsphere-gpu stack, adapted to the simulator (the example's keys otherwise)."""
    raw = raw_from_stack_file(REPO / "examples/vsphere-gpu/Pulumi.vsphere-gpu.yaml")
    config = {f"gpulab:{k}": v for k, v in raw.items() if k != "vsphere_password"}
    config.update({
        "gpulab:vsphere_server": f"{vcsim.host}:{vcsim.port}",
        "gpulab:vsphere_user": vcsim.user,
        "gpulab:vsphere_password": {"secure": "v1:e2e:vsphere_password"},
        "gpulab:vsphere_insecure": True,
        "gpulab:template": "DC0_H0_VM0",
        "gpulab:ssh_user": "debian",
        "gpulab:vgpu_policy_timeout_s": 30,
        "gpulab:host_wait_s": 30,  # the guest wait after a vGPU power cycle: bounded, not 600 s
    })  # fmt: skip
    path.write_text(yaml.safe_dump({"config": config}, sort_keys=False))
    return path


def study_file(tmp: Path, stack: Path) -> Path:
    """studies/vmware-vgpu.yaml with its vGPU arms only (the others need bare metal or a
    passthrough GPU), each on the simulator's stack file, one repeat, a sixteenth of the
    knowledge-worker VMs."""
    doc = yaml.safe_load((REPO / "studies/vmware-vgpu.yaml").read_text())
    arms = [a for a in doc["arms"] if "config" in a]
    for a in arms:
        del a["stack"]
        a["stack_file"] = str(stack)
        kw = a["config"]["kw_vm_count"]
        assert kw % KW_SCALE == 0, (a["name"], kw)
        a["config"] = {**a["config"], "kw_vm_count": kw // KW_SCALE}
    doc.update(arms=arms, repeats=1, baseline="vgpu", seed=7)
    path = tmp / "vmware-vgpu.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def study_vcsim(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VcsimPart]:
    """The module's own simulator (the study reboots its hosts): guests back 0.3 s after a
    power-on, hosts 0.3 s after a reboot (see the module docstring)."""
    d = tmp_path_factory.mktemp("vcsim-study")
    with running_vcsim(d, reboot_seconds=REBOOT_S, guest_boot_seconds=GUEST_BOOT_S) as part:
        yield part


@pytest.fixture(scope="module")
def study_run(study_vcsim: VcsimPart, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    from pyVim.task import WaitForTask

    tmp = tmp_path_factory.mktemp("vgpu-study")
    project = tmp / "project"
    project.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", project)
    results = tmp / "results"
    cloud = VcsimCloud(study_vcsim.host, study_vcsim.port, study_vcsim.user, study_vcsim.password)
    # the operator empties the GPU hosts first: gpulab powers off no VM for a policy reboot
    emptied = []
    for vm in cloud._vms():
        if vm.runtime.powerState == "poweredOn" and vm.runtime.host.name.startswith("DC0_C0_H"):
            WaitForTask(vm.PowerOffVM_Task())
            emptied.append(vm.name)
    say(f"[vgpu-study] powered off before the study (the operator): {emptied}")
    old = os.environ.get("GPULAB_RESULTS")
    os.environ["GPULAB_RESULTS"] = str(results)  # where the program's workload runs write
    t0 = time.monotonic()
    out = io.StringIO()
    try:
        # the engine double starts a fresh host for each operation and stops it after
        with ProviderHost(stack="vgpu-study") as provider:
            auto = EngineAuto(project, provider, cloud, {"vsphere_password": study_vcsim.password})
            path = study_file(tmp, vcsim_stack(tmp / "vsphere-vcsim.yaml", study_vcsim))
            driver = Driver(
                load_study(str(path)),
                results,
                RunOptions(auto=auto, repo=project, suite=str(TINY)),
                Console(file=out, width=200),
            )
            journal = driver.run()
            wall = time.monotonic() - t0
            yield {"journal": journal, "auto": auto, "cloud": cloud, "vcsim": study_vcsim,
                   "console": out.getvalue(), "wall_s": wall, "project": project}  # fmt: skip
    finally:
        say(out.getvalue())
        if old is None:
            os.environ.pop("GPULAB_RESULTS", None)
        else:
            os.environ["GPULAB_RESULTS"] = old
        cloud.close()


def _records(j: Journal) -> list[dict[str, Any]]:
    recs = []
    for u in j.order():
        f = j.records_file(u)
        if f.is_file():
            recs += [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
    return recs


def test_each_arm_is_built_with_its_factors_and_records_them(study_run: Run) -> None:
    j: Journal = study_run["journal"]
    say(f"[vgpu-study] {len(j.order())} units in {study_run['wall_s']:.1f} s")
    for u in j.order():
        e = j.unit(u)
        say(f"[vgpu-study] unit {u.key}: {e['status']} ({e.get('records')} record(s)): "
            f"{e.get('reason')}")  # fmt: skip
    recs = _records(j)
    per_arm: dict[str, list[dict[str, Any]]] = {}
    for r in recs:
        per_arm.setdefault(r["arm"], []).append(r)
        say(f"[vgpu-study] record {r['arm']:12s} host {r['host']}: sharing {r['sharing']} "
            f"status {r['status']}: {r['error'][:60]}")  # fmt: skip
    want = {
        "vgpu": ("best-effort", "grid_p100-16q", 1, 0, 1),
        "vgpu-equal": ("equal-share", "grid_p100-16q", 1, 0, 1),
        "vgpu-fixed": ("fixed-share", "grid_p100-16q", 1, 0, 1),
        "vgpu-2pg": ("best-effort", "grid_p100-8q", 2, 0, 2),
        "vgpu-4pg": ("best-effort", "grid_p100-4q", 4, 0, 4),
        # knowledge-worker VMs: 32, 64, 96 in the study, a sixteenth here (module docstring)
        "vgpu-kw32": ("best-effort", "grid_p100-16q", 1, 2, 1),
        "vgpu-kw64": ("best-effort", "grid_p100-16q", 1, 4, 1),
        "vgpu-kw96": ("best-effort", "grid_p100-16q", 1, 6, 1),
    }
    got = {}
    for arm, rs in per_arm.items():
        f = {parse(r["sharing"]) for r in rs}
        assert len(f) == 1, (arm, f)
        (v,) = f
        assert v is not None
        got[arm] = (v.policy, v.profile, v.vms_per_gpu, v.kw_vms, len(rs))
    assert got == want
    # the runner ran as on a vGPU guest with no GPU: every record failed and says why
    assert {(r["gpu_path"], r["virtualization"], r["status"]) for r in recs} == {
        ("vgpu", "vm", "failed")
    }
    assert all("no GPU is visible" in r["error"] for r in recs)
    assert {j.unit(u)["status"] for u in j.order()} == {"failed"}
    assert {j.unit(u)["reason"] for u in j.order()} == {"the workload run's status is failed"}


def test_each_units_policy_is_in_effect_and_the_hosts_reboot_only_for_changes(
    study_run: Run,
) -> None:
    """Each unit's policy as its VgpuPolicy found it on the hosts, and the hosts' shell view
    after the study (the last arm's policy is what they run now); the hosts rebooted for the
    first unit (no boot gpulab saw) and for each policy change between units, never else."""
    shell = study_run["vcsim"].esx()
    j: Journal = study_run["journal"]
    study = load_study(j.data["file"])
    hosts = ["DC0_C0_H0", "DC0_C0_H1", "DC0_C0_H2"]
    policies = [dict(study.arm(u.arm).config)["vgpu_policy"] for u in j.order()]
    engines = study_run["auto"].engines
    reboots = []
    for u, policy in zip(j.order(), policies, strict=True):
        (outs,) = engines[f"study-vmware-vgpu-{u.arm}"].policies
        say(f"[vgpu-study] unit {u.key}: policy {outs['in_effect']}, rebooted "
            f"{outs['plan']['applied']}: {outs['plan']['steps']}")  # fmt: skip
        assert outs["in_effect"] == policy
        assert sorted(outs["plan"]["hosts"]) == hosts
        reboots.append(sorted(outs["plan"]["applied"]))
    changed = [i == 0 or policies[i] != policies[i - 1] for i in range(len(policies))]
    assert reboots == [hosts if c else [] for c in changed]
    value = {"best-effort": "0x00", "equal-share": "0x01", "fixed-share": "0x11"}[policies[-1]]
    for h in hosts:
        say(f"[vgpu-study] {h}: {shell[h]}")
        assert shell[h]["loaded"]["nvidia"] == f"NVreg_RegistryDwords=RmPVMRL={value}"
        assert not shell[h]["in_maintenance_mode"]


def test_every_unit_built_its_lab_and_destroyed_it_before_the_next(study_run: Run) -> None:
    calls = study_run["auto"].calls
    ups = [s for op, s in calls if op == "up"]
    downs = [s for op, s in calls if op == "destroy"]
    assert ups == downs and len(ups) == 8
    assert [op for op, _ in calls] == ["up", "destroy"] * 8
    cloud = study_run["cloud"]
    left = [vm.name for vm in cloud._vms() if vm.name.startswith("vs-lab-")]
    assert left == [], left
    assert all(not e.state for e in study_run["auto"].engines.values())
    j: Journal = study_run["journal"]
    assert j.data["teardown"]["stacks"] == []
    copies = sorted(p.name for p in study_run["project"].glob("Pulumi.study-*.yaml"))
    assert copies == sorted(f"Pulumi.study-vmware-vgpu-{a}.yaml" for a in (
        "vgpu", "vgpu-equal", "vgpu-fixed", "vgpu-2pg", "vgpu-4pg", "vgpu-kw32", "vgpu-kw64",
        "vgpu-kw96"))  # fmt: skip


def test_every_clone_and_vgpu_attach_waited_for_its_guest(study_run: Run) -> None:
    """The simulator's guests come back GUEST_BOOT_S after a power-on: each unit cloned its GPU
    VMs and its knowledge-worker VMs (as many as its arm says) and attached a vGPU to each GPU
    VM, and each of those returned only once its guest was back (the guest waits polled)."""
    j: Journal = study_run["journal"]
    study = load_study(j.data["file"])
    ups: dict[str, UpResult] = study_run["auto"].ups
    assert len(ups) == 8
    for u in j.order():
        config = dict(study.arm(u.arm).config)
        result = ups[f"study-vmware-vgpu-{u.arm}"]
        steps = [st for st in result.steps if st.op == "create" and VM_STEP.search(st.name)]
        attaches = [st.name for st in steps if st.name.endswith("-vgpu")]
        gpu_vms = [st.name for st in steps if re.search(r"-gpu-\d+$", st.name)]
        kw_vms = [st.name for st in steps if re.search(r"-kw-\d+$", st.name)]
        assert sorted(attaches) == sorted(f"{n}-vgpu" for n in gpu_vms), (u.arm, attaches)
        assert len(gpu_vms) == config["host_count"], (u.arm, gpu_vms)
        assert len(kw_vms) == config["kw_vm_count"], (u.arm, kw_vms)
        quickest = min(st.seconds for st in steps)
        say(f"[vgpu-study] unit {u.key}: {len(gpu_vms)} GPU VMs, {len(kw_vms)} knowledge-worker "
            f"VMs, {len(attaches)} vGPU attaches, the quickest {quickest:.2f} s")  # fmt: skip
        assert quickest >= GUEST_BOOT_S, (u.arm, [(st.name, st.seconds) for st in steps])
