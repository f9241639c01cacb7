# shellcheck shell=bash
# Sourced by scripts/test-parts.sh and scripts/lint.sh: sets parts_cache to the machine's cache
# of what is built once and shared by every clone, GPULAB_PARTS_CACHE (default
# ${XDG_CACHE_HOME:-~/.cache}/gpulab-parts), or to empty when GPULAB_PARTS_CACHE= (empty) keeps
# everything in the clone. Exits 2 with one line when neither it nor HOME is set.
if [ -z "${GPULAB_PARTS_CACHE+set}" ] && [ -z "${XDG_CACHE_HOME:-}" ] && [ -z "${HOME:-}" ]; then
  echo "gpulab: error: HOME is not set: set GPULAB_PARTS_CACHE to the machine's parts cache" \
    "directory (or GPULAB_PARTS_CACHE= to keep the parts in this clone)" >&2
  exit 2
fi
parts_cache=${GPULAB_PARTS_CACHE-${XDG_CACHE_HOME:-$HOME/.cache}/gpulab-parts}
