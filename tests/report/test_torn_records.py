"""Fault injection: a record writer cut at random byte offsets loses no complete record.

A kill during an append leaves a prefix of what was being written; each cut here leaves the
records file as a prefix of the real writer's bytes, at one of >= 200 seeded random offsets.
After each cut: every complete record is read back (a torn tail is reported with file and line,
never dropped silently), the next append through RecordWriter is readable (the torn fragment is
moved to ``<file>.partial``), and the report's table builds. A few real ``kill -9``s of a writer
process follow. The figures (cuts, records recovered, records lost) are printed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from report.exclusions import split
from report.load import load_records
from report.mapping import arm_settings, resolve_baseline
from report.table import arm_of, build_table
from tests.report import synth
from workloads.records import RecordWriter, iter_records, make_record

SEED = 20261123
CUTS = 240


def _records() -> list[dict]:
    recs: list[dict] = []
    for arm, f in (("native", 1.0), ("docker", 0.9)):
        for model in ("alexnet", "resnet50"):
            recs += synth.reps(
                "local",
                arm,
                experiment="e",
                model=model,
                ips=100.0 * f,
                elapsed=10.0 / f,
                repeats=4,
                fp=synth.fingerprint("bm"),
            )
    return recs


def _table_builds(path: Path) -> int:
    problems: list[str] = []
    kept, _, _ = split(load_records([path], problems))
    settings = {a: s.setting for a, s in arm_settings(kept, arm_of).items()}
    table = build_table(kept, resolve_baseline(None, settings, settings))
    assert table.rows
    return len(table.rows)


@pytest.mark.integration
def test_cut_at_random_offsets_loses_no_complete_record(tmp_path: Path) -> None:
    records = _records()
    stream_file = tmp_path / "stream.jsonl"
    with RecordWriter(stream_file) as w:  # the real writer's bytes
        for rec in records:
            w.write(rec)
    stream = stream_file.read_bytes()
    ends = [i + 1 for i, b in enumerate(stream) if b == ord("\n")]
    assert len(ends) == len(records)
    rng = random.Random(SEED)
    cuts = rng.sample(range(1, len(stream)), CUTS)
    recovered = lost = moved = 0
    started = time.monotonic()
    for n, cut in enumerate(cuts):
        path = tmp_path / f"cut{n}.jsonl"
        path.write_bytes(stream[:cut])
        whole = sum(1 for e in ends if e <= cut)
        expected = records[:whole]
        if whole < len(records) and cut == ends[whole] - 1:  # whole JSON, only "\n" missing
            expected = records[: whole + 1]
        torn = cut not in ends and len(expected) == whole
        problems: list[str] = []
        got = list(iter_records(path, problems=problems))
        got_ids = [r["record_id"] for r in got]
        recovered += sum(1 for r in expected if r["record_id"] in got_ids)
        lost += sum(1 for r in expected if r["record_id"] not in got_ids)
        assert got_ids == [r["record_id"] for r in expected], f"cut at byte {cut}"
        tail = cut - (ends[whole - 1] if whole else 0)
        assert problems == (
            [f"{path}:{whole + 1}: skipped ({tail} chars, last line, a writer killed mid-line)"]
            if torn
            else []
        )
        # the next append is readable, the fragment is kept aside
        new = make_record(**{**records[0], "record_id": f"next{n}", "repeat": 99})
        wrote: list[str] = []
        with RecordWriter(path, wrote) as w:
            w.write(new)
        after = list(iter_records(path, strict=True))
        assert [r["record_id"] for r in after] == [r["record_id"] for r in expected] + [f"next{n}"]
        partial = path.with_name(path.name + ".partial")
        assert partial.exists() == torn and len(wrote) == int(torn)
        if torn:
            moved += 1
            assert partial.read_bytes() == stream[ends[whole - 1] if whole else 0 : cut] + b"\n"
        _table_builds(path)
    took = time.monotonic() - started
    print(
        f"\nfault injection (seed {SEED}): cuts tried {len(cuts)}, records recovered "
        f"{recovered}, records lost {lost}, torn lines moved aside {moved}, {took:.1f} s"
    )
    assert len(cuts) >= 200 and lost == 0 and moved > 0


WRITER = """
import json, sys
from workloads.records import RecordWriter, make_record
rec = json.loads(sys.argv[2])
with RecordWriter(sys.argv[1]) as w:
    for i in range(100000):
        w.write(make_record(**{**rec, "record_id": f"k{sys.argv[3]}-{i}", "repeat": i}))
        if i == 0:
            print("started", flush=True)
"""


def test_kill_9_of_a_writing_process_then_append(tmp_path: Path) -> None:
    """A real writer process killed with SIGKILL while appending, three times into one file;
    every line is a whole record afterwards and the report's table builds."""
    rec = _records()[0]
    path = tmp_path / "killed.jsonl"
    rng = random.Random(SEED)
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    for k in range(3):
        proc = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), json.dumps(rec), str(k)],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        try:
            assert proc.stdout is not None and proc.stdout.readline() == "started\n"
            time.sleep(rng.uniform(0.05, 0.3))
        finally:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
            proc.stdout.close()  # type: ignore[union-attr]
        before = list(iter_records(path))
        with RecordWriter(path) as w:
            w.write(make_record(**{**rec, "record_id": f"after{k}"}))
        after = list(iter_records(path, strict=True))
        assert [r["record_id"] for r in after] == [r["record_id"] for r in before] + [f"after{k}"]
    assert _table_builds(path) > 0
