"""Entry point of a gpulab lab project made from this example (``pulumi new``): runs the
gpulab Pulumi program of the gpulab installed in the active virtualenv (``scripts/venv.sh``
installs the repository editable, so the program is the repository's ``__main__.py``)."""

import runpy
from pathlib import Path

import infra

runpy.run_path(str(Path(infra.__file__).resolve().parents[1] / "__main__.py"), run_name="__main__")
