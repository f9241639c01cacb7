#!/usr/bin/env bash
# Prepare the real parts the tests use. Each part is scripts/parts/<name>.sh taking `prepare`
# (install and build what it needs, idempotent and cached under .cache/). Apt packages of every
# part are listed in scripts/parts/apt-packages.txt and installed once, first.
# The parts' prepare steps run concurrently; logs go to .cache/parts/<name>.log.
#
# What the parts build once per recipe is shared by every clone on the machine: the rootfs and
# the images made from it (lab image, dnf layer), the vCenter simulator, the wheelhouse, the stub
# repositories, pushgateway, the Ironic venv and apt-cacher-ng's package cache live in
# GPULAB_PARTS_CACHE (default ${XDG_CACHE_HOME:-~/.cache}/gpulab-parts), linked from this clone's
# .cache/ (and .venv-ironic). Each carries the stamp of what built it (a recipe key or a content
# hash), so a changed recipe is rebuilt, and each part prepares under a lock there (two clones
# never build one at once). GPULAB_PARTS_CACHE= (empty) keeps everything in this clone; a
# .cache/<part> that already exists as a directory is left as it is.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:-prepare}
mkdir -p .cache/parts
SHARED=(rootfs vcsim wheelhouse nvidia-stub-repo rpm-stub-repo pushgateway acng)
# shellcheck source=scripts/parts-cache.sh
source scripts/parts-cache.sh
locks=
if [ -n "$parts_cache" ]; then
  mkdir -p "$parts_cache/locks"
  parts_cache=$(cd "$parts_cache" && pwd)
  locks=$parts_cache/locks
  for d in "${SHARED[@]}"; do
    if [ ! -e ".cache/$d" ] && [ ! -L ".cache/$d" ]; then
      mkdir -p "$parts_cache/$d"
      ln -s "$parts_cache/$d" ".cache/$d"
    fi
  done
  if [ ! -e .venv-ironic ] && [ ! -L .venv-ironic ]; then
    mkdir -p "$parts_cache/venv-ironic"
    ln -s "$parts_cache/venv-ironic" .venv-ironic
  fi
fi

mapfile -t pkgs < <(grep -vE '^\s*(#|$)' scripts/parts/apt-packages.txt | awk '{print $1}')
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "gpulab: error: the tests need root to install: ${missing[*]}" >&2
    exit 2
  fi
  echo "==> apt-get install ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" > .cache/parts/apt.log 2>&1 \
    || { tail -n 30 .cache/parts/apt.log >&2; exit 1; }
fi

pids=()
names=()
# Each part runs in its own session (setsid), so that an interrupt stops the part and everything
# it started (pip, apt, a build) by its process group, whose id is the part's PID.
stop_parts() {
  trap - INT TERM HUP
  echo "==> interrupted: stopping parts ${pids[*]:-}" >&2
  for pid in "${pids[@]}"; do
    kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  exit 130
}
trap stop_parts INT TERM HUP
for script in scripts/parts/*.sh; do
  name=$(basename "$script" .sh)
  lock=()
  if [ -n "$locks" ]; then
    lock=(flock "$locks/$name.lock")
  fi
  setsid "${lock[@]}" bash "$script" "$action" > ".cache/parts/$name.log" 2>&1 < /dev/null &
  pids+=($!)
  names+=("$name")
done
rc=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "==> part ${names[$i]}: ${action} ok" >&2
  else
    echo "==> part ${names[$i]}: ${action} FAILED (last lines of .cache/parts/${names[$i]}.log):" >&2
    tail -n 20 ".cache/parts/${names[$i]}.log" >&2
    rc=1
  fi
done
trap - INT TERM HUP
exit $rc
