"""`gpulab validate` names every problem of a stack file at once: bad values, missing keys, the
examples' placeholders, a missing extra (the placeholder check hid the others, and an install
without the cloud's extra learned of it only once everything else was fixed)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from infra.cli import main
from infra.config import extras
from tests.cli.conftest import REPO

EXAMPLE = REPO / "examples" / "nova-pci" / "Pulumi.nova-pci.yaml"


@pytest.mark.integration
def test_the_examples_fail_as_shipped_naming_their_placeholders(gpulab) -> None:
    for example in sorted((REPO / "examples").glob("*/Pulumi.*.yaml")):
        r = gpulab("validate", str(example), "--json")
        assert r.returncode == 2, example
        problems = json.loads(r.stdout)["data"]["problems"]
        assert any("still hold" in p and "placeholder" in p for p in problems), problems


def test_placeholders_bad_values_and_a_missing_extra_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = tmp_path / "Pulumi.mix.yaml"
    text = EXAMPLE.read_text().replace("gpulab:host_count: 2", "gpulab:host_count: zero")
    stack.write_text(text.replace("  gpulab:image: ubuntu-22.04\n", ""))
    # this install lacks the openstack extra's SDK (a name no distribution has)
    monkeypatch.setitem(extras.EXTRAS, "openstack", ("gpulab_test_no_such_sdk",))
    assert main(["validate", str(stack)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    for needle in ("gpulab:host_count must be an integer >= 1, got 'zero'",
                   "gpulab:image is required for nova-pci",
                   "gpulab:ssh_public_key still holds an example's placeholder value",
                   "topology nova-pci needs the openstack extra (gpulab_test_no_such_sdk not "
                   "installed): pip install 'gpulab[openstack]'"):  # fmt: skip
        assert needle in err, needle
    shutil.copy(EXAMPLE, tmp_path / "Pulumi.ok.yaml")  # only the extra and the placeholders
    assert main(["validate", str(tmp_path / "Pulumi.ok.yaml")]) == 2
    assert "needs the openstack extra" in capsys.readouterr().err
