#!/usr/bin/env bash
# The whole test suite on a fresh machine (run as root): installs the venv, runs the static
# checks (scripts/lint.sh: ruff check, ruff format --check, mypy, ansible-lint; a failure stops
# here), installs the apt packages and prepares the real test parts the tests need (nspawn rootfs,
# Ironic venv, vCenter simulator, dockerd, stub repositories), then runs pytest. The tests start
# and stop every process by PID.
# pytest prints the 25 slowest tests last. Extra arguments go to pytest. LINT=0 skips the static checks (a rerun of a few test files).
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
scripts/venv.sh
if [ "${LINT:-1}" != 0 ]; then
  scripts/lint.sh
fi
scripts/test-parts.sh prepare
echo "==> test setup took $((SECONDS - t0)) s" >&2
exec .venv/bin/python -m pytest --durations=25 "$@"
