"""infra/ansible/strategy.py: the strategy settings a run gets (the runs themselves:
tests/ansible/test_nspawn_login.py::test_mitogen_keeps_one_interpreter_per_host_for_the_run)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from infra.ansible.inventory import InventoryError
from infra.ansible.strategy import ENV, strategy_env


def test_mitogen_linear_by_default_with_its_plugin_directory() -> None:
    env = strategy_env({})
    assert env["ANSIBLE_STRATEGY"] == "mitogen_linear"
    plugins = Path(env["ANSIBLE_STRATEGY_PLUGINS"])
    assert (plugins / "mitogen_linear.py").is_file(), plugins
    assert strategy_env({ENV: "  "}) == env  # blank: the default


@pytest.mark.parametrize("name", ["linear", "free"])
def test_ansible_s_own_strategies_need_no_plugins(name: str) -> None:
    assert strategy_env({ENV: name}) == {"ANSIBLE_STRATEGY": name}


def test_mitogen_free_is_the_free_plugin() -> None:
    env = strategy_env({ENV: "mitogen_free"})
    assert env["ANSIBLE_STRATEGY"] == "mitogen_free"
    assert (Path(env["ANSIBLE_STRATEGY_PLUGINS"]) / "mitogen_free.py").is_file()


def test_an_unknown_strategy_names_the_variable_and_the_choices() -> None:
    with pytest.raises(InventoryError) as exc:
        strategy_env({ENV: "host_pinned"})
    assert str(exc.value) == (
        "GPULAB_ANSIBLE_STRATEGY='host_pinned' is not one of "
        "mitogen_linear, mitogen_free, linear, free"
    )


def test_mitogen_missing_says_how_to_install_it_or_turn_it_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda n, *a: None if n == "ansible_mitogen" else real(n, *a)
    )
    with pytest.raises(
        InventoryError, match=r"pip install mitogen, or GPULAB_ANSIBLE_STRATEGY=linear"
    ):
        strategy_env({})
    assert strategy_env({ENV: "linear"}) == {"ANSIBLE_STRATEGY": "linear"}
