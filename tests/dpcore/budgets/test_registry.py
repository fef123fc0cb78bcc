"""Registered datasets: a copy kept on the server, a cap per dataset changed only with a reason, and the same people
recognised under renamed, rescaled or added columns and with a quarter of the rows dropped."""

import numpy as np
import pytest

from dpcore.budgets import identities, quotas, registry, spend
from dpcore.data import datasets
from dpcore.errors import DPError
from dpcore.queries import fingerprint

from ...budgets_helpers import admin, analyst


@pytest.fixture
def clinic():
    df = datasets.medical(1000, seed=1)
    registry.register(admin(), "clinic", df, epsilon=2.0, max_query_epsilon=1.0)
    return df


def test_registering_copies_the_data_into_the_home_owner_only(clinic, dp_home):
    info = registry.info("clinic")
    copy = dp_home / info["source"]["file"]
    assert copy.parent == dp_home / "datasets"
    assert copy.stat().st_mode & 0o777 == 0o600 and copy.parent.stat().st_mode & 0o777 == 0o700
    back = registry.load(info)
    assert fingerprint.dataset_key(back) == info["fingerprint"] and len(back) == 1000
    assert info["cap"] == 2.0 and info["max_query_epsilon"] == 1.0 and info["delta_cap"] == pytest.approx(1e-4)
    assert quotas.status(admin(), "clinic")["history"][0]["note"].startswith("registered by admin with a cap of ε = 2")


def test_a_copy_changed_on_disk_answers_nothing(clinic, dp_home):
    info = registry.info("clinic")
    path = dp_home / info["source"]["file"]
    path.write_text(path.read_text().replace("\n34,", "\n35,", 1))
    with pytest.raises(DPError, match="was changed on disk"):
        registry.load(info)


def test_the_same_content_and_a_taken_name_are_refused(clinic):
    with pytest.raises(DPError, match="already registered as 'clinic'"):
        registry.register(admin(), "same", clinic.sample(frac=1, random_state=2).astype({"age": float}), epsilon=1)
    with pytest.raises(DPError, match="taken"):
        registry.register(admin(), "clinic", datasets.medical(300, seed=9), epsilon=1)
    with pytest.raises(DPError, match="look like a fingerprint"):
        registry.register(admin(), "a" * 64, datasets.medical(300, seed=9), epsilon=1)


def _near_copies(df: "datasets.pd.DataFrame") -> dict:
    rng = np.random.default_rng(0)
    kept = df.sample(frac=0.75, random_state=4)
    return {
        "a renamed column": df.rename(columns={"diagnosis": "dx"}),
        "a rescaled column": df.assign(salary=df["salary"] / 1000.0),
        "added ID columns": df.assign(patient_id=rng.permutation(len(df)), record_no=np.arange(len(df)) + 7000),
        "25% of the rows dropped": kept,
        "all four at once": kept.rename(columns={"age": "AGE"}).assign(
            salary=kept["salary"] * 1.1, pid=np.arange(len(kept))
        ),
        "rows and columns reordered, one column dropped": df.drop(columns="zip_code").iloc[::-1][::-1],
    }


@pytest.mark.parametrize("what", list(_near_copies(datasets.medical(10, 0)).keys()))
def test_the_same_people_under_another_shape_are_refused_unless_the_admin_confirms(clinic, what):
    data = _near_copies(clinic)[what]
    with pytest.raises(DPError, match="holds the same people as the registered dataset 'clinic'"):
        registry.register(admin(), "copy", data, epsilon=5)
    r = registry.register(admin(), "copy", data, epsilon=5, allow_similar=True)
    assert r["name"] == "copy"
    assert "the admin confirmed it differs from 'clinic'" in quotas.status(admin(), "copy")["history"][0]["note"]


def test_other_people_with_the_same_columns_register(clinic):
    for seed in (5, 6):
        assert (
            registry.register(admin(), f"other {seed}", datasets.medical(1000, seed=seed), epsilon=1)["n_rows"] == 1000
        )
    # a table with only low-cardinality columns in common tells nobody apart: no evidence, no refusal
    few = clinic[["sex", "has_rare_disease"]].assign(score=np.arange(len(clinic)) * 3.3)
    assert registry.register(admin(), "few columns", few, epsilon=1)["name"] == "few columns"


def test_near_duplicate_reports_the_pairing_by_values():
    df = datasets.medical(600, seed=2)
    hit = fingerprint.near_duplicate(df.rename(columns={"age": "years"}).assign(id=range(600)), df)
    assert hit is not None and hit["shared"] == 1.0
    assert "years = age" in hit["columns"] and hit["left_out"] == ["id"]
    assert fingerprint.near_duplicate(datasets.medical(600, seed=3), df) is None


def test_a_cap_changes_only_with_a_reason_and_never_below_what_was_released(clinic):
    who = analyst("ann", "clinic", 2.0)
    spend.spend(who, "clinic", "q", 1.0, lambda: {"answer": 1})
    with pytest.raises(DPError, match="needs a reason"):
        registry.set_cap(admin(), "clinic", epsilon=5, reason=" ")
    with pytest.raises(DPError, match="cannot go below what the dataset has released"):
        registry.set_cap(admin(), "clinic", epsilon=0.5, reason="tighter")
    r = registry.set_cap(admin(), "clinic", epsilon=5, max_query_epsilon=2, reason="second study approved")
    assert r["cap"] == 5.0 and r["max_query_epsilon"] == 2.0
    last = quotas.status(admin(), "clinic")["history"][-1]
    assert last["kind"] == "cap" and last["actor"] == "admin"
    assert "ε cap 2 -> 5" in last["note"] and "reason: second study approved" in last["note"]
    with pytest.raises(DPError, match="say what changes"):
        registry.set_cap(admin(), "clinic", reason="nothing")


def test_visible_datasets_follow_the_identity(clinic):
    other = datasets.medical(400, seed=8)
    registry.register(admin(), "other", other, epsilon=1)
    ann = analyst("ann", "clinic", 1.0)
    names = lambda who: sorted(d["name"] for d in registry.visible(who) if not d["builtin"])  # noqa: E731
    assert names(admin()) == ["clinic", "other"] and names(ann) == ["clinic"] and names(identities.VISITOR) == []


@pytest.mark.parametrize(
    "columns, found",
    [
        (["patient_id", "age"], ["patient_id"]),
        (["PersonID", "x"], ["PersonID"]),
        (["user", "email", "Name"], ["user", "email", "Name"]),
        (["age", "sex", "zip_code", "diagnosis"], []),
        (["customer no", "order"], ["customer no"]),
    ],
)
def test_person_identifier_columns_are_named(columns, found):
    assert registry.person_identifiers(columns) == found
