"""The Ansible runner's secret handling at its edges (infra.ansible.runner): the stale secrets
cleanup, the process start time it compares against, the liveness check and the scrubbed
command record.

Real parts: files and directories in tmp_path, real processes (a child Python, a dead pid),
/proc. The one stand-in: test_a_dir_that_cannot_be_removed_does_not_stop_the_cleanup makes
os.unlink refuse one file (what an immutable file or a read-only mount does; root, which runs
the suite, cannot otherwise be refused a removal in tmp_path).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.ansible import runner as runner_mod

OLD = time.time() - 10 * 24 * 3600
ROOT = Path(runner_mod.__file__).resolve().parents[2]  # where the module under test lives


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def _run_dir(root: Path, name: str, *, old: bool = True) -> Path:
    d = root / name
    d.mkdir()
    (d / "secrets.yml").write_text("token: SENTINEL\n")
    if old:
        os.utime(d, (OLD, OLD))
    return d


def test_every_stale_dir_is_removed_among_many_others(tmp_path: Path) -> None:
    """Five dead runs' dirs among forty entries of every kind the cleanup passes over: all five
    go (the walk does not stop at the first entry it passes over), nothing else does."""
    dead = _dead_pid()
    stale = [_run_dir(tmp_path, f"gpulab-secrets-{dead}-s{i}") for i in range(5)]
    kept = []
    for i in range(10):
        kept.append(_run_dir(tmp_path, f"gpulab-ansible-{i}"))  # not a secrets dir
        kept.append(_run_dir(tmp_path, f"gpulab-secrets-{os.getpid()}-m{i}"))  # this process
        kept.append(_run_dir(tmp_path, f"gpulab-secrets-{dead}-n{i}", old=False))  # newer
        kept.append(_run_dir(tmp_path, f"gpulab-secrets-{os.getppid()}-a{i}"))  # alive
    removed = runner_mod.clean_stale_secrets(tmp_path)
    assert sorted(removed) == sorted(stale)
    assert not any(d.exists() for d in stale)
    assert all((d / "secrets.yml").is_file() for d in kept)


def test_a_link_named_like_a_stale_dir_is_not_followed(tmp_path: Path) -> None:
    """A symlink gpulab-secrets-<dead pid>-x pointing at a directory is not a run's dir: neither
    the link nor the directory it points at is touched."""
    dead = _dead_pid()
    victim = _run_dir(tmp_path, "victim")
    link = tmp_path / f"gpulab-secrets-{dead}-link"
    link.symlink_to(victim, target_is_directory=True)
    os.utime(link, (OLD, OLD), follow_symlinks=False)
    assert runner_mod.clean_stale_secrets(tmp_path) == []
    assert link.is_symlink() and (victim / "secrets.yml").is_file()


def test_another_users_stale_dir_is_kept(tmp_path: Path) -> None:
    """A dead run's dir that belongs to another user is not ours to remove."""
    dead = _dead_pid()
    theirs = _run_dir(tmp_path, f"gpulab-secrets-{dead}-theirs")
    other = 65534 if os.getuid() != 65534 else 65533
    if os.getuid() == 0:
        os.chown(theirs, other, other)
        os.utime(theirs, (OLD, OLD))
        assert runner_mod.clean_stale_secrets(tmp_path) == []
        assert theirs.is_dir()
    mine = _run_dir(tmp_path, f"gpulab-secrets-{dead}-mine")
    removed = runner_mod.clean_stale_secrets(tmp_path)
    assert removed == [mine]
    assert theirs.is_dir() == (os.getuid() == 0)


def test_stale_dirs_in_the_default_temp_dir_are_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an argument the cleanup looks in tempfile.gettempdir() (where _write_secrets
    makes the dirs), and a path given as a string works the same."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    dead = _dead_pid()
    d = _run_dir(tmp_path, f"gpulab-secrets-{dead}-default")
    assert runner_mod.clean_stale_secrets() == [d]
    d2 = _run_dir(tmp_path, f"gpulab-secrets-{dead}-str")
    assert runner_mod.clean_stale_secrets(str(tmp_path)) == [d2]
    made, f = runner_mod._write_secrets({"k": "v"})
    try:
        assert made.parent == tmp_path
    finally:
        f.unlink()
        made.rmdir()


def test_cleanup_of_a_file_or_missing_root_removes_nothing(tmp_path: Path) -> None:
    root_file = tmp_path / "not-a-dir"
    root_file.write_text("x")
    assert runner_mod.clean_stale_secrets(root_file) == []
    assert runner_mod.clean_stale_secrets(tmp_path / "missing") == []


def test_a_dir_that_cannot_be_removed_does_not_stop_the_cleanup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """os.unlink refuses one file (stand-in for an immutable file): the cleanup goes on, the
    run that calls it at its start is not stopped by an old dir it cannot clear."""
    dead = _dead_pid()
    stuck = _run_dir(tmp_path, f"gpulab-secrets-{dead}-stuck")
    (stuck / "immutable").write_text("x")
    os.utime(stuck, (OLD, OLD))
    real_unlink = os.unlink

    def unlink(path: object, *args: object, **kw: object) -> None:
        if str(path).endswith("immutable"):
            raise PermissionError(1, "Operation not permitted", str(path))
        real_unlink(path, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "unlink", unlink)
    removed = runner_mod.clean_stale_secrets(tmp_path)
    assert removed == [stuck]
    assert (stuck / "immutable").exists()


PROBE = """
import ctypes, sys, time
ctypes.CDLL(None).prctl(15, b"gp) lab", 0, 0, 0)  # PR_SET_NAME: a ')' inside the name
sys.path.insert(0, sys.argv[1])
from infra.ansible.runner import _process_started
first = _process_started()
time.sleep(1.2)
print(first, _process_started(), time.time())
"""


def test_process_start_time_is_when_the_process_started() -> None:
    """A child's own start time: after the parent launched it (less /proc/stat's whole-second
    boot time), before it printed, and the same when asked again 1.2 s later (not "now"). The
    child names itself "gp) lab": /proc/self/stat's fields start after the last ')'."""
    assert runner_mod._process_started() <= time.time()  # (in this process too)
    before = time.time()
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    first, again, printed = (float(x) for x in out.split())
    assert first == again
    assert before - 3.0 <= first <= before + 1.0
    assert printed - first >= 1.2


def test_process_start_time_falls_back_to_now_without_proc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Without a readable /proc the start time is "now": a stale dir is then any dir older than
    the call."""
    real = Path.read_text

    def read_text(self: Path, *args: object, **kw: object) -> str:
        if str(self).startswith("/proc/"):
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return real(self, *args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", read_text)
    t0 = time.time()
    assert t0 <= runner_mod._process_started() <= time.time()


def test_pid_alive_for_another_users_process() -> None:
    """Signal 0 to another user's live process is refused (EPERM): it is alive all the same.
    Checked from a child that drops to nobody (after its imports) and asks about pid 1."""
    assert runner_mod._pid_alive(os.getpid()) is True  # (in this process too)
    code = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); "
        "from infra.ansible.runner import _pid_alive\n"
        "assert _pid_alive(os.getpid())\n"  # every lazy import done while files are readable
        "if os.getuid() == 0: os.setgid(65534); os.setuid(65534)\n"
        "print(_pid_alive(1))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"


def test_command_record_without_env_is_kept_with_an_empty_env(tmp_path: Path) -> None:
    cmd = tmp_path / "command"
    cmd.write_text(json.dumps({"command": ["ansible-playbook", "x.yml"], "cwd": "/w"}))
    runner_mod._scrub_command_env(cmd)
    assert json.loads(cmd.read_text()) == {
        "command": ["ansible-playbook", "x.yml"],
        "cwd": "/w",
        "env": {},
    }
    cmd.write_text(json.dumps({"command": [], "env": None}))
    runner_mod._scrub_command_env(cmd)
    assert json.loads(cmd.read_text()) == {"command": [], "env": {}}


def test_command_record_drops_lookalikes_of_kept_names(tmp_path: Path) -> None:
    cmd = tmp_path / "command"
    env = {
        "ANSIBLE_X": "1",
        "PATH": "/bin",
        "MY_ANSIBLE_TOKEN": "s1",
        "ansible_password": "s2",
        "PATHEXT": "s3",
        "XPATH": "s4",
        "OS_PASSWORD": "s5",
    }
    cmd.write_text(json.dumps({"command": ["a"], "env": env}))
    runner_mod._scrub_command_env(cmd)
    assert json.loads(cmd.read_text())["env"] == {"ANSIBLE_X": "1", "PATH": "/bin"}


def test_command_record_that_is_not_text_is_removed(tmp_path: Path) -> None:
    cmd = tmp_path / "command"
    cmd.write_bytes(b"\xff\xfe OS_PASSWORD=pw")
    runner_mod._scrub_command_env(cmd)
    assert not cmd.exists()
    d = tmp_path / "command-dir"
    d.mkdir()
    runner_mod._scrub_command_env(d)  # not a file: left alone
    assert d.is_dir()


def test_secrets_file_is_created_new_and_private(tmp_path: Path) -> None:
    d, f = runner_mod._write_secrets({"b": "x: y", "a": [1, 2]})
    try:
        assert f.parent == d and f.is_file() and not f.is_symlink()
        assert stat.S_IMODE(f.stat().st_mode) == 0o600
        assert f.stat().st_uid == os.getuid()
        assert d.name.startswith("gpulab-secrets-") and d.name.split("-")[2] == str(os.getpid())
        import json

        # every string unsafe: a secret is data, never a template
        assert json.loads(f.read_text()) == {"b": {"__ansible_unsafe": "x: y"}, "a": [1, 2]}
    finally:
        f.unlink()
        d.rmdir()


def test_pid_alive_asks_without_signalling_the_process() -> None:
    """Asking whether a run's owner lives must not disturb it: a live child is still running
    (not hung up, not interrupted) after being asked about."""
    # default dispositions (a run under nohup ignores SIGHUP, and children inherit that)
    code = (
        "import signal, sys, time\n"
        "for s in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):\n"
        "    signal.signal(s, signal.SIG_DFL)\n"
        "print('ready', flush=True)\n"
        "time.sleep(30)\n"
    )
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout is not None and child.stdout.readline() == "ready\n"
        assert runner_mod._pid_alive(child.pid) is True
        time.sleep(0.2)
        assert child.poll() is None
    finally:
        child.kill()
        child.wait()
    assert runner_mod._pid_alive(child.pid) is False


def test_entries_that_vanish_during_the_cleanup_are_passed_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs starting together both clean: an entry the other one removed after the listing
    fails its lstat (stand-in: Path.lstat raises FileNotFoundError for the *-gone* names); the
    cleanup goes on to every other stale dir."""
    dead = _dead_pid()
    stale = [_run_dir(tmp_path, f"gpulab-secrets-{dead}-s{i}") for i in range(5)]
    for i in range(20):
        _run_dir(tmp_path, f"gpulab-secrets-{dead}-gone{i}")
    real_lstat = Path.lstat

    def lstat(self: Path) -> os.stat_result:
        if "-gone" in self.name:
            raise FileNotFoundError(2, "No such file or directory", str(self))
        return real_lstat(self)

    monkeypatch.setattr(Path, "lstat", lstat)
    assert sorted(runner_mod.clean_stale_secrets(tmp_path)) == sorted(stale)


def test_an_entry_gone_before_its_lstat_does_not_stop_the_cleanup(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A secrets dir removed by someone else between the directory listing and its lstat (a
    race, made certain here by listing it first and making its lstat fail) is passed over, and
    the stale dirs listed after it are still removed."""
    dead = _dead_pid()
    gone = tmp_path / f"gpulab-secrets-{dead}-gone"
    stale = [_run_dir(tmp_path, f"gpulab-secrets-{dead}-s{i}") for i in range(2)]
    real_iterdir, real_lstat = Path.iterdir, Path.lstat

    def iterdir(self: Path) -> Iterator[Path]:
        return iter([gone, *real_iterdir(self)]) if self == tmp_path else real_iterdir(self)

    def lstat(self: Path) -> os.stat_result:
        if self == gone:
            raise FileNotFoundError(str(self))
        return real_lstat(self)

    monkeypatch.setattr(Path, "iterdir", iterdir)
    monkeypatch.setattr(Path, "lstat", lstat)
    assert sorted(runner_mod.clean_stale_secrets(tmp_path)) == sorted(stale)
    assert not any(d.exists() for d in stale)


def test_a_file_or_link_of_a_secrets_name_is_left_and_the_stale_dirs_after_it_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only directories are cleaned: a file and a symbolic link that carry a secrets dir's name
    (listed first here) are left alone, and the stale dirs listed after them are removed."""
    dead = _dead_pid()
    plain = tmp_path / f"gpulab-secrets-{dead}-file"
    plain.write_text("not a run's dir\n")
    os.utime(plain, (OLD, OLD))
    target = tmp_path / "elsewhere"
    target.mkdir()
    link = tmp_path / f"gpulab-secrets-{dead}-link"
    link.symlink_to(target)
    stale = [_run_dir(tmp_path, f"gpulab-secrets-{dead}-s{i}") for i in range(2)]
    real_iterdir = Path.iterdir

    def iterdir(self: Path) -> Iterator[Path]:
        if self != tmp_path:
            return real_iterdir(self)
        rest = [p for p in real_iterdir(self) if p not in (plain, link)]
        return iter([plain, link, *rest])

    monkeypatch.setattr(Path, "iterdir", iterdir)
    assert sorted(runner_mod.clean_stale_secrets(tmp_path)) == sorted(stale)
    assert plain.is_file() and link.is_symlink() and target.is_dir()
    assert not any(d.exists() for d in stale)


def test_a_no_log_tasks_failure_shows_no_output() -> None:
    """A failed no_log task's result holds what the task saw (a token); its message is hidden,
    whether Ansible marks it ``_ansible_no_log`` or has already censored it."""
    res = {"msg": "token SENTINEL refused", "stderr": "SENTINEL", "module_stderr": "SENTINEL"}
    hidden = "(output hidden: no_log task)"
    assert runner_mod._msg_of({**res, "_ansible_no_log": True}) == hidden
    assert runner_mod._msg_of({**res, "censored": "the output has been hidden"}) == hidden
    assert runner_mod._msg_of({**res, "_ansible_no_log": False}) != hidden


def test_a_failures_message_is_one_line_of_its_first_text() -> None:
    msg = runner_mod._msg_of
    assert msg({"msg": "bad\n  value\n\nthere", "stderr": "e"}) == "bad value there"
    assert msg({"stderr": " e1\ne2 ", "reason": "r"}) == "e1 e2"
    assert msg({"reason": "unreachable"}) == "unreachable"
    assert msg({"rc": 3}) == "rc=3"
    assert msg({"rc": 0}) == "rc=0"
    assert msg({}) == "(no message)"
    assert msg({"msg": " \n "}) == "(no message)"
    assert msg({"msg": "failed", "module_stderr": "\nTraceback\nline 2"}) == "failed (Traceback)"
    assert msg({"msg": "x" * 500}) == "x" * 400
    assert msg({"msg": "failed", "module_stderr": "  "}) == "failed"
