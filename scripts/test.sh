#!/usr/bin/env bash
# The whole test suite on a fresh machine (run as root): installs the apt packages and the venv
# the tests need, prepares the real test parts (nspawn rootfs, Ironic venv, vCenter simulator,
# dockerd, stub repositories), then runs pytest. The tests start and stop every process by PID.
# Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
t0=$SECONDS
scripts/venv.sh
scripts/test-parts.sh prepare
echo "==> test setup took $((SECONDS - t0)) s" >&2
exec .venv/bin/python -m pytest "$@"
