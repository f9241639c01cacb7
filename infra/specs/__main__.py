"""``python -m infra.specs``: the ExecEnv and Topology tables as Markdown."""

from __future__ import annotations

from infra.specs.docs import execenv_table, key_table, topology_table


def main() -> None:
    print("\n".join(["## ExecEnv", "", *execenv_table(), "", "## Topology", "",
                     *topology_table(), "", "## Keys", "", *key_table()]))  # fmt: skip


if __name__ == "__main__":
    main()
