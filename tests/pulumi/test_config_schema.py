"""The Pulumi project files' ``config:`` blocks come from the key tables (the keys every lab
has, each topology's Args): the repository's ``Pulumi.yaml`` and each
``examples/<topology>/Pulumi.yaml`` template; a test fails while they drift. The declarations
follow the engine's rules (a declared key without a default is required in every stack, a
declared default is injected into every stack)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from infra.config import schema, validate
from infra.config.extras import missing
from infra.config.model import all_keys, keys
from infra.keys.types import MAX_GPUS
from infra.topologies import get, registry
from tests.pulumi.mocks import REPO, STACKS

EXAMPLES = sorted(t for t in STACKS if t != "local")


def test_project_files_match_the_key_table() -> None:
    stale = [str(p.relative_to(REPO)) for p, text in schema.targets().items()
             if not p.is_file() or p.read_text() != text]  # fmt: skip
    assert stale == [], f"run python -m infra.config.schema: {stale}"
    assert len(schema.targets()) == 1 + len(EXAMPLES)


def test_drift_is_detected(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The check can fail: a Pulumi.yaml edited by hand differs, --check exits 1 naming it."""
    monkeypatch.setattr(schema, "PROJECT", tmp_path)  # and so no example stacks
    (tmp_path / "Pulumi.yaml").write_text(
        schema.render_root().replace("default: smoke", "default: x")
    )
    assert schema.main(["--check"]) == 1
    assert schema.main([]) == 0 and schema.main(["--check"]) == 0


def test_root_declares_only_what_holds_for_every_topology() -> None:
    config = yaml.safe_load((REPO / "Pulumi.yaml").read_text())["config"]
    taken = all_keys()
    assert {"topology", "lab"} <= set(config)
    for key, entry in config.items():
        assert [spec.name for spec, _ in taken[key]] == list(registry()), key
        if "default" not in entry:  # the engine requires it in every stack: so does the model
            assert all(k.required for _, k in taken[key]), key
    # the injected defaults are what the model gives when the key is absent
    cfg = validate({"topology": "local", "lab": "ab", **{k: e["default"] for k, e in config.items()
                                                         if "default" in e}})  # fmt: skip
    assert cfg.suite == "smoke" and cfg.execution_envs == () and cfg.measure_id == ""


@pytest.mark.parametrize("topology", EXAMPLES)
def test_example_template_asks_for_every_required_key(topology: str) -> None:
    project = yaml.safe_load((REPO / "examples" / topology / "Pulumi.yaml").read_text())
    config, template = project["config"], project["template"]["config"]
    assert project["name"] == "gpulab" and project["runtime"]["name"] == "python"
    assert (REPO / "examples" / topology / "__main__.py").is_file()
    required = {k for k, e in config.items() if "default" not in e}
    assert {k.removeprefix("gpulab:") for k in template} == required
    by_key = {k.key: k for k in keys(get(topology))}
    for key in required:
        assert by_key[key].required, key
        assert template[f"gpulab:{key}"].get("secret", False) == by_key[key].secret
    assert config["topology"]["default"] == topology
    # the engine's types hold for the example stack's values
    stack = yaml.safe_load(STACKS[topology].read_text())["config"]
    kinds = {"string": str, "integer": int, "boolean": bool, "array": list}
    for key, entry in config.items():
        value = stack.get(f"gpulab:{key}")
        if value is not None and not (isinstance(value, dict) and "secure" in value):
            assert isinstance(value, kinds[entry["type"]]), (key, value)


def test_missing_extra_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """A core install (no cloud SDK): the stack's topology names the extra to install."""
    import importlib.util

    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:  # double: openstacksdk not installed
        return None if name == "openstack" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert missing("nova-pci") == [("openstack", ["openstack"])]
    assert missing("vsphere-gpu") == [] and missing("local") == []
    from infra.config import ConfigError
    from infra.config.extras import require

    want = (
        r"topology ironic-bm needs the openstack extra \(openstack not installed\): "
        r"pip install 'gpulab\[openstack\]'"
    )
    with pytest.raises(ConfigError, match=want):
        require("ironic-bm")


def test_docs_limits_table_matches_the_model_bounds() -> None:
    """Every integer key's range in docs/limits.md is the one its pydantic type enforces."""
    import re
    import typing

    import annotated_types as at

    text = (REPO / "docs" / "limits.md").read_text().split("## Stack config")[1].split("\n## ")[0]
    documented: dict[str, tuple[int, int]] = {}
    for named, lo, hi in re.findall(r"(?m)^\| ([^|]+) \| (\d+)\.\.(\d+)", text):
        for key in re.findall(r"`(\w+)`", named):
            documented[key] = (int(lo), int(hi))
    ints = {}
    for name, taken in all_keys().items():
        for _, f in taken:  # a key takes the same type in every topology that takes it
            bounds = [m for m in typing.get_args(f.value)[1:] if isinstance(m, at.Interval)]
            if bounds:
                assert ints.setdefault(name, (bounds[0].ge, bounds[0].le)) == ints[name]
    assert documented.pop("pci_alias") == (1, MAX_GPUS)  # its count, a string key
    assert documented == ints
