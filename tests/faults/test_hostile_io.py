"""Hostile inputs and outputs for the commands that read records, YAML files and write files:
exit 2, one line on stderr naming the key or path, no traceback, no hang, no file left behind.

Each case runs the real CLI (``.venv/bin/gpulab`` in a subprocess, cwd an empty directory)
under a timeout, so a hang fails the test instead of holding it. A read-only directory and a
full disk are real: the command runs in a private mount namespace (``unshare``) where the
output directory is bind-mounted read-only, or is a tmpfs filled to the last block; what is
left in that directory is listed from inside the namespace. The table of cases (command,
case, what the line must name) is :data:`CASES`.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.report.synth import paper_like, reps, write

GPULAB = str(Path(sys.executable).parent / "gpulab")
TIMEOUT_S = 60  # a case that hangs fails here; every case ends in a few seconds


@dataclass
class Case:
    argv: list[str]
    names: str  # what the one line must contain (the key, the path)
    confine: str = ""  # "ro": the out directory read-only; "full": on a full tmpfs
    env: dict[str, str] = field(default_factory=dict)
    server: Callable[[socket.socket], None] | None = None  # a hostile Pushgateway


def good_records(d: Path) -> Path:
    recs = reps("local", "native", experiment="e", model="resnet50", ips=100.0, repeats=3)
    recs += reps("local", "docker", experiment="e", model="resnet50", ips=90.0, repeats=3)
    return write(d / "in" / "records.jsonl", recs)


def record_line(d: Path, **fields: object) -> str:
    """A valid record (the first of :func:`good_records`) with ``fields`` set, a new id."""
    rec = json.loads((d / "in" / "records.jsonl").read_text().splitlines()[0])
    rec.update(fields)
    rec["record_id"] = "f" * 32
    return json.dumps(rec)


def jsonl(d: Path, name: str, *lines: str) -> Path:
    p = d / "in" / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text("".join(f"{ln}\n" for ln in lines))
    return p


DEEP = "[" * 5000 + "]" * 5000  # 10 KB of brackets: a traceback in Python's json before
BOMB = "".join(  # a billion laughs: 9 levels of 9 aliases (~450 bytes, 387 million values)
    f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9) if i else ', '.join(['lol'] * 9)}]\n"
    for i in range(9)
)
STACK = "config:\n  gpulab:topology: local\n  gpulab:lab: local\n  gpulab:ssh_user: root\n"


def out_dir(d: Path) -> Path:
    p = d / "out"
    p.mkdir(exist_ok=True)
    return p


def dripping(conn: socket.socket) -> None:
    """A gateway that answers one byte every second, forever (until the client leaves)."""
    try:
        conn.recv(65536)
        for ch in b"HTTP/1.1 200 OK\r\n" * 100:
            conn.sendall(bytes([ch]))
            time.sleep(1)
    except OSError:
        return


def garbage(conn: socket.socket) -> None:
    """A gateway that answers bytes that are not HTTP."""
    try:
        conn.recv(65536)
        conn.sendall(b"\x00\xffSSH-2.0-OpenSSH_9.6\r\n\r\n")
    except OSError:
        return


def cases(d: Path) -> dict[str, Case]:
    """Every case, made in ``d`` (the work directory): name -> Case."""
    good = good_records(d)
    out = out_dir(d)
    c: dict[str, Case] = {}

    def rep(records: Path) -> list[str]:
        return ["report", str(records), "--out-dir", str(out / "r")]

    # --- report: records ---------------------------------------------------------------
    deep = jsonl(d, "deep.jsonl", record_line(d)[:-1] + ', "claims": ' + DEEP + "}")
    c["report: record nested 5,000 levels"] = Case(rep(deep), "deep.jsonl:1: JSON nested deeper")
    claims = jsonl(d, "claims.jsonl", good.read_text().strip(), record_line(d, claims=[{}]))
    c["report: claims: [{}]"] = Case(rep(claims), "claims.jsonl:7: record field claims[0]")
    flags = jsonl(d, "flags.jsonl", good.read_text().strip(), record_line(d, setting_flags=[7]))
    c["report: setting_flags: [7]"] = Case(
        rep(flags), "flags.jsonl:7: record field setting_flags[0]"
    )
    digits = jsonl(d, "digits.jsonl", record_line(d)[:-1] + ', "repeat": ' + "9" * 5000 + "}")
    c["report: a 5,000-digit number"] = Case(rep(digits), "digits.jsonl:1: holds a number too long")
    fifo_dir = d / "fifo"
    fifo_dir.mkdir()
    os.mkfifo(fifo_dir / "r.jsonl")
    c["report: a FIFO in the records directory"] = Case(
        rep(fifo_dir), "r.jsonl' is not a regular file (a FIFO)"
    )
    c["report: a FIFO named as input"] = Case(
        rep(fifo_dir / "r.jsonl"), "is not a regular file (a FIFO)"
    )
    loop = d / "loop"
    loop.mkdir()
    (loop / "a.jsonl").symlink_to(loop / "b.jsonl")
    (loop / "b.jsonl").symlink_to(loop / "a.jsonl")
    c["report: a symlink loop in the records directory"] = Case(
        rep(loop), "Too many levels of symbolic links"
    )
    c["report: an input name over 255 bytes"] = Case(
        rep(d / ("n" * 256 + ".jsonl")),
        "longer than the file system allows",
    )
    empty = jsonl(d, "empty.jsonl")
    c["report: a 0-byte record file"] = Case(rep(empty), "no records in")
    binary = d / "in" / "binary.jsonl"
    binary.write_bytes(good.read_bytes() + b"\xff\xfe\x00garbage\n")
    c["report: a record file that is not UTF-8"] = Case(
        rep(binary), "binary.jsonl' is not UTF-8 text"
    )
    summary = d / "in" / "deep.json"
    summary.write_text(DEEP)
    c["report: a summary nested 5,000 levels"] = Case(
        rep(summary), "deep.json' is JSON nested deeper"
    )
    c["report: $GPULAB_RESULTS=~nosuchuser/results"] = Case(
        ["report", "--out-dir", str(out / "r")], "'~nosuchuser/results': no such user",
        env={"GPULAB_RESULTS": "~nosuchuser/results"},
    )  # fmt: skip
    # --- report: outputs ---------------------------------------------------------------
    c["report: read-only output directory"] = Case(rep(good), f"{out}/r", confine="ro")
    c["report: full disk"] = Case(rep(good), "No space left on device", confine="full")
    paper = write(d / "in" / "paper" / "r.jsonl", paper_like())  # many figures: forked workers
    c["report: full disk, figures drawn in parallel"] = Case(
        ["report", str(paper), "--out-dir", str(out / "r")], f"{out}/r/figures/",
        confine="full", env={"GPULAB_REPORT_THREADS": "2"},
    )  # fmt: skip
    c["report: --out-dir in /proc"] = Case(
        ["report", str(good), "--out-dir", "/proc/gpulab-report"], "/proc/gpulab-report"
    )
    blocker = d / "blocker"
    blocker.write_text("a file\n")
    c["report: --out-dir is a file"] = Case(
        ["report", str(good), "--out-dir", str(blocker)], f"{blocker}"
    )
    c["report: --out-dir name over 255 bytes"] = Case(
        ["report", str(good), "--out-dir", str(out / ("r" * 256))],
        "longer than the file system allows",
    )
    old = out / "old"
    (old / "report.csv").mkdir(parents=True)
    (old / "report.md").write_text("old\n")
    c["report: report.csv is a directory"] = Case(
        ["report", str(good), "--out-dir", str(old)], f"{old}/report.csv': Is a directory"
    )
    # --- export ------------------------------------------------------------------------
    c["export parquet: record nested 5,000 levels"] = Case(
        ["export", str(deep), "--out", str(out / "x.parquet")], "deep.jsonl:1: JSON nested deeper"
    )
    c["export parquet: read-only directory"] = Case(
        ["export", str(good), "--out", str(out / "x.parquet")], f"{out}/x.parquet", confine="ro"
    )
    c["export parquet: full disk"] = Case(
        ["export", str(good), "--out", str(out / "x.parquet")], "No space left on device",
        confine="full",
    )  # fmt: skip
    c["export parquet: --out in /proc"] = Case(
        ["export", str(good), "--out", "/proc/x.parquet"], "'/proc/x.parquet'"
    )
    (out / "dir.parquet").mkdir()
    c["export parquet: --out is a directory"] = Case(
        ["export", str(good), "--out", str(out / "dir.parquet")], "dir.parquet': Is a directory"
    )
    c["export parquet: --out under a file"] = Case(
        ["export", str(good), "--out", str(blocker / "x.parquet")], "it is not a directory"
    )
    c["export parquet: --out name over 255 bytes"] = Case(
        ["export", str(good), "--out", str(out / ("x" * 256 + ".parquet"))],
        "longer than the file system allows",
    )
    c["export parquet: a FIFO in the records directory"] = Case(
        ["export", str(fifo_dir), "--out", str(out / "x.parquet")], "is not a regular file (a FIFO)"
    )
    c["export openmetrics: read-only directory"] = Case(
        ["export", str(good), "--format", "openmetrics", "--out", str(out / "m.prom")],
        f"{out}/m.prom", confine="ro",
    )  # fmt: skip
    c["export openmetrics: full disk"] = Case(
        ["export", str(good), "--format", "openmetrics", "--out", str(out / "m.prom")],
        "No space left on device", confine="full",
    )  # fmt: skip
    c["export openmetrics: --out in /proc"] = Case(
        ["export", str(good), "--format", "openmetrics", "--out", "/proc/self/m.prom"],
        "'/proc/self/m.prom'",
    )
    # --- export --pushgateway ------------------------------------------------------------
    c["push: a bad IPv6 URL"] = Case(
        ["export", str(good), "--pushgateway", "http://[::1"], "Invalid IPv6 URL"
    )
    c["push: user:password in the URL"] = Case(
        ["export", str(good), "--pushgateway", "http://bob:s3cret-pw@127.0.0.1:9/"],
        "credentials in the URL are refused",
    )
    c["push: a port out of range"] = Case(
        ["export", str(good), "--pushgateway", "http://127.0.0.1:99999"], "out of range"
    )
    c["push: a gateway answering garbage"] = Case(
        ["export", str(good), "--pushgateway", "http://127.0.0.1:{port}"], "not HTTP",
        server=garbage,
    )  # fmt: skip
    c["push: a gateway answering a byte a second"] = Case(
        ["export", str(good), "--pushgateway", "http://127.0.0.1:{port}", "--push-timeout", "3"],
        "no complete answer within 3 s", server=dripping,
    )  # fmt: skip
    netrc = d / "netrc"
    netrc.write_text("machine 127.0.0.1 login bob password two words s3cret-pw\n")
    netrc.chmod(0o600)
    c["push: a netrc file that is not netrc"] = Case(
        ["export", str(good), "--pushgateway", "http://127.0.0.1:9"], f"netrc file '{netrc}'",
        env={"NETRC": str(netrc)},
    )  # fmt: skip
    # --- data ----------------------------------------------------------------------------
    mnist = ["data", "mnist-like", "--train", "200", "--test", "10"]
    c["data: read-only directory"] = Case(
        [*mnist, "--out-dir", str(out / "m")], f"{out}/m", confine="ro"
    )
    c["data: full disk"] = Case(
        [*mnist, "--out-dir", str(out / "m")], "No space left on device", confine="full"
    )
    c["data: --out-dir in /proc"] = Case([*mnist, "--out-dir", "/proc/m"], "'/proc/m")
    c["data: --out-dir name over 255 bytes"] = Case(
        [*mnist, "--out-dir", str(out / ("m" * 256))], "longer than the file system allows"
    )
    # --- YAML: stack, suite, published, study --------------------------------------------
    for name, text, names in (
        # 587 bytes: validate walked gpulab:site's 387 million values (minutes) before
        ("a billion laughs", BOMB + STACK + "  gpulab:site: {x: *l8}\n",
         "line 6: its aliases expand to more than 100,000 values"),
        ("config: given twice", STACK + "config:\n  gpulab:topology: static\n",
         "line 5: duplicate key 'config' (first at line 1)"),
        ("an alias inside itself", STACK + "x: &x [*x]\n", "alias *x refers to the value"),
        ("nested 100 levels", STACK + "x: " + "[" * 100 + "]" * 100 + "\n", "nested deeper"),
    ):  # fmt: skip
        stack = d / "in" / f"Pulumi.{len(c)}.yaml"
        stack.write_text(text)
        c[f"validate: {name}"] = Case(["validate", str(stack)], names)
    suite = d / "in" / "suite.yaml"
    suite.write_text("name: s\nexperiments: []\n" + BOMB)
    c["bench --suite: a billion laughs"] = Case(
        ["bench", "--suite", str(suite), "--out", str(out / "b.jsonl")], "expand to more than"
    )
    dup_suite = d / "in" / "dup-suite.yaml"
    dup_suite.write_text("name: s\nexperiments: []\nname: t\n")
    c["bench --suite: a key given twice"] = Case(
        ["bench", "--suite", str(dup_suite), "--out", str(out / "b.jsonl")],
        "line 3: duplicate key 'name' (first at line 1)",
    )
    published = d / "in" / "published.yaml"
    published.write_text(BOMB)
    c["report --published: a billion laughs"] = Case(
        ["report", str(good), "--published", str(published), "--out-dir", str(out / "r")],
        "expand to more than",
    )
    study = d / "in" / "study.yaml"
    study.write_text("name: s\nsuite: smoke\nname: t\n")
    c["study status: a key given twice"] = Case(
        ["study", "status", str(study)], "line 3: duplicate key 'name' (first at line 1)"
    )
    return c


def _case_names() -> list[str]:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        return list(cases(Path(tmp)))


CASE_NAMES = _case_names()


def _files(root: Path) -> set[str]:
    """Every entry below ``root`` that is not a directory (a directory named by --out-dir
    may be made before a write fails; files may not be left)."""
    return {str(p.relative_to(root)) for p in root.rglob("*") if not p.is_dir()}


def confined(kind: str, directory: Path, listing: Path, argv: list[str]) -> list[str]:
    """``argv`` in a private mount namespace where ``directory`` is read-only (``ro``) or a
    tmpfs filled to its last block (``full``); afterwards the files left in ``directory``
    are listed into ``listing`` (outside it)."""
    d, lst = shlex.quote(str(directory)), shlex.quote(str(listing))
    if kind == "ro":
        setup = f"mount --bind {d} {d} && mount -o remount,ro,bind {d} {d}"
    else:
        setup = (
            f"mount -t tmpfs -o size=256k tmpfs {d} && "
            f"{{ dd if=/dev/zero of={d}/.fill bs=4k 2>/dev/null; true; }}"
        )
    script = (
        f'{setup} && {{ "$@"; rc=$?; find {d} -mindepth 1 ! -type d ! -name .fill > {lst}; '
        "exit $rc; }"
    )
    user_ns = [] if os.geteuid() == 0 else ["-r"]  # unprivileged: a user namespace too
    return ["unshare", *user_ns, "-m", "sh", "-c", script, "sh", *argv]


@pytest.fixture
def hostile_server() -> Iterator[Callable[[Callable[[socket.socket], None]], int]]:
    """Start a TCP server that answers each connection with ``behave``; its port."""
    servers: list[socket.socket] = []
    stop = threading.Event()

    def start(behave: Callable[[socket.socket], None]) -> int:
        srv = socket.socket()
        srv.bind(("127.0.0.1", 0))
        srv.listen()
        srv.settimeout(0.2)
        servers.append(srv)

        def loop() -> None:
            while not stop.is_set():
                try:
                    conn, _ = srv.accept()
                except (TimeoutError, OSError):
                    continue
                conn.settimeout(2)
                threading.Thread(target=_serve, args=(behave, conn), daemon=True).start()

        threading.Thread(target=loop, daemon=True).start()
        return int(srv.getsockname()[1])

    def _serve(behave: Callable[[socket.socket], None], conn: socket.socket) -> None:
        with conn:
            behave(conn)

    yield start
    stop.set()
    for s in servers:
        s.close()


# the cases that draw figures or wait on a slow peer: seconds each, out of the first tier
HEAVY_CASES = (
    "report: full disk, figures drawn in parallel",
    "push: a gateway answering a byte a second",
)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.integration) if n in HEAVY_CASES else n for n in CASE_NAMES],
)
def test_hostile_case_is_one_line_exit_2_and_leaves_nothing(
    tmp_path: Path, name: str, hostile_server: Callable[[Callable[[socket.socket], None]], int]
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    case = cases(tmp_path)[name]
    argv = list(case.argv)
    if case.server is not None:
        port = hostile_server(case.server)
        argv = [a.replace("{port}", str(port)) for a in argv]
    listing = tmp_path / "left.txt"
    cmd = [GPULAB, *argv]
    if case.confine:
        cmd = confined(case.confine, tmp_path / "out", listing, cmd)
    before = _files(tmp_path)
    there = {str(tmp_path / f) for f in before}
    env = dict(os.environ, NO_COLOR="1", COLUMNS="200", GPULAB_RESULTS=str(work / "results"))
    env.update(case.env)
    started = time.monotonic()
    r = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=TIMEOUT_S, env=env)
    took = time.monotonic() - started
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert "Traceback" not in r.stderr + r.stdout, r.stderr[-3000:]
    assert r.returncode == 2, (r.returncode, r.stdout[-500:], r.stderr[-2000:])
    assert len(lines) == 1, lines
    assert lines[0].startswith("gpulab: error: "), lines[0]
    assert case.names in lines[0], lines[0]
    assert "s3cret-pw" not in r.stderr + r.stdout  # a password is never echoed
    left = _files(tmp_path) - before - {"left.txt"}
    assert not left, left
    if case.confine:
        inside = {ln for ln in listing.read_text().splitlines() if ln.strip()} - there
        assert not inside, inside  # nothing written into the confined directory
    if case.server is dripping:
        assert took < 3 + 10, took  # the deadline, plus start-up
