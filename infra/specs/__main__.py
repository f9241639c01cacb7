"""``python -m infra.specs``: the ExecEnv and Topology tables as Markdown."""

from __future__ import annotations

from infra.specs import topology
from workloads import execenv


def _row(*cells: str) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def execenv_table() -> list[str]:
    lines = [
        _row("exec env", "container", "roles", "launch", "image", "record label"),
        _row(*["---"] * 6),
    ]
    for e in execenv.ENVS.values():
        if e.launch is None:
            launch = f"Job: {e.job}"
        else:
            launch = " ".join(execenv.lab_launch_argv(e.name)) or "(the runner itself)"
        name = e.name + (f" (alias {', '.join(e.aliases)})" if e.aliases else "")
        image = f"{e.image.lab_var}: {e.image.build}" if e.image else "-"
        lines.append(
            _row(name, "yes" if e.container else "no", ", ".join(e.roles), f"`{launch}`", image,
                 e.record_label)
        )  # fmt: skip
    return lines


def topology_table() -> list[str]:
    lines = [
        _row("topology", "builder", "gpu_path -> setting", "default envs", "keys"),
        _row(*["---"] * 5),
    ]
    for t in topology.registry().values():
        settings = ", ".join(f"{p} -> {s}" for p, s in t.settings.items())
        envs = ", ".join(t.default_envs) + "".join(
            f"; mode {m}: {', '.join(e)}" for m, e in t.mode_envs.items()
        )
        lines.append(_row(t.name, t.builder, settings, envs, str(len(t.fields))))
    return lines


def main() -> None:
    print("\n".join(["## ExecEnv", "", *execenv_table(), "", "## Topology", "", *topology_table()]))


if __name__ == "__main__":
    main()
