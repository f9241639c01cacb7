"""Parsers of the mapping keys of a stack: ``gpulab:site`` and ``gpulab:workload_variables``
(role inputs, checked against the roles' ``meta/argument_specs.yml``).

Each takes the raw value (YAML, or the JSON text the Pulumi engine hands the program) and returns
a plain dict, or raises :class:`BadValue` whose text says what is allowed (the model in
:mod:`infra.config.fields` turns it into ``gpulab:<key> must be <text>, got ...``).
"""

from __future__ import annotations

import json
import re
from typing import Any

from infra.keys.types import BadValue, SecretRef, maybe_json
from infra.paths import PROJECT
from workloads.errors import InputError
from workloads.inputs import load_yaml

MAX_STR = 1024  # characters of any string key


ROLES_DIR = PROJECT / "playbooks" / "roles"


def role_inputs(role: str, *, no_log: bool | None = None) -> frozenset[str]:
    """The variables a role takes as inputs: the options its meta/argument_specs.yml lists
    (``no_log``: only those it marks ``no_log: true``, or only those it does not)."""
    spec = ROLES_DIR / role / "meta" / "argument_specs.yml"
    try:
        doc = load_yaml(spec, "role argument spec")
    except InputError:  # no such role (or no readable spec): it takes no inputs we know of
        return frozenset()
    specs = (doc.get("argument_specs") if isinstance(doc, dict) else None) or {}
    if not isinstance(specs, dict):
        return frozenset()
    names: set[str] = set()
    for entry in specs.values():
        if isinstance(entry, dict) and isinstance(entry.get("options"), dict):
            names.update(
                str(k)
                for k, opt in entry["options"].items()
                if no_log is None or no_log == (isinstance(opt, dict) and opt.get("no_log") is True)
            )
    return frozenset(names)


SECRETS_HOW = (
    "set it with `pulumi config set --secret --path 'gpulab:workload_secrets.<name>' VALUE`"
)


def p_variables(raw: Any) -> dict[str, Any]:
    """Extra inputs of the workload_run role: only the options its argument_specs.yml lists
    (no ansible_* connection variables, no role-internal names), plain values, bounded."""
    raw = maybe_json(raw)
    what = (
        "a mapping of Ansible variable names to values: workload_run role inputs "
        "(its meta/argument_specs.yml lists them)"
    )
    if not isinstance(raw, dict):
        raise BadValue(what)
    if len(raw) > SITE_MAX_KEYS:
        raise BadValue(f"{what}; at most {SITE_MAX_KEYS} keys")
    allowed = role_inputs("workload_run", no_log=False)
    secret = role_inputs("workload_run", no_log=True)
    hide = any(k in secret for k in raw)  # an error never shows a secret's value
    for key, value in raw.items():
        if not isinstance(key, str) or not ANSIBLE_VAR_RE.match(key):
            raise BadValue(
                f"{what}; {str(key)[:60]!r} is not an Ansible variable name", hide_value=hide
            )
        if key.startswith("ansible_"):
            raise BadValue(
                f"{what}; {key!r}: ansible_* connection variables are not role inputs",
                hide_value=hide,
            )
        if key in secret:
            raise BadValue(
                f"{what}; {key!r} is a secret: gpulab:workload_secrets, {SECRETS_HOW}",
                hide_value=True,
            )
        if key not in allowed:
            raise BadValue(f"{what}; {key!r} is not one of its inputs", hide_value=hide)
        if not _plain_yaml(value):
            raise BadValue(
                f"{what}; {key!r} is not a plain value (secrets: gpulab:workload_secrets, "
                f"{SECRETS_HOW})",
                hide_value=hide,
            )
        problem = _nested_key_problem(value, key.endswith("_environment"))
        if problem:
            raise BadValue(f"{what}; {key!r} {problem}", hide_value=hide)
    if len(json.dumps(raw, default=str)) > SITE_MAX_CHARS:
        raise BadValue(f"{what}; at most {SITE_MAX_CHARS} characters as JSON", hide_value=hide)
    return dict(raw)


def p_workload_secrets(raw: Any) -> Any:
    """Secret inputs of the workload_run role: only the options its argument_specs.yml marks
    ``no_log: true``, each one encrypted. From a stack file: a mapping of encrypted values
    (``{secure: ...}``), returned as :class:`SecretRef` placeholders; in the program: the
    engine's secret ``Output`` of the decrypted mapping, checked when it resolves, still secret.
    A whole mapping encrypted at once is a :class:`SecretRef` and passes as it is."""
    try:
        import pulumi
    except ImportError:  # pragma: no cover - pulumi is a dependency
        pulumi = None  # type: ignore[assignment]
    if isinstance(raw, SecretRef):
        return raw
    if pulumi is not None and isinstance(raw, pulumi.Output):
        return raw.apply(lambda text: _secret_inputs(maybe_json(text), encrypted=False))
    return _secret_inputs(maybe_json(raw), encrypted=True)


def _secret_inputs(raw: Any, *, encrypted: bool) -> dict[str, Any]:
    secret = role_inputs("workload_run", no_log=True)
    what = (
        "a mapping of secret workload_run role inputs (no_log: true in its "
        "meta/argument_specs.yml: " + ", ".join(sorted(secret)) + f"), each one {SECRETS_HOW}"
    )
    if not isinstance(raw, dict):
        raise BadValue(what)
    if len(raw) > SITE_MAX_KEYS:
        raise BadValue(f"{what}; at most {SITE_MAX_KEYS} keys")
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or key not in secret:
            raise BadValue(f"{what}; {str(key)[:60]!r} is not one of its secret inputs")
        if encrypted:
            if not (isinstance(value, dict) and set(value) == {"secure"}):
                raise BadValue(f"{what}; {key!r} is not encrypted")
            out[key] = SecretRef(f"workload_secrets.{key}")
        elif not isinstance(value, str) or len(value) > MAX_STR:
            raise BadValue(f"{what}; {key!r} must be a string of at most {MAX_STR} characters")
        else:
            out[key] = value
    return out


ANSIBLE_VAR_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SITE_MAX_KEYS = 64
SITE_MAX_CHARS = 16384


def _site_prefixes() -> tuple[str, ...]:
    roles = sorted(d.name for d in ROLES_DIR.iterdir() if d.is_dir()) if ROLES_DIR.is_dir() else []
    return (*(f"{r}_" for r in roles), "gpulab_")


def _plain_yaml(value: Any, depth: int = 0) -> bool:
    if depth > 8:
        return False
    if value is None or isinstance(value, str | int | float | bool):
        return True
    if isinstance(value, list):
        return all(_plain_yaml(v, depth + 1) for v in value)
    if isinstance(value, dict):
        if set(value) == {"secure"}:  # an encrypted value: secrets do not go here
            return False
        return all(isinstance(k, str) and _plain_yaml(v, depth + 1) for k, v in value.items())
    return False


def secret_role_inputs() -> dict[str, str]:
    """Every role input that its role's ``meta/argument_specs.yml`` marks ``no_log: true``
    (name -> role): the only list of secret role inputs, read from the roles themselves."""
    roles = sorted(d.name for d in ROLES_DIR.iterdir() if d.is_dir()) if ROLES_DIR.is_dir() else []
    return {name: role for role in roles for name in sorted(role_inputs(role, no_log=True))}


class EngineSecret:
    """The plaintext of a config key the engine holds as a secret (``gpulab:site`` with a
    ``--secret --path`` value in it): the program sees the whole mapping decrypted and only
    knows that some of it was encrypted. Never printed."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "<secret>"

    __str__ = __repr__


def site_secret_how(key: str) -> str:
    return f"set it with `pulumi config set --secret --path 'gpulab:site.{key}' VALUE`"


def _site_secret(key: str, value: Any, role: str, *, engine_secret: bool) -> Any:
    """A secret role input of ``gpulab:site``: a :class:`SecretRef` for an encrypted value of
    a stack file, a secret ``Output`` in the program (the engine decrypted it), else refused."""
    if role == "workload_run":
        raise BadValue(
            f"role inputs of the site run; {key!r} is a secret input of role workload_run, "
            f"which the site does not run: gpulab:workload_secrets, {SECRETS_HOW}",
            hide_value=True,
        )
    if isinstance(value, dict) and set(value) == {"secure"}:
        from infra.config.placeholders import MARKERS

        cipher = value["secure"]
        return SecretRef(
            f"site.{key}",
            placeholder=isinstance(cipher, str) and MARKERS.search(cipher) is not None,
        )
    if engine_secret and _plain_yaml(value):
        import pulumi

        return pulumi.Output.secret(value)
    raise BadValue(
        f"role inputs with secrets as Pulumi secrets; {key!r} (no_log in role {role}) is in "
        f"plain text: {site_secret_how(key)}",
        hide_value=True,
    )


# A key inside a role input's mapping (docker daemon.json keys, label names): no space, quote,
# brace, '=' or shell character, and never a leading '-'.
NESTED_KEY_RE = re.compile(r"^[A-Za-z0-9_.:/@+][A-Za-z0-9_.:/@+-]{0,254}$")
# A key of an ``*_environment`` mapping: an environment variable name (Ansible writes these
# names into a shell command line unquoted).
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")


def _nested_key_problem(value: Any, env: bool, depth: int = 0) -> str | None:
    if isinstance(value, list) and depth < 8:
        return next((p for v in value if (p := _nested_key_problem(v, False, depth + 1))), None)
    if not isinstance(value, dict) or depth >= 8:
        return None
    for k, v in value.items():
        if env and not ENV_NAME_RE.match(k):
            return f"holds {str(k)[:60]!r}, which is not an environment variable name"
        if not NESTED_KEY_RE.match(k):
            return (
                f"holds the key {str(k)[:60]!r}: keys are letters, digits and _ . : / @ + - "
                "(not first)"
            )
        problem = _nested_key_problem(v, False, depth + 1)
        if problem:
            return problem
    return None


def _plain_problem(value: Any, key: str) -> str | None:
    """Why ``value`` cannot be the plain value of role input ``key`` (None when it can)."""
    if not _plain_yaml(value):
        return "is not a plain value (secrets: `pulumi config set --secret`)"
    return _nested_key_problem(value, key.endswith("_environment"))


def p_site(raw: Any) -> dict[str, Any]:
    """Role inputs of the site run: ``<role>_*`` (a role under playbooks/roles/) or
    ``gpulab_*`` Ansible variables, plain YAML values, bounded in size. A secret role input
    (:func:`secret_role_inputs`) only as a Pulumi secret: in a stack file ``{secure: ...}``
    (kept as a :class:`~infra.keys.types.SecretRef`), in the program a secret ``Output``
    (``raw`` an :class:`EngineSecret`); anywhere else it is refused, its value never shown."""
    engine_secret = isinstance(raw, EngineSecret)
    raw = maybe_json(raw.value if isinstance(raw, EngineSecret) else raw)
    prefixes = _site_prefixes()
    secrets = secret_role_inputs()
    what = (
        "a mapping of role inputs named <role>_... (a role under playbooks/roles/: "
        + ", ".join(p.rstrip("_") for p in prefixes[:-1])
        + ") or gpulab_..., with plain YAML values"
    )
    if not isinstance(raw, dict):
        if type(raw).__name__ == "SecretRef":  # the whole mapping encrypted at once
            raise BadValue(
                f"{what}, not one encrypted value: set each secret role input on its own, "
                + site_secret_how("<name>"),
                hide_value=True,
            )
        raise BadValue(what, hide_value=any(k in secrets for k in _keys(raw)))
    hide = any(k in secrets for k in raw)
    if len(raw) > SITE_MAX_KEYS:
        raise BadValue(f"{what}; at most {SITE_MAX_KEYS} keys", hide_value=hide)
    out: dict[str, Any] = {}
    for key, value in raw.items():
        if not isinstance(key, str) or not ANSIBLE_VAR_RE.match(key):
            raise BadValue(f"{what}; {key!r} is not an Ansible variable name", hide_value=hide)
        if key.startswith("ansible_"):
            raise BadValue(
                f"{what}; {key!r}: ansible_* connection variables are not role inputs",
                hide_value=hide,
            )
        if not key.startswith(prefixes):
            raise BadValue(f"{what}; {key!r} names no role", hide_value=hide)
        if key in secrets:
            out[key] = _site_secret(key, value, secrets[key], engine_secret=engine_secret)
            continue
        if isinstance(value, dict) and set(value) == {"secure"}:
            raise BadValue(
                f"{what}; {key!r} is not a plain value: encrypted, but its role does not keep "
                "it secret (not no_log in its meta/argument_specs.yml: Ansible would print it); "
                "set it in plain text (secrets: `pulumi config set --secret` for "
                + ", ".join(sorted(secrets))
                + ")",
                hide_value=True,
            )
        problem = _plain_problem(value, key)
        if problem:
            raise BadValue(f"{what}; {key!r} {problem}", hide_value=hide)
        role = next((p[:-1] for p in prefixes[:-1] if key.startswith(p)), None)
        if role is not None and key not in role_inputs(role):
            raise BadValue(
                f"{what}; {key!r} is not an input of role {role} "
                "(its meta/argument_specs.yml lists them)",
                hide_value=hide,
            )
        out[key] = value
    plain = {k: v for k, v in raw.items() if k not in secrets}
    if len(json.dumps(plain, default=str)) > SITE_MAX_CHARS:
        raise BadValue(f"{what}; at most {SITE_MAX_CHARS} characters as JSON", hide_value=hide)
    return out


def _keys(raw: Any) -> list[Any]:
    return list(raw) if isinstance(raw, dict) else []


def split_site(site: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``gpulab:site`` as (plain role inputs: extravars, printable; secret role inputs: only
    for the run's secrets file, never printed)."""
    secrets = secret_role_inputs()
    plain = {k: v for k, v in site.items() if k not in secrets}
    return plain, {k: v for k, v in site.items() if k in secrets}
