#!/usr/bin/env bash
# Part "nvidia-stub-repo": STUB vendor packages built with dpkg-deb, so the Ansible roles'
# repository setup, installation, runtime configuration and idempotence run end to end without
# the vendors' repositories (unreachable here) and without a GPU. The repositories hold exactly
# the names and versions of the vendor package lists (infra/vendor_packages/<vendor>/*.txt),
# per distribution, so a name or version the vendor does not publish fails here as on a lab;
# every binary is a small script that says it is a stub. Layout (served over HTTP by the tests):
#   .cache/nvidia-stub-repo/<distro>/cuda/         flat apt repo like NVIDIA's CUDA repo for
#                                                  ubuntu2204, ubuntu2404, debian12
#   .cache/nvidia-stub-repo/<distro>/docker/       Docker's apt repo (dists/<codename>/stable)
#   .cache/nvidia-stub-repo/libnvidia-container/   flat apt repo like nvidia.github.io/... (one
#                                                  for every Debian and Ubuntu release)
#   .cache/nvidia-stub-repo/files/                 single downloads (vGPU guest driver .deb,
#                                                  every listed apptainer .deb, bitfusion client
#                                                  .deb, the driver .run)
#   .cache/nvidia-stub-repo/pypi/simple/           a PyPI index with one stub package
#                                                  (gpulab-probe 1.0) for workload_env's pip path
#   .cache/nvidia-stub-repo/SHA256SUMS             checksums of files/*
#   .cache/nvidia-stub-repo/keys/stub.asc, stub.fpr the repositories' signing key (InRelease)
#                                                  and its fingerprint, pinned by the tests
# Usage: nvidia-stub-repo.sh prepare|clean
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$(realpath -m .cache/nvidia-stub-repo)  # its real place: .cache/nvidia-stub-repo may link to the parts cache
STAMP=$OUT/.ready
LISTS=infra/vendor_packages
SELF_SUM=$(cat "$0" "$LISTS"/nvidia-cuda/*.txt "$LISTS"/nvidia-container-toolkit/deb.txt \
  "$LISTS"/docker/*.txt "$LISTS"/apptainer/deb.txt | sha256sum | cut -d' ' -f1)
DEB_DISTROS="ubuntu2204 ubuntu2404 debian12"
ARCH=$(dpkg --print-architecture 2>/dev/null || echo amd64)

case "${1:-prepare}" in
  clean) rm -rf "$OUT"; exit 0 ;;
  prepare) ;;
  *) echo "usage: $0 prepare|clean" >&2; exit 2 ;;
esac
if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$SELF_SUM" ]; then
  echo "nvidia-stub-repo: cached at $OUT"
  exit 0
fi
command -v dpkg-deb >/dev/null && command -v dpkg-scanpackages >/dev/null || {
  echo "nvidia-stub-repo: needs dpkg-deb and dpkg-scanpackages (apt-get install dpkg-dev)" >&2
  exit 2
}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp/libnvidia-container" "$OUT.tmp/files"

# pkg NAME VERSION DEST DEPENDS DESCRIPTION  (files already placed under $WORK/NAME/; the
# staging directory is emptied after the build, so each version starts from nothing)
pkg() {
  local name=$1 version=$2 dest=$3 depends=$4 desc=$5 root=$WORK/$1
  mkdir -p "$root/DEBIAN" "$root/usr/share/doc/$name"
  echo "gpulab STUB of $name $version: no real NVIDIA software inside." \
    > "$root/usr/share/doc/$name/STUB"
  {
    echo "Package: $name"
    echo "Version: $version"
    echo "Architecture: $ARCH"
    echo "Maintainer: gpulab tests <gpulab@localhost>"
    [ -n "$depends" ] && echo "Depends: $depends"
    echo "Section: misc"
    echo "Priority: optional"
    echo "Description: gpulab STUB of $desc"
  } > "$root/DEBIAN/control"
  find "$root" -type d -exec chmod 0755 {} +
  mkdir -p "$dest"
  dpkg-deb --root-owner-group -Zgzip --build "$root" "$dest/${name}_${version#*:}_${ARCH}.deb" >/dev/null
  rm -rf "$root"
}

# listed FILE: "name version..." lines of a vendor package list (comments skipped)
listed() { grep -vE '^\s*(#|$)' "$1"; }

# script NAME PATH BODY: an executable stub file inside package NAME
script() {
  mkdir -p "$WORK/$1/$(dirname "$2")"
  printf '%s\n' "$3" > "$WORK/$1/$2"
  chmod 0755 "$WORK/$1/$2"
}

# ---- CUDA repository per distribution: what infra/vendor_packages/nvidia-cuda/ lists -------
for distro in $DEB_DISTROS; do
  while read -r name versions; do
    for version in $versions; do
      case $name in
        cuda-toolkit-*)
          mm=${name#cuda-toolkit-}; mm=${mm/-/.}
          script "$name" "usr/local/cuda-$mm/bin/nvcc" "#!/bin/sh
echo \"nvcc: NVIDIA (R) Cuda compiler driver (gpulab stub)\"
echo \"Cuda compilation tools, release $mm, V${version%-*}\""
          pkg "$name" "$version" "$OUT.tmp/$distro/cuda" "" "the CUDA $mm toolkit" ;;
        *)
          mkdir -p "$WORK/$name/usr/lib/gpulab-stub"
          echo "${version%-*}" > "$WORK/$name/usr/lib/gpulab-stub/$name.version"
          pkg "$name" "$version" "$OUT.tmp/$distro/cuda" "" "the NVIDIA driver metapackage ($name)" ;;
      esac
    done
  done < <(listed "$LISTS/nvidia-cuda/$distro.txt")
done

# ---- libnvidia-container repository: NVIDIA Container Toolkit, every version listed --------
# (one repository for every Debian and Ubuntu release, as NVIDIA's stable/deb since 1.14); the
# dependencies as the real packages have them (nvidia-container-toolkit on its base and tools).
CTK_SCRIPT='#!/usr/bin/python3
"""gpulab STUB of nvidia-ctk: --version, runtime configure (containerd/crio append a runtime
section if absent; docker merges daemon.json), cdi generate (fails: no GPU)."""
import json, os, sys
a = sys.argv[1:]
def opt(name, default=None):
    for i, x in enumerate(a):
        if x.startswith(name + "="):
            return x.split("=", 1)[1]
        if x == name and i + 1 < len(a):
            return a[i + 1]
    return default
if not a or a[0] in ("--version", "-v", "version"):
    print("NVIDIA Container Toolkit CLI version " + VERSION + " (gpulab stub)")
    sys.exit(0)
if a[:2] == ["runtime", "configure"]:
    rt = opt("--runtime", "docker")
    if rt == "docker":
        path = opt("--config", "/etc/docker/daemon.json")
        cfg = json.load(open(path)) if os.path.exists(path) else {}
        cfg.setdefault("runtimes", {})["nvidia"] = {"path": "nvidia-container-runtime", "args": []}
        os.makedirs(os.path.dirname(path), exist_ok=True)
        json.dump(cfg, open(path, "w"), indent=4)
    elif rt in ("containerd", "crio"):
        path = opt("--config", "/etc/containerd/config.toml" if rt == "containerd" else "/etc/crio/crio.conf")
        text = open(path).read() if os.path.exists(path) else ""
        if "runtimes.nvidia]" not in text:
            text += ("\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia]\n"
                     "  runtime_type = \"io.containerd.runc.v2\"\n"
                     "  [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.nvidia.options]\n"
                     "    BinaryName = \"/usr/bin/nvidia-container-runtime\"\n")
            os.makedirs(os.path.dirname(path), exist_ok=True)
            open(path, "w").write(text)
    else:
        sys.exit("nvidia-ctk (stub): unsupported runtime " + rt)
    print("INFO Wrote updated config to " + path + " (gpulab stub)")
    sys.exit(0)
if a[:2] == ["cdi", "generate"]:
    sys.exit("ERROR failed to generate CDI spec: failed to initialize NVML: ERROR_LIBRARY_NOT_FOUND (gpulab stub: no GPU)")
sys.exit("nvidia-ctk (gpulab stub): unsupported arguments: " + " ".join(a))'
while read -r name versions; do
  for version in $versions; do
    v=${version%-*}
    case $name in
      nvidia-container-toolkit-base)
        script "$name" usr/bin/nvidia-ctk "$(printf '%s\n' "$CTK_SCRIPT" | sed "s/^import json, os, sys$/import json, os, sys\nVERSION = \"$v\"/")"
        pkg "$name" "$version" "$OUT.tmp/libnvidia-container" "python3" \
          "the NVIDIA Container Toolkit base (nvidia-ctk)" ;;
      libnvidia-container1)
        mkdir -p "$WORK/$name/usr/lib/gpulab-stub"
        echo stub > "$WORK/$name/usr/lib/gpulab-stub/libnvidia-container.so.1.stub"
        pkg "$name" "$version" "$OUT.tmp/libnvidia-container" "" "libnvidia-container" ;;
      libnvidia-container-tools)
        script "$name" usr/bin/nvidia-container-cli '#!/bin/sh
echo "nvidia-container-cli: initialization error: nvml error: driver not loaded (gpulab stub)" >&2
exit 1'
        pkg "$name" "$version" "$OUT.tmp/libnvidia-container" "libnvidia-container1 (>= $version)" \
          "libnvidia-container tools (nvidia-container-cli)" ;;
      nvidia-container-toolkit)
        script "$name" usr/bin/nvidia-container-runtime '#!/bin/sh
exec runc "$@"'
        script "$name" usr/bin/nvidia-container-runtime-hook '#!/bin/sh
exit 0'
        pkg "$name" "$version" "$OUT.tmp/libnvidia-container" \
          "nvidia-container-toolkit-base (= $version), libnvidia-container-tools (>= $version), libnvidia-container-tools (<< 2.0.0)" \
          "the NVIDIA Container Toolkit" ;;
      *) echo "nvidia-stub-repo: no stub for $name" >&2; exit 2 ;;
    esac
  done
done < <(listed "$LISTS/nvidia-container-toolkit/deb.txt")

# ---- Docker's apt repository per distribution (dists/<codename>/stable), from the lists ----
for distro in $DEB_DISTROS; do
  codename=$(sed -n 's/^# repository: .* \([a-z]*\) stable .*/\1/p' "$LISTS/docker/$distro.txt")
  pool="$OUT.tmp/$distro/docker/pool"
  while read -r name versions; do
    for version in $versions; do
      pkg "$name" "$version" "$pool" "" "Docker's $name"
    done
  done < <(listed "$LISTS/docker/$distro.txt")
  dist="$OUT.tmp/$distro/docker/dists/$codename/stable/binary-$ARCH"
  mkdir -p "$dist"
  (cd "$OUT.tmp/$distro/docker" && dpkg-scanpackages --multiversion pool /dev/null 2>/dev/null \
     > "dists/$codename/stable/binary-$ARCH/Packages")
done

# ---- single downloads ------------------------------------------------------------------
script nvidia-linux-grid-550 usr/bin/nvidia-gridd '#!/bin/sh
# gpulab STUB of the vGPU licensing daemon: reads its config, then idles.
test -r /etc/nvidia/gridd.conf || { echo "nvidia-gridd (stub): /etc/nvidia/gridd.conf missing" >&2; exit 1; }
echo "nvidia-gridd (gpulab stub): started with FeatureType=$(sed -n "s/^FeatureType=//p" /etc/nvidia/gridd.conf)"
exec sleep infinity'
mkdir -p "$WORK/nvidia-linux-grid-550/lib/systemd/system" "$WORK/nvidia-linux-grid-550/etc/nvidia"
cat > "$WORK/nvidia-linux-grid-550/lib/systemd/system/nvidia-gridd.service" <<'UNIT'
[Unit]
Description=NVIDIA Grid Daemon (gpulab stub)
[Service]
Type=simple
ExecStart=/usr/bin/nvidia-gridd
[Install]
WantedBy=multi-user.target
UNIT
echo "# gridd.conf template (gpulab stub)" > "$WORK/nvidia-linux-grid-550/etc/nvidia/gridd.conf.template"
pkg nvidia-linux-grid-550 550.127.05 "$OUT.tmp/files" "" "the NVIDIA vGPU guest driver (GRID)"

APPTAINER_SCRIPT='#!/bin/sh
case "$1" in
  --version|version) echo "apptainer version @VERSION@ (gpulab stub)"; exit 0 ;;
  build) # "build [--force] SIF SOURCE": a text file naming its source instead of an image
     shift; [ "$1" = --force ] && shift
     echo "gpulab STUB SIF built from $2" > "$1"; exit 0 ;;
esac
echo "apptainer (gpulab stub): cannot run containers here: $*" >&2
exit 1'
# Apptainer's GitHub release assets: every listed version, as apptainer_<version>_amd64.deb
while read -r name versions; do
  for version in $versions; do
script apptainer usr/bin/apptainer "${APPTAINER_SCRIPT//@VERSION@/$version}"
mkdir -p "$WORK/apptainer/etc/apptainer"
printf '%s\n' "# apptainer.conf (gpulab stub)" "allow setuid = yes" "use nvidia-container-cli = no" \
  > "$WORK/apptainer/etc/apptainer/apptainer.conf"
printf '%s\n' "# nvliblist.conf (gpulab stub)" "nvidia-smi" "libcuda.so" "libnvidia-ml.so" \
  > "$WORK/apptainer/etc/apptainer/nvliblist.conf"
mkdir -p "$WORK/apptainer/usr/bin" && ln -sf apptainer "$WORK/apptainer/usr/bin/singularity"
pkg apptainer "$version" "$OUT.tmp/files" "" "Apptainer"
  done
done < <(listed "$LISTS/apptainer/deb.txt")

script bitfusion-client usr/bin/bitfusion '#!/bin/sh
# gpulab STUB of the Bitfusion client: "run -n N -p F -- CMD" runs CMD locally.
case "$1" in
  version|--version) echo "Bitfusion client 4.5.4 (gpulab stub)"; exit 0 ;;
  list_gpus) echo "bitfusion (gpulab stub): no Bitfusion server reachable" >&2; exit 1 ;;
  run) shift
       while [ $# -gt 0 ] && [ "$1" != "--" ]; do shift; done
       [ "$1" = "--" ] && shift
       echo "bitfusion (gpulab stub): running locally without remote GPUs: $*" >&2
       exec "$@" ;;
esac
echo "bitfusion (gpulab stub): unsupported: $*" >&2; exit 1'
pkg bitfusion-client 4.5.4-1 "$OUT.tmp/files" "" "the VMware vSphere Bitfusion client"
mv "$OUT.tmp/files/bitfusion-client_4.5.4-1_${ARCH}.deb" \
   "$OUT.tmp/files/bitfusion-client-ubuntu2204_4.5.4-1_${ARCH}.deb"

# A runfile stub (the NVIDIA .run installer): records that it ran.
cat > "$OUT.tmp/files/NVIDIA-Linux-x86_64-580.95.05.run" <<'RUN'
#!/bin/sh
# gpulab STUB of the NVIDIA driver runfile installer
mkdir -p /var/lib/gpulab-stub
echo "580.95.05 $*" > /var/lib/gpulab-stub/nvidia-runfile-installed
echo "NVIDIA-Linux-x86_64-580.95.05.run (gpulab stub) installed with: $*"
RUN
chmod 0755 "$OUT.tmp/files/NVIDIA-Linux-x86_64-580.95.05.run"

# A one-package PyPI "simple" index, so workload_env's pip path (index URL variable, pinned
# requirement, idempotence) runs for real inside the test namespace (no route to PyPI there).
python3 - "$OUT.tmp/pypi" <<'PY'
import base64, hashlib, pathlib, sys, zipfile
root = pathlib.Path(sys.argv[1])
pkgs = root / "packages"; pkgs.mkdir(parents=True)
name, ver = "gpulab_probe", "1.0"
whl = pkgs / f"{name}-{ver}-py3-none-any.whl"
files = {
    f"{name}/__init__.py": b'"""gpulab test stub package."""\nVERSION = "1.0"\n',
    f"{name}-{ver}.dist-info/METADATA":
        f"Metadata-Version: 2.1\nName: gpulab-probe\nVersion: {ver}\n".encode(),
    f"{name}-{ver}.dist-info/WHEEL":
        b"Wheel-Version: 1.0\nGenerator: gpulab\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
}
record = []
with zipfile.ZipFile(whl, "w") as z:
    for arc, data in files.items():
        zi = zipfile.ZipInfo(arc, date_time=(1980, 1, 1, 0, 0, 0))
        z.writestr(zi, data)
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{arc},sha256={digest},{len(data)}")
    record.append(f"{name}-{ver}.dist-info/RECORD,,")
    zi = zipfile.ZipInfo(f"{name}-{ver}.dist-info/RECORD", date_time=(1980, 1, 1, 0, 0, 0))
    z.writestr(zi, "\n".join(record) + "\n")
sha = hashlib.sha256(whl.read_bytes()).hexdigest()
idx = root / "simple" / "gpulab-probe"; idx.mkdir(parents=True)
(root / "simple" / "index.html").write_text('<a href="gpulab-probe/">gpulab-probe</a>\n')
(idx / "index.html").write_text(
    f'<a href="../../packages/{whl.name}#sha256={sha}">{whl.name}</a>\n')
PY

# A signing key of its own (like NVIDIA's repositories, the roles trust a repository only
# through a key whose fingerprint they pin): keys/stub.asc, its fingerprint in keys/stub.fpr.
command -v gpg >/dev/null || { echo "nvidia-stub-repo: needs gpg" >&2; exit 2; }
export GNUPGHOME=$WORK/gnupg
mkdir -m 0700 "$GNUPGHOME" "$OUT.tmp/keys"
gpg --batch --quiet --passphrase '' --quick-gen-key \
  "gpulab stub NVIDIA repository <stub@gpulab.invalid>" ed25519 sign never 2>/dev/null
FPR=$(gpg --batch --with-colons --list-keys 2>/dev/null | awk -F: '$1 == "fpr" {print $10; exit}')
gpg --batch --armor --export "$FPR" > "$OUT.tmp/keys/stub.asc"
echo "$FPR" > "$OUT.tmp/keys/stub.fpr"

# signed LABEL SUITE INDEX...: a Release listing the index files (paths from the cwd; SUITE
# empty for a flat repository), signed as InRelease and Release.gpg with the stub key.
signed() {
  local label=$1 suite=$2 f
  shift 2
  {
    echo "Origin: gpulab-stub"
    echo "Label: gpulab-stub-$label"
    if [ -n "$suite" ]; then
      echo "Suite: $suite"; echo "Codename: $suite"; echo "Components: stable"; echo "Architectures: $ARCH"
    fi
    echo "Date: Thu, 01 Jan 2026 00:00:00 UTC"
    echo "SHA256:"
    for f in "$@"; do echo " $(sha256sum "$f" | cut -d' ' -f1) $(stat -c %s "$f") $f"; done
  } > Release
  gpg --batch --yes --local-user "$FPR" --clearsign -o InRelease Release
  gpg --batch --yes --local-user "$FPR" --armor --detach-sign -o Release.gpg Release
}
for repo in $(for d in $DEB_DISTROS; do echo "$d/cuda"; done) libnvidia-container; do
  (cd "$OUT.tmp/$repo" && dpkg-scanpackages --multiversion . /dev/null 2>/dev/null > Packages \
     && gzip -9nkf Packages && signed "$repo" "" Packages Packages.gz)
done
for distro in $DEB_DISTROS; do
  codename=$(sed -n 's/^# repository: .* \([a-z]*\) stable .*/\1/p' "$LISTS/docker/$distro.txt")
  (cd "$OUT.tmp/$distro/docker/dists/$codename" && gzip -9nkf "stable/binary-$ARCH/Packages" \
     && signed "docker-$distro" "$codename" "stable/binary-$ARCH/Packages" \
          "stable/binary-$ARCH/Packages.gz")
done
(cd "$OUT.tmp/files" && sha256sum -- * > ../SHA256SUMS)
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "$SELF_SUM" > "$STAMP"
echo "nvidia-stub-repo: built $(find "$OUT" -name '*.deb' | wc -l) stub packages in $OUT"
