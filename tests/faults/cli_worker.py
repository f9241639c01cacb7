"""A gpulab CLI worker under an address-space limit, for the property-based tests.

``python -m tests.faults.cli_worker LIMIT_MB`` sets RLIMIT_AS, then reads one JSON case a line
(``{"argv": [...], "cwd": "..."}``) and answers one JSON line: ``rc``, ``stderr``, ``stdout``
and ``traceback`` (anything the CLI let escape, MemoryError included). The measurement itself
(workloads.bench.run_bench) and the data writers are replaced by stubs that only count what
they were asked to do: the tests check the command line contract, not a benchmark run.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import resource
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any


def _stubs() -> None:
    import workloads.bench as bench
    import workloads.data.imagenet_writer as imagenet_writer
    import workloads.data.mnist as mnist

    def run_bench(suite: Any, out: Any, **kw: Any) -> Any:
        return bench.BenchResult(Path(out), kw.get("run_id") or "stub")

    def write_imagenet_like(out: Any, images: int, *a: Any) -> Any:
        return SimpleNamespace(images=images, files=[], bytes=0, out_dir=out)

    def write_mnist_like(out: Any, *a: Any, **kw: Any) -> list[Path]:
        return []

    bench.run_bench = run_bench
    imagenet_writer.write_imagenet_like = write_imagenet_like  # type: ignore[assignment]
    mnist.write_mnist_like = write_mnist_like  # type: ignore[assignment]


def main() -> None:
    limit = int(sys.argv[1]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    from infra.cli import main as gpulab

    _stubs()
    reply = sys.stdout  # the redirections below replace sys.stdout, not this reference
    for line in sys.stdin:
        case = json.loads(line)
        os.chdir(case["cwd"])
        out, err = io.StringIO(), io.StringIO()
        tb = None
        rc: Any = None
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                rc = gpulab(case["argv"])
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else 1
            except BaseException:
                tb = traceback.format_exc()
        answer = {"rc": rc, "stdout": out.getvalue()[-2000:], "stderr": err.getvalue(),
                  "traceback": tb}  # fmt: skip
        print(json.dumps(answer), file=reply, flush=True)


if __name__ == "__main__":
    main()
