"""Lean, pinned installs (docs/install.md): the core has no ML framework or cloud SDK, each extra
what its name says, every dependency an upper bound and a pin in constraints.txt that the venv
follows, and the Ansible collections of collections/requirements.yml are the ones the playbooks
use, installed at the pinned versions."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
REQ = re.compile(r"^([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*(.*)$")


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def requirements(spec: list[str]) -> dict[str, str]:
    out = {}
    for line in spec:
        m = REQ.match(line)
        assert m is not None, line
        out[norm(m[1])] = m[3]
    return out


def pins() -> dict[str, str]:
    text = (REPO / "constraints.txt").read_text()
    return {norm(a): b for a, b in re.findall(r"(?m)^([A-Za-z0-9_.-]+)==(\S+)\s*$", text)}


def test_core_has_no_framework_and_no_cloud_sdk() -> None:
    core = requirements(PROJECT["dependencies"])
    heavy = {"tensorflow", "tensorflow-cpu", "keras", "jax", "torch", "openstacksdk", "pyvmomi",
             "pulumi-openstack", "pulumi-vsphere", "ansible"}  # fmt: skip
    assert not heavy & set(core), heavy & set(core)
    assert {"pulumi", "ansible-core", "ansible-runner", "pydantic", "duckdb"} <= set(core)


def test_extras_hold_what_their_names_say() -> None:
    extras = {k: requirements(v) for k, v in PROJECT["optional-dependencies"].items()}
    assert set(extras["cpu"]) == {"keras", "tensorflow-cpu"}
    assert set(extras["gpu"]) == {"keras", "tensorflow"}  # tensorflow[and-cuda]
    assert "tensorflow-cpu" not in extras["gpu"]
    assert set(extras["openstack"]) == {"openstacksdk", "pulumi-openstack"}
    assert set(extras["vsphere"]) == {"pyvmomi", "pulumi-vsphere"}
    assert set(extras["k8s"]) == {"kubernetes"}  # magnum-k8s: the Job flow's API client
    assert "gpulab[cpu,openstack,vsphere,k8s]" in PROJECT["optional-dependencies"]["test"]
    assert {"mutmut", "prometheus-client", "pytest"} <= set(extras["test"])


def test_every_runtime_dependency_has_an_upper_bound_and_a_pin() -> None:
    pinned = pins()
    specs = {**requirements(PROJECT["dependencies"])}
    for name in ("cpu", "openstack", "vsphere", "test"):
        specs.update(requirements(PROJECT["optional-dependencies"][name]))
    specs.pop("gpulab")
    unbounded = [n for n, s in specs.items() if "<" not in s and not n.startswith("types-")]
    assert unbounded == []
    assert sorted(n for n in specs if n not in pinned) == []
    assert "ansible" in pinned  # the source of the collections


def test_the_venv_follows_the_pins() -> None:
    """scripts/venv.sh installs with -c constraints.txt: the venv running the tests has them."""
    from importlib.metadata import PackageNotFoundError, version

    pinned = pins()
    names = set(requirements(PROJECT["dependencies"]))
    for extra in ("cpu", "openstack", "vsphere"):
        names |= set(requirements(PROJECT["optional-dependencies"][extra]))
    off = {}
    for name in sorted(names):
        try:
            got = version(name)
        except PackageNotFoundError:
            got = "missing"
        if got != pinned[name]:
            off[name] = (got, pinned[name])
    assert off == {}


def used_collections() -> set[str]:
    fqcn = re.compile(r"^\s*-?\s*([a-z0-9_]+)\.([a-z0-9_]+)\.[a-z0-9_]+:", re.M)
    found = set()
    for path in (REPO / "playbooks").rglob("*.yml"):
        found |= {f"{a}.{b}" for a, b in fqcn.findall(path.read_text())}
    return found - {"ansible.builtin", "infra.ansible"}


def test_requirements_list_the_collections_in_use() -> None:
    wanted = yaml.safe_load((REPO / "collections/requirements.yml").read_text())["collections"]
    names = {c["name"] for c in wanted}
    # the playbooks' modules, and the chroot connection of the test hosts (tests/parts)
    assert names == used_collections() | {"community.general"}
    assert all(re.fullmatch(r"[0-9]+\.[0-9]+\.[0-9]+", str(c["version"])) for c in wanted)


def test_the_venv_has_the_pinned_collections() -> None:
    out = subprocess.run(
        [str(Path(sys.executable).with_name("ansible-galaxy")), "collection", "list",
         "--format", "json"],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=True,
    ).stdout  # fmt: skip
    found: dict[str, str] = {}
    for collections in json.loads(out).values():
        for name, info in collections.items():
            found.setdefault(name, info["version"])
    wanted = yaml.safe_load((REPO / "collections/requirements.yml").read_text())["collections"]
    assert {c["name"]: found.get(c["name"]) for c in wanted} == {
        c["name"]: str(c["version"]) for c in wanted
    }


def test_ansible_cfg_for_runs_by_hand() -> None:
    text = (REPO / "ansible.cfg").read_text()
    assert "roles_path = playbooks/roles" in text and (REPO / "playbooks/roles").is_dir()
    assert "inventory = inventory.yml" in text
    assert not re.search(r"(?mi)^\s*host_key_checking\s*=\s*false", text)


# -- a wheel, installed outside the checkout ---------------------------------------------------

OUT_OF_TREE = """
import json, sys
import infra, infra.paths, report, workloads
print(json.dumps({"infra": infra.__file__, "report": report.__file__,
                  "workloads": workloads.__file__, "project": str(infra.paths.PROJECT),
                  "prefix": sys.prefix}))
"""

# What a lab project's __main__.py runs (infra.cli.lab_project.ENTRY), the engine left out.
LAB_ENTRY = """
import runpy
from infra.cli.lab_project import ENTRY
ran = []
runpy.run_path = lambda path, run_name: ran.append(path)
exec(ENTRY)
print(ran[0])
"""

# The role defaults that read the controller's files, templated by Ansible as a play would
# (argv "env": with the environment gpulab's own runs give ansible-playbook).
ROLE_DEFAULTS = """
import json, os, sys
from ansible.parsing.dataloader import DataLoader
from ansible.plugins.loader import init_plugin_loader
from ansible.template import Templar, trust_as_template
from infra.ansible.runner import ANSIBLE_ENV, PLAYBOOKS
init_plugin_loader()
if sys.argv[1:] == ["env"]:
    os.environ.update(ANSIBLE_ENV)
out = {}
asked = [("workload_env", "workload_env_src"), ("workload_image", "workload_image_version")]
for role, var in asked:
    loader, path = DataLoader(), PLAYBOOKS / "roles" / role
    defaults = loader.load_from_file(str(path / "defaults" / "main.yml"))
    templar = Templar(loader=loader, variables={**defaults, "role_path": str(path)})
    out[var] = templar.template(trust_as_template(defaults[var]))
print(json.dumps(out))
"""


def _role_defaults(python: Path | str, *argv: str, cwd: Path = REPO) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GPULAB_")}
    env.pop("PYTHONPATH", None)
    r = subprocess.run([str(python), "-c", ROLE_DEFAULTS, *argv], cwd=cwd, env=env,
                       capture_output=True, text=True, timeout=120, check=False)  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    return dict(json.loads(r.stdout))


def test_the_roles_find_the_controllers_workloads_and_version() -> None:
    """workload_env ships the workloads/ gpulab runs and workload_image labels the image with
    gpulab's version: given by gpulab's runs (a wheel has no checkout around its roles), and
    found beside the playbooks in a run by hand from a checkout."""
    ours = _role_defaults(sys.executable, "env")
    assert Path(ours["workload_env_src"]) == REPO / "workloads"
    assert ours["workload_image_version"] == PROJECT["version"]
    by_hand = _role_defaults(sys.executable)
    assert Path(by_hand["workload_env_src"]).resolve() == REPO / "workloads"
    assert by_hand["workload_image_version"] == PROJECT["version"]


def _checkout_files() -> list[str]:
    """The files a build from this checkout sees: tracked ones and new ones git does not ignore."""
    out = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout  # fmt: skip
    return [f for f in out.split("\0") if f and (REPO / f).is_file()]


def _wheel_venv(tmp: Path) -> Path:
    """The wheel built from a copy of this checkout, installed into a new venv under ``tmp``.

    Offline and quick: the build uses this venv's setuptools (no build isolation, no index);
    the new venv reaches the dependencies through a .pth line naming this venv's
    site-packages (a path line: no .pth file there runs, so the editable install of the
    checkout stays out), and gpulab itself is the wheel's copy, installed with --no-deps.
    """
    src = tmp / "src"
    for name in _checkout_files():
        (src / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, src / name)
    dist = tmp / "dist"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    subprocess.run([*pip, "wheel", "--quiet", "--no-deps", "--no-build-isolation", "--no-index",
                    "--wheel-dir", str(dist), str(src)],
                   cwd=tmp, capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    [wheel] = dist.glob("gpulab-*.whl")
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True,
                   timeout=120)  # fmt: skip
    python = venv / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout.strip()  # fmt: skip
    (Path(site) / "gpulab-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([*pip, "--python", str(python), "install", "--quiet", "--no-deps",
                    "--no-index", str(wheel)],
                   cwd=tmp, capture_output=True, text=True, timeout=300, check=True)  # fmt: skip
    return venv


@pytest.mark.tf  # a wheel build, a venv, a two-step TensorFlow bench: about 12 s on 2 cores
def test_a_wheel_installed_outside_the_checkout_runs_the_product(tmp_path: Path) -> None:
    """The wheel carries what the product reads at run time (the project, playbooks,
    templates, studies, examples, docs, suites, reference results, the report's template) and
    every module: from a directory outside the checkout, with only the wheel's copy of gpulab
    importable, --version, --help, run local --help, docs, validate, bench, report and study
    status work as they do in the checkout."""
    venv = _wheel_venv(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "GPULAB_RESULTS")}
    env["NO_COLOR"] = "1"
    transcript: list[str] = []

    def run(*argv: str, python: bool = False) -> subprocess.CompletedProcess[str]:
        exe = venv / "bin" / ("python" if python else "gpulab")
        r = subprocess.run([str(exe), *argv], cwd=work, env=env, capture_output=True,
                           text=True, timeout=300, check=False)  # fmt: skip
        shown = " ".join(shlex.quote(a) for a in argv if "\n" not in a) or "-c ..."
        transcript.append(f"$ {exe.name} {shown}  (exit {r.returncode})\n{r.stdout}{r.stderr}")
        return r

    where = run("-c", OUT_OF_TREE, python=True)
    assert where.returncode == 0, where.stderr
    found = json.loads(where.stdout)
    for name in ("infra", "report", "workloads", "project"):
        assert Path(found[name]).is_relative_to(venv), (name, found)  # not the checkout
        assert not Path(found[name]).is_relative_to(REPO), (name, found)
    project = Path(found["project"])
    assert (project / "Pulumi.yaml").is_file() and (project / "__main__.py").is_file()
    assert "virtualenv" not in (project / "Pulumi.yaml").read_text()  # no .venv beside it
    assert (project / "playbooks" / "site.yml").is_file()
    assert (project / "playbooks/roles/workload_image/templates/Dockerfile.j2").is_file()
    roles = _role_defaults(venv / "bin" / "python", "env", cwd=work)
    assert Path(roles["workload_env_src"]) == Path(found["workloads"]).parent  # the installed one
    assert roles["workload_image_version"] == "0.1.0"
    transcript.append(f"$ python -c ROLE_DEFAULTS env  (role defaults)\n{json.dumps(roles)}\n")

    r = run("--version")
    assert (r.returncode, r.stdout) == (0, "gpulab 0.1.0\n"), r.stderr
    r = run("--help")
    assert r.returncode == 0 and "Usage: gpulab [OPTIONS] COMMAND" in r.stdout, r.stderr
    assert all(re.search(rf"(?m)^  {c} ", r.stdout) for c in ("doctor", "docs", "validate"))
    r = run("run", "local", "--help")
    assert r.returncode == 0 and "Usage: gpulab run local [OPTIONS]" in r.stdout, r.stderr

    # gpulab docs: the pages the wheel carries, the same text as the checkout's
    r = run("docs")
    assert r.returncode == 0 and re.search(r"(?m)^cli\s+", r.stdout), r.stderr
    assert f"(in {project / 'docs'};" in r.stdout
    r = run("docs", "cli")
    assert (r.returncode, r.stdout) == (0, (REPO / "docs" / "cli.md").read_text()), r.stderr
    r = run("docs", "cli-json", "--path")
    assert Path(r.stdout.strip()) == project / "docs" / "cli-json.schema.json", r.stderr

    # every module of the checkout's packages is in the wheel (new ones included)
    modules = {f for f in _checkout_files() if f.endswith(".py") and "/" in f
               and f.split("/")[0] in ("infra", "workloads", "report")}  # fmt: skip
    site = Path(found["infra"]).parents[1]
    assert sorted(f for f in modules if not (site / f).is_file()) == []

    # a lab project's __main__.py (gpulab init, gpulab up) runs the wheel's Pulumi program
    entry = run("-c", LAB_ENTRY, python=True)
    assert entry.returncode == 0 and Path(entry.stdout.strip()) == project / "__main__.py"

    # validate: an example stack as shipped (placeholders on purpose), then one of the user's
    example = work / "Pulumi.mylab.yaml"
    example.write_text((project / "examples/nova-pci/Pulumi.nova-pci.yaml").read_text())
    r = run("validate", str(example))
    assert r.returncode == 2 and "still holds an example's placeholder" in r.stderr, r.stderr
    (work / "Pulumi.here.yaml").write_text("config: {gpulab:topology: local, gpulab:lab: here}\n")
    r = run("validate", "Pulumi.here.yaml")
    assert r.returncode == 0 and "valid local stack, lab here" in r.stdout, r.stderr
    r = run("validate", "local")  # not here: the project's local stack, the wheel's copy
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"{project / 'Pulumi.local.yaml'}: valid local stack"), r.stdout

    r = run("bench", "--model", "mnist_cnn", "--batch", "8", "--steps", "2", "--warmup", "1",
            "--repeats", "1", "--out", "r.jsonl")  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    [record] = [json.loads(line) for line in (work / "r.jsonl").read_text().splitlines()]
    assert record["status"] == "ok" and record["model"] == "mnist_cnn"

    r = run("report", "r.jsonl", "--out-dir", "rep")
    assert r.returncode == 0, r.stderr[-2000:]
    html = (work / "rep" / "report.html").read_text()
    assert html.lstrip().lower().startswith("<!doctype html") and "mnist_cnn" in html

    r = run("study", "status", "local-first-run")  # the built-in study, found and read
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("gpulab: error: study local-first-run: not run yet"), r.stderr
    print("\n".join(transcript))


def test_one_helper_says_where_the_files_are() -> None:
    """No product module finds the checkout from its own location (``Path(__file__).parents``):
    infra.paths.PROJECT and workloads.paths.PACKAGES_DIR say where the files are, so that a
    wheel install finds them too; a package reads only its own data beside its modules."""
    climbing = re.compile(r"__file__\)(\.resolve\(\))?\.(parents\[|parent\.parent\b)")
    found = [
        f"{path.relative_to(REPO)}:{n}"
        for package in ("infra", "workloads", "report")
        for path in sorted((REPO / package).rglob("*.py"))
        for n, line in enumerate(path.read_text().splitlines(), 1)
        if climbing.search(line)
    ]
    assert found == ["workloads/paths.py:21"]
