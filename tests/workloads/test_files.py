"""workloads.files: a write lands whole or not at all, with the umask's mode, or one line."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from workloads import files
from workloads.errors import InputError


@pytest.fixture
def umask() -> object:
    old = os.umask(0o022)
    yield os.umask
    os.umask(old)


def leftovers(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if p.name.startswith("."))


def test_write_text_lands_whole_with_the_umask_mode(tmp_path: Path, umask: object) -> None:
    target = tmp_path / "sub" / "study.json"
    files.write_text(target, "{}\n")
    assert target.read_text() == "{}\n"
    assert target.stat().st_mode & 0o777 == 0o644
    os.umask(0o077)
    files.write_text(target, "[]\n")
    assert target.read_text() == "[]\n"
    assert target.stat().st_mode & 0o777 == 0o600
    assert files.file_mode() == 0o600
    assert leftovers(target.parent) == []


def test_a_block_that_fails_leaves_the_previous_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "report.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), files.replacing(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("the writer failed")
    assert target.read_text() == "old\n"
    assert leftovers(tmp_path) == []


def test_a_full_disk_at_the_rename_is_one_line_naming_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "out.parquet"
    target.write_text("old")

    def full(src: object, dst: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "replace", full)
    with pytest.raises(files.OutputError) as err:
        files.write_bytes(target, b"new")
    assert str(err.value) == f"cannot write {str(target)!r}: No space left on device"
    assert isinstance(err.value, InputError)  # the CLI's one line, exit 2
    assert target.read_text() == "old"
    assert leftovers(tmp_path) == []


def test_a_name_over_the_limit_and_a_file_in_the_way_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(files.OutputError, match="longer than the file system allows"):
        files.write_text(tmp_path / ("x" * 300) / "a.json", "{}")
    with pytest.raises(files.OutputError, match="longer than the file system allows"):
        files.write_text(tmp_path / ("y" * 300), "{}")
    (tmp_path / "plain").write_text("")
    with pytest.raises(files.OutputError, match="not a directory"):
        files.write_text(tmp_path / "plain" / "a.json", "{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]
