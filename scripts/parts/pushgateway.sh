#!/usr/bin/env bash
# Real part: the Prometheus Pushgateway, for `gpulab export --pushgateway`
# (tests/parts/fixtures_pushgateway.py). `prepare` fetches Debian's prometheus-pushgateway package
# from the machine's apt sources and unpacks its binary into .cache/pushgateway/ (no install, so no
# system service is started); cached while the package version is unchanged.
set -euo pipefail
cd "$(dirname "$0")/../.."
action=${1:-prepare}
out=.cache/pushgateway
case "$action" in
  prepare)
    t0=$SECONDS
    want=$(apt-cache policy prometheus-pushgateway | sed -n 's/^ *Candidate: //p')
    if [ -z "$want" ] || [ "$want" = "(none)" ]; then
      echo "pushgateway: error: no prometheus-pushgateway package in the apt sources" >&2
      exit 1
    fi
    if [ -x "$out/prometheus-pushgateway" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
      echo "pushgateway: cached ($out/prometheus-pushgateway $want)"
      exit 0
    fi
    rm -rf "$out/deb" "$out/root"
    mkdir -p "$out/deb"
    (cd "$out/deb" && apt-get download -qq "prometheus-pushgateway=$want")
    dpkg-deb -x "$out"/deb/prometheus-pushgateway_*.deb "$out/root"
    install -m 0755 "$out/root/usr/bin/prometheus-pushgateway" "$out/prometheus-pushgateway"
    rm -rf "$out/deb" "$out/root"
    "$out/prometheus-pushgateway" --version 2>&1 | head -n 1
    echo "$want" > "$out/.stamp"
    echo "pushgateway: prepared $out/prometheus-pushgateway $want in $((SECONDS - t0)) s"
    ;;
  *)
    echo "usage: $0 prepare" >&2
    exit 2
    ;;
esac
