"""``gpulab:proxy`` on a real nspawn host whose only way out is the proxy: the site play
(playbooks/site.yml, with the variables the program hands its AnsibleRun,
``infra.dynamic.site_variables``) fetches every Debian package, every package of the vendor
repositories and every pip download through the proxy; a proxy that does not answer and a
name that does not resolve stop it in its first role, ``lab_network``, with one line naming
the key and the host, before any package step.

The host is one more nspawn host of the session lab with the test harness's own apt proxy
(``/etc/apt/apt.conf.d/01gpulab-proxy``, ``Acquire::http::Proxy``) taken away: it has a
default route but no NAT behind it, so apt reaches the Debian mirror only through a proxy, and
only because the product's proxy setting says so. The proxy is a forward proxy of the test
(:mod:`tests.parts.http_proxy`: the lab's apt-cacher-ng is its parent for the outside world,
the lab's own servers it fetches itself) that logs every request with the client's address.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.ansible import run_playbook
from infra.config import LabConfig, validate
from infra.dynamic import site_variables
from tests.ansible.helpers import Events, stub_vars
from tests.parts import CACHE
from tests.parts.fixtures_nspawn import NspawnHost, NspawnLab
from tests.parts.http_proxy import HttpProxy
from tests.parts.nspawn import ACNG_PORT
from tests.pulumi.mocks import stack_raw

pytestmark = [pytest.mark.nspawn, pytest.mark.slow]

HARNESS_PROXY = "/etc/apt/apt.conf.d/01gpulab-proxy"
# apt straight to the Debian mirror, failing fast (no proxy: the route leads nowhere)
APT_DIRECT = (
    "apt-get -o Acquire::http::Timeout=5 -o Acquire::Retries=0 "
    "-o Dir::State::Lists=/tmp/direct-lists update"
)


@pytest.fixture(scope="module")
def proxied(nspawn_lab: NspawnLab) -> Iterator[NspawnHost]:
    """A GPU-path host whose apt has no proxy of its own (the harness's one unmounted)."""
    [host] = nspawn_lab.boot(1, gpu_path="pci-passthrough", groups=["gpu_hosts"])
    try:
        host.ssh(f"umount {HARNESS_PROXY}")
        yield host
    finally:
        nspawn_lab.stop([host])


@pytest.fixture(scope="module")
def site_proxy(nspawn_lab: NspawnLab) -> Iterator[HttpProxy]:
    """The lab's site proxy on the bridge: the outside world through apt-cacher-ng, the lab's
    own servers (the stub repositories, the pip index) fetched by the proxy itself."""
    proxy = HttpProxy(
        nspawn_lab.host_side, (nspawn_lab.host_side, ACNG_PORT), direct=[nspawn_lab.host_side]
    )
    try:
        yield proxy
    finally:
        proxy.close()


def acng_lines(lab: NspawnLab, address: str) -> list[str]:
    """The proxy's log lines for requests from ``address`` (apt-cacher-ng's transfer log)."""
    log = lab.workdir / "acng" / "log" / "apt-cacher.log"
    if not log.exists():
        return []
    return [line for line in log.read_text().splitlines() if f"|{address}|" in line]


def config(lab: NspawnLab, proxy: dict[str, Any], **site: Any) -> LabConfig:
    """A stack's config with ``proxy`` and, as its gpulab:site, the stub repositories and the
    lab's wheelhouse (the runner's pyyaml; the stub index holds one probe package)."""
    wheels = CACHE / "wheelhouse"
    assert any(wheels.glob("pyyaml-*.whl")), f"{wheels}: scripts/parts/wheelhouse.sh prepare"
    url = lab.serve(wheels)
    site = {
        "workload_env_pip_packages": ["gpulab-probe==1.0", "pyyaml>=6,<7"],
        "workload_env_pip_index_url": "",
        "workload_env_pip_extra_args": (
            f"--find-links {url}/ --index-url {lab.stub_url}/pypi/simple/ "
            f"--trusted-host {lab.host_side}"
        ),
        **site,
    }
    return validate(
        stack_raw(
            "nova-pci", proxy=proxy, site={**stub_vars(lab.stub_url, lab.stub_sha256), **site}
        )
    )


def site(
    cfg: LabConfig, host: NspawnHost, ev: Events | None = None, envs: tuple[str, ...] = ("native",)
) -> Any:
    return run_playbook(
        "site.yml",
        [host.host],
        extravars=site_variables(cfg, list(envs)),
        event_handler=ev,
        check=False,
        timeout_s=1200,
    )


def test_host_has_no_way_out_but_the_proxy(proxied: NspawnHost) -> None:
    assert (
        proxied.ssh("apt-config dump | grep -ci 'Acquire::http::Proxy' || true").stdout.strip()
        == "0"
    )
    direct = proxied.ssh(f"mkdir -p /tmp/direct-lists/partial && {APT_DIRECT}", check=False)
    assert direct.returncode != 0 or "Err:" in direct.stdout, direct.stdout


def test_silent_proxy_stops_the_site_play_first_with_one_line(
    nspawn_lab: NspawnLab, proxied: NspawnHost
) -> None:
    closed = f"http://{nspawn_lab.host_side}:9"  # discard port: nothing listens on the bridge
    before = len(acng_lines(nspawn_lab, proxied.address))
    ev = Events()
    r = site(config(nspawn_lab, {"http": closed, "no_proxy": [nspawn_lab.host_side]}), proxied, ev)
    assert not r.ok
    [failure] = r.failures
    print(failure)
    assert failure.host == proxied.host.name
    assert failure.task == "Stop when a proxy does not answer here"
    assert failure.msg.startswith(
        f"gpulab:proxy {closed} does not answer on host {proxied.host.name} within 5 s"
    )
    assert "\n" not in failure.msg
    ran = {
        (e.get("event_data") or {}).get("task")
        for e in ev.events
        if e.get("event") == "runner_on_ok"
    }
    assert "Install pciutils (Debian/Ubuntu)" not in ran  # nothing after lab_network ran
    assert len(acng_lines(nspawn_lab, proxied.address)) == before


def test_unresolvable_name_stops_the_site_play_naming_its_key(
    nspawn_lab: NspawnLab, proxied: NspawnHost
) -> None:
    proxy = {"http": nspawn_lab.apt_proxy, "no_proxy": [nspawn_lab.host_side, ".lab.invalid"]}
    cfg = config(nspawn_lab, proxy, workload_env_pip_index_url="http://pypi.lab.invalid/simple/")
    r = site(cfg, proxied)
    assert not r.ok
    [failure] = r.failures
    print(failure)
    assert failure.task == "Stop when a name does not resolve here"
    assert failure.msg.startswith(
        "gpulab:site.workload_env_pip_index_url: name pypi.lab.invalid does not resolve on host "
        f"{proxied.host.name}: give the lab's hosts DNS servers"
    )


def test_site_play_installs_through_the_configured_proxy_only(
    nspawn_lab: NspawnLab, proxied: NspawnHost, site_proxy: HttpProxy
) -> None:
    """The whole site play of a GPU host measuring natively and in docker (driver, CUDA and
    the container toolkit from the stub repository; Debian's docker.io, the workload
    environment's Debian packages, a venv, pip from the lab's index, the workloads image)
    with the proxy as the only way out: every apt, download and pip request of the host is
    in the proxy's log; dockerd gets the proxy for its image pulls."""
    proxy = {"http": site_proxy.url, "no_proxy": [".registry.lab.example"]}
    t0 = time.monotonic()
    ev = Events()
    r = site(config(nspawn_lab, proxy), proxied, ev, envs=("native", "docker"))
    elapsed = time.monotonic() - t0
    print(f"\n{r.summary()}\nsite play through the proxy: {elapsed:.0f} s")
    failed = [
        (e.get("event_data") or {}).get("res")
        for e in ev.events
        if e.get("event") == "runner_on_failed"
    ]
    assert r.ok, (r.summary(), failed)
    assert r.hosts[proxied.host.name].changed > 0
    served = site_proxy.requests_from(proxied.address)
    print(f"the proxy served {len(served)} requests to {proxied.address}, e.g.:")
    print("\n".join(f"{s.method} {s.url} {s.status}" for s in served[:5]))
    assert served and all(s.method != "CONNECT" for s in served), served[:20]
    urls = [s.url for s in served if s.status == 200]
    lab = f"http://{nspawn_lab.host_side}:"
    # apt, Debian's mirror: the proxy took them to its parent
    debian = [u for u in urls if not u.startswith(lab) and u.endswith(".deb")]
    assert any(u.rsplit("/", 1)[-1].startswith("docker.io_") for u in debian), debian[:20]
    # apt and downloads from the vendor's (stub) repository
    assert any(u.startswith(nspawn_lab.stub_url) and "cuda-drivers" in u for u in urls), urls
    # pip: the index and the wheels, through the proxy too
    assert any(u.startswith(f"{nspawn_lab.stub_url}/pypi/simple/") for u in urls), urls
    assert any(u.endswith("/gpulab_probe-1.0-py3-none-any.whl") for u in urls), urls
    pk = proxied.ssh("dpkg-query -W -f='${Package} ${Status}\\n' docker.io python3-venv").stdout
    assert pk.count("install ok installed") == 2, pk
    # dockerd pulls images through the proxy, no_proxy's names directly
    env = proxied.ssh("systemctl show docker -p Environment").stdout
    assert f"HTTP_PROXY={site_proxy.url}" in env and f"HTTPS_PROXY={site_proxy.url}" in env
    assert "NO_PROXY=.registry.lab.example,localhost,127.0.0.1,::1" in env, env
    assert proxied.ssh(
        "docker image inspect -f '{{.Id}}' gpulab/workloads:latest"
    ).stdout.startswith("sha256:")  # built with the proxy's build arguments
    assert "cuda-drivers" in proxied.ssh("dpkg-query -W -f='${Package}\\n' 'cuda-drivers*'").stdout
    probe = proxied.ssh("/opt/gpulab/venv/bin/python -m pip show gpulab-probe", check=False)
    assert "Name: gpulab-probe" in probe.stdout  # pip: from the index, through the proxy
    # nothing on the host keeps the proxy: only the play's environment carried it
    assert (
        proxied.ssh("apt-config dump | grep -ci 'Acquire::http::Proxy' || true").stdout.strip()
        == "0"
    )
    assert "http_proxy" not in proxied.ssh("cat /etc/environment", check=False).stdout
    ran = [
        (e.get("event_data") or {}).get("task")
        for e in ev.events
        if e.get("event") == "runner_on_ok"
    ]
    assert "Connect to each proxy from this host" in ran


def test_acng_log_path_is_where_the_lab_writes_it(
    nspawn_lab: NspawnLab, site_proxy: HttpProxy
) -> None:
    """The silent-proxy test reads apt-cacher-ng's own log: it must be the file apt-cacher-ng
    writes (a wrong path would make 'no new lines' pass vacuously). The site proxy's requests
    for the Debian mirror reach it from the bridge address, the hosts' own from theirs."""
    log = nspawn_lab.workdir / "acng" / "log" / "apt-cacher.log"
    assert log.exists() and isinstance(log, Path)
    clients = [nspawn_lab.host_side, *(h.address for h in nspawn_lab.hosts)]
    assert any(f"|{c}|" in log.read_text() for c in clients)
    assert site_proxy.served, "the site proxy served nothing: the tests above did not run"
