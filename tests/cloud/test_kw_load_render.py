"""The knowledge-worker load as docs/topologies.md states it: the kw_load role's service unit,
rendered from its defaults, runs exactly the documented stress-ng profile (the role's
converge needs a systemd host; the unit's command is what this checks)."""

from __future__ import annotations

import re

import jinja2
import yaml

from tests.parts import REPO

ROLE = REPO / "playbooks" / "roles" / "kw_load"
DOCUMENTED = "stress-ng --cpu 1 --cpu-load 30 --vm 1 --vm-bytes 512M --vm-keep --timeout 0"


def render(**overrides: object) -> str:
    values = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    values.update(overrides, ansible_managed="Ansible managed")
    text = (ROLE / "templates" / "gpulab-kw-load.service.j2").read_text()
    return jinja2.Template(text, undefined=jinja2.StrictUndefined).render(**values)


def exec_start(unit: str) -> str:
    m = re.search(r"^ExecStart=/usr/bin/(.*)$", unit, re.M)
    assert m, unit
    return m.group(1)


def test_default_unit_runs_the_documented_profile() -> None:
    cmd = exec_start(render())
    assert cmd.startswith(DOCUMENTED)
    assert f"`{DOCUMENTED}`" in (REPO / "docs" / "topologies.md").read_text()
    assert "--metrics-brief" in cmd  # stress-ng reports what it did when the service stops


def test_role_inputs_change_the_profile_and_are_declared() -> None:
    cmd = exec_start(render(kw_load_cpu_workers=4, kw_load_cpu_load=80, kw_load_vm_bytes="25%"))
    assert "--cpu 4 --cpu-load 80 --vm 1 --vm-bytes 25%" in cmd
    spec = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    defaults = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
    assert set(options) == set(defaults)
    assert options["kw_load_state"]["choices"] == ["started", "stopped"]
    for name, default in defaults.items():
        assert options[name]["default"] == default, name


def test_unit_file_is_a_plain_systemd_service() -> None:
    unit = render()
    assert "[Service]" in unit and "WantedBy=multi-user.target" in unit
    assert "Restart=on-failure" in unit
