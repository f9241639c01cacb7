#!/usr/bin/env bash
# Wheels the GPU machines lack for the suite (Keras 3 and its two small dependencies that are not
# in the machines' 'cuda' image; ansible-core and its dependencies for gpu_facts.yml), for
# CPython 3.12 x86-64, into .whl/ (git-ignored through .git/info/exclude). The device call
# carries .whl and installs them with --target /tmp/site (benchmarks/gpu/call_parity.sh does).
# Versions: keras and ansible-core as in this repo's venv; the others as those two require.
set -euo pipefail
cd "$(dirname "$0")/../.."
grep -qxF '/.whl/' .git/info/exclude 2>/dev/null || echo '/.whl/' >> .git/info/exclude
PY=${PYTHON:-.venv/bin/python}
"$PY" -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64 \
  -d .whl "keras==${KERAS_VERSION:-3.15.1}" "namex==0.1.0" "optree==0.20.0" \
  "ansible-core==2.19.14" "resolvelib==1.2.1" "cryptography==50.0.2" "cffi==2.1.1" "pycparser==3.12"
ls -l .whl
