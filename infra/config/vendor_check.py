"""What the GPU roles would install from the vendors' repositories, and whether those publish it.

Each role that installs from a vendor repository says what in one variable of its
``vars/main.yml``, ``<role>_vendor_packages`` (a list of ``{vendor, name, version}``). This module
renders that variable with Ansible's own templating, from the role's defaults and vars, the
facts of a distribution (:data:`infra.vendor_packages.DISTROS`) and, for ``gpulab validate``, a
stack's ``gpulab:site`` overrides (passed as data: they are never templated), and checks each
package against the vendor lists (:func:`infra.vendor_packages.problem`).

:func:`problems` is the validation step: a ``gpulab:site`` value that makes a role ask for a name
or version the repository of the stack's distribution does not publish is refused, naming the
key, the version and the distribution. The stack's distribution comes from its image name
(``gpulab:image`` / ``gpulab:template``, e.g. ``ubuntu-24.04-...``, ``Rocky-9-...``), or this
machine's ``/etc/os-release`` for the local topology; when the name says none, every supported
distribution is checked and the ones that lack the package are named.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from infra.config.roles import ROLES_DIR
from infra.topologies import get as topology_spec
from infra.vendor_packages import DISTROS, problem

# role -> the variable of its vars/main.yml that lists what it installs from a vendor
VENDOR_ROLES: dict[str, str] = {
    "nvidia_driver": "nvidia_driver_vendor_packages",
    "cuda_toolkit": "cuda_toolkit_vendor_packages",
    "nvidia_container_toolkit": "nvidia_container_toolkit_vendor_packages",
    "docker_engine": "docker_engine_vendor_packages",
    "apptainer": "apptainer_vendor_packages",
}

# The first match in a lowercased image name picks the distribution.
IMAGE_DISTROS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("ubuntu2404", re.compile(r"ubuntu\D{0,3}24\.?04|noble")),
    ("ubuntu2204", re.compile(r"ubuntu\D{0,3}22\.?04|jammy")),
    ("debian12", re.compile(r"debian\D{0,3}12|bookworm")),
    ("rhel9", re.compile(r"(rocky|rhel|alma|centos|redhat|red-hat)\D{0,12}9")),
)
# Names of a family this module has no lists for (another release): not checked.
OTHER_RELEASES = re.compile(r"ubuntu|debian|rocky|rhel|alma|centos|redhat|fedora|coreos|suse")


def _load(path: Path) -> dict[str, Any]:
    """A role's defaults or vars file, its strings trusted as templates (they are the role's own
    expressions, as Ansible trusts them when it loads the role)."""
    # Ansible costs about 0.7 s to import: only a stack that sets a GPU role's input pays it
    from ansible.parsing.dataloader import DataLoader

    try:  # ansible: only when a stack sets a GPU role's input (start-up time, as above)
        from ansible.template import trust_as_template
    except ImportError:  # ansible-core < 2.19 templates every string
        trust_as_template = str

    def trusted(value: Any) -> Any:
        if isinstance(value, str):
            return trust_as_template(value)
        if isinstance(value, list):
            return [trusted(v) for v in value]
        if isinstance(value, dict):
            return {k: trusted(v) for k, v in value.items()}
        return value

    data = DataLoader().load_from_file(str(path)) if path.is_file() else None
    return {k: trusted(v) for k, v in dict(data or {}).items()}


def _as_data(values: dict[str, Any]) -> dict[str, Any]:
    """Site values as data that is never templated: ansible-core 2.19 templates only strings
    trusted as templates (these are not); older releases template every string that is not
    wrapped as unsafe."""
    try:  # ansible: only when a stack sets a GPU role's input (start-up time)
        from ansible.template import trust_as_template  # noqa: F401
    except ImportError:  # ansible-core < 2.19: mark every value unsafe
        from ansible.utils.unsafe_proxy import wrap_var

        return {k: wrap_var(v) for k, v in values.items()}
    return dict(values)


def render(
    role: str,
    var: str,
    distro: str,
    overrides: dict[str, Any] | None = None,
    gpu_device_ids: tuple[str, ...] = (),
) -> Any:
    """The value of ``role``'s variable ``var`` on a host of ``distro`` with the role's defaults
    and vars, ``overrides`` (plain values) and GPUs of these PCI device ids (hex)."""
    # ansible is imported here, not at the top: `gpulab validate` pays for it only when a stack
    # overrides a GPU role's inputs.
    from ansible.template import Templar

    variables: dict[str, Any] = {}
    variables.update(_load(ROLES_DIR / role / "defaults" / "main.yml"))
    variables.update(_load(ROLES_DIR / role / "vars" / "main.yml"))
    variables.update(_as_data(overrides or {}))
    variables["ansible_facts"] = DISTROS[distro].facts()
    variables["gpu_facts_gpus"] = [{"device_id": d} for d in gpu_device_ids]
    variables["gpu_facts_has_gpu"] = bool(gpu_device_ids)
    variables["group_names"] = []
    variables["role_path"] = str(ROLES_DIR / role)
    return Templar(variables=variables).template(variables[var])


def role_packages(
    role: str,
    distro: str,
    overrides: dict[str, Any] | None = None,
    gpu_device_ids: tuple[str, ...] = (),
) -> list[dict[str, str]]:
    """What ``role`` installs from vendor repositories on a host of ``distro`` (see
    :func:`render`)."""
    rendered = render(role, VENDOR_ROLES[role], distro, overrides, gpu_device_ids)
    return [
        {k: str(p.get(k) or "") for k in ("vendor", "name", "version")}
        for p in (rendered if isinstance(rendered, list) else [])
    ]


def gpu_scenarios(role: str) -> list[tuple[str, tuple[str, ...]]]:
    """The GPUs a host may have, as far as ``role`` chooses by them: none, then one GPU of each
    generation of nvidia_driver's table that has a branch (for the other roles: none)."""
    out: list[tuple[str, tuple[str, ...]]] = [("no GPU seen", ())]
    if role == "nvidia_driver":
        table = _load(ROLES_DIR / role / "vars" / "main.yml").get("nvidia_driver_generations")
        for row in table or []:
            if row.get("branch"):
                out.append((str(row["generation"]), (str(row["first_device_id"]),)))
    return out


def role_problems(
    role: str, distro: str, overrides: dict[str, Any] | None = None
) -> list[tuple[str, str]]:
    """(scenario, problem) for every package ``role`` would install on ``distro`` that the
    vendor lists do not hold, over every GPU scenario."""
    found: list[tuple[str, str]] = []
    for scenario, ids in gpu_scenarios(role):
        for pkg in role_packages(role, distro, overrides, ids):
            text = problem(pkg["vendor"], distro, pkg["name"], pkg["version"])
            if text and (scenario, text) not in found:
                found.append((scenario, text))
    return found


def _os_release() -> str | None:
    fields: dict[str, str] = {}
    try:
        text = Path("/etc/os-release").read_text(encoding="utf-8")
    except OSError:
        return None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip("\"'")
    return f"{fields.get('ID', '')}-{fields.get('VERSION_ID', '')}"


def stack_distros(topology: str, image: str | None) -> tuple[list[str], str]:
    """The distributions the stack's hosts run, and how that was found (for the message)."""
    if topology_spec(topology).runs_here:
        name, how = _os_release() or "", "this machine's /etc/os-release"
    else:
        name, how = image or "", f"image {image!r}"
    lowered = name.lower()
    for key, pattern in IMAGE_DISTROS:
        if pattern.search(lowered):
            return [key], f"{how} is {DISTROS[key].title}"
    if name and OTHER_RELEASES.search(lowered):
        return [], f"{how} is no release the vendor lists cover"
    return list(DISTROS), f"{how} names no supported distribution, so each is checked"


def problems(topology: str, values: dict[str, Any]) -> list[str]:
    """One line per ``gpulab:site`` override that makes a GPU role ask a vendor repository of the
    stack's distribution for something it does not publish."""
    site = values.get("site") or {}
    if not isinstance(site, dict):
        return []
    out: list[str] = []
    touched = [r for r in VENDOR_ROLES if any(str(k).startswith(r + "_") for k in site)]
    if not touched:
        return out
    distros, how = stack_distros(topology, values.get("image") or values.get("template"))
    for role in touched:
        keys = {k: v for k, v in site.items() if str(k).startswith(role + "_")}
        shown = ", ".join(f"{k}={v!r}" for k, v in keys.items())
        lacking: dict[str, list[str]] = {}
        for distro in distros:
            for _, text in role_problems(role, distro, keys):
                lacking.setdefault(text.split(" (")[0], []).append(distro)
        for text, where in lacking.items():
            out.append(
                f"gpulab:site {shown}: {text} ({how}; missing on {', '.join(where)}; the "
                "lists are in infra/vendor_packages/, with their sources)"
            )
    return out
