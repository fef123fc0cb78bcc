"""Privacy statements: every number recomputable from the JSON alone (dpcore.statements)."""

import json

import pytest

from dpcore import claims
from dpcore.cli import main
from dpcore.data import datasets
from dpcore.errors import DPError
from dpcore.jobs import registry, runner, store
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM
from dpcore.queries import answering, fingerprint, model
from dpcore.statements import common, signing
from dpcore.statements import ledger as ledger_st
from dpcore.statements import sweep as sweep_st
from dpcore.statements import training as training_st
from dpcore.statements import verify as verification


def _roundtrip(st):
    return json.loads(json.dumps(st))


def _fake_sweep():
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep.config import SweepConfig
    from dpcore.training import accounting

    sigma = 4.710782173501988  # ε ≈ 1.99 at q = 0.5, 20 steps, δ = 1e-5 (PRV)

    cfg = SweepConfig().to_dict()
    rec = {
        "id": "20250101-000000-beef",
        "name": "fake",
        "created": 1.0,
        "status": "done",
        "config": cfg,
        "jobs": [],
        "failed": [],
        "result": {
            "config": cfg,
            "baseline": None,
            "points": [
                {
                    "epsilon": 2.0,
                    "epsilon_spent": accounting.epsilon(sigma, 0.5, 20, 1e-5, "prv"),
                    "delta": 1e-5,
                    "seed": 0,
                    "test_accuracy": 0.8,
                    "n_train": 80,
                    "noise_multiplier": sigma,
                    "sample_rate": 0.5,
                    "steps": 20,
                    "accountant": "prv",
                    "mia": {},
                    "empirical_epsilon": {
                        "lower_bound": 0.3,
                        "confidence": 0.95,
                        "delta": 1e-5,
                        "attack": "loss",
                        "members": 40,
                        "nonmembers": 40,
                        "tp": 25,
                        "fp": 15,
                        "max_certifiable": 2.1,
                        "within_claim": True,
                        "method": "split",
                    },
                }
            ],
        },
    }
    sweep_runs.save(rec)
    return rec["id"]


def test_sweep_statement_recomputes_from_json_alone():
    from dp_accounting.pld import privacy_loss_distribution as pldm

    st = _roundtrip(signing.issue(sweep_st.for_sweep(_fake_sweep(), caller=SYSTEM)))
    assert st["neighbour_relation"] == common.ADD_REMOVE_N_PUBLIC
    assert "n (the training rows) and the list of classes are treated as public" in common.N_PUBLIC_NOTE
    pt = st["points"][0]
    assert pt["sampling"]["scheme"] == "Poisson" and pt["sampling"]["sample_rate"] == 0.5
    assert [r["delta"] for r in pt["epsilon_at_delta"]] == [1e-5, 1e-6]  # never ε at δ = 1/n
    assert pt["audit"]["lower_bound"] == 0.3 and pt["audit"]["confidence"] == 0.95
    assert pt["reproducible_noise"] is True  # an old record without a noise source is not called a DP release
    assert pt["diagnostics"] == {
        "not_covered_by_epsilon": True,
        "note": common.DIAGNOSTICS_NOTE,
        "test_accuracy": 0.8,
    }
    assert "test_accuracy" not in pt  # only as a labelled diagnostic
    assert {lk["kind"] for lk in st["leaks"]} == {"reproducible_noise", "diagnostics", "public_n"}
    out = verification.verify(st)
    assert out["verified"] and out["problems"] == [] and out["checked"] > 10
    # independently of dpcore: dp_accounting's PLD from the statement's inputs alone
    x = pt["recompute"]["inputs"]
    pld = pldm.from_gaussian_mechanism(
        x["noise_multiplier"], sampling_prob=x["sample_rate"], value_discretization_interval=1e-4
    ).self_compose(x["steps"])
    for r in pt["epsilon_at_delta"]:
        assert r["epsilon_pld"] == pytest.approx(pld.get_epsilon_for_delta(r["delta"]), rel=2e-2)
    # tampering is caught and named
    pt["epsilon_at_delta"][0]["epsilon_pld"] *= 0.9
    problems = verification.verify(st)["problems"]
    assert problems[0].startswith("points[0].epsilon_at_delta[0].epsilon_pld is ")
    assert "signature: points[0] was changed after signing" in problems


def test_the_privacy_utility_pages_sweep_statement_is_signed_and_verifies():
    """The page's "Privacy statement (JSON)" was unsigned (verify exited 2): it is the signed one now."""
    st = _roundtrip(sweep_st.signed(_fake_sweep(), caller=SYSTEM))
    assert st["signature"]["scheme"] == "Ed25519"
    assert verification.verify(st)["verified"]


def test_sweep_over_digits_states_an_image_as_the_unit():
    """A sweep over digits said "one patient's record"; the unit fits the data (issue 25 §3)."""
    from dpcore.sweep import runs as sweep_runs

    sid = _fake_sweep()
    rec = sweep_runs.load(sid, caller=SYSTEM)
    rec["config"]["dataset"] = "digits"
    sweep_runs.save(rec)
    st = signing.issue(sweep_st.for_sweep(sid, caller=SYSTEM))
    assert st["unit_of_privacy"].startswith("one image") and "patient" not in st["unit_of_privacy"]
    assert st["dataset"] == "Digits"
    assert verification.verify(_roundtrip(st))["verified"]
    st["unit_of_privacy"] = "one patient's record (one row of the data)"
    assert verification.verify(st)["problems"][0].startswith("unit_of_privacy is \"one patient's record")


def _history(*extra_by_ann):
    """A dataset's history: ann's quota asks 0.5 (Laplace) and 0.3 (Gaussian, δ = 1e-7), then ``extra_by_ann`` (ε
    each); a visitor asks 0.25. Returns (dataset info, ann)."""
    from dpcore.budgets import identities, visitors
    from tests.budgets_helpers import analyst

    df = datasets.medical(2000, 0)
    info = visitors.open_builtin(2000, 0, fingerprint.dataset_identity(df))
    ann = analyst("ann", info["fingerprint"], 2.0)
    answering.ask(df, ann, model.make_query("count", epsilon=0.5, condition="has_rare_disease=true"))
    answering.ask(df, ann, model.make_query("count", epsilon=0.3, condition="age>50", mechanism="gaussian", delta=1e-7))
    for eps in extra_by_ann:
        answering.ask(df, ann, model.make_query("count", epsilon=eps, condition="age<30"))
    answering.ask(df, identities.VISITOR, model.make_query("count", epsilon=0.25, condition="sex=F"))
    return info, ann


def _ledger_statement():
    """The history with one more answer by ann (0.1), signed as it leaves."""
    info, ann = _history(0.1)
    return _roundtrip(signing.issue(ledger_st.for_ledger(info["name"], viewer=ann)))


def test_ledger_statement_with_its_costliest_answer_dropped_fails(dp_home):
    st = _ledger_statement()
    assert verification.verify(st)["verified"]
    assert [r["delta_prime"] for r in st["epsilon_at_delta"]] == [1e-5, 1e-6]  # no δ = 1/n
    costliest = max(range(len(st["queries"])), key=lambda i: st["queries"][i]["epsilon"])
    del st["queries"][costliest]
    problems = verification.verify(st)["problems"]
    assert problems[0].startswith("accountant.epsilon is 1.15")  # the totals no longer add up
    assert f"signature: queries[{len(st['queries'])}] was removed after signing" in problems
    # dropped *and* every figure recomputed to match: only the signature can tell, and it names the fields
    from dpcore.noise import composition

    st["accountant"]["epsilon"], st["accountant"]["delta"] = composition.basic(
        [x["epsilon"] for x in st["queries"]], [x["delta"] for x in st["queries"]]
    )
    st["epsilon_at_delta"] = [ledger_st.best_at(st["queries"], r["delta_prime"]) for r in st["epsilon_at_delta"]]
    own = [x for x in st["queries"] if x["by_this_quota"]]
    st["quota_share"].update(answers=len(own), epsilon=sum(x["epsilon"] for x in own))
    st.pop("tradeoff")
    from dpcore import nist

    st["nist"] = nist.for_statement({k: v for k, v in st.items() if k not in ("nist", "signature")})
    out = verification.verify(st)
    assert not out["verified"] and all(p.startswith("signature: ") for p in out["problems"]), out["problems"]
    assert "signature: accountant.epsilon was changed after signing" in out["problems"]
    assert "signature: tradeoff was removed after signing" in out["problems"]


def test_ledger_statement_states_what_the_dataset_released_and_recomputes(dp_home):
    """What a patient gets is the dataset's total: every answer by anyone, whoever asked and under any name; the
    viewer's quota is one share of it. Other askers' query texts stay hidden from an analyst."""
    from dpcore.budgets import identities

    info, ann = _history()
    st = _roundtrip(ledger_st.for_ledger(info["name"], viewer=ann))
    assert st["subject"] == {"dataset": info["name"], "fingerprint": info["fingerprint"], "analyst": "ann"}
    assert st["accountant"]["epsilon"] == pytest.approx(1.05) and st["accountant"]["delta"] == pytest.approx(1e-7)
    assert st["quota_share"]["answers"] == 2 and st["quota_share"]["epsilon"] == pytest.approx(0.8)
    assert [q["query"] is not None for q in st["queries"]] == [True, True, False]  # the visitor's text: hidden
    assert "as a whole released 3 answers" in st["summary"] and st["reproducible_noise"] is False
    for r in st["epsilon_at_delta"]:
        assert r["delta"] <= r["delta_prime"] * (1 + 1e-12) and r["epsilon"] <= 1.05 + 1e-12
    signed = signing.issue(st)
    assert verification.verify(signed)["verified"]
    signed["accountant"]["epsilon"] = 0.8  # the analyst's share is not the dataset's guarantee
    assert verification.verify(signed)["problems"][0] == "accountant.epsilon is 0.8, recomputed 1.05"
    signed["accountant"]["epsilon"] = 1.05
    signed["quota_share"]["epsilon"] = 0.5
    assert verification.verify(signed)["problems"][0] == "quota_share.epsilon is 0.5, recomputed 0.8"
    seen = ledger_st.for_ledger(info["fingerprint"], viewer=identities.VISITOR)
    assert seen["accountant"]["epsilon"] == pytest.approx(1.05) and seen["quota_share"]["analyst"] == "visitors"
    assert [q["query"] is not None for q in seen["queries"]] == [False, False, True]


def test_a_ledger_statement_is_refused_to_whom_may_not_read_it_and_says_nothing_spent():
    from dpcore.budgets import identities, visitors
    from tests.budgets_helpers import admin

    info = visitors.open_builtin(1000, 0)
    st = ledger_st.for_ledger(info["name"], viewer=identities.VISITOR)
    assert st["queries"] == [] and "nothing spent" in st["summary"]
    from dpcore.budgets import registry

    registry.register(admin(), "clinic", datasets.medical(400, 1), epsilon=1)
    with pytest.raises(DPError, match="'clinic' is not a dataset you may use") as registered:
        ledger_st.for_ledger("clinic", viewer=identities.VISITOR)
    with pytest.raises(DPError, match="'med' is not a dataset you may use") as unknown:
        ledger_st.for_ledger("med", viewer=identities.VISITOR)
    assert str(registered.value).replace("'clinic'", "") == str(unknown.value).replace("'med'", "")  # one refusal


# --- training runs: what a statement must say, and every edit an auditor could miss --------------------------


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Three real runs in one home (trained once for the module): a DP run, one with reproducible noise, and one
    whose δ is not below 1/n; their signed statements and the home's public key."""
    from dpcore.statements import keys

    home = tmp_path_factory.mktemp("statements-home")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("DP_EXPLORER_HOME", str(home))
        base = {
            "dataset": "breast_cancer",
            "model": "logreg",
            "epsilon": 1.0,
            "delta": 1e-5,
            "epochs": 2,
            "batch_size": 64,
            "seed": 0,
        }
        out = {}
        for name, extra in (("dp", {}), ("seeded", {"reproducible_noise": True}), ("big_delta", {"delta": 0.01})):
            runner.run_inline(registry.TRAIN, {**base, **extra}, owner=OWNER, group="train", label=name)
            job = store.list_jobs(caller=SYSTEM, limit=1)[0]
            out[name] = _roundtrip(signing.issue(training_st.for_job(job["id"], caller=SYSTEM)))
        out["public"] = keys.private_key(create=False).public_key()
    return out


def _edited(st, edit):
    st = json.loads(json.dumps(st))
    edit(st)
    return st


@pytest.mark.slow
def test_training_run_statement_states_what_epsilon_covers(runs):
    st = runs["dp"]
    assert st["private"] and st["kind"] == "training_run"
    assert st["dataset"] == "Breast cancer" and st["unit_of_privacy"].startswith("one patient's record")
    assert st["neighbour_relation"] == common.ADD_REMOVE_N_PUBLIC and st["public"]["rows"] == st["rows"] == 455
    assert st["accountant"]["epsilon"] <= 1.0 + 1e-9
    assert [r["delta"] for r in st["epsilon_at_delta"]] == [1e-5, 1e-6]
    assert st["settings"]["batch_size"] == 64 and st["settings"]["epochs"] == 2 and st["settings"]["seed"] == 0
    # q and the steps are what the public n, batch size and epochs give
    assert st["mechanism"]["sample_rate"] == 1 / 8 and st["mechanism"]["steps"] == 16
    assert {lk["kind"] for lk in st["leaks"]} == {"diagnostics", "public_n"}
    for field in ("test_accuracy", "test_loss", "train_loss", "history"):  # diagnostics are not in a statement
        assert field not in json.dumps({k: v for k, v in st.items() if k != "leaks"})
    # P[privacy loss > ε]: where the posterior reading fails, and it is not δ
    assert st["loss_tail"]["probability"] > 10 * st["accountant"]["delta"]
    out = verification.verify(st, public_key=runs["public"])
    assert out["verified"], out["problems"]


@pytest.mark.slow
def test_statement_lists_every_leak_its_run_warned_about(runs):
    seeded, big = runs["seeded"], runs["big_delta"]
    assert seeded["reproducible_noise"] and not seeded["dp_release"]
    assert "reproducible_noise" in {lk["kind"] for lk in seeded["leaks"]}
    assert "REPRODUCIBLE NOISE" in seeded["summary"]
    assert any(lk["kind"] == "delta" and "not below 1/n" in lk["text"] for lk in big["leaks"])
    for st in (seeded, big):
        assert verification.verify(st, public_key=runs["public"])["verified"]
    no_leak = _edited(big, lambda s: s["leaks"].pop(0))
    assert any(
        "leaks does not list δ = 0.01" in p for p in verification.verify(no_leak, public_key=runs["public"])["problems"]
    )


@pytest.mark.slow
@pytest.mark.parametrize(
    "name, edit, field",
    [
        ("accountant ε 0.99 → 0.01", lambda s: s["accountant"].update(epsilon=0.01), "accountant.epsilon"),
        ("σ → 50", lambda s: s["mechanism"].update(noise_multiplier=50.0), "recompute.inputs.noise_multiplier"),
        ("relation changed", lambda s: s.update(neighbour_relation="replace one record"), "neighbour_relation"),
        ("PLD ε", lambda s: s["epsilon_at_delta"][1].update(epsilon_pld=0.01), "epsilon_at_delta[1].epsilon_pld"),
        ("worst-case TPR", lambda s: s["tradeoff"]["tpr"].__setitem__(60, 0.0), "tradeoff.tpr[60]"),
        ("a guarantee dropped", lambda s: s["epsilon_at_delta"].pop(1), "epsilon_at_delta has no row at δ = 1e-06"),
        ("n changed", lambda s: s.update(rows=454), "public.rows"),
        ("loss tail", lambda s: s["loss_tail"].update(probability=1e-9), "loss_tail.probability"),
        ("dataset renamed", lambda s: s.update(dataset="Synthetic medical"), "dataset"),
    ],
)
def test_every_edit_of_a_run_statement_fails_naming_the_field(runs, name, edit, field):
    out = verification.verify(_edited(runs["dp"], edit), public_key=runs["public"])
    assert not out["verified"], name
    assert out["problems"][0].startswith(field), (name, out["problems"])
    assert any(p.startswith("signature: ") for p in out["problems"])


@pytest.mark.slow
def test_removing_the_not_a_dp_release_flag_fails(runs):
    def unflag(s):
        s.update(reproducible_noise=False, dp_release=True)
        s.pop("release_label")
        s["leaks"] = [lk for lk in s["leaks"] if lk["kind"] != "reproducible_noise"]

    out = verification.verify(_edited(runs["seeded"], unflag), public_key=runs["public"])
    assert not out["verified"]
    assert "the 'not a DP release' flag was removed" in out["problems"][0]
    assert "signature: reproducible_noise was changed after signing" in out["problems"]
    assert "signature: release_label was removed after signing" in out["problems"]


@pytest.mark.slow
def test_statement_cli_verifies_and_rejects(runs, tmp_path, capsys):
    from dpcore import storage
    from dpcore.statements import keys

    owner_pem = tmp_path / "owner.pem"
    owner_pem.write_text(keys.public_pem(runs["public"]))
    good = tmp_path / "st.json"
    good.write_text(json.dumps(runs["dp"]))
    # this test's home has no key: the key inside the statement is checked, named by its fingerprint
    assert main(["statement", "--verify", str(good)]) == 0
    out = json.loads(capsys.readouterr().out)
    fp = keys.fingerprint(runs["public"])
    assert (
        out["verified"] and out["signature"]["key_source"] == "embedded" and out["signature"]["key_fingerprint"] == fp
    )
    assert f"the public key inside the statement (fingerprint {fp})" in out["key"] and "published" in out["key"]
    assert keys.private_key(create=False) is None and not storage.configured().exists()  # verifying made nothing
    assert main(["statement", "--verify", str(good), "--public-key", str(owner_pem)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] is True and out["signature"]["valid"] and out["kind"] == "training_run"
    assert out["signature"]["key_source"] == "given"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(_edited(runs["dp"], lambda s: s["accountant"].update(epsilon=0.01))))
    assert main(["statement", "--verify", str(bad), "--public-key", str(owner_pem)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the statement does not check out: accountant.epsilon is 0.01, recomputed 0.99")
    assert err.count("\n") == 1


def test_statement_cli(capsys, tmp_path):
    sid = _fake_sweep()
    assert main(["statement", "--sweep", sid]) == 0
    out = capsys.readouterr().out
    assert json.loads(out)["signature"]["scheme"] == "Ed25519"
    path = tmp_path / "st.json"
    path.write_text(out)
    assert main(["statement", "--verify", str(path)]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["verified"] is True and done["signature"]["key_source"] == "home"  # this home signed it
    bad = json.loads(out)
    bad["points"][0]["epsilon_at_delta"][1]["epsilon_pld"] = 0.01
    path.write_text(json.dumps(bad))
    assert main(["statement", "--verify", str(path)]) == 2
    assert "does not check out: points[0].epsilon_at_delta[1].epsilon_pld is 0.01" in capsys.readouterr().err
    assert main(["statement", "--ledger", "--analyst", "ann"]) == 2
    assert main(["statement", "--job", "nope"]) == 2
    assert main(["statement", "--sweep", sid, "--key", str(path)]) == 2
    assert main(["statement", "--sweep", sid, "--public-key", str(path)]) == 2


@pytest.mark.parametrize(
    "content, words",
    [
        ("{}", "kind is missing"),
        ("[]", "holds a JSON list, not a statement"),
        ("[1, 2, 3]", "holds a JSON list, not a statement"),
        ("42", "holds a JSON int, not a statement"),
        ("[" * 100_000 + "]" * 100_000, "nested 100000 levels deep"),
        ('{"a":' * 5000 + "1" + "}" * 5000, "nested 5000 levels deep"),
        ("{not json", "is not valid JSON"),
        ('{"kind": "training_run"}', "the statement does not check out"),
    ],
)
def test_verify_refuses_what_is_not_a_statement_in_one_line(content, words, tmp_path, capsys):
    path = tmp_path / "x.json"
    path.write_text(content)
    assert main(["statement", "--verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1 and "Traceback" not in err


def test_verify_never_hangs_on_a_fifo_or_a_device(tmp_path, capsys):
    import os
    import threading

    fifo = tmp_path / "statement.fifo"
    os.mkfifo(fifo)
    codes = []
    t = threading.Thread(target=lambda: codes.append(main(["statement", "--verify", str(fifo)])), daemon=True)
    t.start()
    t.join(10)
    assert not t.is_alive(), "statement --verify hung on a named pipe"
    assert codes == [2] and "is a named pipe (FIFO); give the path of an ordinary file" in capsys.readouterr().err
    assert main(["statement", "--verify", "/dev/zero"]) == 2
    assert "is a character device" in capsys.readouterr().err
    assert main(["statement", "--verify", str(tmp_path)]) == 2  # a folder is a release: it needs its statement
    assert "holds no statement file" in capsys.readouterr().err


# --- one sweep point: the page's ROC ceiling and the gap in words ------------------------------------------


def _point(lower_bound=0.3, max_certifiable=2.1, attack="canary"):
    from dpcore.training import accounting

    p = {
        "epsilon": 2.0,
        "epsilon_spent": 1.98,
        "delta": 1e-5,
        "seed": 0,
        "test_accuracy": 0.8,
        "n_train": 80,
        "noise_multiplier": 1.2,
        "sample_rate": 0.5,
        "steps": 20,
        "accountant": "prv",
        "mia": {"loss": {"tpr_at_1pct_fpr": 0.015}, "canary": {"tpr_at_1pct_fpr": 0.02}},
        "empirical_epsilon": {
            "lower_bound": lower_bound,
            "confidence": 0.95,
            "attack": attack,
            "max_certifiable": max_certifiable,
            "within_claim": lower_bound <= 1.98,
        },
    }
    p["tradeoff"] = accounting.dpsgd_tradeoff(1.2, 0.5, 20)
    return p


def test_point_block_states_epsilon_at_two_deltas_mu_and_its_own_curve():
    from dpcore.attacks import audit
    from dpcore.training import accounting

    p = _point()
    b = sweep_st.for_point(p)
    assert [r["delta"] for r in b["epsilon_at_delta"]] == [1e-5, 1e-6] and b["rows"] == 80
    for r in b["epsilon_at_delta"]:
        assert r["epsilon_pld"] == pytest.approx(accounting.pld_epsilon(1.2, 0.5, 20, r["delta"]))
    assert b["mu"]["value"] == pytest.approx(audit.gdp_mu(1.2, 0.5, 20))
    assert b["tradeoff"]["tpr"] == p["tradeoff"]["tpr"]  # what the run stored, not a recomputation
    # the ceiling at 1% FPR read off the curve: the curve's own value at its grid point 0.01
    i = min(range(len(p["tradeoff"]["fpr"])), key=lambda k: abs(p["tradeoff"]["fpr"][k] - 0.01))
    assert sweep_st.ceiling_tpr(b, 0.01) == pytest.approx(p["tradeoff"]["tpr"][i], rel=1e-6)
    with pytest.raises(DPError, match="no DP-SGD"):
        sweep_st.for_point({"epsilon": None, "mia": {}})


def test_gap_words_say_proven_measured_and_the_gap():
    p = _point(lower_bound=0.5, max_certifiable=3.0)
    b = sweep_st.for_point(p)
    text = sweep_st.gap_words(b, p["mia"], labels={"canary": "canaries"})
    assert "Proven:** ε ≤ 1.98 at δ = 1e-5" in text and "PRV accountant" in text
    assert "the canary audit proves ε ≥ 0.5 (95% confidence)" in text
    assert "The gap, 1.48" in text and "25% of what the accountant allows" in text
    assert "could not have proved" not in text  # this audit could have proved up to 3.0 > 1.98
    # the worst case is a bound rounded up, and says so (16.9% stood beside a signed 0.16825 with no word)
    ceiling = claims.percent(sweep_st.ceiling_tpr(b, 0.01), up=True)
    assert f"catch at most {ceiling} (rounded up) of members" in text and "caught 2.0% (canaries)" in text
    nothing = sweep_st.gap_words(sweep_st.for_point(_point(lower_bound=0.0, max_certifiable=0.9)))
    assert "proves nothing" in nothing and "whole gap of 1.98" in nothing
    assert "could not have proved more than ε ≈ 0.9" in nothing
    above = sweep_st.gap_words(sweep_st.for_point(_point(lower_bound=2.5)))
    assert "*above* the proven ε" in above and "please report it" in above


def test_gap_words_explain_a_measured_rate_above_the_worst_case():
    """A point whose best attack caught 5.6% at 1% FPR (1 of 18 canaries) beside a worst case of 2.0% said both with no
    word why: to a reader, an attack beating the proven worst case. The words now say it is a noisy rate on few
    members and that the audit's bound is what counts; below the worst case nothing is added."""
    p = _point(lower_bound=0.0)
    b = sweep_st.for_point(p)
    ceiling = sweep_st.ceiling_tpr(b, 0.01)
    above = dict(p["mia"], canary={"tpr_at_1pct_fpr": ceiling + 0.04, "n_members": 18})
    text = sweep_st.gap_words(b, above, labels={"canary": "canaries"})
    assert (
        f"caught {ceiling + 0.04:.1%} (canaries). That is above the worst case only as a measured rate can be"
    ) in text
    assert "on 18 members one more caught moves it by 5.6%" in text and "the audit's bound" in text
    below = sweep_st.gap_words(b, p["mia"], labels={"canary": "canaries"})
    assert "above the worst case" not in below


# --- a statement file read as a human or another JSON reader reads it (audit) ---------------------------------


def _signed_ledger_text():
    """A signed ledger statement as the file the CLI writes (indented JSON), and the statement."""
    from dpcore.storage.jsonio import dumps

    st = _ledger_statement()
    assert st["audit"] is None and verification.verify(st)["verified"]
    return dumps(st), st


@pytest.mark.parametrize(
    "edit, words",
    [
        # a second "epsilon" first in the object: Python keeps the last (the signed 1.15), a reader sees 0.01 first
        (lambda t: t.replace('"accountant": {', '"accountant": {\n    "epsilon": 0.01,', 1), "appears twice"),
        (
            lambda t: t.replace('"kind": "ledger",', '"kind": "ledger",\n  "summary": "nothing released",', 1),
            "appears twice",
        ),
        # a null the signature covers, written as NaN or an infinity (the canonical form maps them all to null)
        (lambda t: t.replace('"audit": null', '"audit": NaN', 1), "not a number JSON allows"),
        (lambda t: t.replace('"audit": null', '"audit": Infinity', 1), "not a number JSON allows"),
        (lambda t: t.replace('"audit": null', '"audit": -1e999', 1), "not a finite number"),
    ],
)
def test_an_edited_statement_file_never_verifies(dp_home, tmp_path, capsys, edit, words):
    """Audit: duplicate keys and non-finite numbers read differently in different readers, and the signature was
    computed over what Python's json keeps (the last key, NaN/∞ written as null), so such a file verified."""
    text, _ = _signed_ledger_text()
    edited = edit(text)
    assert edited != text
    path = tmp_path / "st.json"
    path.write_text(edited)
    assert main(["statement", "--verify", str(path)]) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1, err
    with pytest.raises(DPError, match=words):
        verification.parse(edited.encode(), "st.json")
    path.write_text(text)
    assert main(["statement", "--verify", str(path)]) == 0  # the file as written still verifies


@pytest.mark.parametrize(
    "edit, words",
    [
        (lambda s: s["signature"].update(proves="an independent auditor checked every number"), "signature.proves"),
        (lambda s: s["signature"].update(canonical="anything"), "signature.canonical"),
        (lambda s: s["signature"].update(verified_by="the data protection officer"), "signature.verified_by"),
    ],
)
def test_no_field_of_the_signature_block_can_be_edited(dp_home, edit, words):
    """Audit: the MAC covered scheme, key_id, signed_at, body and fields; what the block says a signature proves
    (and any field added to it) could be changed and the statement still verified."""
    _, st = _signed_ledger_text()
    edit(st)
    out = verification.verify(st)
    assert not out["verified"] and any(words in p for p in out["problems"]), out["problems"]


def test_a_ledger_of_gaussian_answers_claims_no_gaussian_dp_mu_its_discrete_noise_does_not_have(dp_home):
    """Audit: every Gaussian answer is drawn from the *discrete* Gaussian, which is ρ-zCDP with ρ = Δ²/(2σ²) but is
    not μ-GDP with μ = √(2ρ): one COUNT at ε = 5, δ = 1e-6 lets the test 'answer ≥ true count + 1' reach TPR 0.70 at
    FPR 0.30, where the stated 'exact Gaussian DP' μ allowed 0.69. The ledger statement claimed that μ."""
    import math

    import numpy as np
    from scipy.special import ndtr, ndtri

    from dpcore.budgets import identities, visitors
    from dpcore.noise import discrete, mechanisms

    df = datasets.medical(2000, 0)
    info = visitors.open_builtin(2000, 0, fingerprint.dataset_identity(df))
    answering.ask(
        df,
        identities.VISITOR,
        model.make_query("count", epsilon=5.0, condition="age>50", mechanism="gaussian", delta=1e-6),
    )
    st = _roundtrip(signing.issue(ledger_st.for_ledger(info["name"], viewer=identities.VISITOR)))
    # the release: discrete Gaussian noise at (5, 1e-6), Δ = 1; its exact ROC at the threshold "noise ≥ 1"
    sigma = mechanisms.DiscreteGaussian(epsilon=5.0, delta=1e-6, sensitivity=1).scale
    x = np.arange(-200, 201)
    p = discrete.pmf(x, sigma)
    fpr, tpr = p[x >= 1].sum(), p[x >= 0].sum()  # H0: true count c, H1: c + 1; flag when the answer ≥ c + 1
    mu = math.sqrt(2 * sum(q["rho"] for q in st["queries"]))
    assert tpr > ndtr(ndtri(fpr) + mu) + 0.01  # the μ-GDP curve is not a ceiling of this release
    assert "mu" not in st, st.get("mu")
    assert verification.verify(st)["verified"]
    # a signed statement that still carries the claim (made before this fix) does not check out
    claimed = signing.sign({**signing.body_of(st), "mu": {"value": mu, "kind": "exact Gaussian DP"}})
    problems = verification.verify(_roundtrip(claimed))["problems"]
    assert any(p.startswith("mu: ") for p in problems), problems
