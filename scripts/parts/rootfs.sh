#!/usr/bin/env bash
# Part "rootfs": a Debian bookworm minbase rootfs for the nspawn / chroot Ansible test hosts,
# cached at .cache/rootfs/bookworm (other parts, e.g. the docker base image, reuse it
# read-only once .cache/rootfs/bookworm.ready exists). Usage: rootfs.sh prepare|clean
#
# It boots like the Debian cloud image: Debian's cloud-init package reads a NoCloud seed
# (/var/lib/cloud/seed/nocloud/, which each test host gets: tests/parts/nspawn.py) and creates
# the login user `debian` (password locked, passwordless sudo in
# /etc/sudoers.d/90-cloud-init-users) with the seed's key; the rootfs itself has no login user.
# sshd takes keys only, PermitRootLogin no, root has no authorized_keys. Python is the
# distribution's python3 only. cloud-init looks only for NoCloud, and leaves the network
# alone: the lab bridge gives each host its address, as a cloud's port does.
# KEY names this recipe: bump it whenever the rootfs changes so cached copies are rebuilt.
set -euo pipefail
cd "$(dirname "$0")/../.."
action=${1:-prepare}
ROOT=.cache/rootfs/bookworm
READY=.cache/rootfs/bookworm.ready
KEY="bookworm-minbase-v5-cloud-init-nocloud"
LOGIN=debian
# Packages the test hosts need beyond minbase (Ansible needs python3 and python3-apt).
EXTRA="systemd systemd-sysv dbus openssh-server python3 python3-apt iproute2 ca-certificates
gnupg sudo procps kmod pciutils cloud-init"

mirror() {
  # The Debian mirror from the machine's own apt sources (deb822 or one-line format).
  local m
  m=$(grep -hsE '^\s*URIs:.*debian/?$' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | awk '{print $2}' | grep -v security | head -n1 || true)
  if [ -z "$m" ]; then
    m=$(grep -hsE '^\s*deb\s+\S+/debian/?\s+bookworm' /etc/apt/sources.list \
          /etc/apt/sources.list.d/*.list 2>/dev/null | awk '{print $2}' | head -n1 || true)
  fi
  echo "${m:-http://deb.debian.org/debian}"
}

case "$action" in
  prepare)
    if [ -f "$READY" ] && [ -x "$ROOT/usr/bin/python3" ] \
        && grep -q "^$KEY@" "$READY"; then
      echo "rootfs: cached at $ROOT ($KEY)"
      exit 0
    fi
    if [ "$(id -u)" != 0 ]; then
      echo "rootfs: needs root (debootstrap)" >&2
      exit 2
    fi
    rm -f "$READY"
    rm -rf "$ROOT.tmp"
    mkdir -p "$(dirname "$ROOT")"
    M=$(mirror)
    echo "rootfs: debootstrap bookworm from $M"
    t0=$SECONDS
    debootstrap --variant=minbase bookworm "$ROOT.tmp" "$M"
    # Keep services from starting on the host while installing into the rootfs.
    printf '#!/bin/sh\nexit 101\n' > "$ROOT.tmp/usr/sbin/policy-rc.d"
    chmod 0755 "$ROOT.tmp/usr/sbin/policy-rc.d"
    echo "deb $M bookworm main" > "$ROOT.tmp/etc/apt/sources.list"
    # shellcheck disable=SC2086
    chroot "$ROOT.tmp" env DEBIAN_FRONTEND=noninteractive \
      apt-get install -y -qq --no-install-recommends $EXTRA
    chroot "$ROOT.tmp" apt-get clean
    # No login user: cloud-init creates Debian's default user ($LOGIN) at first boot.
    if chroot "$ROOT.tmp" getent passwd "$LOGIN" >/dev/null; then
      echo "rootfs: user $LOGIN exists before cloud-init ran" >&2
      exit 1
    fi
    grep -q "name: $LOGIN" "$ROOT.tmp/etc/cloud/cloud.cfg"   # Debian's default_user
    # cloud-init's locale module sets en_US.UTF-8, generated as the cloud image has it.
    sed -i 's/^# *\(en_US.UTF-8 UTF-8\)/\1/' "$ROOT.tmp/etc/locale.gen"
    chroot "$ROOT.tmp" locale-gen >/dev/null
    printf '%s\n' "# gpulab test hosts: a NoCloud seed only; the lab bridge gives the address." \
      "datasource_list: [NoCloud]" "network: {config: disabled}" \
      > "$ROOT.tmp/etc/cloud/cloud.cfg.d/90-gpulab-test-host.cfg"
    printf '%s\n' "PermitRootLogin no" "PasswordAuthentication no" \
      "KbdInteractiveAuthentication no" "PubkeyAuthentication yes" \
      > "$ROOT.tmp/etc/ssh/sshd_config.d/50-cloud-image.conf"
    rm -rf "$ROOT.tmp/root/.ssh"
    rm -f "$ROOT.tmp/usr/sbin/policy-rc.d"
    rm -f "$ROOT.tmp"/etc/ssh/ssh_host_*   # each test host generates its own
    # Every machine gets its own machine id at first boot, as a cloud image does: an empty
    # /etc/machine-id, and D-Bus's (which systemd would read first) a link to it.
    rm -f "$ROOT.tmp/etc/machine-id"; : > "$ROOT.tmp/etc/machine-id"
    ln -sf /etc/machine-id "$ROOT.tmp/var/lib/dbus/machine-id"
    rm -rf "$ROOT"
    mv "$ROOT.tmp" "$ROOT"
    echo "$KEY@$(date -u +%FT%TZ)" > "$READY"   # one token: the docker part labels with it
    echo "rootfs: ready in $((SECONDS - t0)) s ($(du -sh "$ROOT" | cut -f1))"
    ;;
  clean)
    rm -rf "$ROOT" "$ROOT.tmp" "$READY"
    ;;
  *)
    echo "usage: $0 prepare|clean" >&2
    exit 2
    ;;
esac
