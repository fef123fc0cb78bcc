"""Known answers for the ε advisor (dpcore.advisor) and its CLI."""

import json
import math

import numpy as np
import pytest
from scipy.special import ndtr, ndtri

from dpcore.advisor import dpsgd, links, solve, targets
from dpcore.advisor import risk as riskmath
from dpcore.advisor.advice import Advice
from dpcore.attacks import audit
from dpcore.cli import main
from dpcore.errors import DPError
from dpcore.noise import calibration, mechanisms
from dpcore.training.accounting import calibrate_noise

R = targets.RiskLimit
U = targets.UtilityTarget


# --- Gaussian -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sens", [1.0, 3.0])
def test_gaussian_tpr_limit_known_answer(sens):
    out = solve.advise("gaussian", R("tpr", 0.05, 0.01), sensitivity=sens)
    want = sens / (ndtri(0.05) - ndtri(0.01))
    assert out["sigma"] == pytest.approx(want, rel=1e-12)
    assert out["sigma"] == pytest.approx(1.468 * sens, rel=1e-3)
    # the exact trade-off curve Φ(Φ⁻¹(α) + Δ/σ) sits exactly at the limit
    assert audit.gaussian_tradeoff(sens / out["sigma"], [0.01])[0] == pytest.approx(0.05, rel=1e-9)
    # ε at δ is the Gaussian's exact ε for that σ: δ(ε) ≤ δ, and a hair less ε breaks it
    eps = out["epsilon"]
    assert calibration.gaussian_delta(out["sigma"], eps, sens) <= 1e-5
    assert calibration.gaussian_delta(out["sigma"], eps * (1 - 1e-6), sens) > 1e-5
    assert out["epsilon_range"] == [None, eps] and out["feasible"]


def test_gaussian_epsilon_inverts_the_analytic_calibration():
    for eps, delta in [(0.1, 1e-6), (1.0, 1e-5), (8.0, 1e-9)]:
        sigma = calibration.gaussian_analytic_sigma(eps, delta, 2.0)
        assert calibration.gaussian_epsilon(sigma, delta, 2.0) == pytest.approx(eps, rel=1e-7)


def test_gaussian_advantage_and_posterior_limits():
    out = solve.advise("gaussian", R("advantage", 0.1))
    assert 2 * ndtr(out["mu"] / 2) - 1 == pytest.approx(0.1, rel=1e-9)
    post = solve.advise("gaussian", R("posterior", 0.2, 0.05), delta=1e-6)
    e = post["epsilon"]
    assert math.exp(e) * 0.05 / (1 - 0.05 + math.exp(e) * 0.05) == pytest.approx(0.2, rel=1e-6)
    assert 0 < post["achieved"]["posterior_fails_with"] < 1e-3


def test_gaussian_utility_and_feasible_band():
    out = solve.advise("gaussian", R("tpr", 0.5, 0.01), U("count", within=5))
    assert out["feasible"]
    lo, hi = out["epsilon_range"]
    assert lo < hi
    # the recommendation is the most private setting that meets the target: σ = k / z
    assert out["sigma"] == pytest.approx(5 / ndtri(0.975), rel=1e-12)
    assert mechanisms.halfwidth("gaussian", epsilon=out["epsilon"], sensitivity=1.0, delta=1e-5) <= 5 + 1e-6


def test_conflict_is_measured_and_each_fix_reconciles():
    risk, util = R("tpr", 0.05, 0.01), U("mean", within=0.2, bounds=(18, 90), n=1000)
    out = solve.advise("gaussian", risk, util)
    assert not out["feasible"]
    c = out["conflict"]
    assert c["ratio"] == pytest.approx(c["epsilon_needed_by_utility"] / c["epsilon_allowed_by_risk"])
    assert c["ratio"] > 1
    fixes = {o["kind"]: o for o in c["reconcile"]}
    # more rows: feasible with the suggested n, not with a few fewer
    n = fixes["more_rows"]["n"]
    assert solve.advise("gaussian", risk, U("mean", within=0.2, bounds=(18, 90), n=n))["feasible"]
    assert not solve.advise("gaussian", risk, U("mean", within=0.2, bounds=(18, 90), n=int(n * 0.98)))["feasible"]
    # a coarser answer: feasible at the suggested tolerance
    k = fixes["coarser_answer"]["within"]
    assert solve.advise("gaussian", risk, U("mean", within=k * (1 + 1e-9), bounds=(18, 90), n=1000))["feasible"]
    # a weaker limit: feasible at the suggested TPR
    t = fixes["weaker_limit"]["tpr_at_fpr"]
    assert solve.advise("gaussian", R("tpr", t * (1 + 1e-9), 0.01), util)["feasible"]


# --- pure ε-DP -------------------------------------------------------------------------------------------------


def test_pure_dp_known_answers():
    out = solve.advise("laplace", R("tpr", 0.05, 0.01))
    assert out["epsilon"] == pytest.approx(math.log(5))  # e^ε·α ≤ T
    assert out["delta"] == 0.0
    p, big = 0.01, 0.1
    e = solve.advise("laplace", R("posterior", big, p))["epsilon"]
    assert math.exp(e) * p / (1 - p + math.exp(e) * p) == pytest.approx(big)
    a = solve.advise("laplace", R("advantage", 0.3))["epsilon"]
    assert (math.exp(a) - 1) / (math.exp(a) + 1) == pytest.approx(0.3)
    # high T: the other branch of the ε-DP trade-off curve, 1 − e^−ε(1 − α), is what binds
    hi = solve.advise("laplace", R("tpr", 0.99, 0.5))["epsilon"]
    assert hi == pytest.approx(math.log(0.5 / 0.01))
    assert riskmath.pure_tpr(hi, 0.5) == pytest.approx(0.99)


def test_laplace_utility_uses_the_95_percent_halfwidth():
    out = solve.advise("laplace", R("tpr", 0.9, 0.01), U("sum", within=900, bounds=(0, 90)))
    assert out["utility"]["epsilon_min"] == pytest.approx(90 * math.log(20) / 900)
    assert mechanisms.halfwidth("laplace", epsilon=out["epsilon"], sensitivity=90) == pytest.approx(900)
    assert out["scale_b"] == pytest.approx(90 / out["epsilon"])


@pytest.mark.parametrize(
    "risk,util",
    [
        (R("tpr", 0.01, 0.05), None),  # T below α
        (R("posterior", 0.1, 0.2), None),  # P below prior
        (R("advantage", 1.5), None),
        (R("tpr", 0.05, 0.01), U("mean", within=1, bounds=(0, 1))),  # no n
        (R("tpr", 0.05, 0.01), U("count", within=-1)),
        (R("oops", 0.1), None),
    ],
)
def test_bad_input_is_a_dperror(risk, util):
    with pytest.raises(DPError):
        solve.advise("gaussian", risk, util)


# --- DP-SGD against dp_accounting's own PLD ---------------------------------------------------------------------


def _dp_accounting_pld(sigma, q, steps):
    from dp_accounting.pld import privacy_loss_distribution as pldm

    one = pldm.from_gaussian_mechanism(sigma, sensitivity=1.0, sampling_prob=q, value_discretization_interval=1e-4)
    return one.self_compose(steps)


def _tpr_from_pld(pld, alpha):
    eps = np.linspace(0, 6, 1201)
    deltas = np.asarray(pld.get_delta_for_epsilon(eps.tolist()), dtype=float)
    return float(audit.roc_from_privacy_profile(eps, deltas, [alpha])[0])


@pytest.mark.slow
def test_dpsgd_noise_multiplier_checked_against_dp_accounting():
    q, steps = 0.2, 10
    out = solve.advise("dpsgd", R("tpr", 0.1, 0.01), sample_rate=q, steps=steps)
    nm = out["noise_multiplier"]
    assert _tpr_from_pld(_dp_accounting_pld(nm, q, steps), 0.01) <= 0.1 + 1e-6
    # near-minimal: 3% less noise breaks the limit
    assert _tpr_from_pld(_dp_accounting_pld(nm * 0.97, q, steps), 0.01) > 0.1
    assert out["epsilon"] == pytest.approx(_dp_accounting_pld(nm, q, steps).get_epsilon_for_delta(1e-5), rel=2e-2)


def test_dpsgd_advantage_is_the_pld_delta_at_zero():
    q, steps = 0.2, 10
    out = solve.advise("dpsgd", R("advantage", 0.2), sample_rate=q, steps=steps)
    nm = out["noise_multiplier"]
    assert _dp_accounting_pld(nm, q, steps).get_delta_for_epsilon(0.0) <= 0.2 + 1e-6
    assert _dp_accounting_pld(nm * 0.97, q, steps).get_delta_for_epsilon(0.0) > 0.2


def _fake_sweep(points, delta=1e-5):
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep.config import SweepConfig

    rec = {
        "id": "20250101-000000-abcd",
        "name": "fake",
        "created": 1.0,
        "status": "done",
        "config": SweepConfig().to_dict(),
        "jobs": [],
        "failed": [],
        "result": {
            "config": SweepConfig().to_dict(),
            "baseline": None,
            "points": [
                {
                    "epsilon": e,
                    "seed": s,
                    "test_accuracy": a,
                    "noise_multiplier": nm,
                    "sample_rate": 0.1,
                    "steps": 30,
                    "delta": delta,
                }
                for e, s, a, nm in points
            ],
        },
    }
    sweep_runs.save(rec)
    return rec["id"]


@pytest.mark.slow
def test_accuracy_target_reads_the_lower_end_of_a_sweep():
    sid = _fake_sweep(
        [
            (0.5, 0, 0.60, 4.0),
            (0.5, 1, 0.80, 4.0),  # mean 0.70, lower end 0.60
            (2.0, 0, 0.84, 1.5),
            (2.0, 1, 0.86, 1.5),  # lower end 0.84
            (8.0, 0, 0.90, 0.8),
            (8.0, 1, 0.90, 0.8),
        ]
    )
    out = solve.advise("dpsgd", R("tpr", 0.9, 0.01), U("accuracy", accuracy=0.8, sweep=sid))
    assert out["feasible"]
    # ε = 0.5's mean passes, its lower end does not: ε = 2 is picked, its multiplier recalibrated at q, T
    assert out["utility"]["at_sweep_epsilon"] == 2.0
    assert out["noise_multiplier"] == pytest.approx(calibrate_noise(2.0, 1e-5, 0.1, 30)[0])
    assert out["sample_rate"] == 0.1 and out["steps"] == 30
    tight = solve.advise("dpsgd", R("tpr", 0.02, 0.01), U("accuracy", accuracy=0.8, sweep=sid))
    assert not tight["feasible"] and tight["conflict"]["ratio"] > 1
    with pytest.raises(DPError, match="no point"):
        solve.advise("dpsgd", R("tpr", 0.9, 0.01), U("accuracy", accuracy=0.95, sweep=sid))
    with pytest.raises(DPError, match="sample rate"):
        solve.advise("dpsgd", R("tpr", 0.9, 0.01), U("accuracy", accuracy=0.8, sweep=sid), sample_rate=0.2)


def demo_shaped_sweep(sid="20250102-000000-demo"):
    """A finished sweep shaped like the default demo: 3 seeds whose canary coins give each its own row count
    (so its own q and steps at fixed epochs), ε reached a little below the ε asked for, and size-control points
    (25%/50% of rows) at other rates — stored both in points (as a running sweep shows them) and size_control."""
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep.config import SweepConfig

    qt = {0: (0.33, 60), 1: (0.5, 40), 2: (0.4, 50)}
    acc = {1.0: (0.70, 0.72, 0.74), 4.0: (0.86, 0.88, 0.90), 8.0: (0.91, 0.92, 0.93)}
    pts = [
        {
            "epsilon": e,
            "epsilon_spent": e * (0.991 + 0.002 * s),
            "seed": s,
            "test_accuracy": acc[e][s],
            "noise_multiplier": 3.0 / e + 0.01 * s,
            "sample_rate": qt[s][0],
            "steps": qt[s][1],
            "delta": 1e-5,
            "train_fraction": 1.0,
        }
        for e in acc
        for s in range(3)
    ]
    size = [
        {
            "epsilon": 4.0,
            "epsilon_spent": 3.97,
            "seed": s,
            "test_accuracy": 0.99,
            "noise_multiplier": 0.3,
            "sample_rate": 0.9,
            "steps": 10 + f_i,
            "delta": 1e-5,
            "train_fraction": f,
        }
        for s in range(3)
        for f_i, f in enumerate((0.25, 0.5))
    ]
    cfg = SweepConfig().to_dict()
    sweep_runs.save(
        {
            "id": sid,
            "name": "demo-shaped",
            "created": 1.0,
            "status": "done",
            "config": cfg,
            "jobs": [],
            "failed": [],
            "result": {"config": cfg, "baseline": None, "points": pts + size, "size_control": size},
        }
    )
    return sid


@pytest.mark.slow
def test_accuracy_target_from_a_demo_shaped_sweep():
    """Regression: seeds at different q/steps, ε reached ≠ ε asked, and size control made every current sweep
    fail with 'mixes sample rates/steps across points'."""
    sid = demo_shaped_sweep()
    out = solve.advise("dpsgd", R("tpr", 0.9, 0.01), U("accuracy", accuracy=0.85, sweep=sid))
    assert [r["epsilon"] for r in out["utility"]["curve"]] == [1.0, 4.0, 8.0]  # by ε asked, 3 seeds each
    assert all(r["seeds"] == 3 for r in out["utility"]["curve"])
    assert (out["sample_rate"], out["steps"]) == (0.4, 50)  # the median pair, one a seed trained with
    assert out["utility"]["at_sweep_epsilon"] == 4.0 and out["feasible"]
    nm = out["noise_multiplier"]  # computed for the q and T it is used with: ε ≈ 4 there, never above
    assert nm == pytest.approx(calibrate_noise(4.0, 1e-5, 0.4, 50)[0])
    assert calibrate_noise(4.0, 1e-5, 0.4, 50)[1] <= 4.0
    assert out["epsilon"] <= 4.0 + 0.02 and out["epsilon"] > 3.8
    assert any("0.33–0.5" in n and "median" in n for n in out["notes"])
    assert any(n.startswith("6 size-control points") for n in out["notes"])  # each counted once
    # the caller's own q/T inside the sweep's range: used and recalibrated; outside: refused
    own = solve.advise("dpsgd", R("tpr", 0.9, 0.01), U("accuracy", accuracy=0.85, sweep=sid), sample_rate=0.5, steps=40)
    assert own["noise_multiplier"] == pytest.approx(calibrate_noise(4.0, 1e-5, 0.5, 40)[0])
    with pytest.raises(DPError, match="0.33–0.5 for 40–60 steps"):
        solve.advise("dpsgd", R("tpr", 0.9, 0.01), U("accuracy", accuracy=0.85, sweep=sid), sample_rate=0.9, steps=10)


def test_cli_accuracy_target_from_a_demo_shaped_sweep(capsys):
    sid = demo_shaped_sweep()
    assert (
        main(
            [
                "advise",
                "--mechanism",
                "dpsgd",
                "--max-tpr",
                "0.9",
                "--at-fpr",
                "0.01",
                "--min-accuracy",
                "0.85",
                "--sweep",
                sid,
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["feasible"] and out["steps"] == 50 and out["utility"]["at_sweep_epsilon"] == 4.0


# --- CLI ---------------------------------------------------------------------------------------------------------


def test_cli_known_answer(capsys):
    assert (
        main(["advise", "--mechanism", "gaussian", "--sensitivity", "1", "--max-tpr", "0.05", "--at-fpr", "0.01"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["sigma"] == pytest.approx(1.4674, rel=1e-3)
    assert out["delta"] == 1e-5 and out["epsilon"] > 0
    assert out["link"]["page"] == "pages/noise.py"


def test_cli_utility_and_posterior(capsys):
    assert (
        main(
            [
                "advise",
                "--mechanism",
                "laplace",
                "--max-posterior",
                "0.5",
                "--prior",
                "0.1",
                "--within",
                "10",
                "--bounds",
                "0:100",
                "--n",
                "1000",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["utility"]["kind"] == "mean" and out["feasible"]
    assert out["sensitivity"] == pytest.approx(0.1)


@pytest.mark.parametrize(
    "argv",
    [
        ["--mechanism", "gaussian"],  # no risk limit
        ["--mechanism", "gaussian", "--max-tpr", "0.05"],  # no FPR
        ["--mechanism", "gaussian", "--max-tpr", "0.05", "--at-fpr", "0.01", "--max-advantage", "0.1"],
        ["--mechanism", "dpsgd", "--max-advantage", "0.1"],  # no q, T
        ["--mechanism", "laplace", "--max-advantage", "0.1", "--delta", "1e-5"],
        ["--mechanism", "gaussian", "--max-advantage", "0.1", "--delta", "2"],
        ["--mechanism", "gaussian", "--max-advantage", "0.1", "--bounds", "0:1"],
    ],
)
def test_cli_bad_input_one_line_exit_2(argv, capsys):
    assert main(["advise", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


# --- the query console link ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("delta", [1e-5, 3e-6])
def test_console_link_keeps_the_risk_limit_at_the_consoles_own_calibration(delta):
    """The console calibrates σ from (ε, δ) itself: at the link's ε and δ (a δ the console offers, never above
    the advice's) its σ is at least the risk limit's σ_min, and it still meets the COUNT target."""
    from dpcore.noise.calibration import gaussian_analytic_sigma

    out = solve.advise("gaussian", R("tpr", 0.05, 0.01), U("count", within=10), delta=delta)
    link = links.console_link(out)
    p = link["params"]
    assert link["page"] == "pages/query_console.py" and "analyst" not in str(p)
    assert p["qc_kind"] == "COUNT" and p["qc_mech"] == "gaussian"
    assert p["qc_delta"] in links.CONSOLE_DELTAS and p["qc_delta"] <= delta
    sigma = gaussian_analytic_sigma(p["qc_eps"], p["qc_delta"], 1.0)
    assert sigma >= out["risk"]["sigma_min"] * (1 - 1e-9)  # 1.4674: TPR ≤ 0.05 at FPR 0.01
    assert link["meets_utility"] and sigma <= out["utility"]["sigma_max"] * (1 + 1e-9)
    assert len(repr(p["qc_eps"])) <= 8  # a readable number in the link


def test_console_link_for_laplace_sum_carries_bounds_and_stays_under_the_limit():
    out = solve.advise("laplace", R("posterior", 0.5, 0.1), U("sum", within=500, bounds=(18, 90)))
    link = links.console_link(out)
    p = link["params"]
    assert p == {"qc_kind": "SUM", "qc_mech": "laplace", "qc_eps": p["qc_eps"], "qc_lo": 18.0, "qc_hi": 90.0}
    assert out["epsilon_range"][0] <= p["qc_eps"] <= out["epsilon_range"][1]
    assert links.console_link(solve.advise("laplace", R("tpr", 0.05, 0.01), None)) is None  # no query to open


@pytest.mark.parametrize("risk", [R("tpr", 0.1, 0.01), R("posterior", 0.2, 0.05)])
def test_dpsgd_solve_is_minimal_in_few_pld_evaluations(monkeypatch, risk):
    """The search uses the risk's value (secant + straddle), not pass/fail bisection: at most 5 coarse-PLD
    evaluations (bisection needed 7, and the posterior's start needed Opacus's PRV calibration), and the answer
    is still minimal to the solver's tolerance on the PLD it searched."""
    calls = []
    real = dpsgd.dpsgd_risk

    def counting(*a, **k):
        calls.append(k.get("coarse", False))
        return real(*a, **k)

    monkeypatch.setattr(dpsgd, "dpsgd_risk", counting)
    nm = dpsgd.solve_noise_multiplier(risk, 0.2, 10, 1e-5)
    assert calls.count(True) <= 5 and calls.count(False) == 1
    assert real(nm * (1 + 1e-9), 0.2, 10, risk, 1e-5) <= risk.value
    assert real(nm / (1 + 2 * dpsgd.NM_RTOL), 0.2, 10, risk, 1e-5, coarse=True) > risk.value


def test_cli_links_are_the_pages_links(capsys):
    """The page and `python -m dpcore advise` give the same links (the rule lives in dpcore.advisor.links): for the
    default advice (ε ≈ 0.7097) the noise page opens at 1, the slider's most private value that keeps both, not
    at 0.7 (which misses the target); the console at 0.71 (3 digits, as the page writes ε), with δ beside it."""
    from dpcore.cli import main

    out = solve.advise("gaussian", R("tpr", 0.05, 0.01), U("count", within=10), delta=1e-5)
    noise, console = links.page_link(out), links.console_link(out)
    assert noise["params"]["noise_eps"] == 1.0 and noise["meets_utility"] and noise["keeps_risk"]
    assert console["params"]["qc_eps"] == 0.71 and console["label"].endswith("ε = 0.71, δ = 1e-5")
    rc = main(
        [
            "advise",
            "--mechanism",
            "gaussian",
            "--max-tpr",
            "0.05",
            "--at-fpr",
            "0.01",
            "--query",
            "count",
            "--within",
            "10",
            "--delta",
            "1e-5",
        ]
    )
    assert rc == 0
    got = json.loads(capsys.readouterr().out)
    assert got["link"]["params"]["noise_eps"] == 1.0 and got["console_link"]["params"]["qc_eps"] == 0.71


def test_recommended_epsilon_is_written_on_the_side_it_must_keep():
    """At the utility target's minimum the recommendation rounds up (still meets it); at the risk limit's
    maximum, down (still keeps it). The page metric and the band chart write the same."""
    from dpcore.figures import advisor as figs

    at_target = solve.advise("gaussian", R("tpr", 0.05, 0.01), U("count", within=10), delta=1e-5)
    assert links.recommended_text(at_target) == "0.71" and float("0.71") >= at_target["epsilon"]
    at_limit = solve.advise("laplace", R("posterior", 0.5, 0.1), None)  # ln 9 = 2.197
    assert links.recommended_text(at_limit) == "2.19" and float("2.19") <= at_limit["epsilon"]
    assert "recommended ε = 2.19" in [t.name for t in figs.feasible_band_chart(at_limit).data]


# --- every link keeps the risk it states (issue 25 §4): the risk recomputed at the linked setting -------------


def _dg_sigma(eps: float, delta: float, k: int) -> float:
    """σ of the discrete Gaussian the noise page and the console draw for (ε, δ) at a whole shift K."""
    return mechanisms.DiscreteGaussian(epsilon=eps, delta=delta, sensitivity=k).scale


def _dg_count_curves(sigma: float):
    """The exact pmf of N_Z(0, σ²) (summed directly, not through dpcore.noise.discrete) on ±(40σ + 60)."""
    w = int(40 * sigma) + 60
    x = np.arange(-w, w + 1)
    f = np.exp(-(x.astype(float) ** 2) / (2 * sigma * sigma))
    return x, f / f.sum()


def _count_risk(r: dict, sigma: float, adv_delta: float) -> float:
    """One count with discrete Gaussian noise (H0: count c, H1: c + 1), exactly: the ROC of the tests 'answer ≥ t'
    (randomised between thresholds), the total-variation distance, and the posterior at the ε whose exact δ(ε) is
    the advice's δ."""
    x, p0 = _dg_count_curves(sigma)
    p1 = np.r_[0.0, p0[:-1]]  # shifted by one
    if r["kind"] == "tpr":
        fpr, tpr = np.r_[0.0, np.cumsum(p0[::-1])], np.r_[0.0, np.cumsum(p1[::-1])]
        return float(np.interp(r["at"], fpr, tpr))
    if r["kind"] == "advantage":
        return float(np.maximum(p1 - p0, 0).sum())
    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if np.maximum(p1 - math.exp(mid) * p0, 0).sum() <= adv_delta else (mid, hi)
    p = r["at"]
    return math.exp(hi) * p / (1 - p + math.exp(hi) * p)


def _mean_risk(r: dict, sigma_count: float, mu_sum: float, adv_delta: float) -> float:
    """The console's MEAN under add/remove: a discrete-Gaussian count (shift 1) and a centred sum whose σ is millions
    of grid steps (a Gaussian of μ = K/σ to within e^(−2π²σ²)), one record moving both. The log-likelihood ratio is
    L = ℓ(y) + μ·Z − μ²/2 under H0; every quantity is read off its exact distribution."""
    x, p0 = _dg_count_curves(sigma_count)
    p1 = np.r_[0.0, p0[:-1]]
    ell = (2 * x - 1) / (2 * sigma_count**2)
    m = mu_sum

    def tail(t, under_h1):  # P(L ≥ t)
        w = p1 if under_h1 else p0
        return float(np.sum(w * ndtr(-(t - ell + (-m * m / 2 if under_h1 else m * m / 2)) / m)))

    if r["kind"] == "advantage":
        return tail(0.0, True) - tail(0.0, False)
    if r["kind"] == "tpr":
        lo, hi = -200.0, 200.0
        for _ in range(200):  # FPR(t) = α
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if tail(mid, False) > r["at"] else (lo, mid)
        return tail(hi, True)

    def delta_at(e):
        return sum(
            w1 * (ndtr(-(e - l - m * m / 2) / m) - math.exp(e - l) * ndtr(-(e - l + m * m / 2) / m))
            for w1, l in zip(p1, ell)  # noqa: E741 (l: the paper's privacy loss)
            if w1 > 1e-300
        )

    lo, hi = 0.0, 50.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if delta_at(mid) <= adv_delta else (mid, hi)
    p = r["at"]
    return math.exp(hi) * p / (1 - p + math.exp(hi) * p)


def _independent_risk(out: dict, mech: str, eps: float, delta, *, kind: str = "count", bounds=None) -> float:
    """The risk a page's release at (ε, δ) allows, computed directly (not through dpcore.advisor): Laplace and
    geometric releases are pure ε-DP; Gaussian releases are whole numbers plus *discrete* Gaussian noise (the noise
    page's count, the console's COUNT, SUM on its grid, and MEAN: a count and a centred sum at (ε/2, δ/2) each —
    replaced, one record moves the sum by up to r(hi) − r(lo) and the count not at all)."""
    from dpcore.noise import grid

    r = out["risk"]
    if mech == "laplace":
        e = eps
        if r["kind"] == "tpr":
            a = r["at"]
            return min(math.exp(e) * a, 1 - math.exp(-e) * (1 - a))
        if r["kind"] == "advantage":
            return math.tanh(e / 2)
        p = r["at"]
        return math.exp(e) * p / (1 - p + math.exp(e) * p)
    if kind == "count":
        return _count_risk(r, _dg_sigma(eps, delta, 1), out["delta"])
    if kind == "sum":
        g = grid.for_sensitivity(max(abs(bounds[0]), abs(bounds[1])))
        k = grid.bounded_sum_k(g, *bounds)
        mu = k / _dg_sigma(eps, delta, k)
    else:
        g = grid.for_sensitivity((bounds[1] - bounds[0]) / 2)
        _, k = grid.centre_and_k(g, *bounds)
        a, b = (int(v) for v in g.units(list(bounds)))
        s_sum = _dg_sigma(eps / 2, delta / 2, k)
        if not out["neighbour_relation"].startswith("replace"):
            return _mean_risk(r, _dg_sigma(eps / 2, delta / 2, 1), k / s_sum, out["delta"])
        mu = (b - a) / s_sum
    if r["kind"] == "tpr":
        return float(ndtr(ndtri(r["at"]) + mu))
    if r["kind"] == "advantage":
        return float(2 * ndtr(mu / 2) - 1)
    e = calibration.gaussian_epsilon(1 / mu, out["delta"], 1.0)
    p = r["at"]
    return math.exp(e) * p / (1 - p + math.exp(e) * p)


_LINK_RISKS = [
    R("tpr", 0.05, 0.01),
    R("tpr", 0.2, 0.01),
    R("advantage", 0.1),
    R("advantage", 0.4),
    R("posterior", 0.2, 0.05),
    R("posterior", 0.6, 0.1),
]
_LINK_UTILS = [
    None,
    U("count", within=3),
    U("count", within=50),
    U("sum", within=2000, bounds=(18, 90)),
    U("mean", within=0.05, bounds=(18, 90), n=10_000),
    U("mean", within=0.002, bounds=(18, 90), n=10_000),
]


@pytest.mark.parametrize(
    "mech, delta", [("gaussian", 1e-5), ("gaussian", 3e-6), ("gaussian", 5e-5), ("gaussian", 2.5e-8), ("laplace", None)]
)
def test_every_link_keeps_the_risk_it_states(mech, delta):
    """Recomputed at the linked setting as that page releases: a link that says it keeps the risk limit does
    (main's console MEAN link for a Gaussian MEAN advice read 0.0525 TPR against a 0.05 limit under the stated
    replace-one relation; its noise-page link snapped δ up to the grid's next value while saying keeps_risk)."""
    checked = 0
    for risk in _LINK_RISKS:
        for util in _LINK_UTILS:
            out = solve.advise(mech, risk, util, delta=delta)
            for link in (links.page_link(out), links.console_link(out)):
                if link is None:
                    continue
                p = link["params"]
                if link["page"] == "pages/noise.py":
                    eps, d, kind, bounds = p["noise_eps"], p.get("noise_delta"), "count", None
                    if d is not None:
                        assert d <= out["delta"] * (1 + 1e-12), (p, out["delta"])  # never a larger δ
                else:
                    eps, d, kind = p["qc_eps"], p.get("qc_delta"), p["qc_kind"].lower()
                    bounds = (p["qc_lo"], p["qc_hi"]) if "qc_lo" in p else None
                value = _independent_risk(out, mech, eps, d, kind=kind, bounds=bounds)
                # the link's risk is an upper bound of the release's (the discrete Gaussian's read off a grid of
                # its privacy profile), and a close one
                assert value * (1 - 1e-6) - 1e-9 <= link["risk"] <= value * 1.03 + 1e-6, (
                    risk,
                    util,
                    link["label"],
                    value,
                )
                if link["keeps_risk"]:
                    assert value <= risk.value * (1 + 1e-9), (risk, util, link["label"], value)
                    checked += 1
                else:  # only where even the page's most private setting is above the limit
                    assert link["page"] == "pages/noise.py" and eps == min(noise_grid())
    assert checked >= 40


def noise_grid():
    from dpcore.noise.view import EPSILON_GRID

    return EPSILON_GRID


@pytest.mark.parametrize("risk", [R("advantage", 0.5), R("advantage", 0.1), R("tpr", 0.2, 0.01), R("tpr", 0.7, 0.3)])
def test_a_gaussian_link_keeps_the_risk_of_the_discrete_gaussian_the_page_releases(risk):
    """Audit: the noise page and the console release a count plus *discrete* Gaussian noise, whose trade-off curve
    rises above the continuous Gaussian's of the same σ. The links read the continuous one: main's console link for
    'advantage ≤ 0.5' (a COUNT within ±0.3, a conflict: the limit's edge) opened at ε = 6.21, whose release reaches
    an advantage of 0.534; 'TPR ≤ 0.2 at 1% FPR' at ε = 6.96 reached 0.216 — both said keeps_risk."""
    out = solve.advise("gaussian", risk, U("count", within=0.3), delta=1e-5)
    for link in (links.console_link(out), links.page_link(out)):
        p = link["params"]
        eps, d = (p["qc_eps"], p["qc_delta"]) if "qc_eps" in p else (p["noise_eps"], p["noise_delta"])
        real = _independent_risk(out, "gaussian", eps, d)
        assert link["keeps_risk"] and real <= risk.value * (1 + 1e-9), (link["label"], real)
        assert link["risk"] >= real * (1 - 1e-9)  # what the link states is never below the release's risk


def test_console_mean_link_for_a_gaussian_mean_advice_keeps_the_limit():
    """Issue 25's case: TPR ≤ 0.05 at FPR 0.01 against a MEAN within ±0.01 (a conflict: the advice is the risk
    limit's edge, ε ≈ 2.82). main linked the console at ε = 2.82, whose MEAN (sum ÷ count at ε/2 each) gave
    TPR 0.0525 under the stated replace-one relation; the link now opens at an ε whose release keeps 0.05."""
    out = solve.advise("gaussian", R("tpr", 0.05, 0.01), U("mean", within=0.01, bounds=(18, 90), n=10_000))
    assert not out["feasible"] and out["neighbour_relation"].startswith("replace one record")
    link = links.console_link(out)
    eps, d = link["params"]["qc_eps"], link["params"]["qc_delta"]
    assert _independent_risk(out, "gaussian", 2.82, 1e-5, kind="mean", bounds=(18, 90)) > 0.0524  # what main linked
    assert eps < 2.82 and _independent_risk(out, "gaussian", eps, d, kind="mean", bounds=(18, 90)) <= 0.05
    assert link["keeps_risk"] and not link["meets_utility"]


def test_in_a_conflict_the_recommendation_and_the_links_read_alike():
    """ "Recommended ε 1.66" beside "risk limit allows ε ≤ 1.65" and buttons for 1.5 and 1.65 (issue 28): in a
    conflict the recommendation is the risk limit's edge, written rounded down like the limit, and each link
    says how it relates to it."""
    from dpcore import claims

    out = solve.advise("laplace", R("tpr", 0.05, 0.01), U("count", within=1))
    assert not out["feasible"]
    hi = out["epsilon_range"][1]
    assert links.recommended_text(out) == claims.down(hi)
    console = links.console_link(out)
    assert console["params"]["qc_eps"] == float(claims.down(hi))
    noise = links.page_link(out)
    assert noise["params"]["noise_eps"] <= hi and f"recommended {claims.down(hi)}" in noise["label"]


# --- the decision record (issue 25 §3) and hostile numbers (issue 28) ------------------------------------------


def test_decision_record_is_a_statement_that_recomputes(tmp_path, capsys):
    from dpcore.advisor import decision
    from dpcore.statements import verify as verification

    path = tmp_path / "decision.json"
    assert (
        main(
            [
                "advise",
                "--mechanism",
                "gaussian",
                "--max-tpr",
                "0.05",
                "--at-fpr",
                "0.01",
                "--within",
                "500",
                "--bounds",
                "18:90",
                "--statement",
                str(path),
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    st = json.loads(path.read_text())
    assert out["statement"] == str(path) and st["kind"] == "advice" and st["signature"]["scheme"] == "Ed25519"
    assert st["decision"]["epsilon"] == out["epsilon"] and st["decision"]["epsilon_text"] == "1.36"
    words = " ".join(st["words"])
    for part in (
        "Risk limit: attacker TPR ≤ 0.05 at FPR 0.01 — about whether one person's record is in the data",
        "Decision: ε = 1.36 at δ = 1e-5",
        "95% error bound (not an expected error): within ±500 with probability 95%; it misses with probability 5%",
        "the privacy loss exceeds ε = 1.36 with probability 0.00013 (13 × δ)",
    ):
        assert part in words, part
    assert verification.verify(st)["verified"]
    assert main(["statement", "--verify", str(path)]) == 0
    capsys.readouterr()
    for edit, field in (
        (lambda s: s["advice"].update(epsilon=0.5), "advice.epsilon is 0.5"),
        (lambda s: s["advice"].update(sigma=10.0), "advice.sigma is 10.0"),
        (lambda s: s["inputs"]["risk"].update(value=0.2), "advice.epsilon_range[1] is"),
        (lambda s: s.update(neighbour_relation="replace one record"), "neighbour_relation is"),
        (lambda s: s["advice"]["achieved"].update(tpr_at_fpr=0.001), "advice.achieved.tpr_at_fpr"),
        (lambda s: s["words"].__setitem__(1, "Utility target: none."), "signature: words[1]"),
    ):
        bad = json.loads(path.read_text())
        edit(bad)
        problems = verification.verify(bad)["problems"]
        assert any(p.startswith(field) for p in problems), (field, problems)
    assert decision.recompute({"kind": "advice"})[0].startswith("inputs and advice are needed")
    # an unusable --statement path fails before the solve
    assert (
        main(
            [
                "advise",
                "--mechanism",
                "laplace",
                "--max-advantage",
                "0.1",
                "--statement",
                str(tmp_path / "no" / "such.json"),
            ]
        )
        == 2
    )
    assert "does not exist" in capsys.readouterr().err


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["--mechanism", "gaussian", "--max-tpr", "0.05", "--at-fpr", "0.01", "--within", "1e-320"],
            "allow a larger error",
        ),
        (
            ["--mechanism", "laplace", "--max-tpr", "0.05", "--at-fpr", "0.01", "--within", "1e-320"],
            "allow a larger error",
        ),
        (
            ["--mechanism", "gaussian", "--max-tpr", "0.05", "--at-fpr", "0.01", "--within", "1e308"],
            "give a tighter ±k",
        ),
        (
            [
                "--mechanism",
                "dpsgd",
                "--max-tpr",
                "0.05",
                "--at-fpr",
                "0.01",
                "--sample-rate",
                "1e-320",
                "--steps",
                "100",
            ],
            "sample rate must be in [1e-06, 1]",
        ),
        (
            [
                "--mechanism",
                "dpsgd",
                "--max-tpr",
                "0.05",
                "--at-fpr",
                "0.01",
                "--sample-rate",
                "0.01",
                "--steps",
                "99999999999",
            ],
            "steps must be from 1 to 1,000,000",
        ),
        (["--mechanism", "gaussian", "--max-advantage", "1e-300"], "below the smallest ε the app works with"),
        (["--mechanism", "laplace", "--max-advantage", "1e-300"], "below the smallest ε the app works with"),
        (
            ["--mechanism", "dpsgd", "--max-advantage", "1e-300", "--sample-rate", "0.01", "--steps", "10"],
            "does not meet attacker advantage",
        ),
        (
            [
                "--mechanism",
                "gaussian",
                "--max-tpr",
                "0.05",
                "--at-fpr",
                "0.01",
                "--within",
                "1",
                "--bounds=-1e308:1e308",
            ],
            "public bounds must lie within",
        ),
        (
            [
                "--mechanism",
                "gaussian",
                "--max-tpr",
                "0.05",
                "--at-fpr",
                "0.01",
                "--within",
                "1",
                "--bounds=0:1e30",
                "--n",
                "10",
            ],
            "public bounds must lie within",
        ),
        (
            ["--mechanism", "gaussian", "--max-tpr", "0.05", "--at-fpr", "0.01", "--sensitivity", "1e308"],
            "sensitivity Δ must be at most",
        ),
    ],
)
def test_hostile_numbers_are_one_line_and_exit_2(args, words, capsys):
    """Issue 28: --within 1e-320, --sample-rate 1e-320 and --max-advantage 1e-300 were tracebacks
    (ZeroDivisionError, OverflowError); bounds ±1e308 an infinite sensitivity."""
    assert main(["advise", *args]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize(
    "mech, risk, util",
    [
        (m, r, u)
        for m in ("gaussian", "laplace")
        for r in (R("tpr", 0.05, 0.01), R("advantage", 0.1), R("posterior", 0.2, 0.05))
        for u in (None, U("count", within=10), U("mean", within=0.001, bounds=(18, 90), n=10_000))
    ],
)
def test_every_decision_record_has_words_and_checks_out(mech, risk, util):
    """Each risk kind and target, feasible or in conflict, gives a decision record in words that recomputes (the
    advantage limit's record raised a TypeError: its risk has no FPR)."""
    from dpcore.advisor import decision
    from dpcore.statements import signing
    from dpcore.statements import verify as verification

    inp = decision.inputs(mech, risk, util)
    st = decision.statement(inp, decision.solve_inputs(inp))
    assert st["words"][0].startswith(f"Risk limit: {risk.checked().text()}")
    assert any(w.startswith("At this setting no attacker can reach") for w in st["words"])
    assert verification.verify(signing.issue(st))["verified"]


@pytest.mark.parametrize(
    "mechanism,risk,utility,kw",
    [
        ("gaussian", targets.RiskLimit("tpr", 0.05, 0.01), targets.UtilityTarget("count", within=10.0), {}),
        ("laplace", targets.RiskLimit("posterior", 0.2, 0.05), targets.UtilityTarget("count", within=1.0), {}),
        ("gaussian", targets.RiskLimit("advantage", 0.01), targets.UtilityTarget("count", within=0.1), {}),
        ("dpsgd", targets.RiskLimit("tpr", 0.1, 0.01), None, {"sample_rate": 0.2, "steps": 10}),
    ],
)
def test_the_typed_advice_reads_and_writes_the_clis_json(mechanism, risk, utility, kw):
    """:class:`dpcore.advisor.advice.Advice` is the advice the page reads: its fields are the JSON's, and it writes
    that JSON back unchanged (the CLI's output, the figures and the decision record take it)."""
    out = solve.advise(mechanism, risk, utility, **kw)
    out["link"], out["console_link"] = links.page_link(out), links.console_link(out)
    text = json.dumps(out, default=float)
    adv = Advice.from_dict(json.loads(text))
    assert json.dumps(adv.to_dict(), default=float) == text
    assert adv.epsilon_range == tuple(out["epsilon_range"]) and adv.feasible == out["feasible"]
    assert adv.delta == out["delta"] and adv.mechanism == mechanism
    assert adv.link is not None and adv.link.page == out["link"]["page"] and adv.link.risk == out["link"]["risk"]
    assert (adv.console_link is None) == (out["console_link"] is None)
    assert (adv.conflict_text is None) == out["feasible"]
    assert adv.reconcile == tuple(o["text"] for o in (out.get("conflict") or {}).get("reconcile", ()))
    name, value, _ = adv.noise_setting()
    key = {"gaussian": "sigma", "laplace": "scale_b", "dpsgd": "noise_multiplier"}[mechanism]
    assert value == f"{out[key]:.4g}" and name
    assert links.link_note(adv)  # every link says where it opens
