"""Install the collections of collections/requirements.yml into this interpreter's
site-packages (where every ansible command of the venv finds them, as it found the bundle's).

Galaxy is not needed: the pinned ``ansible`` bundle wheel (its ``ansible==`` line in
constraints.txt) is fetched from the package index with pip and only the listed collections are
extracted from it; each one's MANIFEST.json must carry the version requirements.yml pins.
Usage: python collections/install.py [--wheel-dir DIR]  (run by scripts/venv.sh)
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def bundle_version() -> str:
    text = (REPO / "constraints.txt").read_text(encoding="utf-8")
    m = re.search(r"(?m)^ansible==([0-9][0-9.]*)\s*$", text)
    if m is None:
        sys.exit(
            "gpulab: error: constraints.txt pins no ansible==VERSION (the collections' source)"
        )
    return m[1]


def main(argv: list[str]) -> int:
    wheels = (
        Path(argv[argv.index("--wheel-dir") + 1])
        if "--wheel-dir" in argv
        else REPO / ".cache/wheels"
    )
    wanted = yaml.safe_load((REPO / "collections/requirements.yml").read_text())["collections"]
    version = bundle_version()
    wheel = wheels / f"ansible-{version}-py3-none-any.whl"
    if not wheel.is_file():
        subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             f"ansible=={version}", "--dest", str(wheels)],
            check=True,
        )  # fmt: skip
    site = Path(sysconfig.get_paths()["purelib"])
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        for item in wanted:
            ns, name = item["name"].split(".")
            prefix = f"ansible_collections/{ns}/{name}/"
            manifest = json.loads(zf.read(prefix + "MANIFEST.json"))
            got = manifest["collection_info"]["version"]
            if got != str(item["version"]):
                sys.exit(f"gpulab: error: ansible {version} holds {item['name']} {got}, "
                         f"collections/requirements.yml pins {item['version']}")  # fmt: skip
            target = site / prefix
            if target.exists():
                shutil.rmtree(target)
            zf.extractall(site, [n for n in names if n.startswith(prefix)])
            print(f"==> collection {item['name']} {got} (from ansible {version})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
