"""Reaching the lab's hosts: check each SSH route before anything is built, and hand it to the
inventory.

A route (:class:`infra.keys.access.Route`, from the stack's Args: ``LabArgs.routes()``) is the
login user, a private key file and a bastion, for every host a cloud makes, or for one machine
a ``static`` stack lists. Before the program makes a resource (and in ``gpulab preflight``):

- each key file exists, is a file this user can read, and ssh would take it (ssh refuses a
  private key of its user that group or others can read: "UNPROTECTED PRIVATE KEY FILE");
- each bastion lets the login in (``ssh ... true`` on it);
- each listed machine answers and lets the login in, through its bastion;
- (preflight) the login user has passwordless sudo there.

Each problem is one line naming the ``gpulab:*`` key and the host; :func:`check` raises them
as one :class:`AccessError` (exit 2 in the CLI, the program's one error line). :func:`apply`
puts each route on its hosts as the inventory's checked variables
(``ansible_ssh_private_key_file``, ``gpulab_bastion``: :mod:`infra.ansible.ssh_route`), so the
provider host's Ansible runs reach them with nothing from the environment.
"""

from __future__ import annotations

import os
import pwd
import stat
import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from infra.ansible.ssh_route import BASTION_VAR, login_argv
from infra.clouds import Check, fail, ok
from infra.errors import UsageError
from infra.hosts import Host
from infra.keys.access import EVERY_HOST, Route

KEY_VAR = "ansible_ssh_private_key_file"
PROBE_TIMEOUT_S = 30  # one ssh login, through a bastion: a host that does not answer in time
MAX_PROBES = 16  # logins at once
SSH_CONNECTIONS = (None, "ssh", "ansible.builtin.ssh")


class AccessError(UsageError):
    """A route that cannot work: one line per problem, joined."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("; ".join(problems))


def key_problem(path: str) -> str | None:
    """Why ssh would not use the private key file ``path`` (None: it would)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "no such file"
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode):
        return "is not a file"
    if not os.access(path, os.R_OK):
        return f"cannot be read by user {_me()}"
    if st.st_uid == os.getuid() and st.st_mode & 0o077:
        return (
            f"permissions {stat.S_IMODE(st.st_mode):04o} are too open: ssh refuses a private "
            f"key that group or others can read (chmod 600 {path})"
        )
    return None


def _me() -> str:
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


def _labels(routes: Iterable[Route]) -> str:
    return ", ".join(sorted({r.label for r in routes}))


Jump = tuple[str, str, int, str, "str | None"]  # (gpulab key, host, port, user, key file)


def _jump(route: Route) -> Jump | None:
    b = route.bastion_vars()
    return None if b is None else (route.bastion_from, b["host"], b["port"], b["user"], b["key"])


def _key_uses(routes: list[Route]) -> dict[tuple[str, str], list[Route]]:
    """(gpulab key, path) -> the routes that use that key file (a host's, a bastion's)."""
    uses: dict[tuple[str, str], list[Route]] = {}
    for r in routes:
        if r.key:
            uses.setdefault((r.key_from, r.key), []).append(r)
        if r.bastion is not None and r.bastion.key:
            uses.setdefault((f"{r.bastion_from}.key", r.bastion.key), []).append(r)
    return uses


def _ssh(argv: list[str]) -> str | None:
    """None when ``argv`` (an ssh login) succeeds, else ssh's last line (or why it did not run)."""
    try:
        r = subprocess.run(
            argv, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except FileNotFoundError:
        return "ssh is not installed on this machine"
    except subprocess.TimeoutExpired:
        return f"no answer within {PROBE_TIMEOUT_S} s"
    if r.returncode == 0:
        return None
    lines = [ln.strip() for ln in (r.stderr or "").splitlines() if ln.strip()]
    return _telling(lines) or f"ssh exited with {r.returncode}"


# What ssh says first when a login fails (through a bastion, the jump's own line comes before
# the outer ssh's "kex_exchange_identification: Connection closed"): the line worth showing.
# The jump's "channel 0: open failed" is an INFO line (hidden by LogLevel=ERROR in OpenSSH 9);
# its fatal "stdio forwarding failed" is what says the bastion could not connect on.
_TELLING = (
    "permission denied", "open failed", "forwarding failed", "connect to host",
    "could not resolve",
)  # fmt: skip


def _telling(lines: list[str]) -> str | None:
    """The line of ssh's stderr that says why: the first telling one, else the last."""
    found = [ln for ln in lines if any(t in ln.lower() for t in _TELLING)]
    return found[0] if found else (lines[-1] if lines else None)


Run = Callable[[list[str]], "str | None"]


def _all(run: Run | None, argvs: list[list[str]]) -> list[str | None]:
    """``run`` (default: an ssh login, :func:`_ssh`) of each argv, at most :data:`MAX_PROBES`
    at once, in order."""
    if not argvs:
        return []
    with ThreadPoolExecutor(max_workers=min(MAX_PROBES, len(argvs))) as pool:
        return list(pool.map(run or _ssh, argvs))


def _refused(why: str) -> bool:
    return "permission denied" in why.lower()


def _key_lines(routes: list[Route]) -> list[tuple[str, str | None]]:
    """(what, problem or None) per key file."""
    out = []
    for (source, path), users in _key_uses(routes).items():
        why = key_problem(path)
        out.append((f"{source} {path} (for {_labels(users)})", why))
    return out


def _jump_lines(routes: list[Route], run: Run | None) -> dict[Jump, tuple[str, str | None]]:
    """Per bastion: (what, the line saying why it let nobody in, or None)."""
    jumps: dict[Jump, list[Route]] = {}
    for r in routes:
        j = _jump(r)
        if j is not None:
            jumps.setdefault(j, []).append(r)
    answers = _all(run, [login_argv(j[1], j[2], j[3], j[4], None) for j in jumps])
    out: dict[Jump, tuple[str, str | None]] = {}
    for j, why in zip(jumps, answers, strict=True):
        source, host, port, user, key = j
        with_key = f", key {key}" if key else ""
        what = f"{source}: bastion {host}:{port} (user {user}{with_key})"
        on_the_way = f"on the way to {_labels(jumps[j])}"
        if why is None:
            out[j] = (f"{what} {on_the_way}", None)
        else:
            verdict = "refused the login" if _refused(why) else "does not answer"
            out[j] = (what, f"{what} {verdict} {on_the_way}: {why}")
    return out


def _host_lines(
    routes: list[Route], run: Run | None, command: str = "true"
) -> list[tuple[Route, str, str | None]]:
    """Per listed machine (a route with an address): (route, what, problem or None)."""
    argvs = [
        login_argv(r.address or "", r.port, r.user, r.key, r.bastion_vars(), command)
        for r in routes
    ]
    out: list[tuple[Route, str, str | None]] = []
    for r, why in zip(routes, _all(run, argvs), strict=True):
        through = f" through bastion {r.bastion}" if r.bastion else ""
        what = f"{r.address_from}: host {r.host} ({r.address}:{r.port}{through})"
        if why is None:
            out.append((r, what, None))
        elif command != "true":
            out.append((r, what, f"{what}: user {r.user} cannot run `{command}`: {why}"))
        elif _refused(why):
            key = f"{r.key_from} {r.key}" if r.key else "ssh's default keys"
            out.append((r, what, f"{what} refused the login of user {r.user} with {key}: {why}"))
        elif r.bastion is not None:  # the bastion let us in (checked first): not on to it
            out.append((r, what, f"{what} does not answer SSH from the bastion: {why}"))
        else:
            out.append((r, what, f"{what} does not answer SSH: {why}"))
    return out


def _behind_failed(route: Route, jumps: dict[Jump, tuple[str, str | None]]) -> bool:
    jump = _jump(route)
    return jump is not None and jumps[jump][1] is not None


def problems(routes: list[Route], run: Run | None = None) -> list[str]:
    """Every problem of ``routes``: key files first (nothing is tried with a bad one), then the
    bastions, then each listed machine not behind a bastion that failed."""
    found = [f"{what}: {why}" for what, why in _key_lines(routes) if why]
    if found:
        return found
    jumps = _jump_lines(routes, run)
    found = [line for _, line in jumps.values() if line]
    listed = [r for r in routes if r.address and not _behind_failed(r, jumps)]
    return found + [line for _, _, line in _host_lines(listed, run) if line]


def check(routes: list[Route], run: Run | None = None) -> None:
    """Raise :class:`AccessError` with every problem of ``routes`` (nothing built yet)."""
    found = problems(routes, run)
    if found:
        raise AccessError(found)


def rows(routes: list[Route], run: Run | None = None) -> list[Check]:
    """Preflight rows: each key file, each bastion, each listed machine (login, then
    passwordless sudo); none for what the routes leave to ssh (its own keys, no bastion)."""
    out: list[Check] = []
    for what, why in _key_lines(routes):
        if why:
            out.append(fail("ssh key file", f"{what}: {why}", "chmod 600 it, or name another"))
        else:
            out.append(ok("ssh key file", f"{what}: ssh takes it"))
    if any(not c.passed for c in out):
        return out
    jumps = _jump_lines(routes, run)
    for what, line in jumps.values():
        if line:
            out.append(fail("bastion", line, "check the bastion's address, user and key"))
        else:
            out.append(ok("bastion", f"{what}: logged in"))
    listed = [r for r in routes if r.address and not _behind_failed(r, jumps)]
    logged_in = []
    for r, _what, line in _host_lines(listed, run):
        if line:
            out.append(fail(f"host {r.host}", line, "check its address, login user and key"))
        else:
            logged_in.append(r)
    for r, what, line in _host_lines(logged_in, run, "sudo -n true"):
        if line:
            out.append(fail(f"host {r.host}", line, "give the login user passwordless sudo"))
        else:
            out.append(ok(f"host {r.host}", f"{what}: login as {r.user}, passwordless sudo"))
    return out


def apply(routes: list[Route], hosts: list[Host]) -> list[Host]:
    """``hosts`` with their route as inventory variables: a host's own route (by name), else
    the lab's (:data:`~infra.keys.access.EVERY_HOST`); a variable the host already sets, and a
    host not reached over SSH (a local or chroot connection), stay as they are."""
    by_host = {r.host: r for r in routes}
    out = []
    for h in hosts:
        route = by_host.get(h.name) or by_host.get(EVERY_HOST)
        if route is None or h.vars.get("ansible_connection") not in SSH_CONNECTIONS:
            out.append(h)
            continue
        extra: dict[str, Any] = {}
        if route.key and KEY_VAR not in h.vars:
            extra[KEY_VAR] = route.key
        if route.bastion is not None and BASTION_VAR not in h.vars:
            extra[BASTION_VAR] = route.bastion_vars()
        out.append(replace(h, vars={**h.vars, **extra}) if extra else h)
    return out
