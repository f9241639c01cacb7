"""STUB RPM repositories for the RHEL-family role branches, and a Debian rootfs layer with dnf.

Neither Rocky/RHEL nor NVIDIA's rpm repositories are reachable here, so this builds stand-ins
with the real tools (``rpmbuild``, ``rpmsign``, ``createrepo_c``, ``modifyrepo_c``, ``gpg``):
packages named as the RHEL tasks name them, each an empty payload (a ``STUB`` note) except the
few files the roles read back (``nvcc``, ``nvidia-ctk``, ``apptainer``, repository files).
Cached under ``.cache/rpm-stub-repo`` (rebuilt when this file or ``tests/data/rpm/`` changes)::

    baseos/                Rocky 9 BaseOS + AppStream stand-in (rocky-release, kernel and
                           kernel-devel of the faked EL9 kernel only, kernel-headers, gcc,
                           make, elfutils-libelf-devel, pciutils with an lspci, gnupg2,
                           epel-release, dnf-plugins-core, python3, python3.11,
                           python3.11-pip, python3-packaging, tar);
                           unsigned, as the test's repo file says
    crb/                   CRB stand-in (disabled by rocky-release's repo file, as on Rocky 9)
    epel/                  EPEL stand-in: dkms (Requires gcc, make, kernel-devel)
    cuda/                  like NVIDIA's rhel9 CUDA repo, from its package list
                           (infra/vendor_packages/nvidia-cuda/rhel9.txt): packages SIGNED with
                           the stub key, module nvidia-driver with the listed <branch>-open and
                           <branch>-dkms streams (modules.yaml added by modifyrepo_c), each
                           cuda-toolkit-<major>-<minor> with a stub nvcc
    libnvidia-container/   like nvidia.github.io/libnvidia-container/stable/rpm (from its
                           list): repomd.xml SIGNED (repomd.xml.asc), packages not
                           (repo_gpgcheck=1, gpgcheck=0)
    libnvidia-container-tampered/  the same with repomd.xml changed after signing
    docker/9/x86_64/stable like download.docker.com/linux/centos: packages SIGNED
    files/                 single downloads: apptainer-1.3.4-1.x86_64.rpm, rocky-release, the
                           vGPU guest driver RPM (nvidia-linux-grid-550) and the Bitfusion
                           client RPM (bitfusion-client-centos8), as NVIDIA's licensing portal
                           and VMware hand them out: not from a repository
    SHA256SUMS             checksums of files/*
    keys/stub.asc, stub.fpr  the stub signing key (public part only) and its fingerprint

:func:`prepare_dnf_layer` caches ``.cache/rootfs/bookworm-dnf`` : an overlay upper layer over
the test rootfs (``scripts/parts/rootfs.sh``) holding Debian's ``dnf``, ``python3-dnf``,
``dnf-plugins-core`` and ``rpm`` (apt through the lab's apt-cacher-ng), with rpm's database at
/var/lib/rpm as on RHEL (Debian's rpm puts it under ``~/.rpmdb``), and ``python3.11-venv``:
Debian splits ``venv``'s ensurepip out of its python3.11, which Rocky's python3.11 package
includes (workload_env runs ``python3.11 -m venv``; the chroot's python3.11 is Debian's).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from infra.vendor_packages import HERE as LISTS
from infra.vendor_packages import vendor_list
from tests.parts import CACHE, REPO, build_lock
from tests.parts.nspawn import ROOTFS, ROOTFS_READY

OUT = CACHE / "rpm-stub-repo"
SPEC = REPO / "tests/data/rpm/stub.spec.in"
LAYER = CACHE / "rootfs" / "bookworm-dnf"
LAYER_READY = CACHE / "rootfs" / "bookworm-dnf.ready"
LAYER_APT = ("dnf", "python3-dnf", "dnf-plugins-core", "rpm", "python3.11-venv")
COMMANDS = ("rpmbuild", "rpmsign", "createrepo_c", "modifyrepo_c", "gpg")

# The faked facts' kernel (a Rocky 9.4 kernel): kernel-devel-<it> must resolve in the stub repo.
EL9_KERNEL = "5.14.0-427.13.1.el9_4.x86_64"
CTK = "1.17.8"  # nvidia_container_toolkit's default pin
APPTAINER_RPM = "apptainer-1.3.4-1.x86_64.rpm"  # apptainer's default, a listed release asset
RELEASE_RPM = "rocky-release-9.4-1.7.el9.noarch.rpm"
GRID = "550.127.05"
GRID_RPM = f"nvidia-linux-grid-550-{GRID}-1.x86_64.rpm"
BITFUSION = "4.5.4"
BITFUSION_RPM = f"bitfusion-client-centos8-{BITFUSION}-1.x86_64.rpm"  # VMware's file name
# What `lspci -Dnn -d 10de:` prints for tests/data/gpu_facts/sysfs_h200_vm.yaml (the H200 of a
# real host; tests/ansible/test_gpu_facts.py has the same text): the stub pciutils' lspci.
H200_LSPCI = (
    "0000:00:06.0 3D controller [0302]: NVIDIA Corporation GH100 [H200 SXM 141GB] [10de:2335]"
    " (rev a1)\n"
    "0000:00:06.1 Audio device [0403]: NVIDIA Corporation GA104 High Definition Audio"
    " Controller [10de:228b] (rev a1)\n"
)


@dataclass
class Pkg:
    name: str
    version: str
    release: str
    repo: str  # directory under OUT
    arch: str = "x86_64"
    requires: list[str] = field(default_factory=list)
    provides: list[str] = field(default_factory=list)
    files: dict[str, tuple[int, str]] = field(default_factory=dict)  # path -> (mode, content)
    saved_as: str = ""  # the file name under files/ when the vendor names it otherwise

    @property
    def filename(self) -> str:
        return f"{self.name}-{self.version}-{self.release}.{self.arch}.rpm"

    @property
    def nevra(self) -> str:
        return f"{self.name}-0:{self.version}-{self.release}.{self.arch}"


def _exe(text: str) -> tuple[int, str]:
    return 0o755, "#!/bin/sh\n" + text


ROCKY_REPO = """\
# gpulab STUB of Rocky 9's rocky.repo: BaseOS/AppStream enabled, CRB present but disabled.
# $gpulabstub (/etc/dnf/vars/gpulabstub) is the stub server's host:port.
[baseos]
name=Rocky Linux $releasever - BaseOS (gpulab stub)
baseurl=http://$gpulabstub/baseos/
gpgcheck=0
enabled=1

[crb]
name=Rocky Linux $releasever - CRB (gpulab stub)
baseurl=http://$gpulabstub/crb/
gpgcheck=0
enabled=0
"""

EPEL_REPO = """\
# gpulab STUB of epel.repo (the real one checks packages with RPM-GPG-KEY-EPEL-9).
[epel]
name=Extra Packages for Enterprise Linux $releasever - $basearch (gpulab stub)
baseurl=http://$gpulabstub/epel/
gpgcheck=0
enabled=1
"""


LSPCI = f"""\
# gpulab STUB of lspci: prints what the real one prints on the H200 host whose sysfs the test
# copies (tests/data/gpu_facts/sysfs_h200_vm.yaml); only the query gpu_facts makes.
[ "$*" = "-Dnn -d 10de:" ] || {{ echo "lspci (gpulab stub): unsupported: $*" >&2; exit 1; }}
printf '%s' '{H200_LSPCI}'
"""

CONFIG_MANAGER_ON = """\
# gpulab STUB: dnf-plugins-core installed, so its config-manager command is on (the test turns
# the rootfs's Debian plugin off with enabled=0 here until this package replaces the file).
[main]
enabled=1
"""

GRIDD = """\
# gpulab STUB of the vGPU licensing daemon: reads its config, then idles.
test -r /etc/nvidia/gridd.conf || { echo "nvidia-gridd (stub): no gridd.conf" >&2; exit 1; }
echo "nvidia-gridd (gpulab stub): FeatureType=$(sed -n 's/^FeatureType=//p' /etc/nvidia/gridd.conf)"
exec sleep infinity
"""

GRIDD_UNIT = """\
[Unit]
Description=NVIDIA Grid Daemon (gpulab stub)
[Service]
Type=simple
ExecStart=/usr/bin/nvidia-gridd
[Install]
WantedBy=multi-user.target
"""

BITFUSION_CLI = f"""\
# gpulab STUB of the Bitfusion client
case "$1" in
  version|--version) echo "Bitfusion client {BITFUSION} (gpulab stub)"; exit 0 ;;
esac
echo "bitfusion (gpulab stub): no Bitfusion server reachable: $*" >&2; exit 1
"""


def packages() -> list[Pkg]:
    kver, krel = EL9_KERNEL.rsplit(".", 1)[0].split("-", 1)
    base = [
        Pkg(
            "rocky-release",
            "9.4",
            "1.7.el9",
            "files",
            arch="noarch",
            provides=["system-release", "system-release(releasever) = 9", "redhat-release = 9.4"],
            files={"/etc/yum.repos.d/rocky.repo": (0o644, ROCKY_REPO)},
        ),
        Pkg(
            "kernel-devel", kver, krel, "baseos", provides=[f"kernel-devel-uname-r = {EL9_KERNEL}"]
        ),
        Pkg("kernel-headers", kver, krel, "baseos"),
        Pkg("kernel", kver, krel, "baseos"),  # nvidia_driver_update_kernel installs the newest
        Pkg("bash", "5.1.8", "9.el9", "baseos", provides=["/bin/sh"]),  # the scripts' /bin/sh
        Pkg("gcc", "11.4.1", "3.el9", "baseos"),
        Pkg("make", "4.3", "8.el9", "baseos", provides=["make = 1:4.3"]),
        Pkg("pciutils", "3.7.0", "5.el9", "baseos", files={"/usr/sbin/lspci": _exe(LSPCI)}),
        Pkg("elfutils-libelf-devel", "0.190", "2.el9", "baseos"),
        # Rocky's container image has no dnf-plugins-core (rocky-linux/kickstarts,
        # Rocky-9-Container-Base.ks: --nocore, no dnf-plugins-core in %packages); the test turns
        # Debian's config-manager plugin off with this file, which the stub then owns, enabled.
        Pkg(
            "dnf-plugins-core",
            "4.3.0",
            "13.el9",
            "baseos",
            arch="noarch",
            provides=["dnf-command(config-manager)"],
            files={"/etc/dnf/plugins/config-manager.conf": (0o644, CONFIG_MANAGER_ON)},
        ),
        Pkg("python3.11", "3.11.7", "1.el9", "baseos"),
        Pkg("python3.11-pip", "22.3.1", "4.el9", "baseos", arch="noarch", requires=["python3.11"]),
        Pkg("python3-packaging", "20.9", "5.el9", "baseos", arch="noarch"),
        Pkg("gnupg2", "2.3.3", "4.el9", "baseos"),
        Pkg("tar", "1.34", "6.el9", "baseos"),
        Pkg("python3", "3.9.18", "3.el9", "baseos"),
        Pkg(
            "epel-release",
            "9",
            "7.el9",
            "baseos",
            arch="noarch",
            files={"/etc/yum.repos.d/epel.repo": (0o644, EPEL_REPO)},
        ),
        Pkg("libvdpau-devel", "1.4", "6.el9", "crb"),
        Pkg(
            "dkms",
            "3.0.13",
            "1.el9",
            "epel",
            arch="noarch",
            requires=["gcc", "make", "kernel-devel"],
        ),
    ]
    return base + list_packages() + _vendor_downloads()


def _vendor_downloads() -> list[Pkg]:
    """The vendor files handed out outside any repository (licensing portal, VMware)."""
    return [
        Pkg("nvidia-linux-grid-550", GRID, "1", "files", saved_as=GRID_RPM, files={
            "/usr/bin/nvidia-gridd": _exe(GRIDD),
            "/usr/lib/systemd/system/nvidia-gridd.service": (0o644, GRIDD_UNIT),
            "/etc/nvidia/gridd.conf.template": (0o644, "# gridd.conf template (gpulab stub)\n")}),
        Pkg("bitfusion-client", BITFUSION, "1", "files", saved_as=BITFUSION_RPM, files={
            "/usr/bin/bitfusion": _exe(BITFUSION_CLI)}),
    ]  # fmt: skip


def _rhel9(vendor: str) -> dict[str, tuple[str, ...]]:
    vl = vendor_list(vendor, "rhel9")
    assert vl is not None, vendor
    return vl.packages


def _vr(version: str) -> tuple[str, str]:
    ver, rel = version.rsplit("-", 1) if "-" in version else (version, "1")
    return ver, rel


def _newest_per_branch(versions: tuple[str, ...]) -> list[str]:
    newest: dict[str, str] = {}
    for v in versions:  # listed oldest first
        newest[v.split(".")[0]] = v
    return list(newest.values())


def list_packages() -> list[Pkg]:
    """The vendor repositories' stubs, from the rhel9 package lists (infra/vendor_packages):
    only names and versions they hold. To keep the build short, each CUDA toolkit at its newest
    release, each driver package at the newest release of each branch (so every module stream
    the list names has its packages), the container toolkit at the role's pin and the newest,
    Docker's packages at the newest, Apptainer at the role's default (a release asset)."""
    cuda: list[Pkg] = []
    for name, versions in _rhel9("nvidia-cuda").items():
        if name.startswith("@"):
            continue
        if name.startswith("cuda-toolkit-"):
            ver, rel = _vr(versions[-1])
            mm = ".".join(ver.split(".")[:2])
            nvcc = ('echo "nvcc: NVIDIA (R) Cuda compiler driver (gpulab stub)"\n'
                    f'echo "Cuda compilation tools, release {mm}, V{ver}"\n')  # fmt: skip
            cuda.append(Pkg(name, ver, rel, "cuda",
                            files={f"/usr/local/cuda-{mm}/bin/nvcc": _exe(nvcc)}))  # fmt: skip
            continue
        for version in _newest_per_branch(versions):
            ver, rel = _vr(version)
            if name == "nvidia-driver":
                cuda.append(Pkg(name, ver, rel, "cuda", requires=[f"nvidia-kmod-common = {ver}"]))
            elif name == "nvidia-kmod-common":
                cuda.append(Pkg(name, ver, rel, "cuda", arch="noarch"))
            elif name.startswith("kmod-nvidia-"):
                cuda.append(Pkg(name, ver, rel, "cuda", requires=["dkms"],
                                provides=[f"nvidia-kmod = {ver}"]))  # fmt: skip
            else:
                cuda.append(Pkg(name, ver, rel, "cuda"))
    ctk: list[Pkg] = []
    listed = _rhel9("nvidia-container-toolkit")
    for version in sorted({f"{CTK}-1", listed["nvidia-container-toolkit"][-1]}):
        assert all(version in v for v in listed.values()), version
        ver, rel = _vr(version)
        ctk += [
            Pkg("nvidia-container-toolkit-base", ver, rel, "libnvidia-container", files={
                "/usr/bin/nvidia-ctk": _exe(
                    f'echo "NVIDIA Container Toolkit CLI version {ver} (gpulab stub)"\n')}),
            Pkg("nvidia-container-toolkit", ver, rel, "libnvidia-container", requires=[
                f"nvidia-container-toolkit-base = {version}",
                f"libnvidia-container-tools = {version}"]),
            Pkg("libnvidia-container-tools", ver, rel, "libnvidia-container",
                requires=[f"libnvidia-container1 = {version}"]),
            Pkg("libnvidia-container1", ver, rel, "libnvidia-container"),
        ]  # fmt: skip
    docker = [Pkg(name, *_vr(versions[-1]), "docker/9/x86_64/stable")
              for name, versions in _rhel9("docker").items()]  # fmt: skip
    app_version = APPTAINER_RPM.removeprefix("apptainer-").removesuffix(".x86_64.rpm")
    assert app_version in _rhel9("apptainer")["apptainer"], app_version
    ver, rel = _vr(app_version)
    app = [
        Pkg("apptainer", ver, rel, "files", files={
            "/usr/bin/apptainer": _exe(f'echo "apptainer version {ver} (gpulab stub)"\n'),
            "/etc/apptainer/apptainer.conf": (0o644, "use nvidia-container-cli = no\n"),
            "/etc/apptainer/nvliblist.conf": (0o644, "libcuda.so\nlibnvidia-ml.so\n")}),
    ]  # fmt: skip
    return cuda + ctk + docker + app


def module_streams(pkgs: list[Pkg]) -> dict[str, tuple[str, list[Pkg]]]:
    """stream -> (its kmod package, its artifacts): every nvidia-driver stream the rhel9 list
    names whose branch has packages here."""
    out: dict[str, tuple[str, list[Pkg]]] = {}
    for name in _rhel9("nvidia-cuda"):
        if not name.startswith("@nvidia-driver:"):
            continue
        stream = name.split(":", 1)[1]
        branch, kind = stream.split("-", 1)
        kmod = "kmod-nvidia-open-dkms" if kind == "open" else "kmod-nvidia-latest-dkms"
        names = ("nvidia-driver", "nvidia-driver-cuda", "nvidia-kmod-common", kmod)
        arts = [p for p in pkgs if p.name in names and p.version.startswith(branch + ".")]
        if {p.name for p in arts} == set(names):
            out[stream] = (kmod, arts)
    return out


SIGNED_PKGS = ("cuda", "docker/9/x86_64/stable")  # gpgcheck=1 in the roles' repo files
SIGNED_META = ("libnvidia-container",)  # repo_gpgcheck=1

MODULES_YAML = """\
---
document: modulemd
version: 2
data:
  name: nvidia-driver
  stream: "{stream}"
  version: 1
  context: "00000000"
  arch: x86_64
  summary: gpulab STUB of NVIDIA's nvidia-driver module ({stream})
  description: gpulab STUB of the CUDA repository's nvidia-driver module stream
  license:
    module: [MIT]
  profiles:
    default:
      rpms: [nvidia-driver, nvidia-driver-cuda, {kmod}]
  artifacts:
    rpms:
{artifacts}
...
"""


# As in NVIDIA's repository: every stream's default profile is "default" (no default stream
# here, so nothing modular is visible until a stream is enabled).
MODULE_DEFAULTS = """\
---
document: modulemd-defaults
version: 1
data:
  module: nvidia-driver
  profiles:
{profiles}
...
"""


def _stamp() -> str:
    h = hashlib.sha256(Path(__file__).read_bytes())
    h.update(SPEC.read_bytes())
    for f in sorted(LISTS.glob("*/*.txt")):
        h.update(f.read_bytes())
    return h.hexdigest()


def _run(argv: list[str], env: dict[str, str] | None = None) -> str:
    r = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv[:4])} ...: rc {r.returncode}: {r.stderr[-600:]}")
    return r.stdout


def _build_one(p: Pkg, work: Path, out: Path) -> Path:
    stage = work / "stage" / p.name
    doc = f"/usr/share/doc/{p.name}/STUB"
    files = {doc: (0o644, f"gpulab STUB of {p.name} {p.version}: no real software inside.\n"),
             **p.files}  # fmt: skip
    for path, (mode, text) in files.items():
        f = stage / path.lstrip("/")
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        f.chmod(mode)
    deps = [f"Requires: {r}" for r in p.requires] + [f"Provides: {v}" for v in p.provides]
    spec = (
        SPEC.read_text()
        .replace("@NAME@", p.name).replace("@VERSION@", p.version)
        .replace("@RELEASE@", p.release).replace("@ARCH@", p.arch)
        .replace("@DEPS@", "\n".join(deps)).replace("@STAGE@", str(stage))
        .replace("@FILES@", "\n".join(f"%attr({m:04o},root,root) {path}"
                                      for path, (m, _) in sorted(files.items())))
    )  # fmt: skip
    sp = work / f"{p.name}.spec"
    sp.write_text(spec)
    top = work / "top"
    _run(["rpmbuild", "-bb", "--quiet", "--define", f"_topdir {top}", str(sp)])
    built = top / "RPMS" / p.arch / p.filename
    out.mkdir(parents=True, exist_ok=True)
    return Path(shutil.move(str(built), out / (p.saved_as or p.filename)))


def build() -> Path:
    """Build (cached) the stub RPM repositories; returns their directory."""
    with build_lock(OUT):
        return _build()


def _build() -> Path:
    stamp = OUT / ".ready"
    if stamp.is_file() and stamp.read_text() == _stamp():
        return OUT
    for cmd in COMMANDS:
        if shutil.which(cmd) is None:
            raise RuntimeError(f"the stub RPM repositories need {cmd!r} (apt: rpm, createrepo-c)")
    out = OUT.resolve()  # its real place: .cache/rpm-stub-repo may link to the parts cache
    tmp = out.with_name(out.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    work = Path(tempfile.mkdtemp(prefix="gpulab-rpmbuild-"))
    try:
        gnupg = work / "gnupg"
        gnupg.mkdir(mode=0o700)
        env = {**os.environ, "GNUPGHOME": str(gnupg)}
        _run(["gpg", "--batch", "--passphrase", "", "--quick-gen-key",
              "gpulab RPM stub repositories <gpulab@localhost>", "rsa3072", "sign", "never"],
             env)  # fmt: skip
        colons = _run(["gpg", "--batch", "--with-colons", "--list-keys"], env)
        fpr = next(line.split(":")[9] for line in colons.splitlines() if line.startswith("fpr:"))
        (tmp / "keys").mkdir(parents=True)
        (tmp / "keys/stub.asc").write_text(
            _run(["gpg", "--batch", "--armor", "--export", fpr], env)
        )
        (tmp / "keys/stub.fpr").write_text(fpr + "\n")
        pkgs = packages()
        for p in pkgs:
            rpm = _build_one(p, work, tmp / p.repo)
            if p.repo in SIGNED_PKGS:
                _run(["rpmsign", "--addsign", "--define", f"_gpg_name {fpr}",
                      "--define", f"_gpg_path {gnupg}", "--define", f"__gpg {shutil.which('gpg')}",
                      str(rpm)], env)  # fmt: skip
        for repo in sorted({p.repo for p in pkgs} - {"files"}):
            _run(["createrepo_c", "--quiet", "--no-database", str(tmp / repo)])
        docs = []
        streams = module_streams(pkgs)
        for stream, (kmod, arts) in streams.items():
            lines = "\n".join(f"      - {p.nevra}" for p in arts)
            docs.append(MODULES_YAML.format(stream=stream, kmod=kmod, artifacts=lines))
        profiles = "\n".join(f"    {stream}: [default]" for stream in streams)
        modules = work / "modules.yaml"
        modules.write_text("".join(docs) + MODULE_DEFAULTS.format(profiles=profiles))
        _run(["modifyrepo_c", "--mdtype=modules", str(modules),
              str(tmp / "cuda/repodata")])  # fmt: skip
        for repo in SIGNED_META:
            _run(["gpg", "--batch", "--yes", "--local-user", fpr, "--armor", "--detach-sign",
                  str(tmp / repo / "repodata/repomd.xml")], env)  # fmt: skip
        # The same repository with its repomd.xml changed after signing: dnf must refuse it.
        shutil.copytree(tmp / "libnvidia-container", tmp / "libnvidia-container-tampered")
        with (tmp / "libnvidia-container-tampered/repodata/repomd.xml").open("a") as f:
            f.write("<!-- changed after signing -->\n")
        sums = [f"{hashlib.sha256(f.read_bytes()).hexdigest()}  {f.name}"
                for f in sorted((tmp / "files").iterdir())]  # fmt: skip
        (tmp / "SHA256SUMS").write_text("\n".join(sums) + "\n")
        (tmp / ".ready").write_text(_stamp())
        shutil.rmtree(out, ignore_errors=True)
        tmp.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)  # the private key goes with it
        shutil.rmtree(tmp, ignore_errors=True)
    return OUT


def sha256sums(out: Path = OUT) -> dict[str, str]:
    sums = {}
    for line in (out / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split(maxsplit=1)
        sums[name.strip()] = digest
    return sums


def _layer_key() -> str:
    rootfs = ROOTFS_READY.read_text().strip() if ROOTFS_READY.is_file() else "none"
    return f"{rootfs}|{' '.join(LAYER_APT)}|dbpath-v1"


def dnf_layer_ready() -> bool:
    return LAYER_READY.is_file() and LAYER_READY.read_text() == _layer_key()


def prepare_dnf_layer(apt_proxy: str | None) -> Path:
    """Build (cached) the dnf layer over the test rootfs: ``apt-get install`` of
    :data:`LAYER_APT` in a chroot of an overlay whose upper directory becomes the layer; through
    ``apt_proxy`` when given, else straight from the rootfs's mirror."""
    with build_lock(LAYER):
        if dnf_layer_ready():
            return LAYER
        return _build_dnf_layer(apt_proxy)


def _build_dnf_layer(apt_proxy: str | None) -> Path:
    work = Path(tempfile.mkdtemp(prefix="gpulab-dnflayer-"))
    root = work / "root"
    for d in ("upper", "work", "root"):
        (work / d).mkdir()
    mounts: list[Path] = []
    try:
        opts = f"lowerdir={ROOTFS},upperdir={work / 'upper'},workdir={work / 'work'}"
        _run(["mount", "-t", "overlay", "overlay", "-o", opts, str(root)])
        mounts.append(root)
        _run(["mount", "-t", "proc", "proc", str(root / "proc")])
        mounts.append(root / "proc")
        if not apt_proxy:
            # The chroot shares this machine's network: apt reaches the rootfs's mirror as this
            # machine does, with its name service (bound over, so the layer keeps none of it).
            for f in ("/etc/resolv.conf", "/etc/hosts"):
                if Path(f).exists() and (root / f[1:]).is_file():
                    _run(["mount", "--bind", f, str(root / f[1:])])
                    mounts.append(root / f[1:])
        apt = ["chroot", str(root), "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "-qq"]
        if apt_proxy:
            apt += ["-o", f"Acquire::http::Proxy={apt_proxy}"]
        _run([*apt, "update"])
        _run([*apt, "install", "-y", "--no-install-recommends", *LAYER_APT])
        _run([*apt, "clean"])
        shutil.rmtree(root / "var/lib/apt/lists", ignore_errors=True)
        (root / "var/lib/apt/lists/partial").mkdir(parents=True)
        (root / "etc/rpm").mkdir(parents=True, exist_ok=True)
        (root / "etc/rpm/macros.dbpath").write_text(
            "# as on RHEL: rpm's database in /var/lib/rpm (Debian's rpm uses ~/.rpmdb)\n"
            "%_dbpath /var/lib/rpm\n"
        )
        (root / "var/lib/rpm").mkdir(parents=True, exist_ok=True)
    finally:
        for m in reversed(mounts):
            subprocess.run(["umount", str(m)], capture_output=True, check=False)
    if any(os.path.ismount(m) for m in mounts):
        raise RuntimeError(f"could not unmount {work}")
    shutil.rmtree(LAYER, ignore_errors=True)
    (work / "upper").rename(LAYER)
    shutil.rmtree(work, ignore_errors=True)
    LAYER_READY.write_text(_layer_key())
    return LAYER
