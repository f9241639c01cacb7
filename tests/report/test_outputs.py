"""Report outputs from a synthetic record set: PNG figures, HTML, Markdown, CSV."""

from __future__ import annotations

import csv
import re
import struct
from pathlib import Path

import pytest

from report import build_report
from report.build import ReportResult
from report.figures import FIG_SIZE_PX
from report.published import load_published
from report.render import CSV_COLUMNS
from tests.report import synth

PNG_SIG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> ReportResult:
    d = tmp_path_factory.mktemp("report")
    src = synth.write(d / "in" / "records.jsonl", synth.paper_like(synth.VERDICT_REPEATS))
    return build_report([src.parent], d / "out")


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_SIG, f"{path} is not a PNG"
    assert data[12:16] == b"IHDR"
    w, h = struct.unpack(">II", data[16:24])
    assert data.rstrip(b"\x00").endswith(b"IEND\xaeB`\x82")
    return w, h


@pytest.mark.integration
def test_figures_are_pngs_of_the_expected_size(report: ReportResult) -> None:
    names = {f.path.name for f in report.figures}
    expected = {
        f"closer2018_{s}_{d}_{m}{suffix}.png"
        for s, d in (
            ("single", "synthetic"),
            ("single", "real"),
            ("distributed", "synthetic"),
            ("distributed", "real"),
        )
        for m in ("images_per_sec", "elapsed_s")
        for suffix in ("", "_absolute")  # ratio (four arms) and absolute figures
    }
    expected |= {"shared_degradation.png", "sharing.png"}
    expected |= {  # kernels: absolute figures in their units
        "ibm-containers_kernel_synthetic_time_per_call_s_absolute.png",
        "ibm-containers_kernel_synthetic_gbps_absolute.png",
    }
    assert expected <= names
    for f in report.figures:
        assert png_size(f.path) == FIG_SIZE_PX, f.path.name
    import matplotlib.image

    img = matplotlib.image.imread(report.out_dir / "figures" / "sharing.png")
    assert img.shape[:2] == (FIG_SIZE_PX[1], FIG_SIZE_PX[0])
    assert img[..., :3].std() > 0.05  # something is drawn


def test_html_names_every_claim_with_a_verdict(report: ReportResult) -> None:
    html = report.html.read_text(encoding="utf-8")
    rows = dict(
        re.findall(
            r'<tr id="claim-[^"]+">\s*<td><code>([^<]+)</code>.*?'
            r'class="verdict v-([a-z-]+)"',
            html,
            flags=re.S,
        )
    )
    assert set(rows) == set(load_published().claim_texts)
    # tests/report/synth.py's records hold every checked claim's arms (mixed_workloads: the
    # vGPU arms with 32 and 96 knowledge-worker VMs and without) but one claim's
    assert rows["vmware_vgpu_containers/mixed_workloads"] == "reproduced"
    assert list(rows.values()).count("reproduced") == 19
    assert list(rows.values()).count("not-measured") == 1
    assert "19 reproduced" in html and "0 not reproduced" in html
    assert "19 of 20 claims checkable with these records" in html
    assert html.count("(tolerance ") == sum(len(v.results) for v in report.verdicts)


def test_html_is_self_contained_and_embeds_every_figure(report: ReportResult) -> None:
    html = report.html.read_text(encoding="utf-8")
    srcs = re.findall(r'<img src="([^"]+)"', html)
    assert len(srcs) == len(report.figures)
    assert all(s.startswith("data:image/png;base64,") for s in srcs)
    assert not re.search(r'(src|href)="https?://', html)
    assert "<style>" in html


def test_html_highlights_environment_differences(report: ReportResult) -> None:
    html = report.html.read_text(encoding="utf-8")
    rows = re.findall(r'<tr class="([^"]*)">\s*<td class="field">([^<]+)</td>', html)
    classes = {field: cls.split() for cls, field in rows}
    for field in (
        "NVIDIA driver",
        "GPU virtualization mode (NVML)",
        "Container runtime",
        "NUMA placement",
    ):
        assert classes[field] == ["differs", "key"], (field, classes[field])
    assert "differs" not in classes["CUDA (driver)"]  # same everywhere in the synthetic set
    assert "535.104.05" in html and "535.129.03" in html and "vgpu" in html


def test_html_lists_left_out_runs(report: ReportResult) -> None:
    html = report.html.read_text(encoding="utf-8")
    assert len(report.excluded) == 2
    for e in report.excluded:
        assert e.record_id in html
    assert "hw_thermal_slowdown" in html and "OOM when allocating" in html
    assert "power cap" in html


def test_markdown_export(report: ReportResult) -> None:
    md = report.markdown.read_text(encoding="utf-8")
    for claim in load_published().claim_texts:
        assert f"`{claim}`" in md
    for link in re.findall(r"!\[[^\]]*\]\(([^)]+)\)", md):
        assert (report.out_dir / link).is_file(), link
    assert "| nova-pci/native | images_per_sec |" in md


def test_csv_export_has_every_row_with_known_ratios(report: ReportResult) -> None:
    with open(report.csv, newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0].keys()) == CSV_COLUMNS
    assert len(rows) == len(report.table.rows)
    (vm,) = [
        r
        for r in rows
        if r["experiment"] == "distributed_synthetic"
        and r["model"] == "inception_v3"
        and r["topology"] == "nova-pci"
        and r["metric"] == "images_per_sec"
    ]
    assert float(vm["normalized"]) == pytest.approx(44 / 57)
    assert float(vm["median"]) == pytest.approx(44.0)
    assert vm["setting"] == "vm" and vm["n"] == str(synth.VERDICT_REPEATS)
    assert vm["cv_flag"] == "0"
    assert float(vm["ci95_lo"]) <= 44.0 <= float(vm["ci95_hi"])


def test_linked_figures_option(tmp_path: Path) -> None:
    recs = synth.reps("local", "native", experiment="e", model="alexnet", ips=10.0, elapsed=5.0)
    recs += synth.reps("local", "docker", experiment="e", model="alexnet", ips=9.0, elapsed=5.5)
    src = synth.write(tmp_path / "r.jsonl", recs)
    res = build_report([src], tmp_path / "out", embed_figures=False)
    srcs = re.findall(r'<img src="([^"]+)"', res.html.read_text(encoding="utf-8"))
    assert srcs and all((res.out_dir / s).is_file() for s in srcs)
    assert res.table.baseline.label == "local/native"
