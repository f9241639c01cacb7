#!/usr/bin/env bash
# The main job on this machine alone (the `local` topology): set up the venv, then run the
# built-in study studies/local-first-run.yaml (native, container when a Docker engine answers,
# 2 concurrent jobs, 4-way sharing; CPU sizes), print its verdict table and write
# results/study-local-first-run/ under the directory you run it from ($GPULAB_RESULTS or
# --results-dir moves it). Extra arguments go to `gpulab study run`.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
(cd "$repo" && EXTRAS=${EXTRAS:-cpu} scripts/venv.sh)  # a test venv (scripts/test.sh) has cpu too
exec "$repo/.venv/bin/gpulab" study run local-first-run "$@"
