"""Real releases through OpenDP (slow: seconds each). The privacy map bounds ε, the noise is OpenDP's (secure,
integer-valued, not reproducible from any seed), rows are drawn faithfully from the model, and a membership audit
of the release path holds its claim while catching a release that leaks its rows."""

import math

import numpy as np
import pandas as pd
import pytest

from dpcore import limits
from dpcore.data import datasets
from dpcore.errors import Cancelled, DPError
from dpcore.synth import attack
from dpcore.synth import release as R
from dpcore.synth import schema as S
from dpcore.synth.statement import release_statement

pytestmark = pytest.mark.slow

SCHEMA = S.medical()


@pytest.fixture(scope="module")
def data():
    return datasets.medical(1_000, datasets.REID_SEED)


SMALL = S.Schema(S.medical(("sex", "zip_code", "diagnosis")).columns, complete=False)  # quick: 3 small columns


@pytest.fixture(scope="module")
def twins(data):
    """Two releases with every seed equal: numpy's global seed, the post-processing seed, the data. Missing values
    are declared possible, so the rows are drawn from the model as it is (nothing redrawn)."""
    out = []
    for _ in range(2):
        np.random.seed(0)
        out.append(R.release(data, SMALL, R.SynthConfig(1.0, sample_seed=5, rows=10_000)))
    return out


def _noisy(rel, ways=(1, 2)) -> np.ndarray:
    """The release's noisy counts over cliques of these sizes, in OpenDP's order."""
    return np.concatenate(
        [
            np.asarray(m.noisy_measurement, dtype=float).ravel()
            for m in rel.contingency.marginals.flatten()
            if len(m.clique) in ways
        ]
    )


def test_privacy_map_is_at_most_the_epsilon_asked(twins):
    for eps, p in ((1.0, twins[0].plan), (2.0, R.plan(SCHEMA, R.SynthConfig(2.0)))):
        assert 0.999 * eps <= p.epsilon <= eps and p.delta == 0.0 and p.rho is None
    assert release_statement(twins[0], "x")["epsilon"] == twins[0].plan.epsilon


def test_zcdp_budget_is_the_largest_whose_conversion_fits():
    rho = R.rho_for(1.0, 1e-6)
    classic = ((-2 * math.sqrt(math.log(1e6)) + math.sqrt(4 * math.log(1e6) + 4)) / 2) ** 2  # ρ + 2√(ρ ln 1/δ) = 1
    assert rho >= classic * 0.999  # OpenDP's conversion is at least as tight as the classic one
    p = R.plan(SCHEMA, R.SynthConfig(1.0, 1e-6))
    assert p.rho == pytest.approx(rho) and p.epsilon <= 1.0 and p.delta == 1e-6 and p.epsilon > 0.99


def test_noise_is_opendps_integers_and_never_reproduced_by_seeds(twins):
    """Low-bit test: every noisy count is a whole number (discrete samplers: no floating-point low bits to read).
    Secure source: the same seeds everywhere still give different noise, hence different tables."""
    a, b = (_noisy(r) for r in twins)
    assert np.array_equal(a, np.round(a)) and np.array_equal(b, np.round(b))
    one_a, one_b = (_noisy(r, ways=(1,)) for r in twins)  # the same one-way marginals, measured twice
    assert len(one_a) == len(one_b) and not np.array_equal(one_a, one_b)
    assert not twins[0].table.head(200).equals(twins[1].table.head(200))
    assert twins[0].sample_seed == twins[1].sample_seed == 5


def test_rows_are_drawn_faithfully_from_the_model(twins):
    """10,000 rows i.i.d. from the fitted model: every cell of sex × diagnosis (missing included) within 5
    standard errors of the model's own share (mbi's default "round" put 36% in "F, none" where the model had 21%).
    A cell off by chance: p < 1e-6 per cell."""
    rel = twins[0]
    model = np.asarray(rel.contingency.project(("sex", "diagnosis")), dtype=float)
    model = model / model.sum()  # 3 × 7: the last code of each column is "missing"
    c = rel.codes.replace(-1, {"sex": 2, "diagnosis": 6})
    got = pd.crosstab(c["sex"], c["diagnosis"]).reindex(
        index=range(3), columns=range(7), fill_value=0
    ).to_numpy() / len(c)
    se = np.sqrt(model * (1 - model) / len(c))
    assert np.all(np.abs(got - model) <= 5 * se + 1e-4), (got - model).round(3)
    assert len(rel.table) == 10_000


def test_a_complete_schema_redraws_rows_with_a_missing_value(data):
    rel = R.release(data, S.medical(("sex", "zip_code", "diagnosis")), R.SynthConfig(0.3, rows=2_000))
    assert len(rel.table) == 2_000 and not rel.table.isna().any().any() and (rel.codes >= 0).all().all()


def test_default_rows_are_the_models_dp_estimate(data):
    rel = R.release(data, SMALL, R.SynthConfig(3.0))
    assert len(rel.table) == round(rel.model_rows)  # never len(data): that count is private
    assert release_statement(rel, "x")["declared_public"]["rows"] == R.ROWS_ESTIMATED


def test_membership_audit_of_the_release_path_holds_and_catches_a_leak(monkeypatch):
    """A statistical check of the whole path: 2,000 people each put in by a coin flip, one release at ε = 1; the
    one-run audit's 95% lower bound must stay at or below the ε claimed. The same audit on a release path that
    hands back its own rows (a broken post-processing) proves far more than ε: the check can fail."""
    pool = datasets.medical(2_000, 4242)[SCHEMA.names]
    included = np.random.default_rng(9).random(len(pool)) < 0.5
    codes = SCHEMA.encode(pool)
    rel = R.release(pool[included], SCHEMA, R.SynthConfig(1.0))
    fair = attack.membership_test(rel.codes, codes, included, SCHEMA, rel.plan.delta)
    assert fair["lower_bound"] <= rel.plan.epsilon

    def leak(table, schema, rows, seed):
        return codes[included].reset_index(drop=True), []

    monkeypatch.setattr(R, "_draw", leak)
    broken = R.release(pool[included], SCHEMA, R.SynthConfig(1.0))
    caught = attack.membership_test(broken.codes, codes, included, SCHEMA, 0.0)
    assert caught["lower_bound"] > 2 * broken.plan.epsilon


def test_aim_with_delta_releases_the_pairs_that_matter(data):
    pairs = (("sex", "diagnosis"), ("zip_code", "diagnosis"))
    rel = R.release(
        data, S.medical(("sex", "zip_code", "diagnosis")), R.SynthConfig(1.0, 1e-6, "aim", rows=500, pairs=pairs)
    )
    assert rel.plan.epsilon <= 1.0 and rel.plan.delta == 1e-6 and len(rel.table) == 500
    st = release_statement(rel, "x")
    assert st["generator"]["name"] == "AIM" and st["generator"]["pairs_that_matter"] == [
        "sex+diagnosis",
        "zip_code+diagnosis",
    ]


def test_an_upload_with_missing_values_declared_possible():
    df = pd.DataFrame({"ward": ["A", "B", None, "A"] * 100, "stay": [1, 5, 3, None] * 100})
    sch = S.parse_schema(["ward=A,B", "stay=0:10:1"], complete=False)
    rel = R.release(df, sch, R.SynthConfig(5.0, rows=300))
    assert list(rel.table.columns) == ["ward", "stay"] and len(rel.table) == 300
    assert set(rel.table["ward"].dropna()) <= {"A", "B"}


def test_bad_requests_are_refused_before_any_noise(data, monkeypatch):
    with pytest.raises(DPError, match="AIM needs δ > 0"):
        R.SynthConfig(1.0, generator="aim")
    with pytest.raises(DPError, match="from 0.01 to 100"):
        R.SynthConfig(0.001)
    with pytest.raises(DPError, match="generator must be one of mst, aim"):
        R.SynthConfig(1.0, generator="gan")
    with pytest.raises(DPError, match="synthetic rows must be from 1 to"):
        R.SynthConfig(1.0, rows=limits.SYNTH_MAX_OUTPUT_ROWS + 1)
    with pytest.raises(DPError, match="column 'name' is not declared"):
        R.SynthConfig(1.0, pairs=(("age", "name"),)).check(SCHEMA)
    with pytest.raises(DPError, match="two names joined by"):
        R.parse_pairs("age,diagnosis")
    with pytest.raises(DPError, match="no rows"):
        R.release(data.head(0), SCHEMA, R.SynthConfig(1.0))
    monkeypatch.setattr(limits, "SYNTH_MAX_ROWS", 999)
    with pytest.raises(DPError, match="reads at most 999: release a sample"):
        R.release(data, SCHEMA, R.SynthConfig(1.0))
    monkeypatch.undo()
    with pytest.raises(Cancelled):
        R.release(data, SCHEMA, R.SynthConfig(1.0), cancelled=lambda: True)


def test_statement_is_signed_and_recomputed_on_verification(twins):
    """statement --verify rebuilds the measurement from the declarations the statement records and compares
    OpenDP's privacy map with its ε; a changed ε, a changed declaration or a broken signature is named."""
    from dpcore.statements import verify as verification

    st = release_statement(twins[0], "synthetic medical, 1,000 patients (seed 31)")
    assert st["signature"]["scheme"] == "Ed25519"
    ok = verification.verify(st)
    assert ok["verified"] and ok["kind"] == "synthetic_release" and ok["checked"] >= 1, ok["problems"]
    lower = dict(st, epsilon=0.5)
    problems = verification.verify(lower)["problems"]
    assert any(p.startswith("epsilon is 0.5, recomputed 0.99") for p in problems), problems
    assert any("epsilon" in p for p in problems if p.startswith("signature") or "changed" in p), problems
    wider = {**st, "declared_public": {**st["declared_public"], "columns": st["declared_public"]["columns"][:2]}}
    assert not verification.verify(wider)["verified"]
