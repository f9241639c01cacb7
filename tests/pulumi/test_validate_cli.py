"""``gpulab validate <stack-file>``: checks stack files without Pulumi; one line, exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from infra.cli import main
from tests.pulumi.mocks import REPO, STACKS

EXAMPLES = sorted(t for t in STACKS if t != "local")  # examples/<topology>/, placeholders


def own_values(topology: str) -> str:
    """The example stack with its placeholders replaced, as a user's stack file would be."""
    text = STACKS[topology].read_text()
    text = text.replace(
        "AAAAIReplaceWithYourOwnPublicKey operator@example", "AAAAIb3BlcmF0b3I op@lab"
    )
    text = text.replace("vcenter.example.org", "vcenter.lab.internal")
    text = text.replace("registry.example.org", "registry.lab.internal")
    return text.replace("v1:REPLACE_ME:run-pulumi-config-set-secret", "v1:c2FsdA==:ZW5jcnlwdGVk")


@pytest.mark.parametrize("topology", EXAMPLES)
def test_validate_refuses_an_example_naming_each_placeholder_key(
    topology: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", str(STACKS[topology])]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("gpulab: error: ")
    want = {
        "ironic-bm": ["gpulab:ssh_public_key"],
        "nova-pci": ["gpulab:ssh_public_key"],
        "magnum-k8s": ["gpulab:registry", "gpulab:ssh_public_key"],
        "vsphere-gpu": ["gpulab:vsphere_server", "gpulab:vsphere_password"],
    }[topology]
    assert f"{', '.join(want)} still hold" in err and "placeholder" in err
    assert "ReplaceWithYourOwn" not in err and "REPLACE_ME" not in err  # keys, not values


@pytest.mark.parametrize("topology", sorted(STACKS))
def test_validate_accepts_every_example_with_own_values(
    topology: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "Pulumi.mine.yaml"
    mine.write_text(own_values(topology))
    assert main(["validate", str(mine)]) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert f"valid {topology} stack" in out and "gpulab:lab" in out
    assert "mock-" not in out


def test_validate_shows_secrets_only_as_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "Pulumi.mine.yaml"
    mine.write_text(own_values("vsphere-gpu"))
    assert main(["validate", str(mine)]) == 0
    out = capsys.readouterr().out
    assert "(secret, set)" in out and "ZW5jcnlwdGVk" not in out


def test_validate_bad_stack_is_one_line_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    text = own_values("nova-pci").replace("gpulab:pci_alias: p100:1", "gpulab:pci_alias: p100")
    bad.write_text(text.replace("gpulab:host_count: 2", "gpulab:host_count: 0"))
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith(
        "gpulab: error: gpulab:host_count must be an integer >= 1, got 0; "
        "gpulab:pci_alias must be <alias>:<count>"
    )


def test_validate_type_errors_and_placeholders_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "Pulumi.bad.yaml"
    bad.write_text(
        STACKS["nova-pci"].read_text().replace("gpulab:host_count: 2", "gpulab:host_count: true")
    )
    assert main(["validate", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "gpulab:host_count must be an integer >= 1, got True; " in err
    assert err.rstrip().endswith(
        "gpulab:ssh_public_key still holds an example's placeholder value: "
        "set your own (pulumi config set [--secret] KEY VALUE)"
    )


def test_validate_missing_file_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "Pulumi.x.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_gpulab_console_script_validate_by_stack_name() -> None:
    gpulab = Path(sys.executable).with_name("gpulab")
    cmd = [str(gpulab)] if gpulab.exists() else [sys.executable, "-m", "infra.cli"]
    ok = subprocess.run(
        [*cmd, "validate", "local"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert ok.returncode == 0, ok.stderr
    assert "valid local stack" in ok.stdout
    bad = subprocess.run(
        [*cmd, "validate", "no-such-stack"], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert bad.returncode == 2
    assert bad.stderr.count("\n") == 1
    assert bad.stderr.startswith("gpulab: error: stack 'no-such-stack' has no stack file")


def flat_network_stack(tmp_path: Path) -> Path:
    """The ironic-bm example, own values, on an existing flat provider network: no subnet,
    router, external network or floating IPs of its own."""
    lines = [
        line
        for line in own_values("ironic-bm").splitlines()
        if not line.startswith(("  gpulab:external_network:", "  gpulab:lab_cidr:"))
    ]
    text = "\n".join(lines).replace("  gpulab:dns_nameservers:\n    - 192.0.2.53\n", "")
    text = text.replace(
        "  gpulab:admin_cidr:", "  gpulab:network: provisioning\n  gpulab:admin_cidr:"
    )
    mine = tmp_path / "Pulumi.bm-flat.yaml"
    mine.write_text(text + "\n")
    return mine


def test_validate_ironic_bm_on_a_flat_network_warns_security_groups_are_not_enforced(
    tmp_path: Path,
) -> None:
    """As a user runs it (the console script): valid, the network shown, and one warning line
    on stderr saying SSH is not limited to admin_cidr on bare-metal ports."""
    gpulab = Path(sys.executable).with_name("gpulab")
    cmd = [str(gpulab)] if gpulab.exists() else [sys.executable, "-m", "infra.cli"]
    env = {"PATH": "/usr/bin:/bin", "NO_COLOR": "1", "COLUMNS": "160"}
    mine = flat_network_stack(tmp_path)
    r = subprocess.run([*cmd, "validate", str(mine)], capture_output=True, text=True, env=env,
                       timeout=120)  # fmt: skip
    print(r.stdout + r.stderr)
    assert r.returncode == 0, r.stderr
    assert "valid ironic-bm stack, lab bm-lab" in r.stdout
    assert "gpulab:network" in r.stdout and "provisioning" in r.stdout
    assert "gpulab:lab_cidr" not in r.stdout  # nothing of a subnet the lab does not make
    assert r.stderr.splitlines() == [
        "gpulab: warning: gpulab:admin_cidr 203.0.113.0/24: the lab's security group is not "
        "enforced on bare-metal ports by most Ironic clouds (flat and noop network interfaces "
        "never, neutron only where the switch's ML2 driver applies it), so SSH is not limited "
        "to admin_cidr: the network's own firewall or the hosts' must do that "
        "(docs/topologies.md)"
    ]
    # docs/topologies.md quotes the line as validate prints it
    docs = (Path(__file__).resolve().parents[2] / "docs" / "topologies.md").read_text()
    assert r.stderr.splitlines()[0] in docs
    j = subprocess.run([*cmd, "validate", str(mine), "--json"], capture_output=True, text=True,
                       env=env, timeout=120)  # fmt: skip
    import json

    doc = json.loads(j.stdout)  # the JSON envelope (docs/cli-json.schema.json)
    assert doc["ok"] is True and doc["command"] == "validate", doc
    data = doc["data"]
    assert data["settings"]["gpulab:network"] == "provisioning"
    assert data["settings"]["gpulab:floating_ips"] is False
    assert len(data["warnings"]) == 1 and "not enforced on bare-metal ports" in data["warnings"][0]


def test_validate_warns_ironic_bm_without_a_network_and_not_nova_pci(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "Pulumi.mine.yaml"
    mine.write_text(own_values("ironic-bm"))
    assert main(["validate", str(mine)]) == 0
    warned = [w for w in capsys.readouterr().err.splitlines() if w.startswith("gpulab: warning:")]
    assert len(warned) == 2
    assert warned[1].startswith("gpulab: warning: gpulab:network unset: the lab makes its own")
    mine.write_text(own_values("nova-pci"))
    assert main(["validate", str(mine)]) == 0
    assert capsys.readouterr().err == ""  # security groups hold on VM ports
