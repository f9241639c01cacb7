"""An honest report at any scale: what ran, one line when nothing compares, absolute figures
always and ratio figures only with two arms, n and image size and steps everywhere."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from report import build_report
from report.build import ReportResult
from tests.report import synth


def real_like_fingerprint() -> dict[str, Any]:
    """The fingerprint a CPU-only run in a docker container on a KVM guest writes."""
    return {
        "host": "vm",
        "cpu": {"model": "AMD EPYC", "usable_cpus": 2, "hypervisor_flag": True},
        "vm": {"is_vm": True, "hypervisor": "kvm", "systemd_detect_virt": "kvm"},
        "container": {"in_container": True, "runtime": "docker"},
        "execution_env": "docker",
        "gpu": {"present": False, "count": 0, "gpus": [], "reason": "no NVIDIA driver"},
    }


def smoke(arm: str, ips: float, model: str = "mnist_cnn", size: int = 28, n: int = 2) -> list:
    recs = synth.reps(
        "local",
        arm,
        experiment=f"{model}-single",
        model=model,
        ips=ips,
        elapsed=15.0,
        suite=f"model:{model}",
        batch=8,
        repeats=n,
        noise=0.2,
        fp=real_like_fingerprint(),
        params={"image_size": size, "device": {"used": "cpu"}},
    )
    for r in recs:
        r["steps"], r["warmup"] = 3, 1
    return recs


@pytest.fixture(scope="module")
def single(tmp_path_factory: pytest.TempPathFactory) -> ReportResult:
    d = tmp_path_factory.mktemp("single")
    src = synth.write(d / "r.jsonl", smoke("native", 112.0))
    return build_report([src], d / "out")


def test_banner_says_what_ran_from_the_records(single: ReportResult) -> None:
    text = "\n".join(single.banner)
    assert "arm local/native: CPU only (AMD EPYC), no NVIDIA GPU" in text
    assert "setting stated by the lab: BM" in text
    assert "seen by the fingerprint: in a docker container on a VM (kvm)" in text
    assert (
        "model mnist_cnn: image size 28 px (full size); timed steps 3 (warmup 1); batch 8" in text
    )
    for out in (single.html, single.markdown):
        body = out.read_text(encoding="utf-8")
        assert "CPU only (AMD EPYC), no NVIDIA GPU" in body
        assert "in a docker container on a VM (kvm)" in body


def test_one_arm_gets_one_line_and_no_ratio_figure(single: ReportResult) -> None:
    line = "Nothing to compare: every record is from one arm (local/native)"
    assert any(b.startswith(line) for b in single.banner)
    assert line in single.html.read_text(encoding="utf-8")
    assert line in single.markdown.read_text(encoding="utf-8")
    names = sorted(f.path.name for f in single.figures)
    assert names == [
        "model-mnist_cnn_single_synthetic_elapsed_s_absolute.png",
        "model-mnist_cnn_single_synthetic_images_per_sec_absolute.png",
    ]


def test_verdicts_are_collapsed_behind_one_line(single: ReportResult) -> None:
    html = single.html.read_text(encoding="utf-8")
    m = re.search(r"<details>\s*<summary>(.*?)</summary>(.*?)</details>", html, flags=re.S)
    assert m, "no <details> around the verdicts"
    assert m.group(1).startswith(f"0 of {len(single.verdicts)} claims checkable")
    assert m.group(2).count('<tr id="claim-') == len(single.verdicts)
    assert html.count('<tr id="claim-') == len(single.verdicts)  # all of them inside
    md = single.markdown.read_text(encoding="utf-8")
    assert f"**0 of {len(single.verdicts)} claims checkable with these records**" in md
    assert md.index("<details>") < md.index("| claim | verdict |") < md.index("</details>")


def test_every_table_has_image_size_steps_and_n_and_warns_below_three(
    single: ReportResult,
) -> None:
    md = single.markdown.read_text(encoding="utf-8")
    header = "| model | batch | image size | steps | variant | arm | metric | n |"
    assert header in md
    assert "| mnist_cnn | 8 | 28 px (full size) | 3 |" in md
    assert "| 2 ⚠ n < 3 |" in md and "rest on fewer than 3 repetitions" in md
    html = single.html.read_text(encoding="utf-8")
    assert "<th>image size</th><th>steps</th>" in html and "⚠ n &lt; 3" in html
    assert "| baseline |" in md  # the baseline is not shown as a measured ratio of 1.000


def test_two_arms_get_ratio_figures_and_reduced_sizes_are_named(tmp_path: Path) -> None:
    recs = smoke("native", 100.0) + smoke("docker", 90.0)
    recs += smoke("native", 5.0, model="resnet50", size=64, n=1)
    recs += smoke("docker", 4.0, model="resnet50", size=64, n=1)
    src = synth.write(tmp_path / "r.jsonl", recs)
    res = build_report([src], tmp_path / "out")
    assert not any(b.startswith("Nothing to compare") for b in res.banner)
    names = {f.path.name for f in res.figures}
    assert "model-mnist_cnn_single_synthetic_images_per_sec.png" in names  # ratio
    assert "model-mnist_cnn_single_synthetic_images_per_sec_absolute.png" in names
    text = "\n".join(res.banner)
    assert "model resnet50: image size 64 px (REDUCED, full 224 px)" in text
    assert (
        "arm local/docker: CPU only (AMD EPYC), no NVIDIA GPU; setting stated by the lab: "
        "Container on BM" in text
    )


class Captured:
    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.axes: dict[str, Any] = {}
        from report import figures_absolute, figures_common, figures_ratio, figures_special

        real = figures_common.save_png

        def save(fig: Any, path: Path) -> None:
            self.axes[path.name] = fig.axes[0]
            real(fig, path)

        for mod in (figures_absolute, figures_ratio, figures_special):  # each draws and saves
            monkeypatch.setattr(mod, "save_png", save)
        # the axes are captured in this process: no forked figure workers (report.cpus)
        monkeypatch.setenv("GPULAB_REPORT_THREADS", "1")


def test_figure_axes_units_scale_and_single_values(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cap = Captured(monkeypatch)
    recs = smoke("native", 900.0, n=5) + smoke("docker", 800.0, n=5)
    recs += smoke("native", 6.0, model="resnet50", size=64, n=1)
    recs += smoke("docker", 5.0, model="resnet50", size=64, n=1)
    for r in recs:
        r["suite"] = "smoke"  # both models in one figure
        if r["arm"] == "docker":  # the label says docker; the record states a VM: believed
            r.update(gpu_path="pci-passthrough", exec_env="native", virtualization="vm")
    res = build_report([synth.write(tmp_path / "r.jsonl", recs)], tmp_path / "out")
    assert res.table.settings
    ax = cap.axes["smoke_single_synthetic_images_per_sec_absolute.png"]
    assert ax.get_yscale() == "log"  # 6 to 900 images/sec: a linear axis would hide resnet50
    assert ax.get_ylabel() == "images/sec, median (log scale)"
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["local/native (BM as stated)", "local/docker (VM as stated)"]
    marks = [t.get_text() for t in ax.texts if t.get_text().startswith("n=")]
    assert marks == ["n=1", "n=1"]  # the two resnet50 bars, one value each
    # whiskers: one errorbar per arm, over the mnist_cnn bar only (n=5), none for n=1
    segs = [len(c.get_segments()) for c in ax.collections]
    assert segs == [1, 1]
    ratio = cap.axes["smoke_single_synthetic_images_per_sec.png"]
    assert ratio.get_ylim()[0] == 0.0 and ratio.get_yscale() == "linear"
    # ratio whiskers: the docker arm's mnist_cnn bar only; the baseline is 1 by definition
    assert [len(c.get_segments()) for c in ratio.collections] == [1]
    el = cap.axes["smoke_single_synthetic_elapsed_s_absolute.png"]
    assert el.get_ylim()[0] == 0.0 and el.get_ylabel() == "elapsed time (s), median"


def test_figure_note_says_reduced_image_size() -> None:
    """The line under a figure's title says when the images were smaller than the model's."""
    from report.figures_common import ran_note
    from report.mapping import Arm
    from report.table import build_table

    recs = synth.reps("local", "native", experiment="e", model="resnet50", ips=3.0,
                      repeats=2, params={"image_size": 64})  # fmt: skip
    table = build_table(recs, Arm("local", "native"))
    note = ran_note(table, table.rows)
    assert "image size 64 px (REDUCED; full: resnet50 224 px)" in note
    full = synth.reps("local", "native", experiment="e", model="resnet50", ips=3.0,
                      repeats=2, params={"image_size": 224})  # fmt: skip
    table = build_table(full, Arm("local", "native"))
    assert "REDUCED" not in ran_note(table, table.rows)
