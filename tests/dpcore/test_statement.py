"""Privacy statements: every number recomputable from the JSON alone (dpcore.statement)."""

import json

import pytest

from dpcore import statement
from dpcore.data import datasets
from dpcore.jobs import registry, runner, store
from dpcore.queries import answering, fingerprint, model
from dpcore.cli import main
from dpcore.errors import DPError
from dpcore.jobs.owners import CLI_OWNER as OWNER, SYSTEM


def _roundtrip(st):
    return json.loads(json.dumps(st))


def _fake_sweep():
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep.config import SweepConfig

    cfg = SweepConfig().to_dict()
    rec = {"id": "20250101-000000-beef", "name": "fake", "created": 1.0, "status": "done", "config": cfg,
           "jobs": [], "failed": [],
           "result": {"config": cfg, "baseline": None, "points": [
               {"epsilon": 2.0, "epsilon_spent": 1.98, "delta": 1e-5, "seed": 0, "test_accuracy": 0.8, "n_train": 80,
                "noise_multiplier": 1.2, "sample_rate": 0.5, "steps": 20, "accountant": "prv", "mia": {},
                "empirical_epsilon": {"lower_bound": 0.3, "confidence": 0.95, "delta": 1e-5, "attack": "loss",
                                      "members": 40, "nonmembers": 40, "tp": 25, "fp": 15, "max_certifiable": 2.1,
                                      "within_claim": True, "method": "split"}}]}}
    sweep_runs.save(rec)
    return rec["id"]


def test_sweep_statement_recomputes_from_json_alone():
    from dp_accounting.pld import privacy_loss_distribution as pldm

    st = _roundtrip(statement.for_sweep(_fake_sweep(), caller=SYSTEM))
    assert st["neighbour_relation"] == "add/remove one record"
    pt = st["points"][0]
    assert pt["sampling"]["scheme"] == "Poisson" and pt["sampling"]["sample_rate"] == 0.5
    assert [r["delta"] for r in pt["epsilon_at_delta"]] == [1e-5, 1e-6, 1 / 80]
    assert pt["audit"]["lower_bound"] == 0.3 and pt["audit"]["confidence"] == 0.95
    assert pt["reproducible_noise"] is True  # an old record without a noise source is not called a DP release
    assert statement.verify(st) == []
    # independently of dpcore: dp_accounting's PLD from the statement's inputs alone
    x = pt["recompute"]["inputs"]
    pld = pldm.from_gaussian_mechanism(x["noise_multiplier"], sampling_prob=x["sample_rate"],
                                       value_discretization_interval=1e-4).self_compose(x["steps"])
    for r in pt["epsilon_at_delta"]:
        assert r["epsilon_pld"] == pytest.approx(pld.get_epsilon_for_delta(r["delta"]), rel=2e-2)
    # tampering is caught
    pt["epsilon_at_delta"][0]["epsilon_pld"] *= 0.9
    assert statement.verify(st)


def test_ledger_statement_composes_and_recomputes(dp_home):
    from dpcore.queries import ledger

    df = datasets.medical(2000, 0)
    ledger.register_builtin("medical 2000", fingerprint.dataset_identity(df))
    answering.ask(df, "ann", model.make_query("count", epsilon=0.5, condition="has_rare_disease=true"),
                budget=2.0, delta_budget=5e-5)
    answering.ask(df, "ann", model.make_query("count", epsilon=0.3, condition="age>50", mechanism="gaussian",
                                              delta=1e-7))
    st = _roundtrip(statement.for_ledger("ann", fingerprint.dataset_key(df), n_rows=2000))
    assert st["accountant"]["epsilon"] == pytest.approx(0.8) and st["accountant"]["delta"] == pytest.approx(1e-7)
    assert st["reproducible_noise"] is False
    for r in st["epsilon_at_delta"]:
        assert r["delta"] <= r["delta_prime"] * (1 + 1e-12) and r["epsilon"] <= 0.8 + 1e-12
    assert statement.verify(st) == []
    st["accountant"]["epsilon"] = 0.5
    assert statement.verify(st)


def test_empty_ledger_statement_says_nothing_spent():
    st = statement.for_ledger("nobody", "med")
    assert st["queries"] == [] and "nothing spent" in st["summary"]


@pytest.mark.slow
def test_training_run_statement(dp_home):
    runner.run_inline(registry.TRAIN, {"dataset": "breast_cancer", "model": "logreg", "epsilon": 2.0,
                                                "delta": 1e-5, "epochs": 2, "batch_size": 64, "seed": 0}, owner=OWNER)
    job_id = store.list_jobs(caller=SYSTEM)[0]["id"]
    st = _roundtrip(statement.for_job(job_id, caller=SYSTEM))
    assert st["private"] and st["kind"] == "training_run"
    assert st["accountant"]["epsilon"] <= 2.0 + 1e-9
    deltas = [r["delta"] for r in st["epsilon_at_delta"]]
    assert deltas[:2] == [1e-5, 1e-6] and deltas[2] == pytest.approx(1 / st["rows"])
    assert st["epsilon_at_delta"][0]["epsilon_pld"] <= st["accountant"]["epsilon"] + 0.02
    assert len(st["tradeoff"]["fpr"]) == len(st["tradeoff"]["tpr"]) > 50
    assert statement.verify(st) == []


def test_statement_cli(capsys, tmp_path):
    sid = _fake_sweep()
    assert main(["statement", "--sweep", sid]) == 0
    out = capsys.readouterr().out
    path = tmp_path / "st.json"
    path.write_text(out)
    assert main(["statement", "--verify", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is True
    bad = json.loads(out)
    bad["points"][0]["epsilon_at_delta"][1]["epsilon_pld"] = 0.01
    path.write_text(json.dumps(bad))
    assert main(["statement", "--verify", str(path)]) == 2
    assert "does not check out" in capsys.readouterr().err
    assert main(["statement", "--ledger", "--analyst", "ann"]) == 2
    assert main(["statement", "--job", "nope"]) == 2
    with pytest.raises(DPError):
        statement.for_sweep("20990101-000000-0000", caller=SYSTEM)


# --- one sweep point: the page's ROC ceiling and the gap in words ------------------------------------------


def _point(lower_bound=0.3, max_certifiable=2.1, attack="canary"):
    from dpcore.training import accounting

    p = {"epsilon": 2.0, "epsilon_spent": 1.98, "delta": 1e-5, "seed": 0, "test_accuracy": 0.8, "n_train": 80,
         "noise_multiplier": 1.2, "sample_rate": 0.5, "steps": 20, "accountant": "prv",
         "mia": {"loss": {"tpr_at_1pct_fpr": 0.015}, "canary": {"tpr_at_1pct_fpr": 0.02}},
         "empirical_epsilon": {"lower_bound": lower_bound, "confidence": 0.95, "attack": attack,
                               "max_certifiable": max_certifiable, "within_claim": lower_bound <= 1.98}}
    p["tradeoff"] = accounting.dpsgd_tradeoff(1.2, 0.5, 20)
    return p


def test_point_block_states_epsilon_at_three_deltas_mu_and_its_own_curve():
    from dpcore.attacks import audit
    from dpcore.training import accounting

    p = _point()
    b = statement.for_point(p)
    assert [r["delta"] for r in b["epsilon_at_delta"]] == [1e-5, 1e-6, 1 / 80] and b["rows"] == 80
    for r in b["epsilon_at_delta"]:
        assert r["epsilon_pld"] == pytest.approx(accounting.pld_epsilon(1.2, 0.5, 20, r["delta"]))
    assert b["mu"]["value"] == pytest.approx(audit.gdp_mu(1.2, 0.5, 20))
    assert b["tradeoff"]["tpr"] == p["tradeoff"]["tpr"]  # what the run stored, not a recomputation
    # the ceiling at 1% FPR read off the curve: the curve's own value at its grid point 0.01
    i = min(range(len(p["tradeoff"]["fpr"])), key=lambda k: abs(p["tradeoff"]["fpr"][k] - 0.01))
    assert statement.ceiling_tpr(b, 0.01) == pytest.approx(p["tradeoff"]["tpr"][i], rel=1e-6)
    with pytest.raises(DPError, match="no DP-SGD"):
        statement.for_point({"epsilon": None, "mia": {}})


def test_gap_words_say_proven_measured_and_the_gap():
    p = _point(lower_bound=0.5, max_certifiable=3.0)
    b = statement.for_point(p)
    text = statement.gap_words(b, p["mia"], labels={"canary": "canaries"})
    assert "Proven:** ε ≤ 1.98 at δ = 1e-5" in text and "PRV accountant" in text
    assert "the canary audit proves ε ≥ 0.5 (95% confidence)" in text
    assert "The gap, 1.48" in text and "25% of what the accountant allows" in text
    assert "could not have proved" not in text  # this audit could have proved up to 3.0 > 1.98
    assert f"catch {statement.ceiling_tpr(b, 0.01):.1%}" in text and "caught 2.0% (canaries)" in text
    nothing = statement.gap_words(statement.for_point(_point(lower_bound=0.0, max_certifiable=0.9)))
    assert "proves nothing" in nothing and "whole gap of 1.98" in nothing
    assert "could not have proved more than ε ≈ 0.9" in nothing
    above = statement.gap_words(statement.for_point(_point(lower_bound=2.5)))
    assert "*above* the proven ε" in above and "please report it" in above
