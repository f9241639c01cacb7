"""Pinned repository key fingerprints: one value per key across the roles, in the form
``gpg --show-keys --with-colons`` prints (40 upper-case hex digits), and each ending in the key
id gpg prints for it (NVIDIA's 3bf863cc.pub and D42D0685.pub: A4B469963BF863CC, 9CD0A493D42D0685).

The values are the vendors' published ones: NVIDIA's cuda-repo-management SIGNATURES.md
("Primary key fingerprint: EB69 3B30 ... 3BF8 63CC" for Debian/Ubuntu, "610C 7B14 E068 A878
070D A4E9 9CD0 A493 D42D 0685" for RHEL), Docker's install guides and the NVIDIA Container
Toolkit's. A typo in one of them makes a real lab refuse the vendor's repository."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

ROLES = Path(__file__).resolve().parents[2] / "playbooks" / "roles"
FPR = re.compile(r"^[0-9A-F]{40}$")
# the long key ids gpg prints for NVIDIA's CUDA repository keys ("using RSA key ..."); the key
# files are named after their last 8 digits (3bf863cc.pub, D42D0685.pub)
CUDA_KEY_FILE_ID = {"debian": "A4B469963BF863CC", "rhel": "9CD0A493D42D0685"}


def _pins() -> dict[str, str]:
    pins: dict[str, str] = {}
    for defaults in sorted(ROLES.glob("*/defaults/main.yml")):
        for key, value in (yaml.safe_load(defaults.read_text()) or {}).items():
            if key.endswith(("_key_fingerprint", "_key_fingerprint_rhel")) and value:
                pins[key] = str(value)
    return pins


def test_every_pinned_fingerprint_is_a_full_fingerprint() -> None:
    pins = _pins()
    assert len(pins) >= 7, pins
    bad = {k: v for k, v in pins.items() if not FPR.match(v)}
    assert not bad


def test_cuda_keys_end_in_the_key_file_id_and_agree_across_roles() -> None:
    pins = _pins()
    cuda = {k: v for k, v in pins.items() if k.startswith(("nvidia_driver_", "cuda_toolkit_"))}
    assert set(cuda) == {
        "nvidia_driver_cuda_repo_key_fingerprint",
        "nvidia_driver_cuda_repo_key_fingerprint_rhel",
        "cuda_toolkit_repo_key_fingerprint",
        "cuda_toolkit_repo_key_fingerprint_rhel",
    }
    for key, value in cuda.items():
        family = "rhel" if key.endswith("_rhel") else "debian"
        assert value.endswith(CUDA_KEY_FILE_ID[family]), (key, value)
    assert (
        cuda["nvidia_driver_cuda_repo_key_fingerprint_rhel"]
        == (cuda["cuda_toolkit_repo_key_fingerprint_rhel"])
    )
    assert (
        cuda["nvidia_driver_cuda_repo_key_fingerprint"]
        == (cuda["cuda_toolkit_repo_key_fingerprint"])
    )


def test_argument_specs_defaults_match_the_role_defaults() -> None:
    pins = _pins()
    for spec in sorted(ROLES.glob("*/meta/argument_specs.yml")):
        options = (yaml.safe_load(spec.read_text())["argument_specs"]["main"]).get("options", {})
        for key, opt in options.items():
            if key in pins and "default" in opt:
                assert str(opt["default"]) == pins[key], (spec, key)
