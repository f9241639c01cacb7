#!/usr/bin/env bash
# Part "wheelhouse": the runner's requirements as wheels for the test hosts (Debian bookworm,
# CPython 3.11, x86_64), so the hosts install them the way an air-gapped lab does:
# `pip install --no-index --find-links <served .cache/wheelhouse/> -r requirements.txt`.
# Versions are the pins of constraints.txt, the controller's .venv's (tensorflow-cpu, keras, numpy,
# pyyaml, nvidia-ml-py) plus all their dependencies, fetched with `pip download` from PyPI.
# Layout:
#   .cache/wheelhouse/*.whl              every wheel the runner needs
#   .cache/wheelhouse/requirements.txt   the pinned top-level requirements (one per line)
#   .cache/wheelhouse/.ready             stamp: checksum of this script + requirements
# Idempotent: a second `prepare` with the same script and versions does nothing.
# Usage: wheelhouse.sh prepare|clean
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT=$(realpath -m .cache/wheelhouse)  # its real place: .cache/wheelhouse may link to the parts cache
PY=.venv/bin/python
PIP_CACHE=.cache/pip-download

case "${1:-prepare}" in
  clean) rm -rf "$OUT"; exit 0 ;;
  prepare) ;;
  *) echo "usage: $0 prepare|clean" >&2; exit 2 ;;
esac

# The versions are the pins of constraints.txt (the controller's .venv is installed from them),
# so a cached wheelhouse is found without the venv; only a build needs its pip.
reqs=$(for dist in tensorflow-cpu keras numpy pyyaml nvidia-ml-py; do
  v=$(grep -i -E "^${dist//-/[-_]}==" constraints.txt | head -n 1 | cut -d= -f3)
  [ -n "$v" ] || { echo "wheelhouse: error: $dist is not pinned in constraints.txt" >&2; exit 1; }
  echo "$dist==$v"
done)
want=$( { sha256sum "$0" | cut -d' ' -f1; echo "$reqs"; } | sha256sum | cut -d' ' -f1)
if [ -f "$OUT/.ready" ] && [ "$(cat "$OUT/.ready")" = "$want" ]; then
  echo "wheelhouse: cached at $OUT ($(find "$OUT" -name '*.whl' | wc -l) wheels)"
  exit 0
fi

# The venv is built by scripts/venv.sh, possibly at the same time as this part: wait for it.
for _ in $(seq 1 600); do
  [ -f .venv/.gpulab-stamp ] && break
  sleep 1
done
[ -x "$PY" ] || { echo "wheelhouse: error: $PY missing (run scripts/venv.sh)" >&2; exit 1; }
t0=$SECONDS
rm -rf "$OUT.tmp"
mkdir -p "$OUT.tmp" "$PIP_CACHE"
echo "$reqs" > "$OUT.tmp/requirements.txt"
# Wheels only, for the hosts' platform (not necessarily this machine's): every manylinux tag
# that bookworm's glibc 2.36 accepts.
platforms=(--platform linux_x86_64 --platform manylinux1_x86_64 --platform manylinux2010_x86_64
  --platform manylinux2014_x86_64)
for minor in $(seq 5 36); do platforms+=(--platform "manylinux_2_${minor}_x86_64"); done
"$PY" -m pip download --disable-pip-version-check --no-input --quiet \
  --cache-dir "$PIP_CACHE" \
  --only-binary=:all: "${platforms[@]}" \
  --python-version 3.11 --implementation cp --abi cp311 --abi abi3 --abi none \
  --dest "$OUT.tmp" -r "$OUT.tmp/requirements.txt"
rm -rf "$OUT"
mv "$OUT.tmp" "$OUT"
echo "$want" > "$OUT/.ready"
echo "wheelhouse: $(find "$OUT" -name '*.whl' | wc -l) wheels ($(du -sh "$OUT" | cut -f1)) in $OUT" \
  "in $((SECONDS - t0)) s for: $(echo "$reqs" | tr '\n' ' ')"
