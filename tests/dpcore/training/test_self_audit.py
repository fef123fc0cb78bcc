"""Every DP-SGD run audits itself (issue 37 §1): its stored result holds its own one-run (ε, δ) audit, its f-DP and
Gaussian-DP bounds, the heuristic and a verdict that names the promise and the measurements; the CLI and the page's
job store it; the statement states the canary audit as a measurement and is recomputed on verification."""

import json

import pytest

from dpcore.attacks import fdp, gdp, last_iterate, one_run
from dpcore.training import self_audit
from dpcore.training.config import TrainConfig
from dpcore.training.job import run_job
from dpcore.training.loop import train
from dpcore.training.results import TrainMetrics
from tests.dpcore.training.test_training import FakeCtx

RUN = dict(dataset="breast_cancer", model="logreg", epsilon=1.0, epochs=2, batch_size=64)


def test_a_dp_runs_stored_result_holds_its_own_audit_fdp_and_gdp_bounds(tmp_path):
    ctx = FakeCtx(tmp_path)
    stored = json.loads(json.dumps(run_job(RUN, ctx)))  # what the job store keeps
    m = TrainMetrics.from_dict(stored)
    a = m.audit
    assert m.canaries["n"] == 45 and a["canaries"] == m.canaries  # a tenth of the 455 rows
    # one-run (ε, δ) at 95% (Steinke et al.) with its guess counts and ceiling
    one = a["one_run"]
    assert one["n_canaries"] == 45 and one["confidence"] == 0.95 and one["delta"] == 1e-5
    assert 0 <= one["lower_bound"] <= one["max_certifiable"] and one["tried"]
    assert one["lower_bound"] == one_run.bound_at(45, tuple(map(tuple, one["tried"])), 1e-5, 0.05)[0]
    # the f-DP audit of the same guesses (Mahloujifar et al.), as the audit engineer's function returns it
    f = fdp.FdpAudit.from_dict(a["one_run_fdp"])
    assert f.n_canaries == 45 and f.confidence == 0.95 and 0 <= f.mu <= a["one_run_fdp"]["max_provable"][0]
    # the Gaussian-DP audit from the records' scores (Nasr et al.)
    g = gdp.GdpAudit.from_dict(a["gdp"])
    assert g.attack in ("loss", "threshold") and g.members > 0 and g.mu >= 0
    # the heuristic for the run's own σ, q, T
    h = last_iterate.heuristic_epsilon(m.noise_multiplier, m.sample_rate, m.steps, m.delta)
    assert a["heuristic"]["epsilon"] == pytest.approx(h) and h <= m.epsilon + 1e-9
    # every figure with its kind; the verdict names the promise and the measurements
    kinds = [x["kind"] for x in a["figures"]]
    assert kinds[0] == "promise" and a["figures"][0]["epsilon"] == m.epsilon
    assert kinds.count("measurement") == 3 and "heuristic" in kinds
    assert a["verdict"] == "consistent"
    text = a["verdict_text"]
    assert text.startswith("Promise: ε ≤") and "Measurement: the one-run audit" in text
    assert "not a guarantee" in text and "f-DP" in text and "No measurement lies above the promise" in text
    assert "audit" in stored["not_covered_by_epsilon"] and "per_class" in stored["not_covered_by_epsilon"]
    assert m.accounting_check["passed"]


def test_verdict_calls_a_measurement_above_the_promise_a_bug_or_chance():
    audit = {
        "one_run": {"lower_bound": 2.5, "confidence": 0.95, "max_certifiable": 3.0},
        "heuristic": {"epsilon": 0.9},
    }
    v = self_audit.verdict(1.0, 1e-5, "prv", audit)
    assert v["verdict"] == "measurement above the promise"
    assert "the training, its accounting or its settings are wrong" in v["verdict_text"]
    none = self_audit.verdict(None, 1e-5, "prv", {"one_run": {"lower_bound": 2.5}})
    assert none["verdict"] == "no promise" and none["verdict_text"].startswith("No promise")
    assert [f["kind"] for f in none["figures"]] == ["measurement"]


def test_a_baseline_carries_no_canaries_unless_asked_and_then_audits_itself():
    base = train(TrainConfig(**RUN).baseline()).metrics
    assert base.canaries is None and base.audit is None and base.accounting_check is None
    asked = train(TrainConfig(**{**RUN, "epsilon": None, "canaries": 40})).metrics
    assert asked.audit["verdict"] == "no promise" and asked.audit["one_run"]["n_canaries"] == 40
    off = train(TrainConfig(**RUN, canaries=0)).metrics
    assert off.audit["canaries"] is None and "one_run" not in off.audit and off.audit["gdp"] is not None


def test_the_statement_states_the_canary_audit_as_a_measurement_and_recomputes_it(dp_home):
    from dpcore.jobs import registry, runner, store
    from dpcore.jobs.owners import CLI, CLI_OWNER
    from dpcore.statements import signing
    from dpcore.statements import training as statement
    from dpcore.statements import verify as verification

    runner.run_inline(registry.TRAIN, {**RUN, "reproducible_noise": True}, owner=CLI_OWNER, group="train")
    job = store.list_jobs(caller=CLI, limit=1)[0]
    st = statement.for_job(job["id"], caller=CLI)
    a = st["audit"]
    assert a["label"].startswith("measurement") and "covered by ε" in a["label"]
    assert a["n_canaries"] == 45 and a["within_claim"] and a["fdp"]["mu"] >= 0
    assert a["heuristic"]["label"].startswith("heuristic")
    assert "gdp" not in json.dumps(a)  # the records' audit reads private rows: diagnostics only
    assert st["accounting_check"]["passed"]
    signed = signing.issue(st)
    assert verification.verify(signed)["verified"]
    forged = json.loads(json.dumps(st))
    forged["audit"]["lower_bound"] = 0.9
    forged["audit"]["fdp"]["mu"] = 0.5
    report = verification.verify(signing.issue(forged))
    assert not report["verified"]
    bad = " ".join(p for p in report["problems"])
    assert "audit.lower_bound" in bad and "audit.fdp.mu" in bad


def test_the_cli_run_audits_itself_with_the_canaries_asked_for(dp_home, tmp_path, capsys):
    from dpcore import cli

    out = tmp_path / "run.json"
    args = ["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "2", "--epochs", "1"]
    assert cli.main([*args, "--canaries", "30", "--json", str(out)]) == 0
    m = TrainMetrics.from_dict(json.loads(out.read_text()))
    assert m.canaries["n"] == 30 and m.audit["one_run"]["n_canaries"] == 30 and m.accounting_check["passed"]
    assert cli.main([*args, "--canaries", "2000"]) == 2  # above the cap: one line, before any job
    assert "canaries must be a whole number from 0 to 1000" in capsys.readouterr().err
