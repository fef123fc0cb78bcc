"""A planned release's signed statement: person- or row-level, its per-person ε what OpenDP's privacy maps give,
recomputed on verification; every figure edited is caught; its NIST checks are the plan's."""

import copy
import json

import pytest

from dpcore import nist
from dpcore.data import datasets
from dpcore.noise import release
from dpcore.plan import compute
from dpcore.statements import files, verify
from dpcore.statements import plan as plan_statement

from .helpers import five


def outcome(plan, n=300, seed=0):
    """A released plan as the runner returns it, without a ledger (the uploader's own rows)."""
    df = datasets.medical_visits(n, seed)
    rel = compute.prepare(df, plan).release()
    return compute.Outcome(rel, None, {"charged_to": [], "owner": "test rows"}, False, "test visits", "upload")


@pytest.fixture(scope="module")
def signed():
    out = outcome(five(1.0, k=5))
    return out, plan_statement.for_plan(out)


def test_the_statement_says_person_level_and_its_per_person_epsilon_is_opendps(signed):
    out, st = signed
    assert st["kind"] == "plan" and st["level"] == "person-level"
    assert st["neighbour_relation"] == plan_statement.PERSON
    assert st["epsilon"] == st["epsilon_per_person"] == 1.0 and st["delta"] == 0.0
    total = 0.0
    for x in st["statistics"]:  # each measurement's ε from OpenDP's own privacy map at the per-person sensitivity
        for p in x["parts"]:
            if p["role"] == "quantile":
                d = out.release.design.designs[x["index"] - 1]
                eps = d.quantile.epsilon
                assert p["sensitivity"] == 5
            else:
                eps = release.privacy_map("laplace", p["opendp_scale"], p["sensitivity"])
            assert eps <= p["epsilon"] * (1 + 1e-12)
            total += eps
    assert abs(total - st["epsilon_per_person"]) < 1e-9
    assert "registry.opendp.org" in st["registry"]["words"]


def test_a_row_level_statement_says_so_and_states_epsilon_per_person_from_the_public_maximum():
    st = plan_statement.for_plan(outcome(five(0.4, person=False)))
    assert st["level"] == "row-level" and st["neighbour_relation"] == plan_statement.ROW
    assert st["epsilon_per_row"] == 0.4 and st["epsilon_per_person"] == 4.0
    assert "event_level" in {f["code"] for f in st["nist"]["flags"]}
    assert verify.verify(st)["verified"]


def test_it_verifies_anywhere_and_covers_the_table(signed, tmp_path):
    out, st = signed
    res = verify.verify(st, home=False)
    assert res["verified"], res["problems"]
    assert any(c["check"] == "nist" and c["ok"] for c in res["checks"])
    csv = plan_statement.csv_bytes(out)
    (tmp_path / "release.csv").write_bytes(csv)
    (tmp_path / "release.statement.json").write_text(json.dumps(st))
    res = verify.verify_path(str(tmp_path))
    assert res["verified"], res["problems"]
    (tmp_path / "release.csv").write_bytes(csv.replace(b"count of rows", b"count of row"))
    assert not verify.verify_path(str(tmp_path))["verified"]
    assert st["files"] == files.cover({"release.csv": csv})


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda s: s.__setitem__("epsilon", 0.5), "epsilon"),
        (lambda s: s["statistics"][0].__setitem__("epsilon", 0.001), "statistics[0].epsilon"),
        (lambda s: s["statistics"][2]["parts"][0].__setitem__("sensitivity", 1), "statistics[2].parts[0].sensitivity"),
        (lambda s: s.__setitem__("level", "row-level"), "level"),
        (lambda s: s["plan"]["unit"].__setitem__("max_rows", 1), "epsilon"),
        (lambda s: s["nist"]["flags"].pop(), "nist"),
    ],
)
def test_an_edited_figure_is_named_even_with_the_signature_made_again(signed, edit, field):
    from dpcore.statements import signing

    _, st = signed
    bad = copy.deepcopy(st)
    edit(bad)
    res = verify.verify(signing.sign({k: v for k, v in bad.items() if k != "signature"}))
    assert not res["verified"]
    assert any(p.startswith(field) or field in p.split(":")[0] for p in res["problems"]), res["problems"]


def test_its_nist_checks_are_the_plans(signed):
    out, st = signed
    assert st["nist"] == nist.block(out.release.design.claim())
    codes = {f["code"] for f in st["nist"]["flags"]}
    assert "clamping_bias" in codes and "event_level" not in codes and "epsilon_above_1" not in codes
    assert "delta_vs_n" not in codes and "variant" not in codes and "floating_point" not in codes
    big = plan_statement.body(outcome(five(12.0)))
    assert "epsilon_above_10" in {f["code"] for f in big["nist"]["flags"]}
