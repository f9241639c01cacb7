"""Run a playbook through ansible-runner and summarize it per host.

    from infra.ansible import run_playbook
    result = run_playbook("site.yml", hosts, extravars={...}, secrets={"token": ...})
    result.hosts["gpu-0"].changed

- Every run gets a fresh private data dir (ansible-runner re-reads stale ``env/`` files of a
  reused one). ``keep_artifacts`` names a directory to copy the run's artifacts into.
- ``secrets`` go to a 0600 YAML vars file in its own 0700 temp dir OUTSIDE the private data
  dir, passed as ``-e @file`` and deleted after the run on every exit path (an exception,
  Ctrl-C, SIGTERM); extravars would be written into the data dir and the artifacts verbatim.
  Roles must mark tasks that use secrets ``no_log``. The directory's name carries the owner's
  pid (``gpulab-secrets-<pid>-*``): one left by a SIGKILL (its pid dead, older than this
  process) is removed when the next run starts (:func:`clean_stale_secrets`).
- The result is a :class:`PlaybookResult`; on any failed or unreachable host it raises
  :class:`PlaybookError` (unless ``check=False``) whose message names the host and the task.
- Every value handed to Ansible is data, never a template: the inventory, the extravars and the
  secrets go out with every string marked unsafe (:mod:`infra.ansible.untrusted`; Ansible 2.19
  trusts the files it is given). Only a :class:`~infra.ansible.untrusted.Template` that
  gpulab's own code wrote stays a template.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from infra.ansible.inventory import PATH_RE, InventoryError, build_inventory
from infra.ansible.strategy import strategy_env
from infra.ansible.untrusted import as_unsafe_json
from infra.hosts import Host
from infra.paths import PROJECT
from workloads.paths import PACKAGES_DIR

PLAYBOOKS = PROJECT / "playbooks"


def _version() -> str:
    """gpulab's version as installed (empty when it is not installed: a checkout on sys.path)."""
    try:
        return metadata.version("gpulab")
    except metadata.PackageNotFoundError:
        return ""


ANSIBLE_ENV: dict[str, str] = {
    "ANSIBLE_HOST_KEY_CHECKING": "False",
    "ANSIBLE_SSH_ARGS": (
        "-o ControlMaster=auto -o ControlPersist=60s -o UserKnownHostsFile=/dev/null "
        "-o StrictHostKeyChecking=no -o LogLevel=ERROR"
    ),
    "ANSIBLE_PIPELINING": "True",
    # A connection that drops (a host still booting, a flaky link) is retried with back-off.
    "ANSIBLE_SSH_RETRIES": "3",
    "ANSIBLE_NOCOLOR": "1",
    "ANSIBLE_RETRY_FILES_ENABLED": "False",
    "ANSIBLE_PYTHON_INTERPRETER": "auto_silent",
    "ANSIBLE_ROLES_PATH": str(PLAYBOOKS / "roles"),
    "ANSIBLE_DEPRECATION_WARNINGS": "False",
    # What the roles read of the controller's own files (infra.paths): the workloads/ that
    # workload_env ships and the version workload_image labels its image with. Without them (a
    # run by hand from a checkout) the roles find both beside the playbooks.
    "GPULAB_WORKLOADS_DIR": str(PACKAGES_DIR / "workloads"),
    "GPULAB_VERSION": _version(),
}


@dataclass
class HostSummary:
    ok: int = 0
    changed: int = 0
    failed: int = 0
    unreachable: int = 0
    skipped: int = 0


@dataclass
class TaskFailure:
    host: str
    task: str
    msg: str
    unreachable: bool = False

    def __str__(self) -> str:
        what = "unreachable" if self.unreachable else "failed"
        return f"host {self.host!r} {what} at task {self.task!r}: {self.msg}"


@dataclass
class PlaybookResult:
    playbook: str
    status: str  # ansible-runner status: successful, failed, timeout, canceled
    rc: int
    hosts: dict[str, HostSummary] = field(default_factory=dict)
    failures: list[TaskFailure] = field(default_factory=list)
    elapsed_s: float = 0.0
    artifact_dir: str | None = None  # only set when keep_artifacts was given
    stdout_tail: str = ""
    # The host patterns of the plays that matched no host (Ansible skips such a play and
    # still exits 0): a caller that needs the play to have run somewhere checks this.
    unmatched: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "successful" and self.rc == 0 and not self.failures

    @property
    def changed(self) -> int:
        return sum(h.changed for h in self.hosts.values())

    def summary(self) -> str:
        lines = [f"{self.playbook}: {self.status} (rc={self.rc}, {self.elapsed_s:.1f} s)"]
        for name, h in sorted(self.hosts.items()):
            lines.append(
                f"  {name}: ok={h.ok} changed={h.changed} failed={h.failed} "
                f"unreachable={h.unreachable} skipped={h.skipped}"
            )
        lines.extend(f"  {f}" for f in self.failures)
        return "\n".join(lines)


class PlaybookError(RuntimeError):
    """A playbook run failed; ``str()`` names the failing host and task, ``.result`` has all."""

    def __init__(self, result: PlaybookResult) -> None:
        self.result = result
        if result.failures:
            first = result.failures[0]
            more = f" (+{len(result.failures) - 1} more)" if len(result.failures) > 1 else ""
            msg = f"{result.playbook}: {first}{more}"
        else:
            tail = result.stdout_tail.strip().splitlines()[-3:]
            msg = f"{result.playbook}: ansible-runner status {result.status} rc={result.rc}: " + (
                " | ".join(tail) or "no output"
            )
        super().__init__(msg)


# The host var that names a lab's kubeconfig on the controller (magnum-k8s's API host).
KUBECONFIG_VAR = "gpulab_kubeconfig"
KUBE_ENV = ("KUBECONFIG", "K8S_AUTH_KUBECONFIG")  # kubectl/helm, and kubernetes.core's modules


def kube_env(hosts: Iterable[Host]) -> dict[str, str]:
    """The environment that names the kubeconfig of a run: the lab's (the file a host's
    ``gpulab_kubeconfig`` names), else none at all (``/dev/null``). Never the operator's
    ``$KUBECONFIG`` or ``~/.kube/config``: a Helm release or a Job of one lab must not land in
    whatever cluster the operator's shell points at."""
    paths = {str(h.vars[KUBECONFIG_VAR]) for h in hosts if h.vars.get(KUBECONFIG_VAR)}
    for path in sorted(paths):
        if not PATH_RE.match(path):
            raise InventoryError(f"{KUBECONFIG_VAR} must be an absolute path, got {path!r}")
    if len(paths) > 1:
        names = ", ".join(sorted(paths))
        raise InventoryError(f"the hosts name {len(paths)} kubeconfigs ({names})")
    path = paths.pop() if paths else os.devnull
    return dict.fromkeys(KUBE_ENV, path)


def resolve_playbook(playbook: str | os.PathLike[str]) -> Path:
    """``site.yml`` -> playbooks/site.yml; paths as given; FileNotFoundError if missing."""
    p = Path(playbook)
    if not p.is_absolute() and not p.exists():
        p = PLAYBOOKS / p
    p = p.resolve()
    if not p.is_file():
        raise FileNotFoundError(f"playbook {str(playbook)!r} not found (looked at {p})")
    return p


SECRETS_PREFIX = "gpulab-secrets-"
_SECRETS_DIR_RE = re.compile(rf"^{SECRETS_PREFIX}(?P<pid>[0-9]+)-")


def _process_started() -> float:
    """When this process started (Linux: /proc/self/stat's starttime after /proc/stat's btime),
    else now."""
    try:
        fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
        ticks = int(fields[19])  # field 22 of proc(5), counted after "pid (comm)"
        btime = next(
            int(ln.split()[1])
            for ln in Path("/proc/stat").read_text().splitlines()
            if ln.startswith("btime ")
        )
        return btime + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return time.time()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def clean_stale_secrets(tmp: str | os.PathLike[str] | None = None) -> list[Path]:
    """Remove secrets dirs left by a killed run: ours (uid), owner pid dead, older than this
    process. Returns what was removed."""
    root = Path(tmp or tempfile.gettempdir())
    started = _process_started()
    removed: list[Path] = []
    try:
        entries = list(root.iterdir())
    except OSError:
        return removed
    for d in entries:
        m = _SECRETS_DIR_RE.match(d.name)
        if m is None or int(m["pid"]) == os.getpid():
            continue
        try:
            st = d.lstat()
        except OSError:
            continue
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
            continue
        if st.st_mtime < started and not _pid_alive(int(m["pid"])):
            shutil.rmtree(d, ignore_errors=True)
            removed.append(d)
    return removed


def _children(pid: int) -> list[int]:
    """The direct children of ``pid`` (Linux /proc), for a graceful stop of the play."""
    kids = []
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(pid):
            kids.append(int(stat_file.parent.name))
    return kids


class _Cancel:
    """ansible-runner's cancel callback after SIGTERM: first SIGINT to ansible-playbook (it
    stops its forked workers, which run in their own sessions), then, ``grace_s`` later, cancel
    (ansible-runner SIGKILLs what is left of its process group)."""

    def __init__(self, grace_s: float = 10.0) -> None:
        self.terminated = threading.Event()
        self.grace_s = grace_s
        self.sent_at: float | None = None

    def __call__(self) -> bool:
        if not self.terminated.is_set():
            return False
        if self.sent_at is None:
            self.sent_at = time.monotonic()
            for kid in _children(os.getpid()):
                try:
                    os.kill(kid, signal.SIGINT)
                except OSError:
                    continue
        return time.monotonic() - self.sent_at > self.grace_s


def _write_secrets(secrets: Mapping[str, Any]) -> tuple[Path, Path]:
    """The secrets as a 0600 JSON vars file (every string unsafe: a token is data, not a
    template) in a fresh 0700 directory."""
    d = Path(tempfile.mkdtemp(prefix=f"{SECRETS_PREFIX}{os.getpid()}-"))  # mkdtemp: 0700
    f = d / "secrets.yml"  # JSON, which is YAML: Ansible reads either
    fd = os.open(f, os.O_WRONLY | os.O_CREAT | os.O_EXCL, stat.S_IRUSR | stat.S_IWUSR)
    with os.fdopen(fd, "w") as fh:
        json.dump(as_unsafe_json(dict(secrets)), fh)
    return d, f


def _close_ssh_masters(cp_dir: Path) -> None:
    """Stop the run's ssh ControlPersist masters now instead of 60 s later."""
    if not cp_dir.is_dir():
        return
    for sock in cp_dir.iterdir():
        subprocess.run(
            ["ssh", "-o", f"ControlPath={sock}", "-O", "exit", "gpulab-cp"],
            capture_output=True,
            timeout=10,
            check=False,
        )


def _scrub_command_env(command_file: Path) -> None:
    """ansible-runner records the caller's whole environment in artifacts/command; a cloud
    password in the environment (OS_PASSWORD ...) must not survive there: keep ANSIBLE_* only."""
    if not command_file.is_file():
        return
    try:
        data = json.loads(command_file.read_text())
    except ValueError:
        command_file.unlink()
        return
    env = data.get("env") or {}
    data["env"] = {k: v for k, v in env.items() if k.startswith("ANSIBLE_") or k == "PATH"}
    command_file.write_text(json.dumps(data))


def _msg_of(res: Mapping[str, Any]) -> str:
    if res.get("_ansible_no_log") or res.get("censored"):
        return "(output hidden: no_log task)"
    msg = res.get("msg") or res.get("stderr") or res.get("reason") or ""
    if not msg and res.get("rc") is not None:
        msg = f"rc={res.get('rc')}"
    # Multi-line messages (argument_specs list each bad variable on its own line): one line.
    text = " ".join(ln.strip() for ln in str(msg).strip().splitlines() if ln.strip())
    text = text or "(no message)"
    detail = str(res.get("module_stderr") or "").strip()
    if detail:
        text += f" ({detail.splitlines()[0]})"
    return text[:400]


def _failures(events: Iterable[Mapping[str, Any]]) -> list[TaskFailure]:
    out: list[TaskFailure] = []
    for ev in events:
        kind = ev.get("event")
        data = ev.get("event_data") or {}
        if kind == "runner_on_failed" and data.get("ignore_errors"):
            continue
        if kind in ("runner_on_failed", "runner_on_unreachable", "runner_item_on_failed"):
            if kind == "runner_item_on_failed" and any(
                f.host == data.get("host") and f.task == data.get("task") for f in out
            ):
                continue
            out.append(
                TaskFailure(
                    host=str(data.get("host", "?")),
                    task=str(data.get("task", "?")),
                    msg=_msg_of(data.get("res") or {}),
                    unreachable=kind == "runner_on_unreachable",
                )
            )
    return out


def _unmatched(events: Iterable[Mapping[str, Any]]) -> list[str]:
    """The host pattern of every play that matched no host, in play order."""
    return [
        str((ev.get("event_data") or {}).get("play_pattern") or "?")
        for ev in events
        if ev.get("event") == "playbook_on_no_hosts_matched"
    ]


# Ansible's own words, and Mitogen's ("sudo password is required", its strategy's default)
SUDO_PASSWORD_SIGNS = (
    "missing sudo password",
    "a password is required",
    "incorrect sudo password",
    "sudo password is required",
)


def _explain_sudo(failures: list[TaskFailure], inventory: Mapping[str, Any]) -> None:
    """Name the login user when become failed because sudo asks for a password."""
    hostvars = inventory.get("all", {}).get("hosts", {})
    for f in failures:
        if any(sign in f.msg.lower() for sign in SUDO_PASSWORD_SIGNS):
            user = (hostvars.get(f.host) or {}).get("ansible_user") or "?"
            f.msg = (
                f"sudo as user {user!r} needs a password ({f.msg}); give {user!r} passwordless "
                "sudo (NOPASSWD), as cloud images do, or log in as a user that has it"
            )


def _summaries(stats: Mapping[str, Any] | None, names: Iterable[str]) -> dict[str, HostSummary]:
    stats = stats or {}
    out = {n: HostSummary() for n in names}
    for key, attr in (
        ("ok", "ok"),
        ("changed", "changed"),
        ("failures", "failed"),
        ("dark", "unreachable"),
        ("skipped", "skipped"),
    ):
        for host, n in (stats.get(key) or {}).items():
            setattr(out.setdefault(host, HostSummary()), attr, int(n))
    return out


def run_playbook(
    playbook: str | os.PathLike[str],
    hosts: Iterable[Host],
    extravars: Mapping[str, Any] | None = None,
    secrets: Mapping[str, Any] | None = None,
    *,
    limit: str | None = None,
    tags: str | None = None,
    check_mode: bool = False,
    private_key_file: str | os.PathLike[str] | None = None,
    common_vars: Mapping[str, Any] | None = None,
    timeout_s: int | None = None,
    keep_artifacts: str | os.PathLike[str] | None = None,
    event_handler: Callable[[dict[str, Any]], Any] | None = None,
    check: bool = True,
    verbosity: int = 0,
) -> PlaybookResult:
    """Run ``playbook`` on ``hosts``; see the module docstring. Raises PlaybookError on failure
    when ``check`` (default), FileNotFoundError for a missing playbook, InventoryError for bad
    hosts or an unknown ``GPULAB_ANSIBLE_STRATEGY`` (infra.ansible.strategy: Mitogen's by
    default)."""
    import ansible_runner  # heavy: keep `gpulab --help` fast

    hosts = list(hosts)
    pb = resolve_playbook(playbook)
    cvars = dict(common_vars or {})
    if private_key_file is not None:
        cvars.setdefault("ansible_ssh_private_key_file", str(private_key_file))
    inventory = build_inventory(hosts, cvars)
    kube = kube_env(hosts)  # checked before anything is made
    strategy = strategy_env()  # likewise: GPULAB_ANSIBLE_STRATEGY

    clean_stale_secrets()
    data_dir = Path(tempfile.mkdtemp(prefix="gpulab-ansible-"))
    secrets_dir: Path | None = None
    cmdline: list[str] = []
    # SIGTERM: ansible-runner cancels the play (kills its process group), the finally below
    # removes the secrets, then this process exits 143.
    cancel = _Cancel()
    old_term: Any = None
    if threading.current_thread() is threading.main_thread():
        old_term = signal.signal(signal.SIGTERM, lambda signum, frame: cancel.terminated.set())
    try:
        if secrets:
            secrets_dir, secrets_file = _write_secrets(secrets)
            cmdline += ["-e", f"@{secrets_file}"]
        if tags:
            cmdline += ["--tags", tags]
        if check_mode:
            cmdline += ["--check", "--diff"]
        env = dict(ANSIBLE_ENV)
        env.update(strategy)
        env.update(kube)
        env["ANSIBLE_LOCAL_TEMP"] = str(data_dir / "tmp")
        env["ANSIBLE_CONTROL_PATH_DIR"] = str(data_dir / "cp")
        # ansible-playbook must be on PATH: the interpreter's bin dir (the venv) first.
        env["PATH"] = os.pathsep.join(
            [str(Path(sys.executable).parent), os.environ.get("PATH", "")]
        )
        t0 = time.monotonic()
        r = ansible_runner.run(
            private_data_dir=str(data_dir),
            playbook=str(pb),
            inventory=as_unsafe_json(inventory),
            extravars=as_unsafe_json(dict(extravars)) if extravars else None,
            cmdline=" ".join(cmdline) or None,
            envvars=env,
            limit=limit,
            quiet=True,
            timeout=timeout_s,
            event_handler=event_handler,
            cancel_callback=cancel,
            verbosity=verbosity or None,
        )
        if cancel.terminated.is_set():
            raise SystemExit(128 + signal.SIGTERM)
        elapsed = time.monotonic() - t0
        events = list(r.events)
        try:
            stdout_tail = r.stdout.read()[-4000:]
        except Exception:  # stdout file may be missing after a launch failure
            stdout_tail = ""
        result = PlaybookResult(
            playbook=pb.name,
            status=str(r.status),
            rc=int(r.rc if r.rc is not None else -1),
            hosts=_summaries(r.stats, [h.name for h in hosts]),
            failures=_failures(events),
            elapsed_s=elapsed,
            stdout_tail=stdout_tail,
            unmatched=_unmatched(events),
        )
        _explain_sudo(result.failures, inventory)
        if keep_artifacts is not None:
            dest = Path(keep_artifacts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copytree(Path(r.config.artifact_dir), dest, dirs_exist_ok=True)
            _scrub_command_env(dest / "command")
            result.artifact_dir = str(dest)
    finally:
        if secrets_dir is not None:
            shutil.rmtree(secrets_dir, ignore_errors=True)
        if old_term is not None:
            signal.signal(signal.SIGTERM, old_term)
        _close_ssh_masters(data_dir / "cp")
        shutil.rmtree(data_dir, ignore_errors=True)
    if check and not result.ok:
        raise PlaybookError(result)
    return result
