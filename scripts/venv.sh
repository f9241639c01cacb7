#!/usr/bin/env bash
# Create or refresh the project's virtual environment (.venv) with gpulab installed editable.
# Re-running is cheap: nothing is reinstalled while pyproject.toml, constraints.txt and
# collections/requirements.yml are unchanged and the venv already has the requested extras.
#   EXTRAS    pyproject extras, comma-separated (default: test = cpu,openstack,vsphere + tools;
#             core only: EXTRAS= ; a GPU host: EXTRAS=gpu). PYTHON: the interpreter (>= 3.11).
# Installs are pinned by constraints.txt (every package of the test venv, exact versions).
# Refresh the pins after changing dependencies:  scripts/venv.sh --lock
#   (resolves pyproject.toml's test extra afresh in a scratch venv and rewrites constraints.txt).
# Ansible collections: collections/requirements.yml, installed by collections/install.py from the
# pinned `ansible` bundle's wheel on PyPI (Galaxy is not reachable from every lab controller).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
EXTRAS=${EXTRAS-test}
PIP=(--quiet --disable-pip-version-check)
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "gpulab: error: $PY is not Python >= 3.11 (set PYTHON=/path/to/python3.11)" >&2
  exit 2
fi

if [ "${1:-}" = "--lock" ]; then
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' EXIT
  echo "==> resolving .[test] afresh in $scratch (a few minutes)" >&2
  "$PY" -m venv "$scratch/venv"
  "$scratch/venv/bin/pip" install "${PIP[@]}" --upgrade pip
  "$scratch/venv/bin/pip" install "${PIP[@]}" ".[test]"
  bundle=${ANSIBLE_BUNDLE:-$(sed -n 's/^ansible==//p' constraints.txt 2>/dev/null)}
  {
    echo "# Exact versions of every package of the test venv (scripts/venv.sh --lock writes it)."
    echo "# ansible: not installed; the source of the collections in collections/requirements.yml."
    echo "ansible==${bundle:?set ANSIBLE_BUNDLE=VERSION (the ansible release holding the collections)}"
    "$scratch/venv/bin/pip" freeze --exclude-editable | grep -v -i -E '^(gpulab|ansible)==' | LC_ALL=C sort -f
  } > constraints.txt
  echo "==> wrote constraints.txt (ansible==$bundle: ANSIBLE_BUNDLE=VERSION picks another," \
    "then match collections/requirements.yml to its collections)" >&2
  exit 0
fi

# test is a superset of cpu, openstack and vsphere: an installed test venv has them all
expand() { tr ',' '\n' <<<"$1" | sed '/^$/d; s/^test$/test\ncpu\nopenstack\nvsphere/' | sort -u; }
stamp=.venv/.gpulab-stamp
hash=$(cat pyproject.toml constraints.txt collections/requirements.yml | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(head -c 64 "$stamp")" = "$hash" ]; then
  have=$(cut -d' ' -f2- "$stamp")
  if [ -z "$(comm -13 <(expand "$have") <(expand "$EXTRAS"))" ]; then
    exit 0
  fi
fi
echo "==> installing .venv (gpulab[${EXTRAS}]; first run takes about a minute)" >&2
"$PY" -m venv .venv
# The ansible bundle of earlier versions (hundreds of collections): replaced by the few used.
if .venv/bin/pip show --quiet ansible 2>/dev/null; then
  .venv/bin/pip uninstall "${PIP[@]}" --yes ansible
fi
# Every package is pinned by constraints.txt, so nothing is left to resolve: uv (a static
# binary from the package index) installs the pinned wheels and compiles them to bytecode, as
# pip does, in parallel (scripts/venv.sh in a fresh clone: 61 s against 133 s with pip alone on
# 2 cores, benchmarks/venv_install.py). uv reads no pip configuration, so the index settings
# pip has here (pip.conf, PIP_* variables) are handed to it, and it looks for a version on
# every index, as pip does (uv's default takes the first index that has the package).
# GPULAB_INSTALLER=pip installs with pip alone, as does a failed uv install.
uv_args() {
  local cfg key value
  cfg=$(.venv/bin/pip config list 2>/dev/null || true)
  for key in index-url extra-index-url find-links constraint; do
    value=$(sed -n "s/^[^.]*\.$key='\(.*\)'\$/\1/p" <<<"$cfg" | tail -n 1)
    for v in $value; do printf -- '--%s\n%s\n' "$key" "$v"; done
  done
}
installed=0
if [ "${GPULAB_INSTALLER:-uv}" = uv ] && .venv/bin/pip install "${PIP[@]}" uv==0.13.9 2>/dev/null; then
  mapfile -t from < <(uv_args)
  # pip itself upgraded too, as the pip path does: the venv's own (Python's bundled one) is too
  # old for what the venv is used for (pip install --dry-run with platform options)
  if .venv/bin/uv pip install --quiet --compile-bytecode --python .venv/bin/python \
      --index-strategy unsafe-best-match "${from[@]}" --upgrade-package pip pip \
      -c constraints.txt -e ".${EXTRAS:+[$EXTRAS]}"; then
    installed=1
  else
    echo "==> uv could not install the venv's packages: pip installs them" >&2
  fi
fi
if [ "$installed" = 0 ]; then
  .venv/bin/pip install "${PIP[@]}" --upgrade pip
  .venv/bin/pip install "${PIP[@]}" -c constraints.txt -e ".${EXTRAS:+[$EXTRAS]}"
fi
.venv/bin/python collections/install.py
echo "$hash $EXTRAS" > "$stamp"
