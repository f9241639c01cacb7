"""`gpulab list [WHAT]`: what gpulab knows, each list read from its own source."""

from __future__ import annotations

import json

import pytest

from infra.study.model import STUDIES_DIR
from infra.topologies import registry
from report.published import load_published
from workloads import execenv
from workloads.models import MODELS
from workloads.suites import list_suites

SOURCES = {
    "topologies": lambda: list(registry()),
    "envs": lambda: list(execenv.names()),
    "models": lambda: list(MODELS),
    "suites": list_suites,
    "studies": lambda: sorted(p.stem for p in STUDIES_DIR.glob("*.yaml")),
    "claims": lambda: list(load_published().claim_texts),
}


@pytest.mark.integration
@pytest.mark.parametrize("what", list(SOURCES))
def test_each_list_is_its_source(gpulab, what: str) -> None:
    r = gpulab("list", what, "--json")
    assert r.returncode == 0, r.stderr
    items = json.loads(r.stdout)["data"]["items"]
    assert [i.get("name") or i.get("id") for i in items] == SOURCES[what]()
    text = gpulab("list", what)
    assert text.returncode == 0
    for name in SOURCES[what]()[:3]:
        assert name in text.stdout


def test_list_studies_names_each_with_its_arms(gpulab) -> None:
    """The issue's case: study names appeared only in an error."""
    r = gpulab("list", "studies", "--json")
    studies = {s["name"]: s for s in json.loads(r.stdout)["data"]["items"]}
    assert studies["local-first-run"]["arms"] == ["native", "docker", "shared", "nway"]
    assert studies["closer2018"]["repeats"] == 8 and studies["closer2018"]["claims"]
    assert "gpulab study run NAME" in gpulab("list", "studies").stdout


@pytest.mark.integration
def test_list_without_what_names_everything(gpulab) -> None:
    r = gpulab("list")
    assert r.returncode == 0
    for what, names in SOURCES.items():
        assert f"{what} ({len(names())}): " in r.stdout
    bad = gpulab("list", "planets")
    assert bad.returncode == 2 and "'planets' is not one of" in bad.stderr
