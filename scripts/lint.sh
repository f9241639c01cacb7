#!/usr/bin/env bash
# The static checks CI runs before the tests, with the venv's tools:
#   ruff check, ruff format --check, mypy (strict, [tool.mypy] in pyproject.toml) and
#   ansible-lint --profile production on playbooks/.
# Every check runs even when an earlier one fails; the exit status is 1 if any failed.
# Usage: scripts/lint.sh [check ...]   (checks: ruff, format, mypy, ansible; default: all)
set -uo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/ruff ]; then
  echo "gpulab: error: .venv has no ruff: run scripts/venv.sh first" >&2
  exit 2
fi
# ansible-lint runs ansible-playbook --syntax-check from PATH: the venv's, not the system's.
export PATH="$PWD/.venv/bin:$PATH"

# shellcheck source=scripts/parts-cache.sh
source scripts/parts-cache.sh
checks=("$@")
[ ${#checks[@]} -gt 0 ] || checks=(ruff format mypy ansible)

run_check() {
  case "$1" in
    ruff) ruff check --quiet . ;;
    format) ruff format --check --quiet . ;;
    # mypy's cache in the machine's parts cache (scripts/parts-cache.sh), under its lock: a
    # fresh clone rechecks only what differs (mypy takes a cached module whose source hash is
    # the same at another path), not all 230 files
    mypy) if [ -n "$parts_cache" ]; then
      mkdir -p "$parts_cache/locks"
      MYPY_CACHE_DIR="$parts_cache/mypy" flock "$parts_cache/locks/mypy.lock" mypy
    else mypy; fi ;;
    # --offline: the roles need no Galaxy content, and CI may have no network.
    ansible) ansible-lint --offline -q --profile production playbooks ;;
    *)
      echo "gpulab: error: unknown check $1 (known: ruff, format, mypy, ansible)" >&2
      return 2
      ;;
  esac
}

failed=()
t_all=$SECONDS
for check in "${checks[@]}"; do
  t0=$SECONDS
  echo "==> lint: $check" >&2
  if run_check "$check"; then
    echo "==> lint: $check ok ($((SECONDS - t0)) s)" >&2
  else
    echo "==> lint: $check FAILED ($((SECONDS - t0)) s)" >&2
    failed+=("$check")
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "==> lint FAILED: ${failed[*]} ($((SECONDS - t_all)) s)" >&2
  exit 1
fi
echo "==> lint ok: ${checks[*]} ($((SECONDS - t_all)) s)" >&2
