"""The ExecEnv table: every entry complete, one docker command line on a laptop and on a lab,
and a new execution environment needing only its entry (and its role)."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path
from typing import Any, cast

import pytest

from infra.specs import ansible_vars
from workloads import execenv
from workloads.errors import InputError
from workloads.execenv import ENVS, ExecEnv, Flags, Mount, render_launch
from workloads.setting import make_setting, setting_record_fields

REPO = Path(__file__).resolve().parents[2]
ROLES = REPO / "playbooks" / "roles"


def lab_render(argv: list[str], variables: dict[str, Any]) -> list[str]:
    """Render a lab launch template the way the workload_run role does: Ansible's templar,
    then one level of flattening (the --env entry renders to a list)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar, trust_as_template

    templar = Templar(loader=DataLoader(), variables=variables)
    out: list[str] = []
    for item in templar.template([trust_as_template(t) for t in argv]):
        out += item if isinstance(item, list) else [item]
    return out


@pytest.mark.parametrize("name", list(ENVS))
def test_every_entry_is_complete(name: str) -> None:
    env = ENVS[name]
    assert env.name == name and env.record_label == name
    assert env.roles and all((ROLES / r / "tasks" / "main.yml").is_file() for r in env.roles)
    assert all(getattr(env.flags, f.name).strip() for f in dataclasses.fields(Flags))
    assert (env.launch is None) != (env.job is None), "an argv or a Job, exactly one"
    if env.job:
        assert (REPO / env.job).is_file()
    if env.container:
        assert env.image and env.image.source and env.image.build and env.image.lab_var
        assert env.virtualization == "container"
        defaults = (ROLES / "workload_run" / "defaults" / "main.yml").read_text()
        assert re.search(rf"^{env.image.lab_var}:", defaults, re.M), env.image.lab_var
    else:
        assert env.virtualization == "none"
    if env.launch is not None:
        assert "@inner" in env.launch
        assert all(t in execenv.GROUPS for t in env.launch if t.startswith("@"))
        if env.env_flag:
            assert env.env_flag.count("{name}") == 1 and env.env_flag.endswith("{name}")
        if "@mounts" in env.launch:
            assert "{src}" in env.mount_flag and "{dst}" in env.mount_flag
        # every placeholder has a lab value: the template renders without a gap
        assert not any("{" in t and "{{" not in t for t in execenv.lab_launch_argv(name))


def test_names_and_aliases() -> None:
    assert execenv.names() == ("native", "docker", "apptainer", "k8s", "bitfusion")
    assert execenv.canonical("singularity") == "apptainer"
    assert execenv.accepted()[-1] == "singularity"
    assert execenv.containers() == ("docker", "apptainer", "k8s")
    with pytest.raises(execenv.UnknownExecEnv, match=r"'podman' is not one of native, docker"):
        execenv.canonical("podman")
    # apptainer before workload_image (which builds the SIF with it), whatever the envs' order
    want = ["docker_engine", "nvidia_container_toolkit", "apptainer", "workload_env",
            "workload_image"]  # fmt: skip
    assert execenv.site_roles(["native", "docker", "singularity"]) == want
    assert execenv.site_roles(["singularity", "docker"]) == want
    order = execenv.role_order()
    for env in execenv.ENVS.values():  # every entry's own order is kept
        assert [r for r in order if r in env.roles] == list(env.roles), env.name


def test_docker_command_line_is_the_same_on_a_laptop_and_a_lab(capsys: Any) -> None:
    """`gpulab run local`'s docker argv (infra.local_run) and the workload_run role's, rendered
    from the same entry with the same values, are the same list."""
    run_id, image, host_dir = "20261123T210000Z-0a1b2c", "gpulab-workloads:0123abcd", "/r/x"
    inner = ["python3", "-m", "workloads", "bench", "--suite", "smoke", "--out", f"{host_dir}/o"]
    env_names = ["GPULAB_EXEC_ENV", "GPULAB_GIT_REV"]
    lab = (
        lab_render(
            execenv.lab_launch_argv("docker"),
            {
                "workload_run_id_effective": run_id,
                "workload_run_arm": "docker",
                "workload_run_docker_gpus": "all",
                "workload_run_env_names": env_names,
                "workload_run_dir": "/opt/gpulab",
                "workload_run_host_dir": host_dir,
                "workload_run_docker_image": image,
            },
        )
        + inner
    )
    local = render_launch(
        "docker",
        inner=inner,
        image=image,
        mounts=[Mount("/opt/gpulab/workloads", "/opt/gpulab/workloads", True),
                Mount(host_dir, host_dir)],
        env_names=env_names,
        name=execenv.container_name(run_id, "docker"),
        user="0:0",
        gpus="all",
    )  # fmt: skip
    assert local == lab
    with capsys.disabled():
        print("\n[docker, lab and local] " + " ".join(lab))
    flags = [t for t in lab if t.startswith("--")]
    assert "--ipc=host" in flags and "--network=host" in flags and "--entrypoint=" in flags
    assert "--network=none" not in flags


def test_local_run_uses_the_one_launcher(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """infra.local_run.run_docker hands the spec's argv to the engine (no command run here:
    ``stream`` is replaced and records what it was given)."""
    from infra import local_run

    seen: dict[str, Any] = {}

    def fake_stream(cmd: list[str], log: Path, out: Path, label: str, console: Any,
                    env: dict[str, str] | None = None, on_start: Any = None) -> int:  # fmt: skip
        seen["cmd"], seen["env"] = cmd, env
        return 0

    class Engine:
        cli, env = "/usr/bin/docker", {"PATH": "/usr/bin"}

        def run(self, *_a: Any, **_k: Any) -> None:
            return None

    monkeypatch.setattr(local_run, "stream", fake_stream)
    monkeypatch.setattr(local_run, "has_nvidia_gpu", lambda: True)
    out, engine = tmp_path / "run.jsonl", cast(Any, Engine())
    rc = local_run.run_docker(
        engine, "img:1", "smoke", out, tmp_path / "log", "image", None, "gpulab-r-docker"
    )
    cmd = seen["cmd"]
    assert rc == 0 and cmd[:4] == ["docker", "run", "--rm", "--name=gpulab-r-docker"]
    assert cmd[4:7] == ["--gpus=all", "--ipc=host", "--network=host"]
    assert cmd[7] == f"--user={os.getuid()}:{os.getgid()}" and cmd[8] == "--env=HOME=/tmp"
    assert "--env=GPULAB_GIT_REV" in cmd
    assert f"--volume={tmp_path}:{tmp_path}" in cmd
    i = cmd.index("img:1")
    assert cmd[i - 2 : i] == ["--workdir=/opt/gpulab", "--entrypoint="]
    assert cmd[i + 1 :] == ["python3", "-m", "workloads", *local_run.runner_args(
        "smoke", str(out), "docker")]  # fmt: skip
    assert seen["env"]["GPULAB_GIT_REV"]  # the value travels in the CLI's environment


def test_a_new_execution_environment_is_one_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """A made-up `podman` entry (using an existing role): accepted by name and alias, its
    roles picked, its command rendered for a laptop and a lab, listed in the Ansible vars."""
    podman = dataclasses.replace(
        ENVS["docker"],
        name="podman",
        aliases=("pm",),
        launch=("podman", "run", "--rm", "@gpus", "@env", "@mounts", "{image}", "@inner"),
        gpu_flags=("--device=nvidia.com/gpu={gpus}",),
    )
    monkeypatch.setitem(ENVS, "podman", podman)
    assert "podman" in execenv.names() and execenv.canonical("pm") == "podman"
    assert execenv.site_roles(["pm"]) == list(ENVS["docker"].roles)
    argv = render_launch("pm", inner=["true"], image="i", env_names=["A"], gpus="all",
                         mounts=[Mount("/a", "/b", True)])  # fmt: skip
    assert argv == ["podman", "run", "--rm", "--device=nvidia.com/gpu=all", "--env=A",
                    "--volume=/a:/b:ro", "i", "true"]  # fmt: skip
    assert "podman" in ansible_vars.workload_run_vars()["workload_run_launchers"]
    assert ansible_vars.site_vars()["gpulab_exec_env_roles"]["pm"] == list(podman.roles)
    # the runner reads the same table: its records state the new name, as a container
    assert make_setting("pci-passthrough", "pm").fields() == {
        "gpu_path": "pci-passthrough",
        "exec_env": "podman",
        "virtualization": "container-in-vm",
        "sharing": "exclusive",
    }
    with pytest.raises(InputError, match=r"exec_env 'lxc' is not one of native, .*podman \(or"):
        make_setting("local", "lxc")
    # and its fingerprint cross-check expects the entry's runtimes
    found = {"vm": {"is_vm": True}, "container": {"in_container": True, "runtime": "docker"}}
    fields = setting_record_fields(make_setting("pci-passthrough", "pm"), found)
    assert fields["setting_flags"] == []
    monkeypatch.setitem(ENVS, "podman", dataclasses.replace(podman, runtimes=("podman",)))
    (flag,) = setting_record_fields(make_setting("pci-passthrough", "pm"), found)["setting_flags"]
    assert flag.startswith("lab says container (exec_env podman), fingerprint finds runtime docker")


def test_k8s_has_no_argv_and_says_so() -> None:
    with pytest.raises(ValueError, match=r"k8s starts as a Job"):
        render_launch("k8s", inner=["x"])


def test_missing_value_is_named() -> None:
    bare = ExecEnv(
        name="x", container=False, roles=("workload_env",), launch=("{nope}", "@inner"),
        flags=ENVS["native"].flags,
    )  # fmt: skip
    with pytest.raises(ValueError, match=r"execution environment x: no value for \{nope\}"):
        render_launch(bare, inner=[])


def test_the_ansible_files_are_generated_from_the_table() -> None:
    """`python -m infra.specs.ansible_vars` wrote them; edit the table, not these files."""
    for rel in ansible_vars.FILES:
        assert (REPO / rel).read_text() == ansible_vars.render(rel), f"{rel}: rerun the generator"


def test_config_validation_accepts_a_new_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """gpulab:execution_envs reads the table on every parse: an entry added there is accepted
    (by name and alias, recorded by name) with no other change; an unknown one is one line."""
    from infra.config import ConfigError, validate
    from infra.dynamic import execution_envs

    podman = dataclasses.replace(ENVS["docker"], name="podman", aliases=("pm",))
    monkeypatch.setitem(ENVS, "podman", podman)
    cfg = validate({"topology": "local", "lab": "lab1", "execution_envs": ["native", "pm"]})
    assert cfg.execution_envs == ("native", "podman")
    assert execution_envs(cfg) == ["native", "podman"]
    old = validate({"topology": "local", "lab": "lab1", "execution_envs": ["singularity"]})
    assert old.execution_envs == ("apptainer",)
    with pytest.raises(ConfigError) as exc:
        validate({"topology": "local", "lab": "lab1", "execution_envs": ["lxc"]})
    assert str(exc.value).startswith("gpulab:execution_envs must be a list of native, docker")


def test_workload_run_takes_every_name_the_table_accepts() -> None:
    from infra.dynamic.workload_run import EXEC_ENVS

    assert execenv.accepted() == EXEC_ENVS
    specs = (ROLES / "workload_run" / "meta" / "argument_specs.yml").read_text()
    assert "choices: [native" not in specs  # the role checks against the generated table


def test_site_play_applies_the_roles_in_the_table_order(tmp_path: Path) -> None:
    """site.yml's own expressions (its vars, read from the file), evaluated by real
    ansible-playbook on the controller: a host measuring in docker and singularity gets
    apptainer before workload_image."""
    import json
    import subprocess
    import sys

    import yaml

    site = yaml.safe_load((REPO / "playbooks" / "site.yml").read_text())
    (play,) = [p for p in site if "site_roles" in p.get("vars", {})]
    probe = [
        {
            "name": "probe",
            "hosts": "localhost",
            "connection": "local",
            "gather_facts": False,
            "vars_files": [str(REPO / "playbooks" / "vars" / "exec_envs.yml")],
            "vars": {**play["vars"], "gpulab_exec_envs": ["native", "docker", "singularity"]},
            "tasks": [{"ansible.builtin.debug": {"msg": "ROLES={{ site_roles | to_json }}"}}],
        }
    ]
    (tmp_path / "probe.yml").write_text(yaml.safe_dump(probe))
    bin_dir = Path(sys.executable).parent
    r = subprocess.run(
        [str(bin_dir / "ansible-playbook"), "-i", "localhost,", str(tmp_path / "probe.yml")],
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ, ANSIBLE_NOCOLOR="1"),
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    got = json.loads(r.stdout.split("ROLES=", 1)[1].split('"\n', 1)[0].replace('\\"', '"'))
    assert got == execenv.site_roles(["native", "docker", "singularity"])
    assert got.index("apptainer") < got.index("workload_image")


def test_each_launcher_renders_its_own_argv() -> None:
    """Apptainer, Bitfusion and native, rendered for a laptop: the flags each entry states,
    in order; a machine without a GPU gets no GPU flag (no --nv, no --gpus)."""
    inner = ["python3", "-m", "workloads", "bench"]
    mounts = [Mount("/res", "/res"), Mount("/w", "/opt/gpulab/workloads", read_only=True)]
    vals = {"apptainer": "apptainer"}
    with_gpu = render_launch(
        "singularity", inner=inner, image="/w.sif", mounts=mounts, gpus="all", values=vals
    )
    assert with_gpu == [
        "apptainer", "exec", "--nv", "--bind=/res:/res",
        "--bind=/w:/opt/gpulab/workloads:ro", "--pwd=/opt/gpulab", "/w.sif", *inner,
    ]  # fmt: skip
    no_gpu = render_launch("apptainer", inner=inner, image="/w.sif", mounts=mounts, values=vals)
    assert no_gpu == [t for t in with_gpu if t != "--nv"]
    docker = render_launch(
        "docker", inner=inner, image="i", env_names=["A", "B"], name="n", user="1:2"
    )
    assert not [t for t in docker if t.startswith("--gpus")]
    assert docker[:7] == ["docker", "run", "--rm", "--name=n", "--ipc=host", "--network=host",
                          "--user=1:2"]  # fmt: skip
    assert docker[7:10] == ["--env=HOME=/tmp", "--env=A", "--env=B"]
    assert render_launch("docker", inner=inner, image="i", gpus="0,1")[4] == "--gpus=0,1"
    bitfusion = render_launch(
        "bitfusion", inner=inner, values={"bitfusion_gpus": "2", "bitfusion_partial": "0.5"}
    )
    assert bitfusion == ["bitfusion", "run", "-n", "2", "-p", "0.5", "--", *inner]
    assert render_launch("native", inner=inner, gpus="all", mounts=mounts) == inner


def test_the_lab_templates_of_each_launcher() -> None:
    """The workload_run role's templates: role variables where a laptop puts values; the
    entries without an image or an --env flag get neither."""
    assert execenv.lab_launch_argv("native") == []
    assert execenv.lab_launch_argv("singularity") == [
        "{{ workload_run_apptainer_bin }}", "exec", "--nv",
        "--bind={{ workload_run_dir }}/workloads:/opt/gpulab/workloads:ro",
        "--bind={{ workload_run_host_dir }}:{{ workload_run_host_dir }}",
        "--pwd=/opt/gpulab", "{{ workload_run_apptainer_image }}",
    ]  # fmt: skip
    assert execenv.lab_launch_argv("bitfusion") == [
        "bitfusion", "run", "-n", "{{ workload_run_bitfusion_gpus }}",
        "-p", "{{ workload_run_bitfusion_partial }}", "--",
    ]  # fmt: skip
    docker = execenv.lab_launch_argv("docker")
    assert docker[3] == "--name=" + execenv.LAB_VALUES["name"]
    assert docker[4] == "--gpus={{ workload_run_docker_gpus }}" and "--user=0:0" in docker
    assert "{{ workload_run_env_names | map('regex_replace', '^', '--env=') | list }}" in docker
    assert docker[-1] == "{{ workload_run_docker_image }}"


def test_names_aliases_and_containers_of_the_table() -> None:
    assert execenv.names() == ("native", "docker", "apptainer", "k8s", "bitfusion")
    assert execenv.aliases() == {"singularity": "apptainer"}
    assert execenv.accepted() == (*execenv.names(), "singularity")
    assert execenv.containers() == ("docker", "apptainer", "k8s")
    assert (
        execenv.canonical("singularity") == "apptainer" and execenv.get("native").name == "native"
    )
    with pytest.raises(execenv.UnknownExecEnv) as err:
        execenv.canonical("podman")
    assert str(err.value) == (
        "execution environment 'podman' is not one of "
        "native, docker, apptainer, k8s, bitfusion, singularity"
    )
    assert execenv.container_name("20261123T210000Z-0A1B", "Docker") == (
        "gpulab-20261123t210000z-0a1b-docker"
    )
    assert ENVS["apptainer"].record_label == "apptainer"
    assert ENVS["docker"].virtualization == "container"
    assert ENVS["bitfusion"].virtualization == "none"


def test_role_order_keeps_each_entry_order_and_refuses_a_cycle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    order = execenv.role_order()
    assert order == [
        "docker_engine", "nvidia_container_toolkit", "apptainer", "workload_env", "workload_image",
    ]  # fmt: skip
    assert execenv.site_roles(["native"]) == ["workload_env"]
    assert execenv.site_roles(["singularity", "native"]) == [
        "apptainer", "workload_env", "workload_image",
    ]  # fmt: skip
    assert execenv.site_roles(["k8s", "bitfusion"]) == ["nvidia_container_toolkit", "workload_env"]
    flags = ENVS["native"].flags

    def two_envs(a: tuple[str, ...], b: tuple[str, ...]) -> dict[str, ExecEnv]:
        """Environments ``a`` and ``b`` (in that order) asking for roles ``a`` and ``b``."""
        return {
            name: ExecEnv(name=name, container=False, roles=roles, launch=("@inner",), flags=flags)
            for name, roles in (("a", a), ("b", b))
        }

    monkeypatch.setattr(execenv, "ENVS", two_envs(("r1", "r2"), ("r2", "r1")))
    with pytest.raises(ValueError) as err:
        execenv.role_order()
    assert str(err.value) == (
        "the execution environments order their roles in a cycle: ['r1', 'r2']"
    )
    # ties broken by first appearance, a later entry's order kept
    monkeypatch.setattr(execenv, "ENVS", two_envs(("r3", "r1"), ("r2", "r3")))
    assert execenv.role_order() == ["r2", "r3", "r1"]


def test_the_generator_writes_each_file_under_the_root_it_is_given(tmp_path: Path) -> None:
    written = ansible_vars.write(tmp_path)
    assert written == [tmp_path / rel for rel in ansible_vars.FILES]
    for rel in ansible_vars.FILES:
        text = (tmp_path / rel).read_text()
        assert text == ansible_vars.render(rel) == (REPO / rel).read_text()
    assert text.startswith(
        ansible_vars.HEADER + "gpulab_exec_env_roles:\n  native:\n    - workload_env\n"
    )


def test_what_the_caller_leaves_out_stays_empty_and_a_gpu_flag_names_its_entry() -> None:
    """Defaults: no name, user or image given renders empty values, never a stand-in; a GPU
    flag whose placeholder has no value is named with its entry."""
    assert render_launch("docker", inner=[]) == [
        "docker", "run", "--rm", "--name=", "--ipc=host", "--network=host", "--user=",
        "--env=HOME=/tmp", "--workdir=/opt/gpulab", "--entrypoint=", "",
    ]  # fmt: skip
    odd = ExecEnv(
        name="odd", container=True, roles=("workload_env",), launch=("run", "@gpus", "@inner"),
        flags=ENVS["native"].flags, gpu_flags=("--devices={devices}",),
    )  # fmt: skip
    assert render_launch(odd, inner=["x"]) == ["run", "x"]
    with pytest.raises(ValueError) as err:
        render_launch(odd, inner=["x"], gpus="all")
    assert str(err.value) == (
        "execution environment odd: no value for {devices} in '--devices={devices}'"
    )
