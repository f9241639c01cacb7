#!/usr/bin/env bash
# Real part: govmomi's vCenter simulator with GPU fixtures, for the vSphere tests
# (tests/parts/fixtures_vcsim.py). `prepare` builds the project's own main (tests/parts/vcsim/)
# against Debian's golang-github-vmware-govmomi-dev with Debian's Go into .cache/vcsim/vcsim,
# rebuilt only when its sources change. esx_host.go joins the simulator package itself (`go build
# -overlay`: the ESXi host behaviour vcsim 0.24 lacks), and each <file>.patch there replaces
# simulator/<file>.go with a patched copy (host_system: without the two methods esx_host.go
# defines instead; custom_fields_manager: a field's new value replaces its old one).
set -euo pipefail
cd "$(dirname "$0")/../.."
action=${1:-prepare}
dir=tests/parts/vcsim
src=$dir/main.go
sim=/usr/share/gocode/src/github.com/vmware/govmomi/simulator
out=.cache/vcsim
case "$action" in
  prepare)
    t0=$SECONDS
    command -v go > /dev/null || { echo "vcsim: error: go not found (apt golang-go)" >&2; exit 1; }
    [ -d "$sim" ] \
      || { echo "vcsim: error: apt golang-github-vmware-govmomi-dev is missing" >&2; exit 1; }
    command -v patch > /dev/null || { echo "vcsim: error: patch not found (apt patch)" >&2; exit 1; }
    patches=("$dir"/*.patch)
    originals=()
    for p in "${patches[@]}"; do originals+=("$sim/$(basename "$p" .patch).go"); done
    want=$(cat "$src" "$dir/esx_host.go" "${patches[@]}" "${originals[@]}" | sha256sum | cut -d' ' -f1)
    if [ -x "$out/vcsim" ] && [ "$(cat "$out/.stamp" 2>/dev/null)" = "$want" ]; then
      echo "vcsim: cached ($out/vcsim)"
      exit 0
    fi
    mkdir -p "$out/build"
    build=$(cd "$out/build" && pwd)
    cp "$src" "$build/main.go"
    cp "$dir/esx_host.go" "$build/esx_host.go"
    replace="\"$sim/zz_gpulab_esx_host.go\": \"$build/esx_host.go\""
    for p in "${patches[@]}"; do
      file=$(basename "$p" .patch).go
      patch --quiet -o "$build/$file" "$sim/$file" "$p"
      replace+=", \"$sim/$file\": \"$build/$file\""
    done
    echo "{\"Replace\": {$replace}}" > "$build/overlay.json"
    (cd "$build" && GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$PWD/../gocache" \
      go build -overlay overlay.json -o ../vcsim.new main.go)
    mv "$out/vcsim.new" "$out/vcsim"
    echo "$want" > "$out/.stamp"
    echo "vcsim: built $out/vcsim in $((SECONDS - t0)) s"
    ;;
  *)
    echo "usage: $0 prepare" >&2
    exit 2
    ;;
esac
