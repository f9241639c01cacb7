"""The workload role's check imports ``workloads.records`` in the host's virtualenv, which may
hold nothing but the standard library (a converge with no pip packages): the records module
and what it imports must not need PyYAML or any other third-party package."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

BLOCK = """
import sys

class _NoThirdParty:
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in {'yaml', 'numpy', 'duckdb', 'polars', 'pyarrow'}:
            raise ImportError(f'no {name} on this host')
        return None

sys.meta_path.insert(0, _NoThirdParty())
import workloads.records as r
print(r.SCHEMA_VERSION)
"""


def test_records_import_with_the_standard_library_alone() -> None:
    out = subprocess.run(
        [sys.executable, "-c", BLOCK], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().isdigit()
