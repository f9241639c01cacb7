#!/usr/bin/env bash
# Mutation testing of the core modules, outside the normal suite:
#
#   scripts/mutation.sh                  # every module of scripts/mutation.toml, one after another
#   scripts/mutation.sh stats records    # some of them
#   scripts/mutation.sh --list           # the modules and the files they mutate
#   scripts/mutation.sh --max-children 2 stats   # more parallel children (default 1)
#
# Prints killed/total and % per module and writes the table to .cache/mutation/scores-*.tsv
# (latest.tsv), each module's survivors to .cache/mutation/<module>.survivors.txt and its mutmut
# log to .cache/mutation/<module>.log. To look at one survivor:
#   cd .cache/mutation/work/<module> && ../../../../.venv/bin/mutmut show <mutant name>
#
# Tool: mutmut 3 (the test extra of pyproject.toml). Chosen over cosmic-ray because it needs
# no session database or separate worker setup, runs pytest in-process with a per-mutant
# trampoline (all mutants of a file are compiled once, a mutant is switched on by an environment
# variable in a forked child), and records which tests reach each function so that a mutant
# runs only the tests that call it: that is what keeps a run on 2 cores under 30 minutes. Its
# one awkward point, a single [tool.mutmut] per tree, is met by giving every module its own copy
# of the tree (.cache/mutation/work/<module>/) with its own settings: the sources it mutates and
# the fast test files mapped to it in scripts/mutation.toml. See docs/mutation.md.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/mutmut ]; then
  echo "mutmut is missing: .venv/bin/pip install 'mutmut>=3,<4' (or scripts/venv.sh)" >&2
  exit 2
fi
exec .venv/bin/python scripts/mutation.py "$@"
