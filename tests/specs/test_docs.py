"""The docs tables written from the registry of topologies (``python -m infra.specs.docs``):
current in the checkout, and the check can fail."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from infra.specs import docs

REPO = Path(__file__).resolve().parents[2]


def test_docs_tables_are_current() -> None:
    stale = [str(p.relative_to(REPO)) for p, text in docs.targets().items()
             if p.read_text(encoding="utf-8") != text]  # fmt: skip
    assert stale == [], f"run python -m infra.specs.docs: {stale}"
    text = (REPO / "docs" / "topologies.md").read_text()
    for name in ("ironic-bm", "nova-pci", "magnum-k8s", "vsphere-gpu", "local"):
        assert f"\n| `{name}` | " in text  # a row of the topologies table


def test_a_stale_or_missing_block_is_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for rel in docs.BLOCKS:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / rel, tmp_path / rel)
    monkeypatch.setattr(docs, "PROJECT", tmp_path)
    page = tmp_path / "docs" / "topologies.md"
    page.write_text(page.read_text().replace("| `nova-pci` |", "| `nova-pci-old` |"))
    assert docs.main(["--check"]) == 1
    assert "docs/topologies.md differ from the tables" in capsys.readouterr().err
    assert docs.main([]) == 0 and docs.main(["--check"]) == 0
    assert page.read_text() == (REPO / "docs" / "topologies.md").read_text()
    page.write_text(page.read_text().replace("<!-- end of the generated keys table -->", ""))
    with pytest.raises(ValueError, match="no generated block 'keys table'"):
        docs.targets(tmp_path)
