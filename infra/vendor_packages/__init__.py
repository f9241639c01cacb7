"""What the vendors' package repositories publish, per distribution: the lists in this folder.

One text file per vendor repository and package format (``<vendor>/<distro or format>.txt``),
each with its source and the date it was read in its header, then one line per package: its
name and every version recorded (``name v1 v2 ...``; a name alone, e.g. a dnf module stream
``@nvidia-driver:580-open``, is published with no version to pin). Header keys::

    # vendor: nvidia-cuda              the repository this list stands for
    # repository: URL                 where a host gets it
    # source: ...                      what the list was read or derived from
    # retrieved: YYYY-MM-DD
    # coverage: ...                    a full index, or what was derived and what is left out
    # distros: ubuntu2204 ubuntu2404   the distributions whose hosts use this repository
    # format: deb | rpm                how versions are written and compared
    # minimum: NAME VERSION WHY        a floor: older versions are refused (e.g. a CVE fix)

The role defaults are checked against these lists for every supported distribution
(``tests/ansible/test_vendor_packages.py``), ``gpulab validate`` checks a stack's
``gpulab:site`` overrides against them (:mod:`infra.config.vendor_check`), and the test
repositories are generated from them (``scripts/parts/nvidia-stub-repo.sh``,
``tests/parts/rpm_stub_repo.py``), so a name or version the vendor does not publish fails the
tests as it would fail on a lab.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from workloads.paths import PACKAGES_DIR

HERE = Path(__file__).resolve().parent


@dataclass(frozen=True)
class Distro:
    """A supported distribution release, as gpu_facts names it (``gpu_facts_cuda_repo_distro``)
    and as its hosts report themselves (the Ansible facts the roles read)."""

    key: str
    title: str
    os_family: str
    distribution: str
    version: str
    release: str  # codename (Debian family) or major version
    python: str  # the interpreter workload_env makes its virtualenv with
    glibc: str  # the C library of the release: the newest manylinux tag its wheels can use

    @property
    def major(self) -> str:
        return self.version.split(".")[0]

    def facts(self) -> dict[str, str]:
        """The ``ansible_facts`` the roles branch on, as a host of this release reports them."""
        return {
            "os_family": self.os_family,
            "distribution": self.distribution,
            "distribution_version": self.version,
            "distribution_major_version": self.major,
            "distribution_release": self.release,
            "architecture": "x86_64",
            "pkg_mgr": "apt" if self.os_family == "Debian" else "dnf",
        }


DISTROS: dict[str, Distro] = {
    d.key: d
    for d in (
        Distro("ubuntu2204", "Ubuntu 22.04", "Debian", "Ubuntu", "22.04", "jammy", "3.10", "2.35"),
        Distro("ubuntu2404", "Ubuntu 24.04", "Debian", "Ubuntu", "24.04", "noble", "3.12", "2.39"),
        Distro("debian12", "Debian 12", "Debian", "Debian", "12", "bookworm", "3.11", "2.36"),
        Distro("rhel9", "Rocky/RHEL 9", "RedHat", "Rocky", "9.4", "Blue Onyx", "3.11", "2.34"),
    )
}


@dataclass(frozen=True)
class Minimum:
    name: str
    version: str
    why: str


@dataclass(frozen=True)
class VendorList:
    """One file: what one vendor repository publishes for some distributions."""

    path: Path
    vendor: str
    fmt: str  # deb or rpm
    distros: tuple[str, ...]
    header: dict[str, str]
    packages: dict[str, tuple[str, ...]] = field(default_factory=dict)
    minimums: tuple[Minimum, ...] = ()

    @property
    def shown(self) -> str:
        return str(self.path.relative_to(PACKAGES_DIR))


HEADER_RE = re.compile(r"^#\s*([a-z-]+):\s*(.*?)\s*$")
REQUIRED = ("vendor", "repository", "source", "retrieved", "coverage", "distros", "format")


class ListError(ValueError):
    """A list file that does not follow the format (names the file and the line)."""


def parse(path: Path) -> VendorList:
    header: dict[str, str] = {}
    minimums: list[Minimum] = []
    packages: dict[str, tuple[str, ...]] = {}
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            m = HEADER_RE.match(line)
            if m and m.group(1) == "minimum":
                parts = m.group(2).split(None, 2)
                if len(parts) < 3:
                    raise ListError(f"{path}:{n}: minimum needs NAME VERSION WHY")
                minimums.append(Minimum(*parts))
            elif m and m.group(1) in REQUIRED:
                header[m.group(1)] = m.group(2)
            continue
        name, *versions = line.split()
        if name in packages:
            raise ListError(f"{path}:{n}: {name} listed twice")
        packages[name] = tuple(versions)
    missing = [k for k in REQUIRED if not header.get(k)]
    if missing:
        raise ListError(f"{path}: header lacks {', '.join(missing)}")
    if header["format"] not in ("deb", "rpm"):
        raise ListError(f"{path}: format must be deb or rpm")
    distros = tuple(header["distros"].split())
    unknown = [d for d in distros if d not in DISTROS]
    if unknown:
        raise ListError(f"{path}: unknown distros {', '.join(unknown)}")
    return VendorList(
        path, header["vendor"], header["format"], distros, header, packages, tuple(minimums)
    )


@cache
def all_lists() -> tuple[VendorList, ...]:
    return tuple(parse(p) for p in sorted(HERE.glob("*/*.txt")))


def lists_for(distro: str) -> list[VendorList]:
    return [v for v in all_lists() if distro in v.distros]


def vendor_list(vendor: str, distro: str) -> VendorList | None:
    return next((v for v in lists_for(distro) if v.vendor == vendor), None)


def _numbers(version: str) -> tuple[int, ...]:
    """The upstream part of a package version as numbers: ``5:27.3.1-1~ubuntu`` -> (27, 3, 1)."""
    upstream = version.split(":", 1)[-1].split("-", 1)[0]
    return tuple(int(x) for x in re.findall(r"\d+", upstream))


def version_matches(fmt: str, wanted: str, published: str) -> bool:
    """Whether a pin (``apt install name=wanted`` / ``dnf install name-wanted``) selects the
    published version: apt needs the whole version; dnf takes version or version-release."""
    if fmt == "deb":
        return wanted == published
    return (
        published == wanted
        or published.startswith(wanted + "-")
        or (published.split(":", 1)[-1] == wanted)
    )


def problem(vendor: str, distro: str, name: str, version: str = "") -> str | None:
    """None when ``vendor``'s repository for ``distro`` publishes ``name`` (at ``version``, when
    one is pinned) and the version is not below a recorded minimum; else what is wrong, in one
    line naming the package, the version, the distribution and the list."""
    vl = vendor_list(vendor, distro)
    if vl is None:
        return f"no {vendor} package list for {distro} (infra/vendor_packages/{vendor}/)"
    where = f"{vendor} repository for {distro} ({vl.shown})"
    if name not in vl.packages:
        return f"{name} is not in the {where}"
    published = vl.packages[name]
    if version:
        if not published:
            return f"{name} {version}: the {where} records no versions of {name} to pin"
        if not any(version_matches(vl.fmt, version, p) for p in published):
            near = ", ".join(published[-3:])
            return f"{name} {version} is not in the {where} (newest recorded: {near})"
    for floor in vl.minimums:
        if floor.name != name:
            continue
        low = [p for p in published if not version or version_matches(vl.fmt, version, p)]
        if version and low and all(_numbers(p) < _numbers(floor.version) for p in low):
            return f"{name} {version} is older than {floor.version}: {floor.why}"
    return None
