"""The bench plan is produced lazily: memory stays flat however many repetitions a suite has
(the caps of workloads.suites still refuse such a suite on the command line)."""

from __future__ import annotations

import itertools
import types
from pathlib import Path

import pytest

from workloads.bench import BenchResult, iter_plan, run_bench
from workloads.errors import InputError
from workloads.suites import MAX_MEASUREMENTS, Entry, Suite, resolve_suite


def test_plan_is_an_iterator_over_a_huge_suite() -> None:
    suite = Suite("huge", (Entry("a", "mnist_cnn", repeats=10**11), Entry("b", "alexnet")))
    plan = iter_plan(suite)
    assert isinstance(plan, types.GeneratorType)
    first = list(itertools.islice(plan, 3))
    assert [(e.experiment, r) for e, r in first] == [("a", 0), ("a", 1), ("a", 2)]
    assert suite.measurements == 10**11 + 3  # the default repeats of entry b


def test_plan_order_covers_every_repeat() -> None:
    suite = Suite("s", (Entry("a", "mnist_cnn", repeats=2), Entry("b", "alexnet", repeats=1)))
    assert [(e.experiment, r) for e, r in iter_plan(suite)] == [("a", 0), ("a", 1), ("b", 0)]


def test_run_bench_streams_a_child_that_exits_at_once(tmp_path: Path) -> None:
    """A measuring process that exits before reading its job is a failed record, not a crash
    (``/bin/true`` stands in for the interpreter)."""
    out = tmp_path / "o.jsonl"
    suite = Suite("s", (Entry("a", "mnist_cnn", repeats=4),))
    res = run_bench(suite, out, python="/bin/true", backend="tensorflow")
    assert res.written == 4 and res.failed == 4 and len(res.records) == 4
    assert len(out.read_text().splitlines()) == 4
    assert "exited with code 0 and no result" in res.records[0]["error"]


def test_result_keeps_at_most_the_cap_but_counts_all(tmp_path: Path) -> None:
    res = BenchResult(tmp_path / "o.jsonl", "r")
    for i in range(MAX_MEASUREMENTS + 5):
        res.add({"status": "failed" if i % 2 else "ok"})
    assert len(res.records) == MAX_MEASUREMENTS
    assert res.written == MAX_MEASUREMENTS + 5 and res.failed == (MAX_MEASUREMENTS + 5) // 2


def test_cli_caps_still_refuse_a_huge_repeat_count() -> None:
    with pytest.raises(InputError, match="--repeats must be at most 1000"):
        resolve_suite(None, "alexnet", repeats=99_999_999_999)


def test_default_repeats_is_three_for_a_model() -> None:
    assert resolve_suite(None, "mnist_cnn").entries[0].repeats == 3
