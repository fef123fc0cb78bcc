"""NIST SP 800-226's checks: each hazard flagged exactly where it applies, the three statements always made, and every
statement's checks recomputed from its own fields on verification."""

import itertools

from dpcore import nist


def _expected(c: nist.Claim) -> set[str]:
    """The hazards that apply to a claim, written out from the module's rules (an independent statement of them)."""
    if c.epsilon is None and c.rho is None and c.mu is None:
        return {"not_private"}
    out = set()
    e = nist.epsilon_at(c) if c.variant in ("zcdp", "gdp") else c.epsilon
    if e is not None and e > 10:
        out.add("epsilon_above_10")
    elif e is not None and e > 1:
        out.add("epsilon_above_1")
    if c.delta > 0 and (c.n is None or c.delta * c.n > 0.01):
        out.add("delta_vs_n")
    if c.level == "row" and c.rows_per_person != 1:
        out.add("event_level")
    if c.variant in ("zcdp", "gdp"):
        out.add("variant")
    if c.clamped:
        out.add("clamping_bias")
    if not c.exact_sampler:
        out.add("floating_point")
    return out


CLAIMS = [
    nist.Claim(
        eps,
        delta,
        "approx" if delta else "pure",
        unit="one row",
        level=level,
        rows_per_person=rpp,
        n=n,
        clamped=clamped,
        exact_sampler=exact,
    )
    for eps, delta, level, rpp, n, clamped, exact in itertools.product(
        (0.5, 1.0, 1.01, 10.0, 10.5),
        (0.0, 1e-9, 1e-5, 1e-3),
        ("row", "person"),
        (1, 10, None),
        (None, 1_000, 10**7),
        ((), ("age clamped to [18, 90]",)),
        (True, False),
    )
] + [
    nist.Claim(None, 1e-5, "zcdp", rho=0.05, n=10**6, rows_per_person=1),
    nist.Claim(None, 1e-5, "zcdp", rho=3.0, n=10**6, rows_per_person=1),
    nist.Claim(None, 0.0, "gdp", mu=1.0, rows_per_person=1),
    nist.Claim(None),
]


def test_hazards_are_flagged_exactly_where_they_apply():
    for c in CLAIMS:  # 1,440 combinations of ε, δ, level, rows per person, n, clamping and sampler, and the variants
        flags = nist.checks(c)
        assert set(nist.hazards(c)) == _expected(c), c
        assert [f.code for f in flags if f.kind == "states"] == list(nist.STATED)  # always stated
        assert all(f.line and f.title for f in flags)


def test_thresholds_at_their_edges():
    assert nist.hazards(nist.Claim(1.0, rows_per_person=1)) == ()
    assert nist.hazards(nist.Claim(1.000001, rows_per_person=1)) == ("epsilon_above_1",)
    assert nist.hazards(nist.Claim(10.0, rows_per_person=1)) == ("epsilon_above_1",)
    assert nist.hazards(nist.Claim(10.01, rows_per_person=1)) == ("epsilon_above_10",)
    d = dict(variant="approx", rows_per_person=1, epsilon=0.5)
    assert nist.hazards(nist.Claim(delta=1e-5, n=1_000, **d)) == ()  # δ·n = 0.01: 100 times below 1/n
    assert nist.hazards(nist.Claim(delta=1.1e-5, n=1_000, **d)) == ("delta_vs_n",)


def test_epsilon_at_1e5_compares_variants_on_one_scale():
    assert nist.epsilon_at(nist.Claim(2.0)) == 2.0
    assert nist.epsilon_at(nist.Claim(2.0, 1e-6, "approx")) == 2.0
    assert nist.epsilon_at(nist.Claim(2.0, 1e-3, "approx")) is None  # its own δ is larger
    z = nist.epsilon_at(nist.Claim(None, 0.0, "zcdp", rho=0.5))
    assert 4 < z < 4.8  # ρ = 0.5 at δ = 1e-5: about 4.4 (RDP conversion), below ρ + 2√(ρ ln 1e5) ≈ 5.3
    g = nist.epsilon_at(nist.Claim(None, 0.0, "gdp", mu=1.0))
    assert 3.5 < g < 4.5


def test_every_statement_kind_is_read_as_a_claim():
    plan_st = {
        "kind": "plan",
        "epsilon": 1.0,
        "level": "person-level",
        "unit_of_privacy": "one person",
        "unit": {"person": "pid", "max_rows": 5},
        "statistics": [{"column": "age", "bounds": [18.0, 90.0]}, {"column": None}],
    }
    c = nist.claim_of(plan_st)
    assert c.level == "person" and c.rows_per_person == 5 and len(c.clamped) == 2
    assert "event_level" not in nist.hazards(c)
    train = {
        "kind": "training_run",
        "private": True,
        "accountant": {"epsilon": 3.0, "delta": 1e-5},
        "rows": 500,
        "dataset_kind": "medical",
        "mechanism": {"noise_multiplier": 1.1},
    }
    assert set(nist.hazards(nist.claim_of(train))) == {"epsilon_above_1", "clamping_bias", "floating_point"}
    assert nist.hazards(nist.claim_of({"kind": "training_run", "private": False})) == ("not_private",)
    synth = {
        "kind": "synthetic_release",
        "epsilon": 2.0,
        "delta": 1e-6,
        "generator": {"rho": 0.1},
        "subject": "upload x.csv",
        "declared_public": {"columns": [{"name": "age", "bounds": [18, 90]}]},
    }
    assert set(nist.hazards(nist.claim_of(synth))) == {
        "epsilon_above_1",
        "delta_vs_n",
        "event_level",
        "variant",
        "clamping_bias",
    }
    advice = {"kind": "advice", "decision": {"epsilon": 0.8, "delta": 0.0}, "inputs": {"mechanism": "laplace"}}
    assert nist.hazards(nist.claim_of(advice)) == ("event_level",)
