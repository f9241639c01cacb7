"""Execution environments: one :class:`ExecEnv` entry per way the runner is started on a host.

The table :data:`ENVS` is the only place that knows what ``native``, ``docker``, ``apptainer``
(alias ``singularity``), ``k8s`` and ``bitfusion`` are. It lives in ``workloads/`` because the
runner needs the names too (the setting a record states, :mod:`workloads.setting`; the
fingerprint's cross-check) and never imports ``infra/``; ``infra/`` imports it: config
validation takes the accepted names from it (the one place a name is checked and an alias
resolved), ``site.yml``'s roles and the ``workload_run`` role's launchers are generated from it
(``python -m infra.specs.ansible_vars``), ``gpulab run local`` launches through
:func:`render_launch`, and records carry :attr:`ExecEnv.record_label`.

One Docker launcher, the same on a laptop (``gpulab run local``) and on a lab host
(``workload_run``)::

    docker run --rm --name=<name> [--gpus=all] --ipc=host --network=host --user=<uid:gid>
        --env=HOME=/tmp [--env=NAME ...] [--volume=SRC:DST[:ro] ...] --workdir=/opt/gpulab
        --entrypoint= <image> python3 -m workloads bench ...

- ``--network=host``: no bridge or NAT in the path of a distributed run (workers reach each
  other on the hosts' addresses, ``GPULAB_DIST_HOSTS``), and it works on engines started with
  ``--bridge=none``. ``gpulab run local`` used ``--network=none`` before; it is host now so a
  docker/native ratio taken on a laptop means what it means on a lab.
- ``--ipc=host``: the host's ``/dev/shm`` instead of Docker's 64 MB one (NCCL and framework
  data loaders use shared memory); the same reason as above for using it everywhere.
- ``--gpus=all``: only where the machine has an NVIDIA GPU (a laptop without one runs on CPU);
  on a lab always (``workload_run_docker_gpus``).
- ``--user``: the uid:gid that launches it, so the records it writes belong to the caller;
  root on a lab (the role runs as root through ``become``, :attr:`ExecEnv.launch_needs_root`).
  ``HOME=/tmp`` because that user has no home inside the image.
- ``--env=NAME``: every variable the launcher sets for the runner is passed by name (values
  never appear on the command line).
- ``--volume``: the results directory at the same path inside as outside (``--out`` and
  ``GPULAB_RECORDS_OUT`` mean the same file on both sides); on a lab the host's
  ``workloads/`` read-only over the image's.
- ``--entrypoint=``: the image's entrypoint is cleared and the command is given in full, so
  any image with Python and the framework works, not only one built from our Dockerfile.

Nothing here imports Ansible, Pulumi, ``infra/`` or another module of ``workloads/``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

WORKDIR = "/opt/gpulab"  # in a container: the working directory; workloads/ is under it
JOB_TEMPLATE = "playbooks/roles/workload_run/templates/job.yaml.j2"
# A token that stands for several: expanded by render_launch.
GROUPS = ("@gpus", "@env", "@mounts", "@inner")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")


class UnknownExecEnv(ValueError):
    """A name that is neither an execution environment nor an alias of one (one line)."""


@dataclass(frozen=True)
class Image:
    """Where a container image comes from and how it is built."""

    source: str
    build: str
    lab_var: str  # the workload_run variable that names it on a lab


@dataclass(frozen=True)
class Flags:
    """What the launch gives the runner, one line each (docs and CONTRIBUTING read these)."""

    gpu: str
    ipc: str
    network: str
    user: str
    mounts: str
    env: str


@dataclass(frozen=True)
class ExecEnv:
    """One execution environment.

    ``launch`` is the argv template (``None``: not an argv, see ``job``). Its tokens may hold
    ``{placeholders}`` (``name``, ``image``, ``user``, ``workdir``, ``gpus`` and the keys of
    ``lab_values``) and the group tokens of :data:`GROUPS`: ``@gpus`` becomes ``gpu_flags``
    when GPUs are given, ``@env`` one ``env_flag`` per variable name, ``@mounts`` one
    ``mount_flag`` per mount, ``@inner`` the runner's argv.
    """

    name: str
    container: bool
    roles: tuple[str, ...]  # site.yml roles that prepare a GPU host for it, in order
    launch: tuple[str, ...] | None
    flags: Flags
    image: Image | None = None
    job: str | None = None  # the manifest template when the runner starts as a Kubernetes Job
    gpu_flags: tuple[str, ...] = ()
    env_flag: str = ""  # "PREFIX{name}", one token per variable; "" = environment inherited
    mount_flag: str = ""  # "PREFIX{src}:{dst}{ro}", one token per mount
    lab_values: Mapping[str, str] | None = None  # lab values of the entry's own placeholders
    aliases: tuple[str, ...] = ()
    why: str = ""
    # The inventory pattern of the hosts the runner is started on (workloads.yml's hosts).
    runs_on: str = "all:!gpu_path_none"
    # Whether the launch needs root on the host it runs on: workloads.yml becomes root there
    # (generated into gpulab_exec_env_become). A GPU host's launch does (the runner writes
    # /var/lib/gpulab/results, docker talks to the engine); a Job created from the controller
    # with the cluster's kubeconfig does not, and its files belong to the controller's user.
    launch_needs_root: bool = True
    # validate.yml's check that a GPU host can use its GPU in this environment (an argv of
    # Jinja-templated tokens, run on every GPU host that measures in it); () = none beyond
    # nvidia-smi on the host.
    validate_argv: tuple[str, ...] = ()
    # The container runtimes the fingerprint may see the runner in when it runs here (its
    # ``container.runtime``, workloads.fingerprint.system); () for one that is no container.
    runtimes: tuple[str, ...] = ()

    @property
    def record_label(self) -> str:
        """The ``execution_env`` a record made in this environment carries."""
        return self.name

    @property
    def virtualization(self) -> str:
        """What this environment adds to the host's setting: ``container`` or ``none``."""
        return "container" if self.container else "none"


DOCKER_FLAGS = Flags(
    gpu="--gpus=all where the machine has an NVIDIA GPU (NVIDIA Container Toolkit)",
    ipc="--ipc=host: the host's /dev/shm (NCCL, data loaders), not Docker's 64 MB",
    network="--network=host: no bridge/NAT; distributed workers use the hosts' addresses",
    user="--user=<uid:gid> of the launcher (root on a lab); HOME=/tmp",
    mounts="results directory at the same path; on a lab the host's workloads/ read-only",
    env="--env=NAME for every variable the launcher sets (values stay off the command line)",
)

DOCKER_LAUNCH = (
    "docker", "run", "--rm", "--name={name}", "@gpus", "--ipc=host", "--network=host",
    "--user={user}", "--env=HOME=/tmp", "@env", "@mounts", "--workdir={workdir}",
    "--entrypoint=", "{image}", "@inner",
)  # fmt: skip
APPTAINER_LAUNCH = (
    "{apptainer}", "exec", "@gpus", "@mounts", "--pwd={workdir}", "{image}", "@inner",
)  # fmt: skip
BITFUSION_LAUNCH = (
    "bitfusion", "run", "-n", "{bitfusion_gpus}", "-p", "{bitfusion_partial}", "--", "@inner",
)  # fmt: skip

ENVS: dict[str, ExecEnv] = {
    e.name: e
    for e in (
        ExecEnv(
            name="native",
            container=False,
            roles=("workload_env",),
            launch=("@inner",),
            flags=Flags(
                gpu="the host's devices",
                ipc="the host's",
                network="the host's",
                user="the launcher (root on a lab)",
                mounts="none: the runner reads and writes the host's paths",
                env="inherited",
            ),
            why="the baseline every other environment is normalized to",
        ),
        ExecEnv(
            name="docker",
            container=True,
            roles=("docker_engine", "nvidia_container_toolkit", "workload_env", "workload_image"),
            launch=DOCKER_LAUNCH,
            flags=DOCKER_FLAGS,
            image=Image(
                source="workload_run_docker_image on a lab (built on the host by the "
                "workload_image role, or pulled from workload_image_registry_image); "
                "gpulab run local builds its own",
                build="templates/Dockerfile.j2 on a base image with Python and the framework "
                "(infra.local_run.build_image); a lab mounts the host's workloads/ over it",
                lab_var="workload_run_docker_image",
            ),
            gpu_flags=("--gpus={gpus}",),
            env_flag="--env={name}",
            mount_flag="--volume={src}:{dst}{ro}",
            validate_argv=(
                "docker",
                "run",
                "--rm",
                "--gpus=all",
                "{{ validate_cuda_image }}",
                "nvidia-smi",
                "-L",
            ),
            runtimes=("docker",),
            why="engine + NVIDIA container toolkit; workload_env ships workloads/ to mount",
        ),
        ExecEnv(
            name="apptainer",
            container=True,
            roles=("apptainer", "workload_env", "workload_image"),
            launch=APPTAINER_LAUNCH,
            flags=Flags(
                gpu="--nv (the host's driver libraries bound in)",
                ipc="the host's (Apptainer's default)",
                network="the host's (Apptainer's default)",
                user="the launcher (Apptainer runs as its caller)",
                mounts="--bind: results directory at the same path, workloads/ read-only",
                env="inherited (Apptainer passes the caller's environment)",
            ),
            image=Image(
                source="a SIF file on the host, named by the lab variable below (built by "
                "the workload_image role)",
                build="apptainer build workloads.sif docker-daemon://<the docker image>, or "
                "from templates/workloads.def.j2 where the host has no Docker engine",
                lab_var="workload_run_apptainer_image",
            ),
            gpu_flags=("--nv",),
            mount_flag="--bind={src}:{dst}{ro}",
            validate_argv=("apptainer", "exec", "--nv", "{{ validate_sif }}", "nvidia-smi", "-L"),
            lab_values={"apptainer": "{{ workload_run_apptainer_bin }}"},
            aliases=("singularity",),
            runtimes=("apptainer",),
            why="Singularity's successor; 'singularity' is accepted and recorded as apptainer",
        ),
        ExecEnv(
            name="k8s",
            container=True,
            # inert on magnum-k8s (its nodes are no inventory hosts: k8s_gpu installs the GPU
            # stack through the API); a cluster whose GPU nodes are hosts of the lab gets it
            roles=("nvidia_container_toolkit",),
            launch=None,
            job=JOB_TEMPLATE,
            runs_on="k8s_control",  # the Job is created through the cluster's API host
            launch_needs_root=False,  # from the controller, as its user (no sudo there)
            flags=Flags(
                gpu="resources.limits nvidia.com/gpu (device plugin / GPU Operator)",
                ipc="the pod's",
                network="the pod network",
                user="the image's",
                mounts="none: records come back in the Job's log between markers",
                env="the Job's env: workload_run_environment, the setting, the expected device",
            ),
            image=Image(
                source="workload_run_k8s_image: <gpulab:registry>/gpulab-workloads:<digest>, "
                "pulled by the kubelet with the pull secret k8s_gpu makes",
                build="k8s_gpu on the controller: docker build from templates/Dockerfile.j2 "
                "and docker push to gpulab:registry",
                lab_var="workload_run_k8s_image",
            ),
            runtimes=("kubernetes",),
            why="a Job through the k8s_control host; k8s_gpu prepares the cluster there",
        ),
        ExecEnv(
            name="bitfusion",
            container=False,
            roles=("workload_env",),
            launch=BITFUSION_LAUNCH,
            flags=Flags(
                gpu="remote GPUs of the Bitfusion server (-n GPUs, -p fraction of each)",
                ipc="the host's",
                network="the host's; CUDA calls travel to the server",
                user="the launcher",
                mounts="none",
                env="inherited",
            ),
            lab_values={
                "bitfusion_gpus": "{{ workload_run_bitfusion_gpus }}",
                "bitfusion_partial": "{{ workload_run_bitfusion_partial }}",
            },
            why="bitfusion_client comes with the host's gpu_path (bitfusion)",
        ),
    )
}


def names() -> tuple[str, ...]:
    """The execution environments, in the table's order."""
    return tuple(ENVS)


def aliases() -> dict[str, str]:
    """Other names accepted for an execution environment -> its name."""
    return {a: e.name for e in ENVS.values() for a in e.aliases}


def accepted() -> tuple[str, ...]:
    """What a stack's ``gpulab:execution_envs`` may say: the names, then the aliases."""
    return names() + tuple(aliases())


def containers() -> tuple[str, ...]:
    return tuple(n for n, e in ENVS.items() if e.container)


def canonical(name: str) -> str:
    """The execution environment ``name`` means (aliases resolved)."""
    if name in ENVS:
        return name
    alias = aliases().get(name)
    if alias is None:
        raise UnknownExecEnv(
            f"execution environment {name!r} is not one of {', '.join(accepted())}"
        )
    return alias


def get(name: str) -> ExecEnv:
    return ENVS[canonical(name)]


def role_order() -> list[str]:
    """Every role of the table once, in an order that keeps each entry's own order (a role
    listed after another in any entry comes after it here), ties broken by first appearance.

    So ``workload_image`` (which builds the SIF with the ``apptainer`` that its entry installs
    first) runs after ``apptainer`` on a host that measures in docker and apptainer alike."""
    seen: list[str] = []
    after: dict[str, set[str]] = {}  # role -> the roles that must come before it
    for env in ENVS.values():
        for i, role in enumerate(env.roles):
            if role not in seen:
                seen.append(role)
            after.setdefault(role, set()).update(env.roles[:i])
    order: list[str] = []
    while len(order) < len(seen):
        ready = [r for r in seen if r not in order and after[r] <= set(order)]
        if not ready:
            raise ValueError(f"the execution environments order their roles in a cycle: {seen}")
        order.append(ready[0])
    return order


def site_roles(envs: Sequence[str]) -> list[str]:
    """The roles that prepare a host for ``envs``, each once, in :func:`role_order`."""
    wanted = {r for e in envs for r in get(e).roles}
    return [r for r in role_order() if r in wanted]


@dataclass(frozen=True)
class Mount:
    src: str
    dst: str
    read_only: bool = False


def _fill(token: str, values: Mapping[str, str], env: str) -> str:
    def sub(m: re.Match[str]) -> str:
        if m[1] not in values:
            raise ValueError(f"execution environment {env}: no value for {{{m[1]}}} in {token!r}")
        return values[m[1]]

    return _PLACEHOLDER.sub(sub, token)


def render_launch(
    env: str | ExecEnv,
    *,
    inner: Sequence[str],
    image: str = "",
    mounts: Sequence[Mount] = (),
    env_names: Sequence[str] | str = (),
    name: str = "",
    user: str = "",
    gpus: str = "",
    values: Mapping[str, str] | None = None,
) -> list[str]:
    """The argv that starts ``inner`` (the runner's argv) in execution environment ``env``.

    ``env_names``: the variables passed by name (a string is a Jinja expression of a list of
    names, for the lab: it becomes one token that Ansible renders to a list, see
    :func:`lab_launch_argv`). ``gpus``: empty when the machine has no GPU. ``values``: the
    entry's own placeholders (``bitfusion_gpus``...).
    """
    spec = env if isinstance(env, ExecEnv) else get(env)
    if spec.launch is None:
        raise ValueError(f"execution environment {spec.name} starts as a Job ({spec.job})")
    fill = {"name": name, "image": image, "user": user, "workdir": WORKDIR, "gpus": gpus}
    fill.update(values or {})
    argv: list[str] = []
    for token in spec.launch:
        if token == "@inner":
            argv += list(inner)
        elif token == "@gpus":
            argv += [_fill(t, fill, spec.name) for t in spec.gpu_flags] if gpus else []
        elif token == "@mounts":
            for m in mounts:
                ro = ":ro" if m.read_only else ""
                argv.append(spec.mount_flag.format(src=m.src, dst=m.dst, ro=ro))
        elif token == "@env":
            if isinstance(env_names, str):
                prefix = spec.env_flag.removesuffix("{name}")
                argv.append(f"{{{{ {env_names} | map('regex_replace', '^', '{prefix}') | list }}}}")
            else:
                argv += [spec.env_flag.format(name=n) for n in env_names]
        else:
            argv.append(_fill(token, fill, spec.name))
    return argv


def container_name(run_id: str, arm: str) -> str:
    """``gpulab-<run id>-<arm>``, lowercase: the container of one run in one arm."""
    return f"gpulab-{run_id}-{arm}".lower()


# The lab's values: Jinja expressions of workload_run role variables, rendered on the host.
LAB_VALUES = {
    "name": "{{ ('gpulab-' ~ workload_run_id_effective ~ '-' ~ workload_run_arm) | lower }}",
    "user": "0:0",
    "gpus": "{{ workload_run_docker_gpus }}",
}
LAB_ENV_NAMES = "workload_run_env_names"  # role variable: names of the runner's variables
LAB_MOUNTS = (
    Mount("{{ workload_run_dir }}/workloads", f"{WORKDIR}/workloads", read_only=True),
    Mount("{{ workload_run_host_dir }}", "{{ workload_run_host_dir }}"),
)


def lab_launch_argv(env: str) -> list[str]:
    """The launch argv template the ``workload_run`` role uses (without the runner's argv).

    Jinja expressions of the role's variables stand where ``gpulab run local`` puts values; the
    ``@env`` token is one expression that renders to a list (the role flattens it).
    """
    spec = get(env)
    return render_launch(
        spec,
        inner=(),
        image=f"{{{{ {spec.image.lab_var} }}}}" if spec.image else "",
        mounts=LAB_MOUNTS,
        env_names=LAB_ENV_NAMES if spec.env_flag else (),
        name=LAB_VALUES["name"],
        user=LAB_VALUES["user"],
        gpus=LAB_VALUES["gpus"],
        values=spec.lab_values,
    )
