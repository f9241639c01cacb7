"""What the dynamic resources' digests see, and a re-imaged host in ``diff`` (the providers and
functions called directly: no engine, no host).

``tree_digest`` keys the local runner's image on the ``workloads`` tree, the Magnum workload
image on the same tree, and a run's playbook and suite file: an edit of any file under the tree
(its content or its name) must change it, Python's byte-code caches must not, and the tree's
own place must not (two clones build the same image)."""

from __future__ import annotations

from pathlib import Path

from infra.dynamic.ansible_run import AnsibleRunProvider, tree_digest


def tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


FILES = {"a.py": "print(1)\n", "pkg/b.py": "x = 2\n", "pkg/data/c.yaml": "k: v\n"}


def test_a_tree_digest_is_its_files_not_its_place(tmp_path: Path) -> None:
    one = tree(tmp_path / "one" / "workloads", FILES)
    two = tree(tmp_path / "elsewhere" / "workloads", FILES)
    assert tree_digest(one) == tree_digest(two)
    assert len(tree_digest(one)) == 64


def test_every_file_of_a_tree_counts(tmp_path: Path) -> None:
    base = tree_digest(tree(tmp_path / "base", FILES))
    for rel in FILES:
        edited = tree(tmp_path / f"edit-{len(rel)}-{rel.count('/')}", FILES)
        (edited / rel).write_text(FILES[rel] + "# edited\n")
        assert tree_digest(edited) != base, rel
    added = tree(tmp_path / "added", {**FILES, "pkg/new.py": ""})
    assert tree_digest(added) != base  # an empty file counts by its name


def test_a_renamed_or_moved_file_changes_the_digest(tmp_path: Path) -> None:
    base = tree_digest(tree(tmp_path / "base", FILES))
    renamed = {("pkg/b2.py" if k == "pkg/b.py" else k): v for k, v in FILES.items()}
    assert tree_digest(tree(tmp_path / "renamed", renamed)) != base
    # the same bytes split otherwise between two names: the name/content boundary counts
    split = tree(tmp_path / "split", {"ab": "c", "z": ""})
    other = tree(tmp_path / "other", {"a": "bc", "z": ""})
    assert tree_digest(split) != tree_digest(other)


def test_byte_code_caches_do_not_count(tmp_path: Path) -> None:
    base = tree_digest(tree(tmp_path / "base", FILES))
    cached = tree(
        tmp_path / "cached",
        {**FILES, "__pycache__/a.cpython-311.pyc": "\0", "pkg/__pycache__/b.cpython-311.pyc": "1"},
    )
    assert tree_digest(cached) == base


def test_a_file_digest_is_its_name_and_content(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    one = tmp_path / "x" / "suite.yaml"
    one.write_text("models: [resnet50]\n")
    same = tmp_path / "y" / "suite.yaml"
    same.write_text("models: [resnet50]\n")
    renamed = tmp_path / "y" / "other.yaml"
    renamed.write_text("models: [resnet50]\n")
    assert tree_digest(one) == tree_digest(same)
    assert tree_digest(renamed) != tree_digest(one)
    same.write_text("models: [alexnet]\n")
    assert tree_digest(same) != tree_digest(one)


def test_a_host_read_back_re_imaged_is_a_change_and_only_then() -> None:
    """``refresh`` read a machine id other than the one the host was provisioned with: the
    next ``up`` runs the playbook again (on that host), though no input changed."""
    p = AnsibleRunProvider()
    props = {
        "hosts": [{"name": "gpu-0", "address": "10.0.0.5"}],
        "playbook": "site.yml",
        "variables": {},
        "machines": {"gpu-0": "m0"},
    }
    same = {**props, "machines_now": {"gpu-0": "m0"}}
    rebuilt = {**props, "machines_now": {"gpu-0": "m0-rebuilt"}}
    assert p.diff("id", same, props).changes is False
    diff = p.diff("id", rebuilt, props)
    assert diff.changes is True and diff.replaces == []  # run again in place, never replaced
    assert p.hosts_to_run(rebuilt, props) == ["gpu-0"]
