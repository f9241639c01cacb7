"""Property-based bounds (Hypothesis): generated stack configs, suite files and command lines
either succeed or end with exit code 2 and one line on stderr; never a traceback, and never more
memory than the worker's address-space limit (RLIMIT_AS, tests/faults/cli_worker.py).

The measurement and the data writers are stubbed in the worker (no benchmark runs); everything
up to them (parsing, bounds, planning) is the real code. Settings: see SETTINGS below; the
counters print how many examples each property ran (``pytest -s``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

REPO = Path(__file__).resolve().parents[2]
LIMIT_MB = 2048
SETTINGS = settings(
    max_examples=120,
    deadline=None,  # one example is one request to the worker: its time varies with the load
    database=None,
    derandomize=True,  # the same examples on every run, so a failure reproduces
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
RAN: Counter[str] = Counter()


class Worker:
    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.faults.cli_worker", str(LIMIT_MB)],
            cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def run(self, argv: list[str], cwd: Path) -> dict[str, Any]:
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write(json.dumps({"argv": argv, "cwd": str(cwd)}) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the worker died (rc {self.proc.poll()}) on {argv}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def worker() -> Iterator[Worker]:
    w = Worker()
    yield w
    w.stop()
    print("\nexamples run:", dict(RAN))


def check_contract(answer: dict[str, Any], argv: list[str]) -> None:
    RAN[f"rc {answer['rc']}"] += 1
    assert answer["traceback"] is None, (argv, answer["traceback"])
    assert "Traceback" not in answer["stderr"], (argv, answer["stderr"])
    if answer["rc"] in (0, None):
        return
    lines = [ln for ln in answer["stderr"].splitlines() if ln.strip()]
    assert answer["rc"] == 2, (argv, answer)
    assert len(lines) == 1, (argv, lines)
    assert lines[0].startswith("gpulab: error: "), (argv, lines)


# Values a user (or a typo) can put where a number belongs.
HUGE = st.sampled_from(
    [10**26, 10**20, 2**63, -(2**63), "1e26", "9" * 30, "9" * 5000, 1e20, float("nan"),
     float("inf"), 99999999999, "99999999999"]
)  # fmt: skip
NUMBERISH = st.one_of(
    st.integers(), st.integers(min_value=-3, max_value=70), HUGE, st.floats(),
    st.text(max_size=12), st.booleans(), st.none(), st.lists(st.integers(), max_size=3),
)  # fmt: skip

BASE = {
    "gpulab:topology": "nova-pci",
    "gpulab:lab": "hyp",
    "gpulab:ssh_public_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI hyp",
    "gpulab:external_network": "public",
    "gpulab:admin_cidr": "203.0.113.0/24",
    "gpulab:image": "ubuntu-22.04",
    "gpulab:flavor_vcpus": 8,
    "gpulab:flavor_ram_mb": 65536,
    "gpulab:flavor_disk_gb": 100,
    "gpulab:pci_alias": "p100:1",
}
NOVA_NUMBERS = ["host_count", "flavor_vcpus", "flavor_ram_mb", "flavor_disk_gb", "numa_nodes"]
OTHER_KEYS = {
    "pci_alias": st.one_of(st.integers(0, 10**20).map(lambda n: f"p100:{n}"), st.text(max_size=20)),
    "dns_nameservers": st.one_of(st.lists(st.sampled_from(["8.8.8.8", "x"]), max_size=400),
                                 NUMBERISH),
    "admin_cidr": st.sampled_from(["0.0.0.0/0", "::/0", "10.0.0.0/8", "1.2.3.4", "x/99"]),
    "allow_world": st.one_of(st.booleans(), st.text(max_size=5)),
    "workload_variables": st.dictionaries(
        st.sampled_from(["ansible_user", "workload_run_suite", "workload_run_x", "a b"]),
        st.one_of(st.text(max_size=8), st.integers()), max_size=3),
}  # fmt: skip


@SETTINGS
@given(
    numbers=st.dictionaries(st.sampled_from(NOVA_NUMBERS), NUMBERISH, max_size=3),
    others=st.fixed_dictionaries({}, optional=OTHER_KEYS),
)
@pytest.mark.integration
def test_generated_stack_configs(
    worker: Worker, tmp_path: Path, numbers: dict[str, Any], others: dict[str, Any]
) -> None:
    RAN["stack configs"] += 1
    config = dict(BASE)
    config.update({f"gpulab:{k}": v for k, v in {**numbers, **others}.items()})
    stack = tmp_path / "Pulumi.hyp.yaml"
    stack.write_text(yaml.safe_dump({"config": config}))
    argv = ["validate", str(stack)]
    check_contract(worker.run(argv, tmp_path), argv)


@SETTINGS
@given(text=st.one_of(st.text(max_size=200), st.sampled_from([
    "config:\n  gpulab:topology: local\n  gpulab:lab: ab\n  gpulab:host_count: 1e26\n",
    "config:\n  gpulab:topology: nova-pci\n  gpulab:host_count: " + "9" * 6000 + "\n",
    "config: [" * 50, "\x00\x01", "config: {gpulab:lab: &a [*a]}",
])))  # fmt: skip
def test_generated_stack_file_text(worker: Worker, tmp_path: Path, text: str) -> None:
    RAN["stack file texts"] += 1
    stack = tmp_path / "Pulumi.t.yaml"
    stack.write_text(text, encoding="utf-8", errors="surrogatepass")
    argv = ["validate", str(stack)]
    check_contract(worker.run(argv, tmp_path), argv)


ENTRY_NUMBERS = ["batch", "steps", "warmup", "repeats", "image_size", "timeout_s"]


@SETTINGS
@given(
    entry=st.dictionaries(st.sampled_from(ENTRY_NUMBERS), NUMBERISH, max_size=4),
    copies=st.integers(min_value=1, max_value=3),
    overrides=st.dictionaries(
        st.sampled_from(["--steps", "--warmup", "--repeats"]),
        st.one_of(st.integers(-2, 10**12).map(str), st.text(max_size=8), HUGE.map(str)),
        max_size=2,
    ),
)
def test_generated_suites(
    worker: Worker, tmp_path: Path, entry: dict[str, Any], copies: int, overrides: dict[str, str]
) -> None:
    RAN["suite files"] += 1
    items = [{"experiment": f"e{i}", "model": "alexnet", **entry} for i in range(copies)]
    suite = tmp_path / "hyp.yaml"
    suite.write_text(yaml.safe_dump({"name": "hyp", "experiments": items}))
    argv = ["bench", "--suite", str(suite), "--out", str(tmp_path / "o.jsonl")]
    for k, v in overrides.items():
        argv += [k, v]
    check_contract(worker.run(argv, tmp_path), argv)


OPTION_VALUES = st.one_of(
    st.integers(-5, 5000).map(str), HUGE.map(str), st.text(max_size=10), st.just("")
)
BENCH_OPTIONS = ["--batch", "--steps", "--warmup", "--repeats", "--image-size"]
DATA_COMMANDS = {
    "imagenet-like": ["--images", "--shards", "--image-size", "--classes", "--seed"],
    "mnist-like": ["--train", "--test", "--seed"],
}


@SETTINGS
@given(
    which=st.sampled_from(["bench", "imagenet-like", "mnist-like"]),
    values=st.dictionaries(
        st.sampled_from(
            sorted({*BENCH_OPTIONS, *(o for opts in DATA_COMMANDS.values() for o in opts)})
        ),
        OPTION_VALUES,
        max_size=4,
    ),
)
def test_generated_command_lines(
    worker: Worker, tmp_path: Path, which: str, values: dict[str, str]
) -> None:
    RAN["command lines"] += 1
    if which == "bench":
        argv = ["bench", "--model", "alexnet", "--out", str(tmp_path / "o.jsonl")]
        known = BENCH_OPTIONS
    else:
        argv = ["data", which, "--out-dir", str(tmp_path / "data")]
        known = DATA_COMMANDS[which]
        if which == "imagenet-like":
            argv += ["--images", values.pop("--images", "10")]
    for k, v in values.items():
        if k in known:
            argv += [k, v]
    check_contract(worker.run(argv, tmp_path), argv)


@pytest.mark.integration
def test_the_worker_enforces_its_memory_limit(worker: Worker, tmp_path: Path) -> None:
    """The limit is real: a plan of 10**9 measurements cannot be built under it (the old
    ``--repeats 99999999999`` list), while the bounded one is refused before planning."""
    code = "x = [(0, r) for r in range(10**9)]"
    r = subprocess.run(
        [sys.executable, "-c", f"import resource; l={LIMIT_MB}*2**20; "
         f"resource.setrlimit(resource.RLIMIT_AS, (l, l)); {code}"],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert r.returncode != 0 and "MemoryError" in r.stderr
    argv = ["bench", "--model", "alexnet", "--repeats", "99999999999", "--out", "o.jsonl"]
    answer = worker.run(argv, tmp_path)
    assert answer["rc"] == 2 and "--repeats must be at most 1000" in answer["stderr"]
