"""benchmarks/report_scale.py on a few hundred records: the schema-3 records it writes read as
the same records in schema 2 on both engines, and the bare group-by it times beside the
report gives the medians the report gives (real DuckDB and Polars, fresh processes)."""

from __future__ import annotations

import ast
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from report.build import _duckdb, _python
from tests.parts import REPO
from workloads.fingerprints import REF

spec = importlib.util.spec_from_file_location("report_scale", REPO / "benchmarks/report_scale.py")
assert spec is not None and spec.loader is not None
scale: Any = importlib.util.module_from_spec(spec)
spec.loader.exec_module(scale)


def _medians(loaded: Any) -> dict[tuple[str, str, str, str], float]:
    return {
        (r.key.experiment, r.key.model, r.arm.topology, r.arm.arm): r.summary.median
        for r in loaded.table.rows
        if r.metric == "images_per_sec"
    }


def test_schema_3_records_of_the_benchmark_read_as_schema_2(tmp_path: Path) -> None:
    new, old = tmp_path / "new", tmp_path / "old"
    assert scale.write_records(new, 960) == scale.write_records(old, 960, schema=2) == 960
    lines = [json.loads(ln) for f in sorted(new.rglob("*.jsonl")) for ln in f.open()]
    assert sum("fingerprint" in r for r in lines) == len(scale.ARMS)  # one file per arm here
    assert all(r[REF].startswith("sha256:") and r["schema_version"] == 3 for r in lines)
    got = [_duckdb([new], None, False, []), _python([new], None, False, [])]
    want = _duckdb([old], None, False, [])
    for g in got:
        assert _medians(g) == _medians(want) and len(_medians(want)) == 48
        assert [e.record_id for e in g.excluded] == [e.record_id for e in want.excluded]
        assert g.table.records_per_arm.keys() == want.table.records_per_arm.keys()


@pytest.mark.parametrize("engine", ["duckdb", "polars"])
def test_the_bare_group_by_gives_the_reports_medians(tmp_path: Path, engine: str) -> None:
    recs = tmp_path / "r"
    scale.write_records(recs, 960)
    proc = subprocess.run(
        [sys.executable, "-c", scale.BARE.replace("print(", "print(rows, ", 1), engine,
         "jsonl", str(recs)], capture_output=True, text=True, timeout=120, cwd=REPO,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = ast.literal_eval(proc.stdout.split(" RESULT")[0])  # the script's list of tuples
    bare = {tuple(r[:4]): r[4] for r in rows}
    want = _medians(_duckdb([recs], None, False, []))
    assert bare.keys() == want.keys()
    assert all(bare[k] == pytest.approx(want[k], rel=1e-9) for k in want)


def test_the_last_line_gives_the_ratio_per_input_format(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [
        (1000, "duckdb jsonl", 6.0, 1.0, 1.0, 1.0),
        (1000, "bare duckdb jsonl", 3.0, 1.0, 1.0, 1.0),
        (1000, "bare polars jsonl", 2.0, 1.0, 1.0, 1.0),
        (1000, "duckdb parquet", 4.0, 1.0, 1.0, 1.0),
        (1000, "bare duckdb parquet", 0.5, 1.0, 1.0, 1.0),
    ]
    scale._table(rows)
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last == "1,000 records: ratio_vs_bare=3.00 (jsonl) ratio_vs_bare=8.00 (parquet)"
