#!/usr/bin/env bash
# Prepare the real parts the tests use. Each part is scripts/parts/<name>.sh taking `prepare`
# (install and build what it needs, idempotent and cached under .cache/). Apt packages of every
# part are listed in scripts/parts/apt-packages.txt and installed once, first.
# The parts' prepare steps run concurrently; logs go to .cache/parts/<name>.log.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:-prepare}
mkdir -p .cache/parts

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
  setsid bash "$script" "$action" > ".cache/parts/$name.log" 2>&1 < /dev/null &
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
