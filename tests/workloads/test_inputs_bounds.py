"""workloads.inputs: the one YAML loader (alias budget, depth, duplicate keys); bounded JSON
(workloads.json_bounded)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from workloads.errors import InputError
from workloads.inputs import MAX_YAML_DEPTH, load_yaml, parse_yaml
from workloads.json_bounded import MAX_JSON_DEPTH, JSONDepthError, json_depth, loads_json

REPO = Path(__file__).resolve().parents[2]
NAME = "stack file 'x.yaml'"


def laughs(levels: int, width: int = 9) -> str:
    """A billion laughs: ``levels`` levels of ``width`` aliases each (a few hundred bytes)."""
    out = [f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    out += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * width)}]" for i in range(1, levels)]
    return "\n".join(out) + "\n"


@pytest.mark.timeout(10)  # unbounded, nine levels stand for 387 million values
def test_nested_aliases_are_refused_at_the_line_where_they_pass_the_budget() -> None:
    text = laughs(10)
    assert len(text) < 700
    with pytest.raises(InputError) as err:
        parse_yaml(text, NAME)
    assert str(err.value) == (
        f"{NAME} line 6: its aliases expand to more than 100,000 values (a YAML bomb?)"
    )


def test_aliases_within_the_budget_are_read() -> None:
    doc = parse_yaml(laughs(4), NAME)
    assert len(doc["l3"]) == 9 and doc["l3"][0][0][0] == ["lol"] * 9  # 9**4 values
    merged = parse_yaml("base: &b {x: 1, y: 2}\nm:\n  <<: *b\n  x: 3\n", NAME)
    assert merged["m"] == {"x": 3, "y": 2}  # a merge key's value may be overridden


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("config:\n  a: 1\nconfig:\n  b: 2\n", "line 3: duplicate key 'config' (first at line 1)"),
        ("config:\n  a: 1\n  b: 2\n  a: 3\n", "line 4: duplicate key 'a' (first at line 2)"),
        ("{a: 1, a: 2}\n", "line 1: duplicate key 'a' (first at line 1)"),
        ("1: x\n01: y\n", "line 2: duplicate key 1 (first at line 1)"),  # the same int
        ("on: 1\ntrue: 2\n", "line 2: duplicate key True (first at line 1)"),  # YAML 1.1 bools
    ],
)
def test_a_key_given_twice_is_refused_naming_both_lines(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_yaml(text, NAME)
    assert str(err.value) == f"{NAME} {message}; YAML would keep only the last one"


def test_an_alias_inside_the_value_that_holds_it_is_refused() -> None:
    with pytest.raises(InputError, match=r"line 1: alias \*x refers to the value that holds it"):
        parse_yaml("x: &x [1, *x]\n", NAME)


def test_nesting_is_bounded() -> None:
    ok = "a: " + "[" * (MAX_YAML_DEPTH - 1) + "]" * (MAX_YAML_DEPTH - 1) + "\n"
    assert parse_yaml(ok, NAME)["a"] is not None
    deep = "a: " + "[" * 10_000  # PyYAML's C loader crashes the interpreter on this
    with pytest.raises(InputError, match=f"line 1: nested deeper than {MAX_YAML_DEPTH} levels"):
        parse_yaml(deep, NAME)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: [\n", "is not valid YAML at line 2"),
        ("a: 1\n---\nb: 2\n", "is not valid YAML at line 2"),  # one document only
        ("a: *nowhere\n", "is not valid YAML at line 1"),
        ("a: !!python/object:os.system {}\n", "is not valid YAML at line 1"),  # safe loader
    ],
)
def test_invalid_yaml_is_one_line(text: str, message: str) -> None:
    with pytest.raises(InputError) as err:
        parse_yaml(text, NAME)
    assert str(err.value) == f"{NAME} {message}"


@pytest.mark.integration
def test_every_yaml_file_the_product_ships_loads_within_the_bounds() -> None:
    """Stack examples, studies, suites, published results, playbooks and roles."""
    files = [
        p
        for pattern in ("*.yaml", "*.yml")
        for p in REPO.rglob(pattern)
        if not {".venv", "collections", ".cache", ".git"} & set(p.relative_to(REPO).parts)
    ]
    assert len(files) > 50
    for f in files:
        load_yaml(f, "file")  # raises on a bound


def test_json_depth_counts_brackets_outside_strings_only() -> None:
    assert json_depth('{"a": "[[[[", "b": [[{}]], "c": "\\"]]"}') == 4
    assert json_depth("3") == 0
    assert loads_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None
    too_deep = "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1)
    with pytest.raises(JSONDepthError, match=f"deeper than {MAX_JSON_DEPTH} levels"):
        loads_json(too_deep)
    with pytest.raises(JSONDepthError):  # before Python's own parser would recurse
        loads_json("[" * 5000 + "]" * 5000)
    wide = json.dumps({f"k{i}": [i] for i in range(1000)})  # many brackets, shallow
    assert len(loads_json(wide)) == 1000


def test_a_control_character_is_one_line() -> None:
    with pytest.raises(InputError) as err:
        parse_yaml("a: 1\nb: \x1f", NAME)
    assert str(err.value) == f"{NAME} is not valid YAML at line 2"
