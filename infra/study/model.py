"""The study file: YAML, validated before anything is built (one line naming the key, exit 2).

A study lists its arms (each a stack and an execution environment), the suite they all run,
the repeats and their order, when to rebuild, and the published claims it checks::

    name: closer2018                       # plain name: the results go to results/study-<name>/
    description: ...
    suite: closer2018                      # as `gpulab bench --suite`: a name or a .yaml path
    repeats: 3                             # 1..1000
    order: interleaved                     # or randomized (seed: recorded in the journal)
    seed: 7                                # optional, 0..4294967295
    rebuild: never                         # never | between-repeats | between-arms
    baseline: bm                           # the arm the others are normalized to (default: first)
    claims: [closer2018/single_synthetic]  # ids of workloads/reference/published-results.yaml
    arms:
      - name: bm                           # plain name; the records' arm label
        stack: ironic-bm                   # Pulumi.<stack>.yaml (or examples/), or
        # stack_file: labs/bm.yaml         # a stack file (copied: Pulumi.study-<study>-<arm>.yaml)
        exec_env: native                   # workloads/execenv.py (aliases accepted)
        sharing: exclusive                 # optional, as the runner's --sharing
        label: bm                          # optional: the records' arm label (default: name)
        suite: other-suite                 # optional: this arm runs another suite
        config: {kw_vm_count: 32}          # optional: stack keys this arm sets (null removes one)

Relative paths (``suite``, ``stack_file``) are read from the study file's directory first.
An arm with ``config`` measures a copy of its stack (``stack`` or ``stack_file``) with those
``gpulab:`` keys set, under the copied stacks' name ``study-<study>-<arm>``, and its own lab
name, ``<lab>-<arm>`` (unless ``config`` sets ``lab``), so two arms' labs never share names.
``rebuild: every-unit`` builds each unit's lab and destroys it after the unit: one lab at a
time (arms that change a host-wide setting, such as the vGPU scheduling policy, never meet).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.errors import UsageError
from infra.paths import PROJECT
from workloads.errors import InputError
from workloads.inputs import load_yaml, parse_yaml

STUDIES_DIR = PROJECT / "studies"
ORDERS = ("interleaved", "randomized")
REBUILDS = ("never", "between-repeats", "between-arms", "every-unit")
MAX_ARMS = 64
MAX_REPEATS = 1000  # as a suite's repeats (workloads.suites.MAX_REPEATS)
MAX_CLAIMS = 256
MAX_SEED = 2**32 - 1
MAX_TEXT = 1024
MAX_FILE_BYTES = 1 << 20
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,62}$")
STUDY_KEYS = (
    "name",
    "description",
    "suite",
    "repeats",
    "order",
    "seed",
    "rebuild",
    "baseline",
    "claims",
    "arms",
)
ARM_KEYS = ("name", "stack", "stack_file", "exec_env", "sharing", "suite", "label", "config")


@dataclass(frozen=True)
class Arm:
    name: str
    exec_env: str
    stack: str  # the stack name the lab lifecycle uses
    topology: str
    stack_file: Path | None = None  # a stack file given by path (copied into the project)
    sharing: str | None = None
    suite: str = ""  # resolved: a shipped name or an absolute .yaml path
    label: str = ""  # the records' arm label (default: the name)
    project: Path = PROJECT  # the Pulumi project directory the stack belongs to
    # gpulab keys this arm sets over its stack file's (None: the key removed), in file order
    config: tuple[tuple[str, Any], ...] = field(default=(), hash=False)

    @property
    def stack_path(self) -> Path:
        return self.stack_file or self.project / f"Pulumi.{self.stack}.yaml"

    @property
    def is_local(self) -> bool:
        from infra.topologies import get

        return get(self.topology).runs_here


@dataclass(frozen=True)
class Study:
    name: str
    path: Path
    suite: str
    arms: tuple[Arm, ...]
    repeats: int = 1
    order: str = "interleaved"
    seed: int | None = None
    rebuild: str = "never"
    baseline: str = ""
    claims: tuple[str, ...] = ()
    description: str = ""
    digest: str = ""
    suites: dict[str, Any] = field(default_factory=dict, compare=False)  # suite -> Suite

    def arm(self, name: str) -> Arm:
        for a in self.arms:
            if a.name == name:
                return a
        raise KeyError(name)


def stack_paths() -> dict[str, Path]:
    """The project's stacks: ``Pulumi.<stack>.yaml`` at the root, or an example stack under
    ``examples/<dir>/`` (a project of its own when that directory has a ``Pulumi.yaml``)."""
    found: dict[str, Path] = {}
    examples = sorted(PROJECT.glob("examples/*/Pulumi.*.yaml"))
    for path in examples + sorted(PROJECT.glob("Pulumi.*.yaml")):
        name = path.name[len("Pulumi.") : -len(".yaml")]
        if name and NAME_RE.match(name):
            found[name] = path  # the root's wins
    return found


def project_of(stack_path: Path) -> Path:
    parent = stack_path.resolve().parent
    return parent if (parent / "Pulumi.yaml").is_file() else PROJECT


OWNER_KEY = "gpulab-study:arm"  # in a copied stack file: the study and arm it belongs to


def study_stack_name(study: str, arm: str) -> str:
    """The stack of an arm given by ``stack_file``: ``study-<study>-<arm>``, or, when that is
    longer than a stack name may be (63), its first 54 characters and a hash of both names."""
    import hashlib

    name = f"study-{study}-{arm}"
    if len(name) <= 63:
        return name
    digest = hashlib.sha256(f"{study}\0{arm}".encode()).hexdigest()[:8]
    return f"{name[:54]}-{digest}"


def stack_owner(path: Path) -> str | None:
    """``<study>/<arm>`` of a stack file a study copied (its OWNER_KEY), else None."""
    try:
        doc = load_yaml(path, "stack file")  # bounded: a hostile file is one line elsewhere
    except InputError:
        return None
    config = doc.get("config") if isinstance(doc, dict) else None
    owner = config.get(OWNER_KEY) if isinstance(config, dict) else None
    return owner if isinstance(owner, str) else None


def check_stack_files(study: Study, project: Path | None = None) -> None:
    """The stacks the study's ``stack_file`` arms copy into ``project``: each one the study's
    own. A ``Pulumi.<stack>.yaml`` already there that another study's arm (or a person) made
    is refused with one line: using it would measure another lab, and ``down`` at the end
    would destroy it."""
    project = project or PROJECT
    for i, arm in enumerate(study.arms):
        if arm.stack_file is None:
            continue
        target = project / f"Pulumi.{arm.stack}.yaml"
        if not (target.exists() or target.is_symlink()):
            continue
        owner, mine = stack_owner(target), f"{study.name}/{arm.name}"
        if owner != mine:
            whose = f"study/arm {owner}" if owner else "no study (not copied by gpulab)"
            raise _bad(
                str(study.path),
                f"arms[{i}].stack_file",
                f"its stack {arm.stack} already exists ({target}) and belongs to {whose}; "
                "rename the arm or the study, or remove that stack",
            )


def find_study(ref: str) -> Path:
    """A study by path, or by name under ``studies/``."""
    path = Path(ref)
    if path.is_file():
        return path
    if NAME_RE.match(ref):
        named = STUDIES_DIR / f"{ref}.yaml"
        if named.is_file():
            return named
    if path.is_dir():
        raise UsageError(f"study file {ref!r} is a directory, not a study file")
    known = ", ".join(sorted(p.stem for p in STUDIES_DIR.glob("*.yaml"))) or "none"
    if not NAME_RE.match(ref):  # a path, not a built-in study's name
        raise UsageError(f"study file {ref!r} does not exist (built-in studies: {known})")
    raise UsageError(f"study {ref!r}: no such file and no studies/{ref}.yaml (built-in: {known})")


def _bad(where: str, key: str, what: str) -> UsageError:
    return UsageError(f"study {where}: {key}: {what}")


def _name(where: str, key: str, raw: Any) -> str:
    if not isinstance(raw, str) or not NAME_RE.match(raw):
        raise _bad(where, key, f"{_short(raw)} is not a plain name ([a-z0-9._-], at most 63)")
    return raw


def _short(raw: Any) -> str:
    text = repr(raw)
    return text if len(text) <= 60 else text[:57] + "..."


def _int(where: str, key: str, raw: Any, lo: int, hi: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise _bad(where, key, f"{_short(raw)} is not an integer ({lo}..{hi})")
    if not lo <= raw <= hi:
        raise _bad(where, key, f"{raw} is out of range {lo}..{hi}")
    return raw


def _choice(where: str, key: str, raw: Any, allowed: tuple[str, ...]) -> str:
    if raw not in allowed:
        raise _bad(where, key, f"{_short(raw)} is not one of {', '.join(allowed)}")
    return str(raw)


def _unknown(where: str, prefix: str, doc: Mapping[Any, Any], known: tuple[str, ...]) -> None:
    for key in doc:
        if key not in known:
            raise _bad(where, f"{prefix}{key}", f"unknown key (known: {', '.join(known)})")


def _relative(base: Path, raw: str) -> Path:
    p = Path(raw).expanduser()
    if not p.is_absolute() and (base / p).exists():
        return (base / p).resolve()
    return p.resolve() if p.exists() else p


def resolve_suite(where: str, key: str, raw: Any, base: Path, cache: dict[str, Any]) -> str:
    """A suite name or path, checked by loading it (the runner's own validation)."""
    from workloads.errors import InputError
    from workloads.suites import load_suite

    if not isinstance(raw, str) or not raw.strip() or len(raw) > MAX_TEXT:
        raise _bad(where, key, f"{_short(raw)} is not a suite name or .yaml path")
    ref = raw
    if raw.endswith((".yaml", ".yml")):
        ref = str(_relative(base, raw))
    if ref not in cache:
        try:
            cache[ref] = load_suite(ref)
        except InputError as exc:
            raise _bad(where, key, str(exc)) from None
    return ref


def _stack_topology(where: str, key: str, path: Path) -> str:
    from infra.config import raw_from_stack_file

    try:
        raw = raw_from_stack_file(path)
    except Exception as exc:  # a stack file that does not read: one line naming it
        raise _bad(where, key, f"{path} does not read as a stack file: {exc}") from None
    topology = raw.get("topology")
    if not isinstance(topology, str):
        raise _bad(where, key, f"{path} has no gpulab:topology")
    return topology


def _arm(where: str, i: int, raw: Any, study: str, base: Path, suite: str, cache: dict) -> Arm:  # type: ignore[type-arg]
    at = f"arms[{i}]"
    if not isinstance(raw, Mapping):
        raise _bad(where, at, "must be a mapping with name, stack (or stack_file) and exec_env")
    _unknown(where, f"{at}.", raw, ARM_KEYS)
    name = _name(where, f"{at}.name", raw.get("name"))
    from workloads import execenv

    env_raw = raw.get("exec_env")
    try:
        exec_env = execenv.canonical(env_raw if isinstance(env_raw, str) else repr(env_raw))
    except execenv.UnknownExecEnv:
        raise _bad(
            where,
            f"{at}.exec_env",
            f"{_short(env_raw)} is not one of {', '.join(execenv.accepted())}",
        ) from None
    if ("stack" in raw) == ("stack_file" in raw):
        raise _bad(
            where, f"{at}.stack", "give exactly one of stack (a name) or stack_file (a path)"
        )
    stack_file: Path | None = None
    if "stack" in raw:
        stack = _name(where, f"{at}.stack", raw["stack"])
        stacks = stack_paths()
        if stack not in stacks:
            known = ", ".join(sorted(stacks))
            raise _bad(where, f"{at}.stack", f"unknown stack {stack!r} (known: {known})")
        path = stacks[stack]
    else:
        fraw = raw["stack_file"]
        if not isinstance(fraw, str) or not fraw.strip():
            raise _bad(where, f"{at}.stack_file", f"{_short(fraw)} is not a path")
        path = _relative(base, fraw)
        if path.is_dir():
            raise _bad(where, f"{at}.stack_file", f"{fraw!r} is a directory, not a stack file")
        if not path.is_file():
            raise _bad(where, f"{at}.stack_file", f"no such file {fraw!r}")
        stack_file, stack = path, study_stack_name(study, name)
    topology = _stack_topology(
        where, f"{at}.stack" if stack_file is None else f"{at}.stack_file", path
    )
    config: tuple[tuple[str, Any], ...] = ()
    if "config" in raw:
        from infra.study.arm_config import ArmConfigError, parse_config

        try:
            config = parse_config(raw["config"], path, name)
        except ArmConfigError as exc:
            raise _bad(where, f"{at}.config{exc.key}", exc.what) from None
        stack_file, stack = path, study_stack_name(study, name)
    sharing = raw.get("sharing")
    if sharing is not None:
        from workloads.errors import InputError
        from workloads.setting import make_setting

        try:
            make_setting("local", exec_env, sharing if isinstance(sharing, str) else repr(sharing))
        except InputError as exc:
            raise _bad(where, f"{at}.sharing", str(exc)) from None
    arm_suite = suite
    if "suite" in raw:
        arm_suite = resolve_suite(where, f"{at}.suite", raw["suite"], base, cache)
    label = _name(where, f"{at}.label", raw["label"]) if "label" in raw else name
    project = PROJECT if stack_file is not None else project_of(path)
    return Arm(
        name, exec_env, stack, topology, stack_file, sharing, arm_suite, label, project, config
    )


def parse_study(doc: Any, path: Path, digest: str = "") -> Study:
    where = str(path)
    if not isinstance(doc, Mapping):
        raise UsageError(f"study {where}: must be a YAML mapping with name, suite and arms")
    _unknown(where, "", doc, STUDY_KEYS)
    for key in ("name", "suite", "arms"):
        if key not in doc:
            raise _bad(where, key, "required")
    name = _name(where, "name", doc["name"])
    base = path.resolve().parent
    cache: dict[str, Any] = {}
    suite = resolve_suite(where, "suite", doc["suite"], base, cache)
    desc = doc.get("description", "")
    if not isinstance(desc, str) or len(desc) > MAX_TEXT:
        raise _bad(where, "description", f"a string of at most {MAX_TEXT} characters")
    repeats = _int(where, "repeats", doc.get("repeats", 1), 1, MAX_REPEATS)
    order = _choice(where, "order", doc.get("order", "interleaved"), ORDERS)
    seed = doc.get("seed")
    if seed is not None:
        seed = _int(where, "seed", seed, 0, MAX_SEED)
    rebuild = _choice(where, "rebuild", doc.get("rebuild", "never"), REBUILDS)
    arms_raw = doc["arms"]
    if not isinstance(arms_raw, list) or not arms_raw:
        raise _bad(where, "arms", "a non-empty list of arms")
    if len(arms_raw) > MAX_ARMS:
        raise _bad(where, "arms", f"{len(arms_raw)} arms; at most {MAX_ARMS}")
    arms = tuple(_arm(where, i, a, name, base, suite, cache) for i, a in enumerate(arms_raw))
    seen: set[str] = set()
    labels: set[str] = set()
    copied: dict[str, int] = {}  # stack name -> the arm that copies its stack file there
    for i, a in enumerate(arms):
        if a.name in seen:
            raise _bad(where, f"arms[{i}].name", f"{a.name!r} is named twice")
        if a.label in labels:
            raise _bad(where, f"arms[{i}].label", f"{a.label!r} is another arm's label")
        if a.stack_file is not None and a.stack in copied:
            raise _bad(where, f"arms[{i}].stack_file", f"its stack name {a.stack} is also "
                       f"arms[{copied[a.stack]}]'s; rename one of the arms")  # fmt: skip
        seen.add(a.name)
        labels.add(a.label)
        if a.stack_file is not None:
            copied[a.stack] = i
    for i, a in enumerate(arms):
        if a.stack_file is None and a.stack in copied:
            raise _bad(where, f"arms[{copied[a.stack]}].stack_file", f"its stack name {a.stack} "
                       f"is the stack arms[{i}] names; rename the arm")  # fmt: skip
    baseline = doc.get("baseline", arms[0].name)
    if not isinstance(baseline, str) or baseline not in seen:
        names = ", ".join(a.name for a in arms)
        raise _bad(where, "baseline", f"{_short(baseline)} is not an arm ({names})")
    claims = _claims(where, doc.get("claims", []))
    return Study(
        name,
        path,
        suite,
        arms,
        repeats,
        order,
        seed,
        rebuild,
        str(baseline),
        claims,
        desc,
        digest,
        cache,
    )


def _claims(where: str, raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) > MAX_CLAIMS:
        raise _bad(where, "claims", f"a list of at most {MAX_CLAIMS} claim ids (paper/id)")
    from report.published import load_published

    known = load_published().claim_texts
    out: list[str] = []
    for i, c in enumerate(raw):
        if not isinstance(c, str) or c not in known:
            raise _bad(
                where,
                f"claims[{i}]",
                f"unknown claim {_short(c)} (ids of workloads/reference/published-results.yaml, "
                "e.g. closer2018/single_synthetic)",
            )
        if c not in out:
            out.append(c)
    return tuple(out)


def load_study(ref: str) -> Study:
    """Read and validate a study by path or built-in name; UsageError (one line) when bad."""
    import hashlib

    path = find_study(ref)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"study {path}: cannot be read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise UsageError(f"study {path}: larger than {MAX_FILE_BYTES} bytes")
    try:  # bounded: aliases, depth, duplicate keys (workloads.inputs)
        doc = parse_yaml(data.decode("utf-8", errors="replace"), f"study {path}:")
    except InputError as exc:
        raise UsageError(str(exc)) from None
    return parse_study(doc, path, hashlib.sha256(data).hexdigest()[:16])
