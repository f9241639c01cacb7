"""The nspawn lab double (tests/parts/nspawn.py) leaves nothing behind when it cannot start.

No host is booted: the step that fails (the stub repository's build) is replaced so that it
raises, as it does when dpkg-scanpackages is missing; the lab's working directory, made before
it, must be gone, and the machine lock released (a second start gets it at once)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from tests.parts import nspawn


def test_a_lab_whose_stub_repository_fails_leaves_no_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(nspawn, "rootfs_ready", lambda: True)
    monkeypatch.setattr(nspawn, "LAB_LOCK", tmp_path / "lab.lock")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))

    def broken() -> dict[str, str]:
        raise RuntimeError("dpkg-scanpackages: not found")

    monkeypatch.setattr(nspawn, "prepare_stub_repo", broken)
    for _ in range(2):  # the second start would block on a lock left held
        with pytest.raises(RuntimeError, match="dpkg-scanpackages"):
            nspawn.start_lab()
    assert [p.name for p in tmp_path.iterdir()] == ["lab.lock"]
