"""The closer2018 study end to end, CPU-sized: ``gpulab study run`` of tests/e2e/closer2018-cpu.yaml
(the arms of studies/closer2018.yaml: bm/cbm on ironic-bm, vm/cvm on nova-pci, native and
docker; one repeat of a tiny suite) through the Automation API path of ``gpulab up``, then
``gpulab study report`` (the CLI, in a subprocess) with its verdict table of method checks
(a CPU run: the measured ratios, no verdict word).

What is doubled, and why:

- pulumi.automation (``EngineAuto`` below): the Pulumi CLI and engine cannot run here. Its
  stacks read the project's ``Pulumi.<stack>.yaml`` as the engine does (``set_config`` writes
  that file, as ``pulumi config set`` does) and hand it to the end-to-end engine double
  (tests/e2e/engine.py: the real program and the real dynamic providers in the provider host);
  a failed update raises the SDK's own ``CommandError`` with the engine's last line, and keeps
  the outputs of the last good update, as Pulumi's state does.
- the cloud (``OpenStackCloud`` below): Nova, Neutron and Glance cannot run here, so every
  OpenStack resource the program creates is listed in the OpenStack double of tests/cloud
  (the one the teardown audit is tested with) until it is deleted; an ironic-bm server also
  deploys a node of its resource class in the REAL standalone Ironic (enrolled by the test,
  driven through Ironic's state machine: available -> active with the instance id, and undeploy
  -> available on delete), as Nova's Ironic driver does. Both stacks' servers come back with the
  address of the same booted nspawn host: this machine has one GPU-marked test host.
- the docker execution environment on the hosts is NOT doubled: the nspawn hosts cannot start a
  container (read-only cgroups, no GPU for ``--gpus``), so the docker arms fail there, with the
  reason in the journal, and the study goes on; see the docker arms' test below.

Real: the nspawn host over SSH, the site run, the runner measuring natively (CPU), the records
fetched, the study's journal, tagging, fingerprint comparison, report and teardown audit.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
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

from infra.config import raw_from_stack_file, validate
from infra.study.driver import Driver, RunOptions
from infra.study.model import load_study
from infra.study.state import Journal
from tests.cloud.helpers import enroll, wait_nodes
from tests.cloud.openstack_double import OpenStackDouble, res
from tests.e2e.conftest import Lab, say
from tests.e2e.engine import Engine
from tests.parts import REPO
from workloads.fingerprints import resolve

# Two site runs (each stack's first up prepares native and docker, the environments of the
# study's arms on it; the docker arm then measures with gpulab:measure_envs, an input of the
# workload run only) and four workload runs. Before, with gpulab:execution_envs set to the
# arm's one environment, each switch re-ran the site play: four site runs. On freshly booted
# hosts, 2 cores, at load 5-8, back to back: before, site 276 + 342 + 141 + 237 s, the study
# 1163 s, the module 1221 s; now, site 528 + 218 s, the study 965 s, the module 1036 s.
pytestmark = [
    pytest.mark.nspawn,
    pytest.mark.tf,
    pytest.mark.slow,
    pytest.mark.ironic,
    pytest.mark.timeout(2400),
]

HERE = Path(__file__).resolve().parent
STUDY = HERE / "closer2018-cpu.yaml"
STACKS = {"ironic-bm": "e2e-sbm", "nova-pci": "e2e-spci"}  # stack -> lab name
RESOURCE_CLASS = "baremetal.e2e-study"
NODES = ["e2e-study-node-0"]
ARMS = ("bm", "cbm", "vm", "cvm")
NATIVE = ("bm", "vm")
DOCKER = ("cbm", "cvm")

# Pulumi type -> the OpenStack double's list that the teardown audit reads
KINDS = {
    "openstack:compute/instance:Instance": "servers",
    "openstack:compute/flavor:Flavor": "flavors",
    "openstack:compute/keypair:Keypair": "keypairs",
    "openstack:compute/serverGroup:ServerGroup": "server_groups",
    "openstack:networking/floatingIp:FloatingIp": "floating_ips",
    "openstack:networking/port:Port": "ports",
    "openstack:networking/router:Router": "routers",
    "openstack:networking/subnet:Subnet": "subnets",
    "openstack:networking/network:Network": "networks",
    "openstack:networking/secGroup:SecGroup": "security_groups",
    "openstack:blockstorage/volume:Volume": "volumes",
}


class OpenStackCloud:
    """The engine's cloud: resources listed in the OpenStack double, Ironic nodes for real."""

    def __init__(self, double: OpenStackDouble, bm_conn: Any = None, rc: str = "") -> None:
        self.double, self.bm, self.rc = double, bm_conn, rc
        self.deployed: dict[str, str] = {}  # server name -> Ironic node name
        self.history: list[tuple[str, str, str]] = []  # (server, node, "active"/"available")

    def create(
        self, typ: str, name: str, inputs: dict[str, Any], outs: dict[str, Any], rid: str = ""
    ) -> None:
        kind = KINDS.get(typ)
        if kind is None:  # rules, router interfaces: not listed by the audit
            return
        r = res(
            name=inputs.get("name") or name,
            id=f"{name}-id",
            tags=list(inputs.get("tags") or []),
            metadata=dict(inputs.get("metadata") or {}),
            status="ACTIVE",
        )
        getattr(self.double, kind).append(r)
        if kind == "servers" and self.bm is not None:
            self._deploy(r.name, r.id)

    def delete(self, res_: Any) -> None:
        kind = KINDS.get(res_.typ)
        if kind is None:
            return
        name = res_.inputs.get("name") or res_.name
        items = getattr(self.double, kind)
        items[:] = [r for r in items if r.name != name]
        if name in self.deployed:
            self._undeploy(name)

    def _deploy(self, server: str, instance: str) -> None:
        bm = self.bm.baremetal
        free = [
            n.name
            for n in bm.nodes(details=True)
            if n.resource_class == self.rc and n.provision_state == "available"
            and not n.instance_id and n.name not in self.deployed.values()
        ]  # fmt: skip
        if not free:
            raise RuntimeError(f"{server}: no available Ironic node of class {self.rc}")
        node = free[0]
        bm.update_node(node, instance_id=_uuid(instance))
        bm.set_node_provision_state(node, "active")
        wait_nodes(self.bm, [node], "provision_state", "active")
        self.deployed[server] = node
        self.history.append((server, node, bm.get_node(node).provision_state))

    def _undeploy(self, server: str) -> None:
        node = self.deployed.pop(server)
        bm = self.bm.baremetal
        bm.set_node_provision_state(node, "deleted")
        wait_nodes(self.bm, [node], "provision_state", "available")
        if bm.get_node(node).instance_id:  # Nova's Ironic driver unsets it after the undeploy
            bm.update_node(node, instance_id=None)
        self.history.append((server, node, bm.get_node(node).provision_state))


def _uuid(text: str) -> str:
    import uuid

    return str(uuid.uuid5(uuid.NAMESPACE_DNS, text))


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
        self.auto.calls.append(("set_config", self.name, key, value.value))

    def up(self, on_output: Any = None, on_event: Any = None, color: Any = None, **kw: Any) -> Any:
        self.auto.calls.append(("up", self.name))
        engine = self.auto.engines[self.name]
        result = engine.up(self.name, raw_from_stack_file(self.file))
        for name, op, dt in result.steps:
            on_output(f"    {op:7s} {name} ({dt:.1f} s)")
            self.auto.steps.append((self.name, name, op, dt))
        if result.error is not None:
            raise CommandError(CommandResult("Updating:\n", f"error: {result.error}", 255))
        self.auto.outputs[self.name] = dict(result.exports)
        return SimpleNamespace(
            outputs={k: OutputValue(v, False) for k, v in result.exports.items()}, summary=None
        )

    def destroy(self, on_output: Any = None, color: Any = None) -> Any:
        self.auto.calls.append(("destroy", self.name))
        deleted = self.auto.engines[self.name].down()
        on_output(f"Destroying: {len(deleted)} resources deleted")
        self.auto.outputs[self.name] = {}
        return SimpleNamespace(summary=None)

    def outputs(self) -> dict[str, OutputValue]:
        return {k: OutputValue(v, False) for k, v in self.auto.outputs.get(self.name, {}).items()}

    def info(self, show_secrets: bool = True) -> Any:
        return None


class EngineAuto:
    """Stands in for the pulumi.automation module; one e2e engine per stack."""

    CommandError = CommandError
    StackNotFoundError = StackNotFoundError
    ConcurrentUpdateError = ConcurrentUpdateError
    ConfigValue = ConfigValue

    def __init__(self, work_dir: Path, engines: dict[str, Engine]) -> None:
        self.work_dir = work_dir
        self.engines = engines
        self.outputs: dict[str, dict[str, Any]] = {}
        self.calls: list[tuple[Any, ...]] = []
        self.steps: list[tuple[str, str, str, float]] = []  # (stack, resource, op, s) per up

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


@pytest.fixture(scope="module")
def study_run(e2e_lab: Lab, ironic: Any) -> Iterator[dict[str, Any]]:
    """The study run once: the project, the doubles, the journal and the run's wall time."""
    t0 = time.monotonic()
    enroll(ironic.conn, {n: {"rc": RESOURCE_CLASS} for n in NODES})
    project = e2e_lab.workdir / "study-project"
    project.mkdir()
    shutil.copy(REPO / "Pulumi.yaml", project)
    pubkey = Path(f"{e2e_lab.nspawn.key}.pub").read_text().strip()
    doubles = {"ironic-bm": OpenStackDouble(), "nova-pci": OpenStackDouble()}
    engines: dict[str, Engine] = {}
    clouds: dict[str, OpenStackCloud] = {}
    raws: dict[str, dict[str, Any]] = {}
    for stack, lab in STACKS.items():
        extra: dict[str, Any] = {}
        if stack == "ironic-bm":
            extra = {"resource_class": RESOURCE_CLASS, "required_traits": None}
        raw = e2e_lab.stack(
            stack,
            lab,
            host_count=1,
            ssh_public_key=pubkey,
            workload_variables={"workload_run_expect_device": "cpu"},
            **extra,
        )
        raws[stack] = raw
        shutil.copy(e2e_lab.workdir / f"Pulumi.{lab}.yaml", project / f"Pulumi.{stack}.yaml")
        cloud = OpenStackCloud(
            doubles[stack], ironic.conn if stack == "ironic-bm" else None, RESOURCE_CLASS
        )
        engines[stack] = Engine(e2e_lab.provider_host, e2e_lab.addresses[:1], log=say, cloud=cloud)
        clouds[stack] = cloud
    auto = EngineAuto(project, engines)
    out = io.StringIO()
    console = Console(file=out, width=200)
    driver = Driver(
        load_study(str(STUDY)), e2e_lab.results, RunOptions(auto=auto, repo=project), console
    )
    left: dict[str, list[str]] = {}
    try:
        journal = driver.run()
    finally:
        say(out.getvalue())
        wall_s = time.monotonic() - t0
        # what the study's teardown left in the engines' state, before it is removed here so
        # the session goes on (the audit below would not see it any more)
        left = {s: [name for _, name in e.state] for s, e in engines.items() if e.state}
        for engine in engines.values():
            if engine.state:
                engine.down()
    yield {
        "journal": journal,
        "auto": auto,
        "engines": engines,
        "doubles": doubles,
        "clouds": clouds,
        "raws": raws,
        "console": out.getvalue(),
        "wall_s": wall_s,
        "left": left,
    }


def _records(j: Journal) -> dict[str, list[dict[str, Any]]]:
    per: dict[str, list[dict[str, Any]]] = {a: [] for a in ARMS}
    for u in j.order():
        f = j.records_file(u)
        if f.is_file():
            per[u.arm] += [json.loads(ln) for ln in f.read_text().splitlines() if ln.strip()]
    for recs in per.values():
        resolve(recs)  # schema 3: the fingerprint in full in a file's first record only
    return per


def test_study_builds_measures_and_records_every_native_arm(study_run: dict[str, Any]) -> None:
    j: Journal = study_run["journal"]
    say(f"[e2e] study closer2018-cpu run in {study_run['wall_s']:.1f} s")
    units = {u.arm: j.unit(u) for u in j.order()}
    assert [u.arm for u in j.order()] == list(ARMS)  # interleaved, one repeat
    per = _records(j)
    for arm in NATIVE:
        assert units[arm]["status"] == "done", units[arm]
        assert per[arm], arm
        for r in per[arm]:
            assert r["params"]["study"] == {"name": "closer2018-cpu", "arm": arm, "repeat": 1}
            assert r["arm"] == arm and r["status"] == "ok" and r["images_per_sec"] > 0
            assert r["params"]["device"]["used"] == "cpu"
            assert r["claims"] == ["closer2018/single_synthetic"]
    assert {r["topology"] for r in per["bm"]} == {"ironic-bm"}
    assert {r["topology"] for r in per["vm"]} == {"nova-pci"}
    # one up per stack (the arms of a stack share its lab), the docker arms measure it again
    ups = [c for c in study_run["auto"].calls if c[0] in ("up", "destroy")]
    assert ups[0] == ("up", "ironic-bm") and ("destroy", "ironic-bm") in ups
    assert ("up", "nova-pci") in ups and ("destroy", "nova-pci") in ups


def test_the_site_play_runs_once_per_stack(study_run: dict[str, Any]) -> None:
    """The site run is created by each stack's first up and is the same (not re-run) when the
    stack's docker arm measures; each unit's up runs one workload run, in its arm's
    environment."""
    steps = study_run["auto"].steps
    for stack, name, op, dt in steps:
        say(f"[e2e] {stack}: {op} {name} {dt:.1f} s")
    site = [(stack, op) for stack, name, op, _ in steps if name.endswith("-site")]
    assert site == [
        ("ironic-bm", "create"),
        ("ironic-bm", "same"),
        ("nova-pci", "create"),
        ("nova-pci", "same"),
    ], site
    runs = [(s, n) for s, n, op, _ in steps if "-workloads-" in n and op != "same"]
    assert runs == [
        ("ironic-bm", "e2e-sbm-workloads-native"),
        ("ironic-bm", "e2e-sbm-workloads-docker"),
        ("nova-pci", "e2e-spci-workloads-native"),
        ("nova-pci", "e2e-spci-workloads-docker"),
    ], runs


def test_docker_arms_fail_on_the_nspawn_hosts_with_the_reason_and_the_study_goes_on(
    study_run: dict[str, Any],
) -> None:
    """The nspawn hosts cannot run a container: each docker arm is a failed unit whose reason
    names the stack, and the native arm after it still ran."""
    j: Journal = study_run["journal"]
    per = _records(j)
    for u in j.order():
        if u.arm not in DOCKER:
            continue
        e = j.unit(u)
        say(f"[e2e] arm {u.arm}: {e['status']}: {e.get('reason')}")
        assert e["status"] == "failed", e
        assert e["reason"], e
        for r in per[u.arm]:  # whatever records came back carry the study too
            assert r["params"]["study"] == {"name": "closer2018-cpu", "arm": u.arm, "repeat": 1}


def test_teardown_leaves_nothing_in_the_clouds(study_run: dict[str, Any], ironic: Any) -> None:
    from infra.preflight import audit

    j: Journal = study_run["journal"]
    rows = j.data["teardown"]["stacks"]
    assert sorted(r["stack"] for r in rows) == ["ironic-bm", "nova-pci"], rows
    assert all(r["status"] == "destroyed" for r in rows), rows
    assert study_run["left"] == {}
    for stack, raw in study_run["raws"].items():
        cfg = validate(raw)
        checks = audit(cfg, os_conn=study_run["doubles"][stack], bm_conn=ironic.conn)
        say(f"[e2e] audit {stack}: " + "; ".join(f"{c.name}: {c.detail}" for c in checks))
        assert checks and all(c.passed for c in checks), checks
    # the ironic-bm server was a real Ironic node, deployed for the study and undeployed after
    assert study_run["clouds"]["ironic-bm"].history == [
        ("e2e-sbm-gpu-0", NODES[0], "active"),
        ("e2e-sbm-gpu-0", NODES[0], "available"),
    ]
    assert study_run["clouds"]["nova-pci"].history == []
    nodes = [ironic.conn.baremetal.get_node(n) for n in NODES]
    assert all(n.provision_state == "available" and not n.instance_id for n in nodes)


def test_study_report_gives_the_cpu_indicative_verdict_table(
    study_run: dict[str, Any], e2e_lab: Lab
) -> None:
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "infra.cli", "study", "report", str(STUDY),
         "--results-dir", str(e2e_lab.results)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**__import__("os").environ, "COLUMNS": "200"},
    )  # fmt: skip
    say(r.stdout)
    say(f"[e2e] gpulab study report in {time.monotonic() - t0:.1f} s")
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    study = load_study(str(STUDY))
    rep = json.loads((e2e_lab.results / "study-closer2018-cpu/report/study.json").read_text())
    verdicts = {v["claim"]: v for v in rep["verdicts"]}
    assert list(verdicts) == list(study.claims)
    for v in verdicts.values():
        assert v["verdict"] and (v["verdict"] != "not measured" or v["measured"]), v
        assert v["label"] == "CPU", v
        assert v["verdict"] in ("method check", "not measured"), v
        assert v["claim"] in r.stdout
    assert "method" in r.stdout and "reproduced" not in r.stdout
    assert verdicts["closer2018/single_synthetic"]["verdict"] != "not measured"
    assert {a["arm"] for a in rep["arms"] if a["done"]} == set(NATIVE)
    assert sorted(rep["missing_arms"]) == sorted(DOCKER)
    for arm in DOCKER:  # an arm without records is named with its reason
        assert arm in r.stdout


def test_paired_arms_fingerprints_were_compared(study_run: dict[str, Any]) -> None:
    """vm's environment facts against the baseline bm's: both arms state them (the same host
    stands for both stacks here, so they agree and the report has no warning); the same
    comparison on vm's records with another CPU model warns, naming the fact and the claim."""
    from infra.study.fingerprint import arm_values, compare

    j: Journal = study_run["journal"]
    per = {a: recs for a, recs in _records(j).items() if a in NATIVE}
    facts = {a: arm_values(recs) for a, recs in per.items()}
    say(f"[e2e] fingerprints: {facts}")
    for arm in NATIVE:
        assert facts[arm]["CPU model"] and facts[arm]["framework"], facts[arm]
    assert facts["vm"] == facts["bm"]
    claims = list(j.data["claims"])
    assert compare(per, "bm", claims) == []
    other = [json.loads(json.dumps(r)) for r in per["vm"]]
    for r in other:
        r["fingerprint"]["cpu"]["model"] = "Other CPU"
    warned = compare({"bm": per["bm"], "vm": other}, "bm", claims)
    assert [(w.arm, w.text.split(":")[0], w.claims) for w in warned] == [
        ("vm", "CPU model", ["closer2018/single_synthetic"])
    ]
