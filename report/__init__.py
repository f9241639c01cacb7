"""The report: result records -> statistics, normalization, figures, verdicts per published claim.

Modules, one job each:
  load        records from JSON Lines files, results directories and stack-output summaries
  mapping     topology + arm -> the papers' setting (bm, cbm, vm, cvm); baseline resolution
  published   the published numbers (workloads/reference/published-results.yaml)
  stats       median, seeded bootstrap CI, coefficient of variation
  exclusions  failed and throttled runs (left out and listed)
  table       grouping and normalization to the baseline arm
  claims      one explicit check per published claim, with its tolerance
  environment the arms' environment fingerprints side by side
  figures     matplotlib PNGs (CLOSER 2018 figs 2-10 style, shared and N-way sharing)
  render      HTML (report/templates/report.html.j2), Markdown and CSV
  build       the whole pipeline: :func:`build_report`

Controller-side: a top-level package beside ``workloads/`` (the runner shipped to GPU hosts),
which never imports it (tests/report/test_layout.py). Only the standard library, numpy, yaml,
jinja2 and matplotlib are used, and the runner's record schema (workloads.records,
workloads.setting); nothing here imports ``infra/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from report.build import ReportResult

__all__ = ["build_report"]


def build_report(*args: Any, **kwargs: Any) -> ReportResult:
    """See :func:`report.build.build_report` (imported lazily: matplotlib is heavy)."""
    from report.build import build_report as _build

    return _build(*args, **kwargs)
