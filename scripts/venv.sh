#!/usr/bin/env bash
# Create or refresh the project's virtual environment (.venv) with gpulab installed editable.
# Re-running is cheap: nothing is reinstalled while pyproject.toml is unchanged.
# EXTRAS selects pyproject extras (default: test). PYTHON selects the interpreter (>= 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${EXTRAS:-test}
stamp=.venv/.gpulab-stamp
want="$(sha256sum pyproject.toml | cut -d' ' -f1) $EXTRAS"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "gpulab: error: $PY is not Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 2
fi
echo "==> creating .venv (first run takes about a minute: TensorFlow, Pulumi, Ansible)" >&2
"$PY" -m venv .venv
.venv/bin/pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/pip install --quiet --disable-pip-version-check -e ".[$EXTRAS]"
echo "$want" > "$stamp"
