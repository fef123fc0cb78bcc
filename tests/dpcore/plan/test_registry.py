"""OpenDP's deployments registry beside a plan's ε (the vendored records, cited) and a release as a registry-schema
draft, validated against the vendored schema as the registry's own checker validates records."""

import copy
import hashlib
import statistics

import pytest

from dpcore.errors import DPError
from dpcore.plan import registry

SCHEMA_SHA = "9d607ad7e587fd440f5164d407e7a77089b46b8caa016f5d8c7d127cfc1d5291"


def test_the_vendored_schema_is_the_registrys_file_byte_for_byte():
    assert hashlib.sha256(registry.SCHEMA_FILE.read_bytes()).hexdigest() == SCHEMA_SHA
    readme = (registry.DATA / "README.md").read_text()
    assert SCHEMA_SHA in readme and "MIT" in readme and "3e9c812" in readme
    assert (registry.DATA / "LICENSE-deployments-registry.txt").read_text().startswith("MIT License")


def test_the_records_are_the_registrys_41():
    rs = registry.records()
    eps = [r.epsilon for r in rs if r.epsilon is not None]
    assert len(rs) == 41 and len(eps) == 27
    assert min(eps) == 0.01 and max(eps) == 34.9 and statistics.median(eps) == 2.64


def test_context_places_an_epsilon_among_deployments_of_its_kind_and_cites_the_registry():
    c = registry.context(1.0, "statistics", "Central")
    assert c.below + c.above + sum(e == 1.0 for e in c.epsilons) == len(c.epsilons) > 10
    assert c.epsilons == tuple(sorted(c.epsilons))
    assert "registry.opendp.org" in c.words() and registry.COMMIT in c.words()
    low, high = registry.context(0.001), registry.context(1000.0)
    assert low.below == 0 and high.above == 0
    assert registry.context(5.0, "models", "Central").kind == "models"
    with pytest.raises(DPError):
        registry.context(1.0, "weights")


STATEMENT = {
    "kind": "plan",
    "title": "Hospital visits",
    "subject": "synthetic medical visits",
    "level": "person-level",
    "unit": {"person": "patient_id", "max_rows": 5},
    "epsilon": 1.0,
    "epsilon_per_row": 1.0,
    "epsilon_per_person": 1.0,
    "statistics": [{"label": "count of rows"}, {"label": "median of age in [18, 90]"}],
}


def test_a_release_as_a_draft_validates_against_the_registrys_schema():
    d = registry.draft(STATEMENT, curator="St Elsewhere Hospital")
    assert registry.validate(d) == []
    assert d["deployment"]["privacy_loss"]["privacy_parameters"] == {"epsilon": 1.0, "delta": 0}
    assert d["deployment"]["basic"]["data_curators"] == ["St Elsewhere Hospital"]
    rows = registry.draft({**STATEMENT, "level": "row-level", "unit": {"person": None, "public_max_rows": 10}})
    assert registry.validate(rows) == [] and rows["deployment"]["privacy_loss"]["privacy_unit"].startswith("Row")


@pytest.mark.parametrize(
    ("path", "value", "words"),
    [
        (("tier",), 4, "is not one of"),
        (("deployment", "basic", "publication_date"), "1/1/2026", "is not a 'date'"),
        (("deployment", "dp_variant", "variant_name"), "Very DP", "is not one of"),
        (("deployment", "surprise"), 1, "Additional properties"),
    ],
)
def test_the_schema_refuses_what_the_registry_refuses(path, value, words):
    d = copy.deepcopy(registry.draft(STATEMENT))
    at = d
    for p in path[:-1]:
        at = at[p]
    at[path[-1]] = value
    problems = registry.validate(d)
    assert problems and any(words in p for p in problems), problems


def test_a_draft_needs_a_plan_statement():
    with pytest.raises(DPError):
        registry.draft({"kind": "training_run"})
