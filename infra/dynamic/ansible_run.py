"""AnsibleRun: a playbook run on the lab's hosts as a Pulumi dynamic resource.

Inputs: ``hosts`` (entries of the ``hosts`` output, see infra.hosts.Host), ``playbook``
(``site.yml`` -> playbooks/site.yml, or a path), ``variables`` (extravars), ``secrets`` (a
secret mapping handed to Ansible in a 0600 vars file; state keeps only a salted, slow HMAC of
it, PBKDF2-HMAC-SHA256 with a random per-run salt stored beside it, see :func:`secrets_digest`) and
``triggers`` (anything; a change re-runs). The digest of the files the playbook uses (itself,
``vars/``, the roles it names: :func:`play_files`) is an input too, so an edited role of the
play re-runs it on the next ``up``; nothing else does.

Outputs: ``summary`` (per host: ok / changed / failed / unreachable / skipped), ``facts`` (per
host: the NVIDIA driver and CUDA versions the play found, GPU facts), ``status``, ``elapsed_s``.

``diff`` compares every input (``secrets`` by digest); a change re-runs the play in place.
``read`` (``pulumi refresh``, ``up --refresh``) returns the stored outputs: a play's result
cannot be read back from the hosts without running it again. ``delete`` runs nothing: a
configured host cannot be un-configured, it goes away with its topology.

The engine runs these methods in its own provider host (``python -m pulumi.dynamic``, cwd =
the program directory = the repository root, the project's ``.venv``): this module imports
from there with no ``sys.path`` change, and the provider holds no state (plain class, heavy
imports inside methods) so Pulumi's dill serialization pickles it by reference to this module.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pulumi
from pulumi.dynamic import (
    CheckFailure,
    CheckResult,
    CreateResult,
    DiffResult,
    ReadResult,
    ResourceProvider,
    UpdateResult,
)

from infra.paths import PROJECT

PLAYBOOKS = PROJECT / "playbooks"

# Inputs whose change re-runs the play (compared in diff); "secrets" is compared by digest.
RUN_INPUTS = ("hosts", "playbook", "variables", "playbook_digest", "triggers")
# What create/update add to the inputs; never compared in diff.
OUTPUTS = ("secrets_digest", "secrets_salt", "summary", "facts", "status", "elapsed_s", "ran_at")
# PBKDF2 rounds of the secrets digest: a guess of the secret costs this many HMACs.
SECRETS_DIGEST_ROUNDS = 100_000
# Fact names (set_fact / gathered) reported as the driver and CUDA versions found.
# First found wins: what the driver / CUDA roles installed, then what gpu_facts discovered.
DRIVER_KEYS = (
    "nvidia_driver_installed_version",
    "gpu_facts_driver_version",
    "nvidia_driver_version",
)
CUDA_KEYS = (
    "cuda_toolkit_installed_version",
    "gpu_facts_cuda_version",
    "cuda_version",
)
_FACT_PREFIXES = ("gpu_facts_", "nvidia_", "cuda_")
_MAX_FACT_CHARS = 2000


def tree_digest(path: Path) -> str:
    """sha256 over every file's relative path and content under ``path`` (or of one file)."""
    h = hashlib.sha256()
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    for p in files:
        if "__pycache__" in p.parts:
            continue
        h.update(str(p.relative_to(path.parent if path.is_file() else path)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()


# A YAML/Jinja comment: a role named only there is not used.
_COMMENT_RE = re.compile(r"(?:^|\s)#.*$", re.MULTILINE)


def play_files(playbook: Path, tree: Path = PLAYBOOKS) -> list[Path]:
    """The files under ``tree`` a run of ``playbook`` can read: the playbook, every file that is
    neither in a role nor another top-level playbook (``vars/``), then, until none is added,
    every role (``roles/<name>``) and top-level playbook whose name appears outside a comment in
    a file already taken. Roles are named whole (the execution environments' roles are listed
    in vars/exec_envs.yml), so an edit of a role only another playbook uses (workload_run, for
    workloads.yml) leaves this playbook's digest alone."""

    def files(p: Path) -> list[Path]:
        if p.is_file():
            return [p]
        return sorted(f for f in p.rglob("*") if f.is_file() and "__pycache__" not in f.parts)

    roles = tree / "roles"
    units = {p.name: p for p in sorted(roles.iterdir()) if p.is_dir()} if roles.is_dir() else {}
    tops = [p for p in sorted(tree.iterdir()) if p.is_file() and p.suffix in (".yml", ".yaml")]
    units.update({p.name: p for p in tops if p != playbook})
    inside = set(units.values())
    taken = [playbook] + [
        f
        for f in files(tree)
        if f != playbook and not any(f == u or u in f.parents for u in inside)
    ]
    text = "\n".join(_COMMENT_RE.sub("", f.read_text(errors="replace")) for f in taken)
    pending = dict(units)
    added = True
    while added:
        added = False
        for name, path in list(pending.items()):
            if re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", text):
                del pending[name]
                new = files(path)
                taken += new
                text += "\n" + "\n".join(
                    _COMMENT_RE.sub("", f.read_text(errors="replace")) for f in new
                )
                added = True
    return sorted(taken)


def play_digest(playbook: Path, tree: Path = PLAYBOOKS) -> str:
    """sha256 over the relative path and content of each of :func:`play_files`."""
    h = hashlib.sha256()
    for p in play_files(playbook, tree):
        h.update(str(p.relative_to(tree)).encode())
        h.update(b"\0")
        h.update(p.read_bytes())
    return h.hexdigest()


def new_salt() -> str:
    """A random salt for one resource's secrets digest (hex, 128 bits)."""
    import secrets as _secrets

    return _secrets.token_hex(16)


def secrets_digest(secrets: Any, salt: str | None) -> str | None:
    """PBKDF2-HMAC-SHA256 of the secrets keyed by ``salt`` (None without secrets or salt).

    Enough for ``diff`` to see a changed secret (recomputed with the stored salt), while the
    stored value cannot be matched against precomputed tables and each guess is slow."""
    if not secrets or not salt:
        return None
    blob = json.dumps(secrets, sort_keys=True, default=str).encode()
    key = hashlib.pbkdf2_hmac(
        "sha256", b"gpulab-ansible-run\0" + blob, bytes.fromhex(salt), SECRETS_DIGEST_ROUNDS
    )
    return key.hex()


def kept_inputs(props: dict[str, Any], inputs: tuple[str, ...]) -> dict[str, Any]:
    """What a run keeps in the state of its inputs: each of ``inputs``, and of the secrets
    only their digest under a fresh salt (never the secrets)."""
    salt = new_salt() if props.get("secrets") else None
    return {
        **{k: props.get(k) for k in inputs},
        "secrets_digest": secrets_digest(props.get("secrets"), salt),
        "secrets_salt": salt,
    }


def host_objects(hosts: list[dict[str, Any]]) -> list[Any]:
    from infra.hosts import Host

    return [Host.from_output(dict(h)) for h in hosts]


class FactCollector:
    """An ansible-runner event handler keeping the facts that set_fact / setup returned."""

    def __init__(self) -> None:
        self.facts: dict[str, dict[str, Any]] = {}

    def __call__(self, event: dict[str, Any]) -> bool:
        if event.get("event") == "runner_on_ok":
            data = event.get("event_data") or {}
            res = data.get("res") or {}
            facts = res.get("ansible_facts")
            if isinstance(facts, dict) and not res.get("_ansible_no_log"):
                host = str(data.get("host", "?"))
                self.facts.setdefault(host, {}).update(facts)
        return True

    def report(self, names: list[str]) -> dict[str, dict[str, Any]]:
        return {n: gpu_facts(self.facts.get(n, {})) for n in names}


def gpu_facts(facts: dict[str, Any]) -> dict[str, Any]:
    """Driver / CUDA versions and the GPU-related facts of one host (small values only)."""

    def first(keys: tuple[str, ...]) -> Any:
        for k in keys:
            v = facts.get(k)
            if v not in (None, "", []):
                return v
        return None

    extra = {}
    for k, v in facts.items():
        if k.startswith(_FACT_PREFIXES) and len(json.dumps(v, default=str)) <= _MAX_FACT_CHARS:
            extra[k] = v
    return {
        "driver_version": first(DRIVER_KEYS),
        "cuda_version": first(CUDA_KEYS),
        "os": " ".join(
            str(facts[k])
            for k in ("ansible_distribution", "ansible_distribution_version")
            if facts.get(k)
        )
        or None,
        "kernel": facts.get("ansible_kernel"),
        "facts": dict(sorted(extra.items())),
    }


def _play(
    playbook: str,
    hosts: list[dict[str, Any]],
    extravars: dict[str, Any] | None,
    secrets: dict[str, Any] | None,
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """In the fresh interpreter: the run's result (not raised) and the facts it set."""
    from infra.ansible import run_playbook

    collector = FactCollector()
    result = run_playbook(
        playbook,
        host_objects(hosts),
        extravars=extravars,
        secrets=secrets,
        event_handler=collector,
        check=False,
    )
    return result, collector.facts


def play_in_fresh_process(
    playbook: str,
    hosts: list[dict[str, Any]],
    extravars: dict[str, Any] | None = None,
    secrets: dict[str, Any] | None = None,
) -> tuple[Any, dict[str, dict[str, Any]]]:
    """``run_playbook(..., check=False)`` in a fresh interpreter; (PlaybookResult, facts).

    The engine's provider host is a gRPC server. ansible-runner forks it (pexpect) and runs
    Python in the child before exec, where gRPC's fork handlers leave the child broken
    ("epoll_wait error: Bad file descriptor", status failed rc=-1, no play output). A spawned
    interpreter is started by fork+exec with no Python in between, and the playbook run
    happens there. It gets this process's sys.path and environment.
    """
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=ctx) as pool:
        return pool.submit(_play, playbook, hosts, extravars, secrets).result()


def input_changes(
    olds: dict[str, Any],
    news: dict[str, Any],
    run_inputs: tuple[str, ...],
    outputs: tuple[str, ...],
) -> list[str]:
    """Every input whose value differs between the stored outputs and the new inputs: the
    known ones and any other key of the new inputs (outputs and the serialized provider are
    not inputs)."""
    keys = set(run_inputs) | {k for k in news if k not in outputs and not k.startswith("__")}
    return sorted(k for k in keys if olds.get(k) != news.get(k))


class PlayRunProvider(ResourceProvider):
    """What AnsibleRun and WorkloadRun share: diff compares every input, read returns the stored
    outputs, update runs again, delete runs nothing. Subclasses give ``RUN_INPUTS``,
    ``OUTPUTS``, ``check``, ``create`` and ``_run``."""

    serialize_as_secret_always = False
    RUN_INPUTS: tuple[str, ...] = ()
    OUTPUTS: tuple[str, ...] = ()

    def changed_inputs(self, olds: dict[str, Any], news: dict[str, Any]) -> list[str]:
        """Every run input, with ``secrets`` compared by its salted digest (the state keeps no
        secret; a digest of an older release, without salt, counts as changed)."""
        changed = [
            k for k in input_changes(olds, news, self.RUN_INPUTS, self.OUTPUTS) if k != "secrets"
        ]
        old_digest = olds.get("secrets_digest")
        if bool(old_digest) != bool(news.get("secrets")) or (
            old_digest
            and old_digest != secrets_digest(news.get("secrets"), olds.get("secrets_salt"))
        ):
            changed.append("secrets")
        return changed

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        return DiffResult(
            changes=bool(self.changed_inputs(olds, news)), replaces=[], delete_before_replace=False
        )

    def read(self, id_: str, props: dict[str, Any]) -> ReadResult:
        return ReadResult(id_, dict(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(self._run(news))

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        return None

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        raise NotImplementedError


class AnsibleRunProvider(PlayRunProvider):
    """create/update run the playbook; diff says whether the inputs changed; delete is a no-op."""

    RUN_INPUTS = RUN_INPUTS
    OUTPUTS = OUTPUTS

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> CheckResult:
        failures = []
        hosts = news.get("hosts")
        if not isinstance(hosts, list) or not hosts:
            failures.append(CheckFailure("hosts", "hosts must be a non-empty list of hosts"))
        if not isinstance(news.get("playbook"), str) or not news.get("playbook"):
            failures.append(CheckFailure("playbook", "playbook must name a playbook file"))
        variables = news.get("variables")
        if variables is not None and not isinstance(variables, dict):
            failures.append(CheckFailure("variables", "variables must be a mapping"))
        return CheckResult(news, failures)

    def create(self, props: dict[str, Any]) -> CreateResult:
        import uuid

        return CreateResult(f"ansible-{uuid.uuid4().hex[:12]}", self._run(props))

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        import time
        from datetime import UTC, datetime

        from infra.ansible import PlaybookError

        hosts = host_objects(props["hosts"])
        collector = FactCollector()
        t0 = time.monotonic()
        result, collector.facts = play_in_fresh_process(
            props["playbook"],
            props["hosts"],
            extravars=props.get("variables") or None,
            secrets=props.get("secrets") or None,
        )
        if not result.ok:
            raise PlaybookError(result)
        # The lab's hosts only: a play on the controller (site.yml's Kubernetes GPU play on
        # localhost) would add a recap line for a machine that is not part of the lab; had it
        # failed, the run would have stopped above with its error.
        lab_hosts = {h.name for h in hosts}
        summary = {
            name: {
                "ok": s.ok,
                "changed": s.changed,
                "failed": s.failed,
                "unreachable": s.unreachable,
                "skipped": s.skipped,
            }
            for name, s in sorted(result.hosts.items())
            if name in lab_hosts
        }
        outs = kept_inputs(props, RUN_INPUTS)
        outs.update(
            {
                "summary": summary,
                "facts": collector.report([h.name for h in hosts]),
                "status": result.status,
                "elapsed_s": round(time.monotonic() - t0, 2),
                "ran_at": datetime.now(UTC).isoformat(timespec="seconds"),
            }
        )
        return outs


class AnsibleRun(pulumi.dynamic.Resource, module="gpulab", name="AnsibleRun"):
    """Run ``playbook`` on ``hosts``; re-runs only when an input (or the playbook tree) changes."""

    summary: pulumi.Output[dict[str, Any]]
    facts: pulumi.Output[dict[str, Any]]
    status: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        hosts: Any,
        playbook: str,
        variables: Any = None,
        secrets: Any = None,
        triggers: Any = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        pb = Path(playbook)
        pb_path = pb if pb.is_absolute() or pb.exists() else PLAYBOOKS / pb
        in_tree = pb_path.resolve().is_relative_to(PLAYBOOKS)
        if in_tree and pb_path.is_file():
            digest: str | None = play_digest(pb_path.resolve())
        else:
            digest = tree_digest(pb_path) if pb_path.exists() else None
        props = {
            "hosts": hosts,
            "playbook": playbook,
            "variables": variables or {},
            "secrets": pulumi.Output.secret(secrets) if secrets else None,
            "playbook_digest": digest,
            "triggers": triggers or [],
            "secrets_digest": None,
            "secrets_salt": None,
            "summary": None,
            "facts": None,
            "status": None,
            "elapsed_s": None,
            "ran_at": None,
        }
        super().__init__(AnsibleRunProvider(), name, props, opts)
