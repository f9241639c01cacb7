#!/usr/bin/env bash
# Real part: govmomi's vCenter simulator with GPU fixtures, for the vSphere tests
# (tests/parts/fixtures_vcsim.py). `prepare` builds the project's own main (tests/parts/vcsim/)
# against Debian's golang-github-vmware-govmomi-dev with Debian's Go into .cache/vcsim/vcsim,
# rebuilt only when main.go changes.
set -euo pipefail
cd "$(dirname "$0")/../.."
action=${1:-prepare}
src=tests/parts/vcsim/main.go
out=.cache/vcsim
case "$action" in
  prepare)
    t0=$SECONDS
    command -v go > /dev/null || { echo "vcsim: error: go not found (apt golang-go)" >&2; exit 1; }
    [ -d /usr/share/gocode/src/github.com/vmware/govmomi/simulator ] \
      || { echo "vcsim: error: apt golang-github-vmware-govmomi-dev is missing" >&2; exit 1; }
    want=$(sha256sum "$src" | cut -d' ' -f1)
    if [ -x "$out/vcsim" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
      echo "vcsim: cached ($out/vcsim)"
      exit 0
    fi
    mkdir -p "$out/build"
    cp "$src" "$out/build/main.go"
    (cd "$out/build" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$PWD/../gocache" \
      go build -o ../vcsim.new main.go)
    mv "$out/vcsim.new" "$out/vcsim"
    echo "$want" > "$out/.stamp"
    echo "vcsim: built $out/vcsim in $((SECONDS - t0)) s"
    ;;
  *)
    echo "usage: $0 prepare" >&2
    exit 2
    ;;
esac
