"""systemd-nspawn test hosts that log in like cloud images, and the lab that serves them.

Library behind ``tests/parts/fixtures_nspawn.py`` (the pytest fixtures) and
``benchmarks/site_scaling.py``; it raises instead of skipping. One :class:`NspawnLab` owns:

- a Linux bridge with a private 10.213.N.0/24 that overlaps nothing on the machine
  (the bridge holds ``.1``; hosts get ``.2``, ``.3``, ... in boot order);
- apt-cacher-ng bound to the bridge address only (Debian backend = this machine's mirror; its
  cache is ``.cache/acng``, or a copy of it when another lab on the machine holds that one, so
  two pytest workers may each run a lab);
- HTTP servers bound to the bridge address only: the stub NVIDIA repository and whatever
  :meth:`NspawnLab.serve` is given (a wheelhouse, a pip index);
- the hosts: each ``systemd-nspawn -b --volatile=overlay`` of the cached rootfs
  (``scripts/parts/rootfs.sh``), real systemd, real sshd, attached to the bridge (extra bind
  mounts per boot: ``lab.boot(n, binds=[...])``);
- link shaping: :meth:`NspawnLab.shape` puts a token bucket (``tc ... tbf``, default 1 Gbit/s)
  on both ends of chosen hosts' veths, so traffic between them runs at a NIC's rate.

The hosts boot like the Debian cloud image on a cloud: Debian's ``cloud-init`` reads a NoCloud
seed (``/var/lib/cloud/seed/nocloud/``: ``meta-data`` with the instance id and host name,
``user-data`` with the session key) and creates the login user ``debian`` with passwordless
sudo and that key; sshd (keys only, no root) answers only after cloud-init has finished, and
:attr:`NspawnLab.sshd_delay_s` later (``None``: sshd never starts). :meth:`NspawnLab.start_host`
returns as soon as the host runs (what a cloud reports as ACTIVE); :meth:`NspawnLab.boot` waits
until it answers SSH.
Every process is stopped by its PID in :meth:`NspawnLab.close` (also on failure).

Booting more hosts for a benchmark::

    with open_lab(["pci-passthrough"]) as lab:      # one GPU host
        more = lab.boot(3, gpu_path="pci-passthrough")
        run_playbook("site.yml", [h.host for h in lab.hosts], ...)
        lab.stop(more)                             # or leave them to close()
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar

from infra.hosts import Host
from tests.parts import CACHE, REPO

ROOTFS = CACHE / "rootfs" / "bookworm"
ROOTFS_READY = CACHE / "rootfs" / "bookworm.ready"
STUB_REPO = CACHE / "nvidia-stub-repo"
ACNG_CACHE = CACHE / "acng"
LAB_LOCK = CACHE / "nspawn-lab.lock"  # held while a lab picks its subnet and makes its bridge
ACNG_PORT = 3142
STUB_PORT = 8713
LOGIN_USER = "debian"  # the Debian cloud image's default user (cloud-init creates it)
SEED_DIR = "/var/lib/cloud/seed/nocloud"  # where cloud-init's NoCloud source looks
SSH_DROPIN = "/etc/systemd/system/ssh.service.d/50-gpulab-after-cloud-init.conf"
COMMANDS = ("systemd-nspawn", "apt-cacher-ng", "ssh-keygen", "ssh", "nsenter", "ip", "tc")

T = TypeVar("T")


def rootfs_key() -> str:
    """The recipe key scripts/parts/rootfs.sh stamps its cache with (KEY=...)."""
    text = (REPO / "scripts/parts/rootfs.sh").read_text()
    m = re.search(r'^KEY="([^"]+)"', text, re.M)
    if m is None:
        raise RuntimeError('scripts/parts/rootfs.sh has no KEY="..." line')
    return m.group(1)


def rootfs_ready() -> bool:
    """The cached rootfs exists and was built by the current recipe: a copy from an older
    recipe (a key bump) would boot hosts that never answer SSH."""
    if not (ROOTFS_READY.is_file() and (ROOTFS / "usr/bin/python3").exists()):
        return False
    return ROOTFS_READY.read_text().startswith(f"{rootfs_key()}@")


def mirror() -> str:
    """The Debian mirror of this machine's apt sources (what debootstrap used too)."""
    for f in sorted(Path("/etc/apt").glob("sources.list.d/*.sources")):
        for line in f.read_text().splitlines():
            m = re.match(r"\s*URIs:\s*(\S+/debian)/?\s*$", line)
            if m:
                return m.group(1) + "/"
    for f in [Path("/etc/apt/sources.list"), *Path("/etc/apt").glob("sources.list.d/*.list")]:
        if f.is_file():
            for line in f.read_text().splitlines():
                m = re.match(r"\s*deb\s+(?:\[[^]]*\]\s+)?(\S+/debian)/?\s+bookworm\b", line)
                if m:
                    return m.group(1) + "/"
    return "http://deb.debian.org/debian/"


def _free_subnet() -> str:
    """A 10.213.N.0/24 no address or route on this machine uses."""
    used = (
        subprocess.run(["ip", "-o", "addr"], capture_output=True, text=True, check=False).stdout
        + subprocess.run(["ip", "route"], capture_output=True, text=True, check=False).stdout
    )
    for n in range(77, 128):
        if f"10.213.{n}." not in used:
            return f"10.213.{n}"
    raise RuntimeError("no free 10.213.N.0/24 subnet for the nspawn hosts")


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float = 10.0) -> None:
    """SIGTERM, then SIGKILL, one process by its PID."""
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5)


def wait_for(pred: Callable[[], T], timeout: float, what: str, step: float = 0.1) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(step)
    raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")


def _run(*argv: str) -> None:
    r = subprocess.run(argv, capture_output=True, text=True, check=False)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: rc {r.returncode}: {r.stderr.strip()}")


def _child_pid(pid: int) -> int | None:
    r = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True, check=False)
    pids = r.stdout.split()
    return int(pids[0]) if pids else None


def _suffix(i: int) -> str:
    """a, b, ..., z, ba, bb, ... (host names stay short: veth names have 15 characters)."""
    out = ""
    while True:
        out = chr(ord("a") + i % 26) + out
        i //= 26
        if i == 0:
            return out


@dataclass
class NspawnHost:
    name: str  # the container's machine name and hostname
    address: str
    host_side: str  # the bridge address the host reaches the lab's services on
    key: Path
    proc: subprocess.Popen[bytes]
    host: Host  # inventory entry: ssh_user "debian", the session key, gpu_path, groups
    log: Path

    def ssh(
        self, command: str, check: bool = True, timeout: float = 60, as_user: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on the host over SSH as ``debian``: through ``sudo -n sh -c`` (as
        root) unless ``as_user``, where it runs as the plain login user."""
        remote = command if as_user else f"sudo -n sh -c {shlex.quote(command)}"
        return self.ssh_as(self.host.ssh_user, remote, check=check, timeout=timeout)

    def answers_ssh(self) -> bool:
        return self.ssh("true", as_user=True, check=False, timeout=10).returncode == 0

    def why_no_ssh(self) -> str:
        """What a host that never answered SSH shows: its nspawn's state, the last SSH error
        and the last lines of its console (what a timeout alone would not say)."""
        state = (
            "nspawn running"
            if self.proc.poll() is None
            else f"nspawn exited {self.proc.returncode}"
        )
        try:
            err = self.ssh("true", as_user=True, check=False, timeout=10).stderr.strip()
        except subprocess.TimeoutExpired:
            err = "no answer within 10 s"
        try:
            tail = self.log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        except OSError as exc:
            tail = [f"(console log unreadable: {exc})"]
        return f"{state}; ssh: {err[-300:]!r}; the console's last lines:\n" + "\n".join(tail)

    def systemd_up(self) -> bool:
        state = self.ssh("systemctl is-system-running", as_user=True, check=False).stdout
        return state.strip() in ("running", "degraded")

    def ssh_as(
        self, user: str, command: str, check: bool = True, timeout: float = 60
    ) -> subprocess.CompletedProcess[str]:
        """``command`` as ``user`` with the session key (e.g. ``root``: refused on these hosts)."""
        argv = [
            "ssh", "-i", str(self.key), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "ConnectTimeout=5", f"{user}@{self.address}", command,
        ]  # fmt: skip
        r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        if check and r.returncode != 0:
            raise AssertionError(
                f"ssh {user}@{self.name} {command!r} -> rc {r.returncode}: {r.stderr}"
            )
        return r


@dataclass
class NspawnLab:
    """The bridge, the services on it and the hosts; see the module docstring."""

    workdir: Path
    net: str  # 10.213.N
    bridge: str
    key: Path
    hosts: list[NspawnHost] = field(default_factory=list)
    stub_sha256: dict[str, str] = field(default_factory=dict)
    boot_s: float = 0.0
    sshd_delay_s: float | None = 0.0  # after cloud-init has finished; None: sshd never starts
    rootfs: Path = ROOTFS  # what the next hosts boot (tests/parts/lab_image.py: a lab image)
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list)
    _next: int = 0
    _acng_lock: int | None = None  # fd holding the shared apt cache (None: this lab's own copy)

    @property
    def host_side(self) -> str:
        return f"{self.net}.1"

    @property
    def apt_proxy(self) -> str:
        return f"http://{self.host_side}:{ACNG_PORT}"

    @property
    def stub_url(self) -> str:
        return f"http://{self.host_side}:{STUB_PORT}"

    def serve(self, directory: str | os.PathLike[str], port: int = 0) -> str:
        """Serve ``directory`` over HTTP to the hosts (bound to the bridge address only) until
        :meth:`close`; returns its base URL (no trailing slash)."""
        d = Path(directory).resolve()
        if not d.is_dir():
            raise FileNotFoundError(f"cannot serve {d}: not a directory")
        if port == 0:
            with socket.socket() as s:
                s.bind((self.host_side, 0))
                port = s.getsockname()[1]
        log = self.workdir / f"http-{port}.log"
        proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", self.host_side, "--directory",
             str(d), str(port)],
            stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        self._procs.append(proc)

        def up() -> bool:
            if proc.poll() is not None:
                raise RuntimeError(f"http.server for {d} exited: {log.read_text()[-300:]}")
            with socket.socket() as s:
                return s.connect_ex((self.host_side, port)) == 0

        wait_for(up, 15, f"http.server for {d}")
        return f"http://{self.host_side}:{port}"

    def boot(
        self,
        count: int = 1,
        gpu_path: str = "pci-passthrough",
        groups: Sequence[str] = (),
        binds: Sequence[str] = (),
    ) -> list[NspawnHost]:
        """Boot ``count`` more hosts at once (all reachable over SSH as ``debian`` and running
        systemd on return); they join :attr:`hosts` and are named ``nspawn-<a|b|...>`` in the
        inventory. ``binds``: extra ``systemd-nspawn`` bind options for each, e.g.
        ``--bind-ro=/srv/x`` (the same path inside) or ``--bind=/tmp/out``."""
        return self.boot_specs([(gpu_path, list(groups))] * count, binds)

    def boot_specs(
        self, specs: Sequence[tuple[str, list[str]]], binds: Sequence[str] = ()
    ) -> list[NspawnHost]:
        """Boot one host per ``(gpu_path, groups)`` at once; see :meth:`boot`."""
        t0 = time.monotonic()
        new = [self._start_one(path, list(groups), list(binds)) for path, groups in specs]
        self.hosts.extend(new)
        for nh in new:
            self._configure_net(nh)
        for nh in new:
            try:
                wait_for(nh.answers_ssh, 90 + (self.sshd_delay_s or 0), f"ssh to {nh.name}")
            except TimeoutError as exc:
                raise TimeoutError(f"{exc}: {nh.why_no_ssh()}") from None
            wait_for(nh.systemd_up, 40, f"systemd in {nh.name}", step=0.3)
        self.boot_s += time.monotonic() - t0
        return new

    def stop(self, hosts: Sequence[NspawnHost]) -> None:
        """Shut ``hosts`` down (SIGTERM to each nspawn at once, then wait) and forget them."""
        for nh in hosts:
            if nh.proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(nh.proc.pid, signal.SIGTERM)
        for nh in hosts:
            stop_process(nh.proc)
            if nh in self.hosts:
                self.hosts.remove(nh)

    def reserve_address(self) -> str:
        """The address the next host will get, taken now (a cloud's floating IP exists before
        the server it is bound to)."""
        i = self._next
        self._next += 1
        if i > 200:
            raise RuntimeError("no address left in the lab subnet")
        return f"{self.net}.{i + 2}"

    def start_host(
        self,
        address: str | None = None,
        gpu_path: str = "pci-passthrough",
        groups: Sequence[str] = (),
        sshd_delay_s: float | None = 0.0,
        hostname: str | None = None,
        persistent: Path | None = None,
    ) -> NspawnHost:
        """Start one host and return while it is still booting: cloud-init, then sshd
        ``sshd_delay_s`` later (``None``: never), as a cloud's server is ACTIVE long before it
        answers SSH. ``address``: one :meth:`reserve_address` gave (default: the next one);
        ``hostname``: what the seed's meta-data names it (default: its machine name);
        ``persistent``: a root directory the host boots and WRITES (no volatile overlay: what
        tests/parts/lab_image.py builds an image in), instead of an overlay of :attr:`rootfs`."""
        nh = self._start_one(
            gpu_path, list(groups), address=address, sshd_delay_s=sshd_delay_s,
            hostname=hostname, persistent=persistent,
        )  # fmt: skip
        self.hosts.append(nh)
        try:
            self._configure_net(nh)
        except BaseException:
            self.stop([nh])
            raise
        return nh

    def veth(self, nh: NspawnHost) -> str:
        """The host side of ``nh``'s veth (its port on the bridge)."""
        return f"vb-{nh.name}"[:15]

    def shape(
        self,
        hosts: Sequence[NspawnHost],
        rate: str = "1gbit",
        burst: str = "256kb",
        latency: str = "50ms",
    ) -> None:
        """Shape each host's link to ``rate`` in both directions, as a ``rate`` NIC on a switch
        port would: a token bucket (``tc qdisc replace ... root tbf``) on the host side of its
        veth (what the bridge sends to the host) and on its ``host0`` (what the host sends).
        Traffic between two hosts crosses both. :meth:`unshape` removes it."""
        for nh in hosts:
            tbf = ["root", "tbf", "rate", rate, "burst", burst, "latency", latency]
            _run("tc", "qdisc", "replace", "dev", self.veth(nh), *tbf)
            _run(*self._netns(nh), "tc", "qdisc", "replace", "dev", "host0", *tbf)

    def unshape(self, hosts: Sequence[NspawnHost]) -> None:
        for nh in hosts:
            for argv in (
                ["tc", "qdisc", "del", "dev", self.veth(nh), "root"],
                [*self._netns(nh), "tc", "qdisc", "del", "dev", "host0", "root"],
            ):
                subprocess.run(argv, capture_output=True, check=False)

    def qdisc_counters(self, nh: NspawnHost) -> dict[str, int]:
        """What the root qdisc on the host side of ``nh``'s veth has counted (``tc -s``): the
        bytes it ``sent`` and its ``overlimits``, the times the token bucket held a packet back
        because it came faster than the rate."""
        out = subprocess.run(
            ["tc", "-s", "qdisc", "show", "dev", self.veth(nh)],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        sent = re.search(r"Sent (\d+) bytes", out)
        over = re.search(r"overlimits (\d+)", out)
        return {
            "sent": int(sent.group(1)) if sent else 0,
            "overlimits": int(over.group(1)) if over else 0,
        }

    def _netns(self, nh: NspawnHost) -> list[str]:
        child = wait_for(lambda: _child_pid(nh.proc.pid), 10, f"the init of {nh.name}")
        return ["nsenter", "-t", str(child), "-n"]

    def close(self) -> None:
        self.stop(list(self.hosts))
        for p in reversed(self._procs):
            stop_process(p)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True, check=False)
        if self._acng_lock is not None:
            os.close(self._acng_lock)  # releases the flock
            self._acng_lock = None
        shutil.rmtree(self.workdir, ignore_errors=True)

    # -- internals -------------------------------------------------------------------------

    def _start_one(
        self,
        gpu_path: str,
        groups: list[str],
        extra_binds: Sequence[str] = (),
        *,
        address: str | None = None,
        sshd_delay_s: float | Literal["lab"] | None = "lab",
        hostname: str | None = None,
        persistent: Path | None = None,
    ) -> NspawnHost:
        addr = address or self.reserve_address()
        i = int(addr.rsplit(".", 1)[1]) - 2
        name = f"gl{os.getpid() % 100000}{_suffix(i)}"
        delay = self.sshd_delay_s if sshd_delay_s == "lab" else sshd_delay_s
        binds = [
            *self._cloud_init_binds(name, delay, hostname or name),
            f"--bind-ro={self.workdir / '01proxy'}:/etc/apt/apt.conf.d/01gpulab-proxy",
            *extra_binds,
        ]
        log = self.workdir / f"{name}.log"
        root = (
            ["-D", str(persistent)]
            if persistent
            else ["-D", str(self.rootfs), "--volatile=overlay"]
        )
        proc = subprocess.Popen(
            ["systemd-nspawn", "-b", *root, "-M", name, f"--hostname={name}",
             "--register=no", "--keep-unit", f"--network-bridge={self.bridge}",
             "--console=passive", *binds,
             f"--uuid={uuid.uuid4()}"],  # its own machine id (else the VM's DMI UUID for all)
            stdout=log.open("wb"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        host = Host(
            name=f"nspawn-{_suffix(i)}", address=addr, ssh_user=LOGIN_USER, gpu_path=gpu_path,
            groups=groups,
            vars={"ansible_ssh_private_key_file": str(self.key),
                  "ansible_python_interpreter": "/usr/bin/python3"},
        )  # fmt: skip
        return NspawnHost(name, addr, self.host_side, self.key, proc, host, log)

    def _cloud_init_binds(self, name: str, sshd_delay_s: float | None, hostname: str) -> list[str]:
        """The NoCloud seed of host ``name`` and the sshd drop-in that holds sshd back until
        cloud-init has finished (and ``sshd_delay_s`` more), as nspawn bind options."""
        boot = Path(tempfile.mkdtemp(prefix=f"{name}-boot-", dir=self.workdir))  # each boot's
        seed = boot / "seed"  # own: a host booted again at the same address is a new machine
        seed.mkdir()
        (seed / "meta-data").write_text(f"instance-id: {boot.name}\nlocal-hostname: {hostname}\n")
        pub = (self.workdir / "id.pub").read_text().strip()
        (seed / "user-data").write_text(
            "#cloud-config\n"
            f"ssh_authorized_keys:\n  - {pub}\n"  # for the default user (debian)
            "manage_etc_hosts: true\n"  # sudo resolves the host name
        )
        dropin = boot / "ssh.conf"
        dropin.write_text(sshd_dropin(sshd_delay_s))
        return [f"--bind-ro={seed}:{SEED_DIR}", f"--bind-ro={dropin}:{SSH_DROPIN}"]

    def _configure_net(self, nh: NspawnHost) -> None:
        veth = f"vb-{nh.name}"[:15]
        wait_for(lambda: Path(f"/sys/class/net/{veth}").exists() or nh.proc.poll() is not None,
                 20, f"veth {veth}")  # fmt: skip
        if nh.proc.poll() is not None:
            raise RuntimeError(f"systemd-nspawn {nh.name} exited: {nh.log.read_text()[-800:]}")
        child = wait_for(lambda: _child_pid(nh.proc.pid), 10, f"the init of {nh.name}")
        _run("ip", "link", "set", veth, "up")
        ns = ["nsenter", "-t", str(child), "-n"]
        _run(*ns, "ip", "addr", "add", f"{nh.address}/24", "dev", "host0")
        _run(*ns, "ip", "link", "set", "host0", "up")
        _run(*ns, "ip", "route", "add", "default", "via", self.host_side)

    def _apt_cache(self) -> Path:
        """The shared apt cache when no other lab on this machine uses it (this lab then holds
        it until :meth:`close`), else a copy of it in this lab's directory: two apt-cacher-ng
        processes must not write one cache."""
        (ACNG_CACHE / "cache").mkdir(parents=True, exist_ok=True)
        fd = os.open(ACNG_CACHE / "in-use.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            own = self.workdir / "acng-cache"
            _run("cp", "-a", "--reflink=auto", str(ACNG_CACHE / "cache"), str(own))
            return own
        self._acng_lock = fd
        return ACNG_CACHE / "cache"

    def _start_services(self) -> None:
        cfg = self.workdir / "acng"
        (cfg / "log").mkdir(parents=True)
        cache = self._apt_cache()
        (cfg / "backends_debian").write_text(mirror() + "\n")
        (cfg / "acng.conf").write_text(
            f"CacheDir: {cache}\nLogDir: {cfg / 'log'}\n"
            "SupportDir: /usr/lib/apt-cacher-ng\n"
            f"Port: {ACNG_PORT}\nBindAddress: {self.host_side}\nForeGround: 1\nExThreshold: 4\n"
            "Remap-debrep: file:deb_mirror*.gz /debian ; file:backends_debian\n"
        )
        acng = subprocess.Popen(
            ["apt-cacher-ng", "-c", str(cfg)], stdout=(cfg / "out.log").open("wb"),
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip
        self._procs.append(acng)

        def acng_up() -> bool:
            if acng.poll() is not None:
                raise RuntimeError(f"apt-cacher-ng exited with {acng.returncode}")
            with socket.socket() as s:
                return s.connect_ex((self.host_side, ACNG_PORT)) == 0

        wait_for(acng_up, 15, "apt-cacher-ng")
        self.serve(STUB_REPO, STUB_PORT)


def prepare_stub_repo() -> dict[str, str]:
    """Build (cached) the stub NVIDIA repository; returns file name -> SHA-256."""
    r = subprocess.run(
        ["bash", str(REPO / "scripts/parts/nvidia-stub-repo.sh"), "prepare"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if r.returncode != 0:
        raise RuntimeError(f"stub NVIDIA repository build failed: {r.stderr.strip()[-300:]}")
    sums = {}
    for line in (STUB_REPO / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.strip()] = digest
    return sums


def sshd_dropin(delay_s: float | None) -> str:
    """A drop-in for Debian's ssh.service: start after cloud-init's last stage, ``delay_s``
    later; never (a failed condition, no retries) when ``delay_s`` is None.

    Without default dependencies: multi-user.target would otherwise wait for sshd, and
    cloud-final.service runs after multi-user.target (an ordering cycle)."""
    start = (
        "ConditionPathExists=/etc/gpulab-sshd-never-starts\n"
        if delay_s is None
        else f"ExecStartPre=/bin/sleep {delay_s:g}\n"
    )
    return (
        "# gpulab test host: sshd answers only after cloud-init has finished\n"
        "[Unit]\nDefaultDependencies=no\nAfter=basic.target cloud-final.service\n"
        "Conflicts=shutdown.target\nBefore=shutdown.target\n"
        + (start if delay_s is None else "")
        + "[Service]\nTimeoutStartSec=infinity\n"
        + ("" if delay_s is None else start)
    )


def start_lab(gpu_paths: Sequence[str] = ("pci-passthrough", "none"), **kw: Any) -> NspawnLab:
    """Bridge, services and one host per entry of ``gpu_paths`` (hosts of a GPU path other
    than ``none`` go to group ``gpu_hosts``, the others to ``cpu_hosts``). Call
    :meth:`NspawnLab.close` (or use :func:`open_lab`)."""
    if not rootfs_ready():
        raise RuntimeError(
            f"cached rootfs {ROOTFS} of recipe {rootfs_key()} missing or stale"
            " (scripts/parts/rootfs.sh prepare)"
        )
    t0 = time.monotonic()
    workdir = Path(tempfile.mkdtemp(prefix="gpulab-nspawn-"))
    # Two labs may start at once (one per pytest worker): one at a time builds the stub
    # repository, picks a free subnet and takes it with its bridge's address.
    with _machine_lock():
        try:
            sums = prepare_stub_repo()
            net = _free_subnet()
        except BaseException:
            shutil.rmtree(workdir, ignore_errors=True)  # no lab yet to close
            raise
        lab = NspawnLab(workdir=workdir, net=net, bridge=f"glbr{os.getpid() % 100000}",
                        key=workdir / "id", stub_sha256=sums)  # fmt: skip
        try:
            _run("ip", "link", "add", lab.bridge, "type", "bridge")
            _run("ip", "addr", "add", f"{lab.host_side}/24", "dev", lab.bridge)
        except BaseException:
            lab.close()
            raise
    try:
        _run("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(lab.key))
        (workdir / "01proxy").write_text(
            f'Acquire::http::Proxy "{lab.apt_proxy}";\n'
            f'Acquire::http::Proxy::{lab.host_side} "DIRECT";\n'  # the lab's own servers
        )
        _run("ip", "link", "set", lab.bridge, "up")
        lab._start_services()
        lab.boot_specs([(p, ["cpu_hosts" if p == "none" else "gpu_hosts"]) for p in gpu_paths])
        lab.boot_s = time.monotonic() - t0
        return lab
    except BaseException:
        lab.close()
        raise


@contextlib.contextmanager
def _machine_lock() -> Iterator[None]:
    LAB_LOCK.parent.mkdir(parents=True, exist_ok=True)
    with LAB_LOCK.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)  # released when the file closes
        yield


@contextlib.contextmanager
def open_lab(gpu_paths: Sequence[str] = ("pci-passthrough", "none")) -> Iterator[NspawnLab]:
    lab = start_lab(gpu_paths)
    try:
        yield lab
    finally:
        lab.close()
