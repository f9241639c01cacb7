"""The stack config's validation at its edges (infra.config): each bound, each accepted
spelling and each refusal, through :func:`validate` and the stack file reader, as a user meets
them: one ``gpulab:<key> must be <what>, got <value>`` line per bad key.

Nothing is mocked: stack files are written to tmp_path; the roles' argument specs, the suites
and the topology specs are the repository's.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from infra.config import (
    ConfigError,
    SecretRef,
    load_stack_file,
    placeholders,
    raw_from_stack_file,
    validate,
)
from infra.errors import UsageError

NOVA: dict[str, Any] = {
    "topology": "nova-pci", "lab": "edges", "ssh_public_key": "ssh-ed25519 AAAA k",
    "external_network": "public", "admin_cidr": "203.0.113.0/24", "image": "ubuntu-22.04",
    "flavor_vcpus": 8, "flavor_ram_mb": 65536, "flavor_disk_gb": 100, "pci_alias": "p100:1",
}  # fmt: skip


def problems(**overrides: Any) -> list[str]:
    with pytest.raises(ConfigError) as err:
        validate({**NOVA, **overrides})
    assert str(err.value) == "; ".join(err.value.problems)
    return err.value.problems


def problem(**overrides: Any) -> str:
    found = problems(**overrides)
    assert len(found) == 1, found
    return found[0]


def value(key: str, raw: Any) -> Any:
    """The validated value of ``key`` (the topology's Args or the keys every lab has)."""
    return {k.key: v for k, v in validate({**NOVA, key: raw}).items()}[key]


# --- integers and booleans --------------------------------------------------------------------


def test_integers_from_the_engine_text_and_their_bounds() -> None:
    assert value("host_count", " 12 ") == 12  # the engine hands numbers over as text
    assert value("host_count", "64") == 64
    assert value("flavor_disk_gb", "0") == 0
    assert value("flavor_disk_gb", 65536) == 65536
    assert problem(flavor_disk_gb="-1") == "gpulab:flavor_disk_gb must be an integer >= 0, got '-1'"
    assert problem(host_count=65) == "gpulab:host_count must be an integer from 1 to 64, got 65"
    assert problem(host_count=0) == "gpulab:host_count must be an integer >= 1, got 0"
    # 20 digits are parsed (and then out of range); 21 are refused before parsing
    assert problem(host_count="9" * 20).startswith("gpulab:host_count must be an integer from 1")
    assert problem(host_count="9" * 21).startswith("gpulab:host_count must be an integer >= 1,")
    for bad in ("+3", "1.5", "3 4", "", 2.0, [1]):
        assert problem(host_count=bad).startswith("gpulab:host_count must be an integer >= 1, got")
    assert problem(host_count=False) == "gpulab:host_count must be an integer >= 1, got False"


def test_booleans_true_false_in_any_case_only() -> None:
    assert value("cpu_pinning", "TRUE") is True
    assert value("cpu_pinning", "False") is False
    assert value("cpu_pinning", True) is True
    assert value("anti_affinity", False) is False
    for bad in ("yes", "1", 1, 0, "t"):
        assert problem(cpu_pinning=bad) == f"gpulab:cpu_pinning must be true or false, got {bad!r}"


# --- networks, addresses, PCI, aliases, keys, ids ---------------------------------------------


def test_networks_in_cidr_notation() -> None:
    assert value("lab_cidr", " 10.0.0.0/8 ") == "10.0.0.0/8"
    assert value("lab_cidr", "2001:DB8::/32") == "2001:db8::/32"
    cidr = "gpulab:lab_cidr must be an IPv4/IPv6 network in CIDR notation with host bits zero"
    for bad in ("10.0.0.1", "10.0.0.1/8", "10.0.0.0/33", 10, "1" * 60 + "/8", "x" * 65 + "/8"):
        assert problem(lab_cidr=bad).startswith(cidr), bad
    assert value("lab_cidr", "0000:0000:0000:0000:0000:0000:0000:0000/128") == "::/128"  # 43


def test_name_servers_are_ip_addresses() -> None:
    assert value("dns_nameservers", ["10.0.0.1", "::1"]) == ("10.0.0.1", "::1")
    assert value("dns_nameservers", '["9.9.9.9"]') == ("9.9.9.9",)  # the engine's JSON text
    text = "gpulab:dns_nameservers must be a list of IP addresses, got"
    for bad in (["10.0.0.256"], [True], ["1" * 65], [1.5], [167772162], "10.0.0.1", '["9.9.9.9"'):
        assert problem(dns_nameservers=bad).startswith(text), bad
    assert problem(dns_nameservers=["10.0.0.1"] * 257).startswith(
        "gpulab:dns_nameservers must be a list of at most 256 IP addresses"
    )
    assert len(value("dns_nameservers", ["10.0.0.1"] * 256)) == 256
    # an IPv6 address with a zone: valid at any length, taken up to 64 characters
    scoped = "fe80::1%" + "a" * 56
    assert value("dns_nameservers", [scoped]) == (scoped,)
    for longer in (scoped + "a", scoped + "a" * 9):
        assert problem(dns_nameservers=[longer]).startswith(text)


def test_pci_addresses_are_lowercased() -> None:
    cfg = validate(
        {
            "topology": "vsphere-gpu",
            "lab": "vs",
            "vsphere_server": "vc",
            "vsphere_user": "u",
            "vsphere_password": SecretRef("vsphere_password"),
            "datacenter": "dc",
            "cluster": "c",
            "datastore": "ds",
            "network": "n",
            "template": "ubuntu-22.04",
            "mode": "passthrough",
            "gpu_host": "esx1",
            "pci_device_ids": ["0000:3B:00.7"],
            "gpu_bar_gb": 32,
        }
    )
    assert cfg.args.pci_device_ids == ("0000:3b:00.7",)
    assert cfg.ssh_user == "ubuntu"


def test_pci_alias_count_bounds() -> None:
    assert value("pci_alias", "a100:16") == "a100:16"
    assert value("pci_alias", "a100:007") == "a100:007"
    base = "gpulab:pci_alias must be <alias>:<count> with a nova.conf [pci] alias name"
    for bad in ("a100:0", "a100:000", "a100", ":1", "a100:-1", 3, "a" * 250 + ":1" + "0" * 4):
        assert problem(pci_alias=bad).startswith(base), bad
    over = "gpulab:pci_alias must be <alias>:<count> with a count from 1 to 16, e.g. a100:1, got"
    assert problem(pci_alias="a100:17").startswith(over)
    assert problem(pci_alias="a100:" + "0" * 30 + "2").startswith(over)
    assert problem(pci_alias="a100:" + "9" * 21).startswith(over)
    assert value("pci_alias", "a" * 248 + ":1") == "a" * 248 + ":1"  # 250 characters


def test_ssh_public_keys() -> None:
    assert value("ssh_public_key", "  ssh-rsa AAAA+/= me@host  ") == "ssh-rsa AAAA+/= me@host"
    assert value("ssh_public_key", "ecdsa-sha2-nistp256 AAAA") == "ecdsa-sha2-nistp256 AAAA"
    text = "gpulab:ssh_public_key must be an OpenSSH public key line"
    for bad in ("ssh-foo AAAA", "AAAA", 7, "ssh-rsa " + "A" * 16400):
        assert problem(ssh_public_key=bad).startswith(text)


def test_measure_ids() -> None:
    assert value("measure_id", 42) == "42"
    assert value("measure_id", "run:1.a_b-2") == "run:1.a_b-2"
    assert value("measure_id", "x" * 64) == "x" * 64
    text = "gpulab:measure_id must be up to 64 letters, digits"
    for bad in (True, "x" * 65, "a b", 1.5):
        assert problem(measure_id=bad).startswith(text), bad


def test_execution_environments_and_suites() -> None:
    assert value("execution_envs", ["native", "singularity"]) == ("native", "apptainer")
    assert problem(execution_envs=["docker", 1]).startswith(
        "gpulab:execution_envs must be a list of native, docker, apptainer"
    )
    assert value("suite", "smoke") == "smoke"
    text = problem(suite="nope")
    assert text.startswith("gpulab:suite must be one of the suites in workloads/suites/: ")
    assert "smoke" in text and text.endswith(", got 'nope'")
    assert problem(suite=3).endswith(", got 3")


def test_secret_keys_take_only_secrets_and_never_echo_the_value() -> None:
    ref = SecretRef("os_password")
    assert value("os_password", ref) is ref
    assert problem(os_password="hunter2") == (
        "gpulab:os_password must be a secret: set it with `pulumi config set --secret`, "
        "not as plain text"
    )
    assert repr(ref) == str(ref) == "<secret gpulab:os_password>"


# --- the problem lines -------------------------------------------------------------------------


def test_a_long_value_is_shortened_in_the_problem_line() -> None:
    v60 = "x" * 58  # repr: 60 characters
    assert problem(image=v60 + "!").endswith(f", got {v60[:56]!r}"[:-1] + "...")
    assert problem(cpu_pinning="y" * 58).endswith(", got " + repr("y" * 58))
    assert problem(cpu_pinning="y" * 59).endswith(", got '" + "y" * 56 + "...")


def test_list_item_errors_speak_for_the_list() -> None:
    ironic = {k: v for k, v in NOVA.items() if k != "pci_alias"}
    with pytest.raises(ConfigError) as err:
        validate(
            {**ironic, "topology": "ironic-bm", "resource_class": "g", "required_traits": ["x"]}
        )
    assert len(err.value.problems) == 1
    text = err.value.problems[0]
    assert text.startswith("gpulab:required_traits must be a list of trait names, got")


def test_missing_unknown_and_misplaced_keys() -> None:
    with pytest.raises(ConfigError) as err:
        validate({})
    assert err.value.problems == [
        "gpulab:topology is required: one of ironic-bm, nova-pci, magnum-k8s, vsphere-gpu, "
        "static, local"
    ]
    with pytest.raises(ConfigError) as err:
        validate({"topology": "openstack", "zzzz": 1})
    assert err.value.problems[0] == (
        "gpulab:topology must be one of ironic-bm, nova-pci, magnum-k8s, vsphere-gpu, static, "
        "local, got 'openstack'"
    )
    assert err.value.problems[1].startswith("gpulab:zzzz is not a known key; allowed: admin_cidr")
    found = problems(flavor_vcpus=None, labels={"a": "b"})
    assert found[0] == ("gpulab:labels is not used by topology nova-pci (only by magnum-k8s)")
    assert found[1].startswith("gpulab:flavor_vcpus is required for nova-pci: ")
    local = validate({"topology": "local", "lab": "lo"})
    assert local.ssh_user == "root" and not hasattr(local.args, "host_count")


def test_ssh_user_follows_the_image_family() -> None:
    assert validate({**NOVA, "image": "Rocky-9"}).ssh_user == "rocky"
    assert validate({**NOVA, "image": "rhel-9.4"}).ssh_user == "cloud-user"
    assert validate({**NOVA, "image": "fcos-40"}).ssh_user == "core"
    assert validate({**NOVA, "image": "debian-12"}).ssh_user == "debian"
    assert validate({**NOVA, "image": "arch"}).ssh_user == "ubuntu"
    assert validate({**NOVA, "ssh_user": "admin"}).ssh_user == "admin"


# --- mapping keys ------------------------------------------------------------------------------


MAGNUM: dict[str, Any] = {
    "topology": "magnum-k8s", "lab": "mg", "ssh_public_key": "ssh-ed25519 AAAA k",
    "external_network": "public", "admin_cidr": "203.0.113.0/24",
    "image": "ubuntu-2204-kube-v1.30.4", "server_type": "vm", "master_flavor": "m1",
    "node_flavor": "g1", "registry": "registry.lab.internal/gpulab",
}  # fmt: skip
KT = {"kube_tag": "v1.30.4"}  # the Cluster API driver's one required label


def label_problem(labels: Any) -> str:
    with pytest.raises(ConfigError) as err:
        validate({**MAGNUM, "labels": labels})
    assert len(err.value.problems) == 1
    return err.value.problems[0]


def test_labels_are_strings_of_bounded_size() -> None:
    cfg = validate({**MAGNUM, "labels": {**KT, "a.b-c_d": True, "n": 3, "s": "Xy", "f": False}})
    assert cfg.args.labels == {**KT, "a.b-c_d": "true", "n": "3", "s": "Xy", "f": "false"}
    labels = validate({**MAGNUM, "labels": '{"kube_tag": "v1.30.4", "k": "v"}'}).args.labels
    assert labels == {**KT, "k": "v"}
    plain = "gpulab:labels must be a mapping of label names to string values, got"
    for bad in ({"-a": "x"}, {"a": 1.5}, {"a": None}, ["a"], {1: "x"}):
        assert label_problem(bad).startswith(plain), bad
    big = "gpulab:labels must be a mapping of at most 64 label names to string values of up to"
    assert label_problem({f"k{i}": "v" for i in range(65)}).startswith(big)
    assert label_problem({"k" * 256: "v"}).startswith(big)
    assert label_problem({"k": "v" * 1025}).startswith(big)
    most = {**KT, **{f"k{i}": "v" for i in range(63)}}
    assert len(validate({**MAGNUM, "labels": most}).args.labels) == 64
    assert validate({**MAGNUM, "labels": {**KT, "k" * 255: "v" * 1024}}).args.labels


def test_workload_variables_edges() -> None:
    ok = {"workload_run_docker_image": "tf:2", "workload_run_arm": ["a", {"b": None}]}
    assert value("workload_variables", ok) == ok
    what = "gpulab:workload_variables must be a mapping of Ansible variable names to values"
    assert problem(workload_variables=["x"]) == (
        what + ": workload_run role inputs (its meta/argument_specs.yml lists them), got ['x']"
    )
    sixty_four = {f"x{i}": 1 for i in range(64)}  # 64 keys pass the count, then each is checked
    assert "'x0' is not one of its inputs" in problem(workload_variables=sixty_four)
    long_key = "-" + "k" * 69
    assert f"; {long_key[:60]!r} is not an Ansible variable name, got" in problem(
        workload_variables={long_key: 1}
    )
    too_many = {f"workload_run_v{i}": 1 for i in range(65)}
    assert "; at most 64 keys" in problem(workload_variables=too_many)
    assert "'1x' is not an Ansible variable name" in problem(workload_variables={"1x": 1})
    assert "is not a plain value" in problem(workload_variables={"workload_run_arm": {1}})
    assert "is not a plain value" in problem(
        workload_variables={"workload_run_arm": {"secure": "v1:x"}}
    )
    key = "workload_run_docker_image"
    exact = {key: "x" * (16384 - len(json.dumps({key: ""})))}  # 16384 characters as JSON
    assert value("workload_variables", exact) == exact
    huge = {"workload_run_docker_image": "x" * 16400}
    assert "; at most 16384 characters as JSON" in problem(workload_variables=huge)


def test_plain_values_nest_at_most_eight_deep() -> None:
    nested: Any = "leaf"
    for _ in range(8):
        nested = [nested]
    assert value("site", {"gpulab_x": nested}) == {"gpulab_x": nested}
    assert "is not a plain value" in problem(site={"gpulab_x": [nested]})
    deep: Any = 1
    for _ in range(9):
        deep = {"k": deep}
    assert "is not a plain value" in problem(site={"gpulab_x": deep})
    assert "is not a plain value" in problem(site={"gpulab_x": {1: "a"}})
    assert "is not a plain value" in problem(site={"gpulab_x": [{"secure": "x"}]})
    assert "is not a plain value" in problem(site={"gpulab_x": {"a": {"secure": "x"}}})
    assert "is not a plain value" in problem(site={"gpulab_x": [1, {2}]})
    eight: Any = 1
    for _ in range(8):
        eight = {"k": eight}
    assert value("site", {"gpulab_x": eight}) == {"gpulab_x": eight}
    assert value("site", {"gpulab_x": {"secure": "v", "other": 1}})


def test_site_edges() -> None:
    assert value("site", {"gpulab_anything": 1, "nvidia_driver_version": "580.95.05-1"}) == {
        "gpulab_anything": 1,
        "nvidia_driver_version": "580.95.05-1",
    }
    assert value("site", '{"gpulab_a": 1}') == {"gpulab_a": 1}
    what = "gpulab:site must be a mapping of role inputs named <role>_... (a role under "
    text = problem(site="x")
    assert text.startswith(what + "playbooks/roles/: apptainer, bitfusion_client,")
    assert "workload_run) or gpulab_..., with plain YAML values, got 'x'" in text
    assert "; at most 64 keys" in problem(site={f"gpulab_{i}": 1 for i in range(65)})
    assert "'a-b' is not an Ansible variable name" in problem(site={"a-b": 1})
    assert "'ansible_user': ansible_* connection variables" in problem(site={"ansible_user": "x"})
    assert "'nothing_x' names no role" in problem(site={"nothing_x": 1})
    assert "secrets: `pulumi config set --secret`" in problem(site={"gpulab_x": {"secure": "x"}})
    assert "; at most 16384 characters as JSON" in problem(site={"gpulab_x": "x" * 16400})
    exact = {"gpulab_x": "x" * (16384 - len(json.dumps({"gpulab_x": ""})))}
    assert value("site", exact) == exact
    many = {f"gpulab_{i}": 1 for i in range(64)}
    assert value("site", many) == many
    assert problem(site={"workload_run_bogus": 1}).endswith(
        "'workload_run_bogus' is not an input of role workload_run "
        "(its meta/argument_specs.yml lists them), got {'workload_run_bogus': 1}"
    )


def test_workload_secrets_edges() -> None:
    pw = "workload_run_registry_password"
    text = problem(workload_secrets="nope")
    assert text == (
        "gpulab:workload_secrets must be a mapping of secret workload_run role inputs (no_log: "
        f"true in its meta/argument_specs.yml: {pw}), each one set it with `pulumi config set "
        "--secret --path 'gpulab:workload_secrets.<name>' VALUE`"
    )
    assert "; at most 64 keys" in problem(workload_secrets={f"k{i}": 1 for i in range(65)})
    assert f"{pw!r} is not encrypted" in problem(workload_secrets={pw: {"secure": 1, "x": 2}})
    whole = SecretRef("workload_secrets")
    assert value("workload_secrets", whole) is whole


# --- placeholders and stack files --------------------------------------------------------------


def test_placeholder_values_are_named() -> None:
    assert placeholders.problems({"a": "fine", "b": 1}) == []
    assert placeholders.problems({"a": "CHANGE_ME"}) == [
        "gpulab:a still holds an example's placeholder value: set your own "
        "(pulumi config set [--secret] KEY VALUE)"
    ]
    found = placeholders.problems(
        {
            "a": "vc.example.com",
            "b": ["ok", {"c": "me@example.org"}],
            "s": SecretRef("s", placeholder=True),
            "t": SecretRef("t"),
            "u": "https://vc.example.net/x",
            "w": "https://example.net/x",
            "v": "notexample.com",
        }
    )
    assert found == [
        "gpulab:a, gpulab:b, gpulab:s, gpulab:u still hold an example's placeholder value: "
        "set your own (pulumi config set [--secret] KEY VALUE)"
    ]
    deep: Any = "replace-me"
    for _ in range(8):
        deep = [deep]
    assert placeholders.placeholder_keys({"d": deep}) == ["d"]
    assert placeholders.placeholder_keys({"d": [deep]}) == []  # deeper than it looks
    nested: Any = "CHANGEME"
    for _ in range(8):
        nested = {"k": nested}
    assert placeholders.placeholder_keys({"d": nested, "e": {"k": nested}}) == ["d"]
    assert placeholders.placeholder_keys({"t": ("x", "changeme")}) == ["t"]


def _stack(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "Pulumi.s.yaml"
    p.write_text(text)
    return p


def test_stack_file_keys_namespaces_and_secrets(tmp_path: Path) -> None:
    p = _stack(
        tmp_path,
        "config:\n"
        "  gpulab:topology: local\n"
        "  lab: plain\n"
        "  openstack:cloud: x\n"
        "  gpulab:os_password:\n    secure: v1:AAAA\n"
        "  gpulab:vsphere_password:\n    secure: ReplaceWithYourOwnPassword\n"
        "  gpulab:site:\n    secure: v1:B\n    other: 1\n",
    )
    raw = raw_from_stack_file(p)
    assert list(raw) == ["topology", "lab", "os_password", "vsphere_password", "site"]
    assert raw["os_password"] == SecretRef("os_password", placeholder=False)
    assert raw["vsphere_password"] == SecretRef("vsphere_password", placeholder=True)
    assert raw["site"] == {"secure": "v1:B", "other": 1}
    p2 = _stack(tmp_path, "config:\n  gpulab:os_password:\n    secure: 5\n")
    assert raw_from_stack_file(p2)["os_password"].placeholder is False


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "is empty: it needs a 'config:' mapping"),
        ("- a\n", "must be a mapping with a 'config:' mapping"),
        ("config: [1]\n", "must be a mapping with a 'config:' mapping"),
        ("config:\n  a: [\n", "is not valid YAML at line 3"),
        ("config:\n  a: " + "[" * 2000 + "]" * 2000 + "\n", "line 2: nested deeper than 64 levels"),
    ],
)
def test_stack_file_refusals(tmp_path: Path, text: str, message: str) -> None:
    p = _stack(tmp_path, text)
    with pytest.raises(UsageError) as err:
        raw_from_stack_file(p)
    assert str(err.value) == f"stack file {str(p)!r} {message}"


def test_stack_file_without_config_or_missing(tmp_path: Path) -> None:
    assert raw_from_stack_file(_stack(tmp_path, "config:\n")) == {}
    assert raw_from_stack_file(_stack(tmp_path, "encryptionsalt: x\n")) == {}
    missing = tmp_path / "nope.yaml"
    with pytest.raises(UsageError, match="does not exist"):
        raw_from_stack_file(missing)
    dangling = tmp_path / "dangling.yaml"
    dangling.symlink_to(tmp_path / "gone.yaml")
    with pytest.raises(UsageError) as err:
        raw_from_stack_file(dangling)
    assert str(err.value) != f"stack file {str(dangling)!r} does not exist"
    assert str(err.value).startswith(f"stack file {str(dangling)!r} cannot be read")


def test_placeholders_are_refused_after_the_type_problems(tmp_path: Path) -> None:
    p = _stack(
        tmp_path,
        "config:\n  gpulab:topology: local\n  gpulab:lab: CHANGEME\n",
    )
    with pytest.raises(ConfigError) as err:
        load_stack_file(p)
    assert err.value.problems[0].startswith("gpulab:lab must be")
    assert err.value.problems[-1].startswith("gpulab:lab still holds an example's placeholder")
    ok = _stack(tmp_path, "config:\n  gpulab:topology: local\n  gpulab:lab: changeme\n")
    with pytest.raises(ConfigError) as err:
        load_stack_file(ok)
    assert err.value.problems == [
        "gpulab:lab still holds an example's placeholder value: set your own "
        "(pulumi config set [--secret] KEY VALUE)"
    ]
    assert load_stack_file(ok, allow_placeholders=True).lab == "changeme"


def test_a_stack_whose_cloud_extra_is_missing_names_the_extra(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The core install without the openstack extra (mocked: importlib finds no openstack
    module, as on a controller installed without it): reading a nova-pci stack file is one line
    naming the extra; a local stack needs none."""
    import importlib.util

    from infra.config import extras

    real = importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "openstack" else real(name, *a),
    )
    body = "config:\n" + "".join(f"  gpulab:{k}: {json.dumps(v)}\n" for k, v in NOVA.items())
    with pytest.raises(ConfigError) as err:
        load_stack_file(_stack(tmp_path, body))
    assert err.value.problems == [
        "topology nova-pci needs the openstack extra (openstack not installed): "
        "pip install 'gpulab[openstack]' (or EXTRAS=openstack scripts/venv.sh)"
    ]
    local = _stack(tmp_path, "config:\n  gpulab:topology: local\n  gpulab:lab: mine\n")
    assert load_stack_file(local).topology == "local"


def test_an_execution_environment_that_is_not_text_is_one_line() -> None:
    """A list or a mapping where a name belongs (YAML nesting by mistake) is refused like any
    other unknown name, not a TypeError from a lookup of an unhashable value."""
    for bad in (["native"], {"a": 1}):
        assert problem(execution_envs=["docker", bad]).startswith(
            "gpulab:execution_envs must be a list of native, docker, apptainer"
        ), bad
