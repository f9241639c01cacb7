#!/usr/bin/env bash
# The whole test suite on a fresh machine (run as root): installs the apt packages and prepares
# the real test parts the tests need (nspawn rootfs, Ironic venv, vCenter simulator, stub
# repositories; kept in the machine's parts cache, scripts/test-parts.sh) beside the venv's
# install, then pytest (a failed part stops before it); the static checks (scripts/lint.sh: ruff
# check, ruff format --check, mypy, ansible-lint) run beside the parts and the tests once the
# venv is there, and a failure of theirs fails the run. The tests start and stop every process
# by PID.
# Tests run in two pytest-xdist workers (GPULAB_TEST_WORKERS, default 2; 0 runs them in this process):
# the tests that use the nspawn hosts or the chroot target go to one worker in collection
# order, the others are spread by file (tests/conftest.py). pytest prints the 25 slowest tests last.
# Extra arguments go to pytest. LINT=0 skips the static checks (a rerun of a few test files).
#
# --fast: the first tier, before every commit (under 3 minutes on 2 cores, no root): the unit and
# in-process tests alone, picked by marker (FAST_MARKERS: no real part, no TensorFlow, nothing
# slow, no network); no static checks (scripts/lint.sh), no apt packages, no test parts.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every marker of pyproject.toml names something heavy: the first tier leaves them all out.
FAST_MARKERS="not slow and not tf and not nspawn and not docker and not ironic and not vcsim"
FAST_MARKERS+=" and not pushgateway and not network and not integration"
usage() {
  cat <<USAGE
usage: bash scripts/test.sh [--fast] [PYTEST_ARGS ...]
  (no option)  the whole suite, as CI: the real test parts (scripts/test-parts.sh prepare, as
               root) beside the venv, then every test, the static checks (scripts/lint.sh)
               beside them (a failure of either fails the run)
  --fast       the first tier, before every commit (under 3 minutes on 2 cores, no root): venv,
               then the tests with none of the markers, no static checks, no test parts:
               pytest -m "$FAST_MARKERS"
  --help       this text
Environment: GPULAB_TEST_WORKERS (pytest-xdist workers, default 2; 0: one process),
LINT=0 (the whole suite without the static checks). Other arguments go to pytest.
USAGE
}
fast=0
case "${1:-}" in
  -h | --help)
    usage
    exit 0
    ;;
  --fast)
    fast=1
    shift
    ;;
esac
t0=$SECONDS
workers=${GPULAB_TEST_WORKERS:-2}
dist=()
if [ "$workers" != 0 ]; then
  dist=(-n "$workers" --dist loadgroup)
fi
if [ "$fast" = 1 ]; then
  scripts/venv.sh
  exec .venv/bin/python -m pytest "${dist[@]}" -m "$FAST_MARKERS" --durations=10 "$@"
fi
# The parts' preparation (apt packages, rootfs, simulators: none needs the venv but the
# wheelhouse's build, which waits for it) starts first, beside the venv's install; a failure
# there stops before pytest. The static checks start once the venv is there and run beside the
# parts and then the tests (a minute or more of one core, which the tests need not wait for):
# their output comes when they end, and a failure of theirs fails the run.
parts_pid=
lint_pid=
lint_log=
stop_setup() {
  for pid in $parts_pid $lint_pid; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  if [ -n "$lint_log" ]; then rm -f "$lint_log"; fi
}
trap stop_setup EXIT
scripts/test-parts.sh prepare &
parts_pid=$!
scripts/venv.sh
if [ "${LINT:-1}" != 0 ]; then
  lint_log=$(mktemp /tmp/gpulab-lint.XXXXXX)
  (
    rc=0
    scripts/lint.sh >"$lint_log" 2>&1 || rc=$?
    cat "$lint_log"
    if [ "$rc" != 0 ]; then
      echo "==> static checks FAILED (scripts/lint.sh): the run fails when the tests end"
    fi
    exit "$rc"
  ) >&2 &
  lint_pid=$!
fi
rc=0
wait "$parts_pid" || rc=$?
parts_pid=
if [ "$rc" != 0 ]; then
  echo "==> test parts failed (scripts/test-parts.sh prepare): no tests run" >&2
  exit "$rc"
fi
echo "==> test setup took $((SECONDS - t0)) s (the static checks run beside the tests)" >&2
rc=0
.venv/bin/python -m pytest "${dist[@]}" --durations=25 "$@" || rc=$?
if [ -n "$lint_pid" ]; then
  lint_rc=0
  wait "$lint_pid" || lint_rc=$?
  lint_pid=
  if [ "$lint_rc" != 0 ]; then
    echo "==> static checks failed (scripts/lint.sh, above)" >&2
    if [ "$rc" = 0 ]; then rc=$lint_rc; fi
  fi
fi
exit "$rc"
