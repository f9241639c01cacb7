"""The typed, validated ``gpulab:*`` stack config.

Two ways in, one validator (:func:`infra.config.model.validate`):

- :func:`load_stack_file` reads a ``Pulumi.<stack>.yaml`` without Pulumi (``gpulab validate``,
  preflight, audit, lifecycle). Encrypted secrets become :class:`SecretRef` placeholders.
- :func:`from_pulumi_config` reads the running program's config; secrets come from
  ``pulumi.Config.require_secret`` and stay ``Output`` secrets.

Both raise :class:`ConfigError` (a ``UsageError``: one line, exit 2 in the CLI) naming every
bad ``gpulab:<key>`` and what it allows, before any resource is made. See :class:`LabConfig`
for the fields: the topology's Args (``cfg.args``) and the keys of what every lab measures.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.config import extras, placeholders
from infra.config.fields import LabConfig
from infra.config.model import ConfigError, all_keys, validate
from infra.config.roles import EngineSecret, secret_role_inputs
from infra.errors import UsageError
from infra.keys.types import SecretRef, maybe_json
from infra.topologies import names
from workloads.errors import InputError
from workloads.inputs import load_yaml

NAMESPACE = "gpulab"

__all__ = [
    "ConfigError",
    "LabConfig",
    "SecretRef",
    "from_pulumi_config",
    "load_stack_file",
    "raw_from_stack_file",
    "validate",
]


def raw_from_stack_file(path: str | Path) -> dict[str, Any]:
    """The ``gpulab:*`` keys of a stack file (prefix stripped); secrets as :class:`SecretRef`.

    Keys of other namespaces (``openstack:``, ``vsphere:``...) are provider settings and are
    left out.
    """
    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise UsageError(f"stack file {str(p)!r} does not exist")
    try:
        data = load_yaml(p, "stack file")  # bounded: aliases, depth, duplicate keys
    except InputError as exc:
        raise UsageError(str(exc)) from None
    if data is None:
        raise UsageError(f"stack file {str(p)!r} is empty: it needs a 'config:' mapping")
    if not isinstance(data, dict) or not isinstance(data.get("config") or {}, dict):
        raise UsageError(f"stack file {str(p)!r} must be a mapping with a 'config:' mapping")
    raw: dict[str, Any] = {}
    for full_key, value in (data.get("config") or {}).items():
        namespace, sep, key = str(full_key).partition(":")
        if not sep:
            namespace, key = NAMESPACE, namespace
        if namespace != NAMESPACE:
            continue
        if isinstance(value, dict) and set(value) == {"secure"}:
            value = SecretRef(key, placeholder=_placeholder(value["secure"]))
        raw[key] = value
    return raw


def _placeholder(ciphertext: Any) -> bool:
    return isinstance(ciphertext, str) and placeholders.MARKERS.search(ciphertext) is not None


def load_stack_file(path: str | Path, *, allow_placeholders: bool = False) -> LabConfig:
    """Read and validate a ``Pulumi.<stack>.yaml`` without Pulumi.

    A value still holding an example's placeholder (``examples/``: ``ReplaceWithYourOwn...``,
    ``CHANGEME``, ``example.com`` hosts, a placeholder secret) is refused naming its key, after
    the type checks, unless ``allow_placeholders`` (the tests that build the examples).
    """
    raw = raw_from_stack_file(path)
    found = [] if allow_placeholders else placeholders.problems(raw)
    topology = raw.get("topology")
    if isinstance(topology, str) and topology in names():  # every problem at once
        found += extras.problems(topology)
    try:
        cfg = validate(raw)
    except ConfigError as exc:
        raise ConfigError(exc.problems + found) from None
    if found:
        raise ConfigError(found)
    return cfg


def _holds_secret_input(text: Any) -> bool:
    value = maybe_json(text)
    return isinstance(value, dict) and any(k in secret_role_inputs() for k in value)


def from_pulumi_config() -> LabConfig:
    """Validate the running Pulumi program's ``gpulab:*`` config (secrets via require_secret).

    Call it before creating any resource.
    """
    import pulumi  # lazily: only the program reads its config through Pulumi
    from pulumi.runtime import config as runtime_config

    keys = set(runtime_config.get_config_env()) | set(runtime_config.CONFIG.get())
    prefix = f"{NAMESPACE}:"
    cfg = pulumi.Config(NAMESPACE)
    secret_keys = set(runtime_config.get_config_secret_keys_env())
    secrets = [name for name, used in all_keys().items() if any(k.secret for _, k in used)]
    raw: dict[str, Any] = {}
    for full_key in sorted(k for k in keys if k.startswith(prefix)):
        key = full_key[len(prefix) :]
        is_secret = runtime_config.is_config_secret(full_key) or full_key in secret_keys
        if is_secret and key == "site" and _holds_secret_input(runtime_config.get_config(full_key)):
            # A `--secret --path 'gpulab:site.<input>'` value makes the whole key a secret: its
            # secret role inputs become secret Outputs, the rest stays plain (infra.config.roles).
            raw[key] = EngineSecret(runtime_config.get_config(full_key))
            continue
        if is_secret and key not in secrets:
            # the engine decrypted it; a plain key must not carry a secret (outputs, logs)
            raise ConfigError(
                [
                    f"{full_key} is stored as a secret but is not a secret key: set it in "
                    f"plain text (secrets: " + ", ".join(secrets) + ")"
                ]
            )
        if is_secret:
            raw[key] = cfg.require_secret(key)
        else:
            raw[key] = runtime_config.get_config(full_key)
    lab = validate(raw)
    extras.require(lab.topology)  # a ConfigError too: the program stops with one line
    return lab
