"""Help that helps: `gpulab --help` lists every command without importing one (lazy), each
command's help shows its defaults and readable metavars, paragraphs wrap to the terminal (no
hard-wrapped ragged lines), examples stay one per line, docs are named by `gpulab docs TOPIC`."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from infra.cli import COMMANDS, command
from tests.cli.conftest import GPULAB

BOX = re.compile(r"[╭╮╰╯│─┏┓┃━]")


def test_root_help_imports_no_command_module() -> None:
    code = (
        "import sys, infra.cli\n"
        "rc = infra.cli.main(['--help'])\n"
        "print('\\n'.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=60, check=True)  # fmt: skip
    loaded = set(r.stderr.split())
    assert not {e.module for e in COMMANDS.values()} & loaded
    heavy = {"rich", "pydantic", "yaml", "workloads.bench_options", "report", "infra.config"}
    assert not heavy & loaded, heavy & loaded
    for name, entry in COMMANDS.items():  # every command listed, with its line
        assert re.search(rf"^  {name}\s+{re.escape(entry.help[:30])}", r.stdout, re.M), name


def _first_paragraph(text: str) -> str:
    return " ".join(text.strip().split("\n\n")[0].split())


def test_the_listed_line_is_each_commands_own_first_line() -> None:
    root = command()
    for name, entry in COMMANDS.items():
        assert _first_paragraph(root.commands[name].help or "") == entry.help, name


def _help(*args: str, columns: int = 100) -> str:
    env = {"COLUMNS": str(columns), "NO_COLOR": "1", "PATH": "/usr/bin:/bin"}
    r = subprocess.run([GPULAB, *args, "-h"], capture_output=True, text=True, env=env,
                       timeout=60)  # fmt: skip
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_report_shows_where_its_output_goes() -> None:
    """The issue's case: `--out-dir` showed "Output directory ." (the default swallowed)."""
    out = _help("report")
    flat = " ".join(out.split())
    assert "--out-dir DIR Where the report goes (default: <results root>/report" in flat
    assert "Default: the results root ($GPULAB_RESULTS, else ./results)" in flat
    assert "[default: gpulab report]" in flat  # typer's own defaults are shown too
    assert "Usage: gpulab report [OPTIONS] [INPUT]..." in out


@pytest.mark.parametrize("args", [["report"], ["study", "run"], ["bench"], ["list"], ["init"]])
def test_metavars_are_readable(args: list[str]) -> None:
    """The issue's cases: `[INPUT...]...`, `{STUDY}`, `M/T/W/R/PX`; and no rich boxes."""
    out = _help(*args)
    assert "{" not in out.split("Options:")[0] and "...]..." not in out
    assert not BOX.search(out)
    assert not re.search(r"--\w[\w-]* (M|T|W|R|PX|K)\b", out), out


def test_bench_metavars_name_what_they_take() -> None:
    out = _help("bench")
    for option, metavar in (("--model", "MODEL"), ("--steps", "STEPS"), ("--warmup", "STEPS"),
                            ("--repeats", "N"), ("--image-size", "PIXELS"),
                            ("--sync-every", "auto|N|tf_cnn")):  # fmt: skip
        assert f"{option} {metavar}" in out, option


def test_paragraphs_wrap_to_the_terminal_not_to_the_source() -> None:
    """The help's paragraphs are rewrapped at the terminal's width (at most 100 columns):
    every line of a paragraph but its last is nearly full, at 60 and at 100 columns; the
    examples keep one command per line."""
    for columns in (60, 100):
        out = _help("up", columns=columns)
        description = out.split("Examples:")[0].split("\n\n")[1:]
        for paragraph in description:
            lines = paragraph.splitlines()
            assert all(columns - 25 <= len(ln) <= columns for ln in lines[:-1]), lines
        examples = out.split("Examples:")[1].split("Arguments:")[0]
        assert "  gpulab up -s nova-pci --state-url file://~/.pulumi-state\n" in examples


def test_help_names_docs_by_topic_not_by_checkout_path() -> None:
    """The issue's case: help pointed at docs/cli.md, meaningless outside the checkout."""
    root = subprocess.run([GPULAB, "-h"], capture_output=True, text=True, timeout=60).stdout
    assert "(gpulab docs cli)" in " ".join(root.split())
    for args in (["run", "local"], ["bench"], ["validate"], ["up"], ["study", "run"]):
        out = _help(*args)
        assert not re.search(r"\bdocs/[\w-]+\.md\b", out), (args, out)
