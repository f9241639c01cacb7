"""The mechanisms the papers explain, on the runner's side: the page cache dropped before a
run that reads real data, and input that comes from host memory every step."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from workloads.data.page_cache import drop_page_cache


def test_page_cache_drop_writes_3_after_a_sync_when_root(tmp_path: Path) -> None:
    target = tmp_path / "drop_caches"
    target.write_text("0\n")
    got = drop_page_cache(target, environ={}, euid=0)
    assert got == {"page_cache_dropped": True, "page_cache_reason": f"sync; echo 3 > {target}"}
    assert target.read_text() == "3\n"


def test_page_cache_not_dropped_says_why(tmp_path: Path) -> None:
    target = tmp_path / "drop_caches"
    target.write_text("0\n")
    not_root = drop_page_cache(target, environ={}, euid=1000)
    assert not_root["page_cache_dropped"] is False
    assert not_root["page_cache_reason"] == f"not root (euid 1000): {target} needs root"
    off = drop_page_cache(target, environ={"GPULAB_DROP_CACHES": "off"}, euid=0)
    assert off == {"page_cache_dropped": False, "page_cache_reason": "GPULAB_DROP_CACHES=off"}
    assert target.read_text() == "0\n"  # neither wrote
    missing = drop_page_cache(tmp_path / "no" / "drop_caches", environ={}, euid=0)
    assert missing["page_cache_dropped"] is False
    assert missing["page_cache_reason"].endswith("drop_caches: No such file or directory")


@pytest.mark.skipif(os.geteuid() != 0, reason="the real /proc/sys/vm/drop_caches needs root")
def test_the_real_drop_caches_as_root() -> None:
    got = drop_page_cache()
    assert got["page_cache_dropped"] is True, got


@pytest.mark.tf
def test_host_input_copies_one_of_two_host_batches_per_step() -> None:
    import numpy as np

    from workloads.models import get_model
    from workloads.step import select_backend
    from workloads.synthetic import host_source, synthetic_source

    select_backend("tensorflow")
    spec = get_model("mnist_cnn")
    get = host_source(spec, 8, None, {"seed": 3})
    first, second, third = get(), get(), get()
    assert "host memory" in get.overlap  # type: ignore[attr-defined]
    assert first[0].shape == (8, 28, 28, 1) and str(first[0].dtype) == "<dtype: 'float32'>"
    # a new tensor per step (a copy from host memory), two batches cycled
    assert first[0] is not third[0]
    assert np.array_equal(first[0].numpy(), third[0].numpy())
    assert not np.array_equal(first[0].numpy(), second[0].numpy())
    x = first[0].numpy() / spec.input_scale  # the MNIST CNN's pixels come scaled (x / 255)
    assert 60 < x.mean() < 190 and x.min() >= 127 - 120.001 and x.max() <= 127 + 120.001
    assert first[0].numpy().max() <= 1  # as the classic example feeds the model
    assert set(np.unique(first[1].numpy())) <= set(range(10))
    on_device = synthetic_source(spec, 8, None, {})
    assert on_device()[0] is on_device()[0]  # tf_cnn's: the same device tensor every step
