"""``scripts/test-parts.sh``'s parts cache: what the parts build once per recipe lives in the
machine's ``GPULAB_PARTS_CACHE``, linked from each clone's ``.cache/``, so a second clone finds
it built; each part prepares under its lock there. Run on two stand-in clones with one stand-in
part (the real parts need root and minutes: they run in the whole suite's setup)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from tests.parts import REPO

# A part that builds .cache/rootfs/built once, says whether it found it built, and whether its
# lock in the parts cache was held while it ran (flock -n on the same file fails then).
PART = """#!/usr/bin/env bash
set -euo pipefail
cd "$(dirname "$0")/../.."
if [ -f .cache/rootfs/built ]; then echo "found $(cat .cache/rootfs/built)"; else
  echo "$CLONE" > .cache/rootfs/built; echo "built"; fi
lock=${GPULAB_PARTS_CACHE:+$GPULAB_PARTS_CACHE/locks/fake.lock}
if [ -z "$lock" ]; then echo "no lock"; elif flock -n "$lock" true; then echo "lock free"; else
  echo "lock held"; fi
"""


def _clone(root: Path, name: str) -> Path:
    clone = root / name
    (clone / "scripts" / "parts").mkdir(parents=True)
    for script in ("test-parts.sh", "parts-cache.sh", "lint.sh"):
        shutil.copy(REPO / "scripts" / script, clone / "scripts" / script)
    (clone / "scripts" / "parts" / "apt-packages.txt").write_text("# none\n")
    (clone / "scripts" / "parts" / "fake.sh").write_text(PART)
    return clone


def _prepare(clone: Path, cache: str) -> str:
    env = dict(os.environ, GPULAB_PARTS_CACHE=cache, CLONE=clone.name)
    r = subprocess.run(
        ["bash", "scripts/test-parts.sh", "prepare"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert "==> part fake: prepare ok" in r.stderr
    return (clone / ".cache" / "parts" / "fake.log").read_text()


def test_a_second_clone_finds_the_parts_built_by_the_first(tmp_path: Path) -> None:
    cache = tmp_path / "machine-cache"
    one, two = _clone(tmp_path, "one"), _clone(tmp_path, "two")
    assert _prepare(one, str(cache)).splitlines() == ["built", "lock held"]
    assert _prepare(two, str(cache)).splitlines() == ["found one", "lock held"]
    for clone in (one, two):
        link = clone / ".cache" / "rootfs"
        assert link.is_symlink() and link.resolve() == (cache / "rootfs").resolve()
        assert (clone / ".venv-ironic").resolve() == (cache / "venv-ironic").resolve()
    assert (cache / "rootfs" / "built").read_text() == "one\n"


def test_empty_cache_setting_keeps_the_parts_in_the_clone(tmp_path: Path) -> None:
    one, two = _clone(tmp_path, "one"), _clone(tmp_path, "two")
    for clone in (one, two):
        (clone / ".cache" / "rootfs").mkdir(parents=True)  # a part's own mkdir would make it
        assert _prepare(clone, "").splitlines() == ["built", "no lock"]
        assert not (clone / ".cache" / "rootfs").is_symlink()


def test_a_clone_with_its_own_part_directory_keeps_it(tmp_path: Path) -> None:
    cache = tmp_path / "machine-cache"
    clone = _clone(tmp_path, "old")
    (clone / ".cache" / "rootfs").mkdir(parents=True)
    (clone / ".cache" / "rootfs" / "built").write_text("earlier\n")
    assert _prepare(clone, str(cache)).splitlines() == ["found earlier", "lock held"]
    assert not (clone / ".cache" / "rootfs").is_symlink()
    assert (clone / ".cache" / "vcsim").is_symlink()  # the parts it had not built yet are shared


def test_no_home_and_no_cache_setting_is_one_line_naming_the_setting(tmp_path: Path) -> None:
    clone = _clone(tmp_path, "one")
    env = {k: v for k, v in os.environ.items() if k not in ("HOME", "XDG_CACHE_HOME")}
    env.pop("GPULAB_PARTS_CACHE", None)
    r = subprocess.run(
        ["bash", "scripts/test-parts.sh", "prepare"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 2, r
    assert r.stderr.strip().splitlines() == [
        "gpulab: error: HOME is not set: set GPULAB_PARTS_CACHE to the machine's parts cache"
        " directory (or GPULAB_PARTS_CACHE= to keep the parts in this clone)"
    ]
    assert not (clone / ".cache" / "rootfs").exists()


# A stand-in mypy: where its cache is, and whether the lock beside it is held while it runs.
MYPY = """#!/usr/bin/env bash
lock=${GPULAB_PARTS_CACHE:+$GPULAB_PARTS_CACHE/locks/mypy.lock}
held=free; if [ -n "$lock" ] && ! flock -n "$lock" true; then held=held; fi
echo "cache=${MYPY_CACHE_DIR:-.mypy_cache} lock=$held"
"""


def _lint_mypy(clone: Path, cache: str | None) -> str:
    bin_dir = clone / ".venv" / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for tool, text in (("ruff", "#!/bin/sh\n"), ("mypy", MYPY)):
        (bin_dir / tool).write_text(text)
        (bin_dir / tool).chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "MYPY_CACHE_DIR"}
    env.pop("GPULAB_PARTS_CACHE", None)
    if cache is not None:
        env["GPULAB_PARTS_CACHE"] = cache
    r = subprocess.run(
        ["bash", "scripts/lint.sh", "mypy"],
        cwd=clone, env=env, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_mypy_keeps_its_cache_in_the_parts_cache_under_its_lock(tmp_path: Path) -> None:
    cache = tmp_path / "machine-cache"
    clone = _clone(tmp_path, "one")
    assert _lint_mypy(clone, str(cache)) == f"cache={cache}/mypy lock=held"
    assert _lint_mypy(clone, "") == "cache=.mypy_cache lock=free"
