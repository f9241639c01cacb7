#!/usr/bin/env bash
# Real part: a standalone OpenStack Ironic for the bare-metal tests (tests/parts/fixtures_ironic.py).
# `prepare` builds its own venv .venv-ironic (`pip install ironic`), cached: it is rebuilt only
# when IRONIC_SPEC changes or the venv is broken. The configuration (fake-hardware, sqlite,
# noauth, rpc_transport=none) is written per test session by the fixture.
set -euo pipefail
cd "$(dirname "$0")/../.."
action=${1:-prepare}
PY=${PYTHON:-python3}
IRONIC_SPEC=${IRONIC_SPEC:-ironic}
# its real place (.venv-ironic may link to the parts cache: scripts/test-parts.sh): the venv's
# scripts name their interpreter by the path the venv was made at
venv=$(realpath -m .venv-ironic)
stamp=$venv/.gpulab-stamp
case "$action" in
  prepare)
    t0=$SECONDS
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$IRONIC_SPEC" ] \
        && "$venv/bin/ironic-dbsync" --help > /dev/null 2>&1; then
      echo "ironic: cached ($venv)"
      exit 0
    fi
    rm -rf "$venv"
    "$PY" -m venv "$venv"
    "$venv/bin/pip" install --quiet --disable-pip-version-check --upgrade pip
    "$venv/bin/pip" install --quiet --disable-pip-version-check "$IRONIC_SPEC"
    "$venv/bin/ironic-dbsync" --help > /dev/null
    echo "$IRONIC_SPEC" > "$stamp"
    echo "ironic: prepared $venv in $((SECONDS - t0)) s"
    ;;
  *)
    echo "usage: $0 prepare" >&2
    exit 2
    ;;
esac
