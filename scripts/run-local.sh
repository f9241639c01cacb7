#!/usr/bin/env bash
# The main job on this machine alone (the `local` topology): set up the venv, then run the
# smoke suite natively (and in a container when a Docker engine is reachable), print the
# results table and write results/local/<run-id>.jsonl. Extra arguments go to `gpulab run local`.
set -euo pipefail
cd "$(dirname "$0")/.."
EXTRAS=${EXTRAS:-test} scripts/venv.sh
exec .venv/bin/gpulab run local "$@"
