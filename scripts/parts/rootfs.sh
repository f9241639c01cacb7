#!/usr/bin/env bash
# Part "rootfs": a Debian bookworm minbase rootfs for the nspawn / chroot Ansible test hosts,
# cached at .cache/rootfs/bookworm (other parts, e.g. the docker base image, reuse it
# read-only once .cache/rootfs/bookworm.ready exists). Usage: rootfs.sh prepare|clean
#
# It logs in like the Debian cloud image: user `debian` (password locked) with passwordless
# sudo from /etc/sudoers.d/90-cloud-init-users, sshd with keys only and PermitRootLogin no,
# root has no authorized_keys. Python is the distribution's python3 only.
# KEY names this recipe: bump it whenever the rootfs changes so cached copies are rebuilt.
set -euo pipefail
cd "$(dirname "$0")/../.."
action=${1:-prepare}
ROOT=.cache/rootfs/bookworm
READY=.cache/rootfs/bookworm.ready
KEY="bookworm-minbase-v2-cloud-user-debian"
LOGIN=debian
# Packages the test hosts need beyond minbase (Ansible needs python3 and python3-apt).
EXTRA="systemd systemd-sysv dbus openssh-server python3 python3-apt iproute2 ca-certificates
gnupg sudo procps kmod pciutils"

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
    # The cloud image's login user: locked password, passwordless sudo, keys only.
    chroot "$ROOT.tmp" useradd -m -s /bin/bash -G sudo,adm "$LOGIN"
    chroot "$ROOT.tmp" passwd -l "$LOGIN" >/dev/null
    install -d -m 0700 "$ROOT.tmp/home/$LOGIN/.ssh"
    chroot "$ROOT.tmp" chown "$LOGIN:$LOGIN" "/home/$LOGIN/.ssh"
    printf '# User rules for %s (as cloud-init writes them)\n%s ALL=(ALL) NOPASSWD:ALL\n' \
      "$LOGIN" "$LOGIN" > "$ROOT.tmp/etc/sudoers.d/90-cloud-init-users"
    chmod 0440 "$ROOT.tmp/etc/sudoers.d/90-cloud-init-users"
    chroot "$ROOT.tmp" visudo -cq
    printf '%s\n' "PermitRootLogin no" "PasswordAuthentication no" \
      "KbdInteractiveAuthentication no" "PubkeyAuthentication yes" \
      > "$ROOT.tmp/etc/ssh/sshd_config.d/50-cloud-image.conf"
    rm -rf "$ROOT.tmp/root/.ssh"
    rm -f "$ROOT.tmp/usr/sbin/policy-rc.d"
    rm -f "$ROOT.tmp"/etc/ssh/ssh_host_*   # each test host generates its own
    rm -f "$ROOT.tmp/etc/machine-id"; : > "$ROOT.tmp/etc/machine-id"
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
