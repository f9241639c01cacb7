"""The typed, validated ``gpulab:*`` stack config.

Two ways in, one validator (:func:`infra.config.model.validate`):

- :func:`load_stack_file` reads a ``Pulumi.<stack>.yaml`` without Pulumi (``gpulab validate``,
  preflight, audit, lifecycle). Encrypted secrets become :class:`SecretRef` placeholders.
- :func:`from_pulumi_config` reads the running program's config; secrets come from
  ``pulumi.Config.require_secret`` and stay ``Output`` secrets.

Both raise :class:`ConfigError` (a ``UsageError``: one line, exit 2 in the CLI) naming every
bad ``gpulab:<key>`` and what it allows, before any resource is made. See :class:`LabConfig`
for the fields.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from infra.config.fields import BY_KEY, FIELDS, TOPOLOGIES, LabConfig, SecretRef
from infra.config.model import ConfigError, validate
from infra.config.roles import EngineSecret
from infra.errors import UsageError

NAMESPACE = "gpulab"

__all__ = [
    "BY_KEY",
    "FIELDS",
    "TOPOLOGIES",
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
    import yaml

    from workloads.errors import InputError
    from workloads.inputs import read_input_text

    p = Path(path)
    if not p.exists() and not p.is_symlink():
        raise UsageError(f"stack file {str(p)!r} does not exist")
    try:
        data = yaml.safe_load(read_input_text(p, "stack file"))
    except InputError as exc:
        raise UsageError(str(exc)) from None
    except (ValueError, RecursionError):  # an integer too long to convert, nesting too deep
        raise UsageError(f"stack file {str(p)!r} holds a value too large to read") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise UsageError(f"stack file {str(p)!r} is not valid YAML{where}") from None
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
    from infra.config.placeholders import MARKERS

    return isinstance(ciphertext, str) and MARKERS.search(ciphertext) is not None


def load_stack_file(path: str | Path, *, allow_placeholders: bool = False) -> LabConfig:
    """Read and validate a ``Pulumi.<stack>.yaml`` without Pulumi.

    A value still holding an example's placeholder (``examples/``: ``ReplaceWithYourOwn...``,
    ``CHANGEME``, ``example.com`` hosts, a placeholder secret) is refused naming its key, after
    the type checks, unless ``allow_placeholders`` (the tests that build the examples).
    """
    from infra.config import extras, placeholders

    raw = raw_from_stack_file(path)
    found = [] if allow_placeholders else placeholders.problems(raw)
    try:
        cfg = validate(raw)
    except ConfigError as exc:
        raise ConfigError(exc.problems + found) from None
    if found:
        raise ConfigError(found)
    extras.require(cfg.topology)
    return cfg


def _holds_secret_input(text: Any) -> bool:
    from infra.config.roles import maybe_json, secret_role_inputs

    value = maybe_json(text)
    return isinstance(value, dict) and any(k in secret_role_inputs() for k in value)


def from_pulumi_config() -> LabConfig:
    """Validate the running Pulumi program's ``gpulab:*`` config (secrets via require_secret).

    Call it before creating any resource.
    """
    import pulumi
    from pulumi.runtime import config as runtime_config

    keys = set(runtime_config.get_config_env()) | set(runtime_config.CONFIG.get())
    prefix = f"{NAMESPACE}:"
    cfg = pulumi.Config(NAMESPACE)
    secret_keys = set(runtime_config.get_config_secret_keys_env())
    raw: dict[str, Any] = {}
    for full_key in sorted(k for k in keys if k.startswith(prefix)):
        key = full_key[len(prefix) :]
        field = BY_KEY.get(key)
        is_secret = runtime_config.is_config_secret(full_key) or full_key in secret_keys
        if is_secret and key == "site" and _holds_secret_input(runtime_config.get_config(full_key)):
            # A `--secret --path 'gpulab:site.<input>'` value makes the whole key a secret: its
            # secret role inputs become secret Outputs, the rest stays plain (infra.config.roles).
            raw[key] = EngineSecret(runtime_config.get_config(full_key))
            continue
        if is_secret and (field is None or not field.secret):
            # the engine decrypted it; a plain key must not carry a secret (outputs, logs)
            raise ConfigError(
                [
                    f"{full_key} is stored as a secret but is not a secret key: set it in "
                    f"plain text (secrets: " + ", ".join(f.key for f in FIELDS if f.secret) + ")"
                ]
            )
        if field is not None and field.secret and is_secret:
            raw[key] = cfg.require_secret(key)
        else:
            raw[key] = runtime_config.get_config(full_key)
    from infra.config import extras

    lab = validate(raw)
    extras.require(lab.topology)  # a ConfigError too: the program stops with one line
    return lab
