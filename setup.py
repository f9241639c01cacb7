"""The wheel carries the product's files that are not Python: setuptools' hook for them.

``pyproject.toml`` holds everything else. A checkout keeps these files at its root (the Pulumi
project is the root: ``pulumi up`` there, or an editable install); a wheel has no root, so the
build copies them into ``infra/project/`` of the wheel, where ``infra.paths.PROJECT`` finds
them when gpulab is installed without a checkout. In the copy, ``Pulumi.yaml`` names no
``virtualenv`` (a ``.venv`` beside the installed package does not exist): the engine runs the
program with the interpreter gpulab runs on (``infra/automation.py``). An editable install
copies nothing.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
# What the product reads at run time from the project (infra/paths.py says who reads what).
PROJECT_FILES = (
    "Pulumi.yaml",
    "Pulumi.local.yaml",
    "__main__.py",
    "ansible.cfg",
    "collections/requirements.yml",
    "playbooks",
    "templates",
    "studies",
    "examples",
    "docs",  # the pages of `gpulab docs TOPIC`
)
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", ".ansible", "*.retry")


def bundled_pulumi_yaml(text: str) -> str:
    """The project file without its ``virtualenv:`` runtime option."""
    return re.sub(r"(?m)^[ \t]+virtualenv:.*\n", "", text)


class BuildPyWithProject(build_py):
    """build_py, then the project's files into ``<build>/infra/project/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        dest = Path(self.build_lib) / "infra" / "project"
        shutil.rmtree(dest, ignore_errors=True)
        for name in PROJECT_FILES:
            src, out = ROOT / name, dest / name
            if src.is_dir():
                shutil.copytree(src, out, ignore=SKIP)  # links followed: a wheel holds files
            else:
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(src, out)
        project = dest / "Pulumi.yaml"
        project.write_text(bundled_pulumi_yaml(project.read_text(encoding="utf-8")), "utf-8")


setup(cmdclass={"build_py": BuildPyWithProject})
