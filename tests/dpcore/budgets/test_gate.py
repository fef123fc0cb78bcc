"""The one gate (issue 33 §1, §2, §5): every kind of release is charged to the dataset's cap and the caller's quota
before it runs, refunded only when it failed before anything left the server; n is the admin's unless public; one
refusal for "no such dataset" and "not yours"."""

import shutil
import sqlite3
from pathlib import Path

import pytest

from dpcore.budgets import gate, identities, quotas, registry, spend, store
from dpcore.data import datasets
from dpcore.errors import BudgetExceededError, DPError
from dpcore.noise.charge import Charge, ReleaseKind

from ...budgets_helpers import admin, analyst, dataset

DS = "e" * 64
DATA = Path(__file__).parent / "data"


def _kinds(fp):
    return [(e["kind"], e["release"]) for e in quotas.status(admin(), fp)["history"] if e["release"]]


def test_every_kind_of_release_is_charged_to_the_one_cap_and_the_history_names_it():
    dataset(DS, cap=1.0, public_n=True)
    ann = analyst("ann", DS, 1.0)
    spend.spend(ann, DS, "COUNT(*)", 0.1, lambda: {"answer": 3})
    gate.charge(ann, DS, Charge.dpsgd(0.2, 1e-6), description="a training run")
    gate.charge(ann, DS, Charge.synthetic(0.3, 0.0), description="a synthetic table")
    parts = [gate.Part(Charge.dpsgd(0.1, 1e-6), f"ε=0.1 seed {s}") for s in (0, 1)]
    r = gate.charge(ann, DS, Charge.composed([p.charge for p in parts]), description="a sweep", parts=parts)
    assert len(r["tickets"]) == 2 and r["release"] == "sweep"
    st = quotas.status(ann, DS)
    assert st["cap"]["spent"] == pytest.approx(0.8) and st["quota"]["remaining"] == pytest.approx(0.2)
    assert st["cap"]["delta_spent"] == pytest.approx(3e-6)
    by = st["cap"]["by_release"]
    assert by["answer"]["epsilon"] == pytest.approx(0.1) and by["training"]["epsilon"] == pytest.approx(0.2)
    assert by["synthetic"]["epsilon"] == pytest.approx(0.3) and by["sweep"]["held"] == pytest.approx(0.2)
    assert _kinds(DS) == [("spend", "answer"), ("spend", "training"), ("spend", "synthetic"), ("spend", "sweep")]
    called = []
    with pytest.raises(BudgetExceededError, match="this release \\(a DP training run\\) costs ε = 0.25") as exc:
        gate.charge(ann, DS, Charge.dpsgd(0.25, 1e-6), description="too much", compute=None)
    assert exc.value.exit_code == 3 and called == []
    assert quotas.status(ann, DS)["cap"]["spent"] == pytest.approx(0.8)  # a refusal spends nothing
    assert _kinds(DS)[-1] == ("refused", "training")


def test_a_failed_job_is_refunded_with_a_reason_and_a_finished_one_never():
    dataset(DS, cap=1.0, public_n=True)
    ann = analyst("ann", DS, 1.0)
    done = gate.charge(ann, DS, Charge.dpsgd(0.3, 1e-6), description="finishes", job="job-done")
    failed = gate.charge(ann, DS, Charge.dpsgd(0.4, 2e-6), description="fails")
    gate.attach(failed["tickets"], ["job-failed"])
    assert gate.job_ended("job-done", "done") == 0
    assert gate.job_ended("job-failed", "failed", "the disk is full") == 1
    st = quotas.status(ann, DS)
    assert st["cap"]["spent"] == pytest.approx(0.3) and st["quota"]["spent"] == pytest.approx(0.3)
    assert st["cap"]["delta_spent"] == pytest.approx(1e-6)
    refund = st["history"][-1]
    assert refund["kind"] == "refund" and refund["release"] == "training" and refund["job"] == "job-failed"
    assert "job job-failed failed before it finished: the disk is full" in refund["note"]
    assert refund["cost"] == pytest.approx(-0.4)
    # settled tickets stay as they are: a finished release is never refunded, a refund never repeats
    assert gate.job_ended("job-done", "failed") == 0 and gate.job_ended("job-failed", "failed") == 0
    assert gate.settle(done["tickets"], finished=False, why="late") == 0
    assert quotas.status(ann, DS)["cap"]["spent"] == pytest.approx(0.3)
    assert [t["state"] for t in gate.tickets_of("job-done")] == ["kept"]
    # the ledger's released answers (what statements compose) hold the kept run, not the refunded one
    assert [e["epsilon"] for e in quotas.released(admin(), DS)] == [pytest.approx(0.3)]


def test_a_sweep_refunds_only_its_points_that_failed():
    dataset(DS, cap=2.0, public_n=True)
    ann = analyst("ann", DS, 2.0)
    parts = [gate.Part(Charge.dpsgd(e, 1e-6), f"ε={e}") for e in (0.5, 0.25, 0.125)]
    r = gate.charge(ann, DS, Charge.composed([p.charge for p in parts]), description="a sweep", parts=parts)
    gate.attach(r["tickets"], ["p0", "p1", "p2"])
    gate.job_ended("p0", "done")
    gate.job_ended("p1", "cancelled", "cancelled while running")
    gate.job_ended("p2", "done")
    assert quotas.status(ann, DS)["cap"]["spent"] == pytest.approx(0.625)
    (kept,) = quotas.released(admin(), DS)  # one spend event, what stands of it
    assert kept["epsilon"] == pytest.approx(0.625) and kept["delta"] == pytest.approx(2e-6)
    assert gate.statement_block(job=["p0", "p1", "p2"])["charged_to"][0]["refunded"] == 1


def test_releases_that_read_exact_n_need_a_public_n():
    dataset(DS, cap=1.0)  # n not declared public
    ann = analyst("ann", DS, 1.0)
    for kind in (Charge.dpsgd(0.1, 1e-6), Charge.composed([Charge.dpsgd(0.1, 1e-6)])):
        with pytest.raises(DPError, match="releases n exactly|release n exactly"):
            gate.charge(ann, DS, kind, description="a run")
    gate.charge(ann, DS, Charge.synthetic(0.1, 0.0), description="a synthetic table: no n needed")
    registry.set_cap(admin(), DS, public_n=True, reason="the owner publishes the row count")
    gate.charge(ann, DS, Charge.dpsgd(0.1, 1e-6), description="a run")
    with pytest.raises(DPError, match="stays public"):
        registry.set_cap(admin(), DS, public_n=False, reason="undo")


def test_an_analyst_reads_no_exact_n_unless_the_owner_declared_it_public():
    df = datasets.medical(1234, seed=4)
    registry.register(admin(), "hidden", df, epsilon=1.0)
    registry.register(admin(), "open", datasets.medical(567, seed=5), epsilon=1.0, public_n=True)
    ann = analyst("ann", "hidden", 0.5)
    quotas.grant(admin(), "ann", "open", epsilon=0.5)
    hidden = quotas.status(ann, "hidden")
    assert "n_rows" not in hidden and "1,234" not in str(hidden) and "1234" not in str(hidden)
    assert hidden["number_of_rows"] == registry.HIDDEN_N
    # the default δ cap is a power of ten below 1/(10·n): its order of magnitude, not n (1/12,340 would give n)
    assert hidden["cap"]["delta"] == pytest.approx(1e-5) and hidden["quota"]["delta_total"] == pytest.approx(1e-5)
    assert quotas.status(ann, "open")["n_rows"] == 567
    assert quotas.status(ann, "open")["number_of_rows"] == "the number of rows is public"
    assert quotas.status(admin(), "hidden")["n_rows"] == 1234  # the admin reads it
    listed = {d["name"]: d for d in registry.visible(ann)}
    assert "n_rows" not in listed["hidden"] and listed["open"]["n_rows"] == 567
    for e in quotas.ledgers(ann):
        assert e["n_rows"] in (None, 567)


def test_one_refusal_for_no_such_dataset_and_not_yours():
    registry.register(admin(), "clinic", datasets.medical(300, seed=1), epsilon=1.0)
    dataset(DS, cap=1.0)
    bob = analyst("bob", DS, 0.5)  # a quota elsewhere
    messages = {}
    for who in (identities.VISITOR, bob):
        for name in ("clinic", "no-such"):
            for call, args in (
                (quotas.status, ()),
                (spend.spend, ("q", 0.1, lambda: {"answer": 1})),
                (gate.charge, (Charge.synthetic(0.1, 0.0),)),
            ):
                kw = {"description": "t"} if call is gate.charge else {}
                with pytest.raises(registry.Unavailable) as exc:
                    call(who, name, *args, **kw)
                messages.setdefault(who.kind, set()).add(str(exc.value).replace(repr(name), "NAME"))
    assert all(len(m) == 1 for m in messages.values()), messages
    assert registry.info("clinic")["spent"] == 0.0


def test_rows_that_are_a_registered_dataset_or_a_near_duplicate_are_charged_to_it():
    df = datasets.medical(400, seed=2)
    registry.register(admin(), "clinic", df, epsilon=1.0, public_n=True)
    ann = analyst("ann", "clinic", 1.0)
    price = lambda: (Charge.synthetic(0.2, 0.0), None)  # noqa: E731
    same = df.sample(frac=1.0, random_state=3).reset_index(drop=True)  # the rows in another order
    near = df.rename(columns={"age": "age_years"}).iloc[:320].assign(record_id=range(320))  # renamed, cut, an ID
    for rows in (same, near):
        a = gate.admit(ann, rows, price, kind=ReleaseKind.SYNTHETIC, description="upload")
        assert a.charged and a.datasets == ("clinic",) and len(a.tickets) == 1
        a.keep()
    assert registry.info("clinic")["spent"] == pytest.approx(0.4)
    own = gate.admit(ann, datasets.medical(400, seed=9), price, kind=ReleaseKind.SYNTHETIC, description="mine")
    assert not own.charged and own.block() == {"charged_to": [], "owner": gate.OWN_ROWS}
    with pytest.raises(DPError, match="no quota on it") as exc:  # a visitor: refused, nothing priced
        gate.admit(identities.VISITOR, near, lambda: pytest.fail("priced"), kind=ReleaseKind.SYNTHETIC, description="u")
    assert "clinic" not in str(exc.value)
    assert registry.info("clinic")["spent"] == pytest.approx(0.4)


def test_rows_holding_two_registered_datasets_are_charged_to_both_or_neither():
    a, b = datasets.medical(300, seed=11), datasets.medical(300, seed=12)
    registry.register(admin(), "a", a, epsilon=1.0)
    registry.register(admin(), "b", b, epsilon=0.3)
    ann = analyst("ann", "a", 1.0)
    quotas.grant(admin(), "ann", "b", epsilon=1.0)
    import pandas as pd

    both = pd.concat([a, b], ignore_index=True)
    adm = gate.admit(
        ann, both, lambda: (Charge.synthetic(0.25, 0.0), None), kind=ReleaseKind.SYNTHETIC, description="u"
    )
    assert set(adm.datasets) == {"a", "b"}
    with pytest.raises(BudgetExceededError):  # b has 0.05 left: neither is charged
        gate.admit(ann, both, lambda: (Charge.synthetic(0.25, 0.0), None), kind=ReleaseKind.SYNTHETIC, description="u")
    assert registry.info("a")["spent"] == pytest.approx(0.25) and registry.info("b")["spent"] == pytest.approx(0.25)


def test_a_schema_3_ledger_migrates_its_answers_become_answer_releases(dp_home):
    dp_home.mkdir(parents=True, exist_ok=True)
    shutil.copy(DATA / "ledger_v3.sqlite", dp_home / "ledger.sqlite")
    clinic = registry.info("clinic-v3")  # reading migrates it, once
    assert clinic["spent"] == pytest.approx(0.25) and not clinic["public_n"]
    builtin = registry.info("2562a8402d22bc57ade165d1734c9a04607d9489a905193e620f1a78923a359b")
    assert builtin["public_n"] and builtin["spent"] == pytest.approx(0.5)
    hist = quotas.status(admin(), "clinic-v3")["history"]
    assert [(e["kind"], e["release"]) for e in hist if e["kind"] in ("spend", "refused")] == [
        ("spend", "answer"),
        ("refused", "answer"),
    ]
    key = identities.issue_key(admin(), "ann")["key"]
    ann = identities.sign_in("ann", key)
    assert spend.spend(ann, "clinic-v3", "COUNT(*)", 0.25, lambda: pytest.fail("drawn again"))["reused"]
    gate.charge(ann, "clinic-v3", Charge.synthetic(0.5, 0.0), description="a synthetic table")
    assert registry.info("clinic-v3")["spent"] == pytest.approx(0.75)
    with sqlite3.connect(dp_home / "ledger.sqlite") as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema'").fetchone()[0] == "4"
    store.drop()


def test_the_job_end_hook_refunds_a_job_that_failed_and_keeps_one_that_finished():
    """Through the job runner and its end hook (dpcore.jobs.hooks): a charged job that raises is refunded, with a
    history row naming it and its error; a finished one keeps its charge; one cancelled while queued is refunded."""
    from dpcore.budgets import charged
    from dpcore.errors import JobError
    from dpcore.jobs import runner, store
    from dpcore.jobs.owners import CLI_OWNER, SYSTEM

    dataset(DS, cap=1.0, public_n=True)
    ann = analyst("ann", DS, 1.0)

    def run(target, params, eps):
        r = gate.charge(ann, DS, Charge.dpsgd(eps, 1e-6), description=f"{target} run")
        adm = gate.Admission(Charge.dpsgd(eps, 1e-6), ("x",), tuple(r["tickets"]), r)
        return runner.run_inline(target, params, owner=CLI_OWNER, submitted=lambda j: charged.tie(adm, [j]))

    run("demo.echo", {"x": 1}, 0.25)
    with pytest.raises((JobError, DPError)):
        run("demo.fail", {"message": "the model diverged"}, 0.5)
    r = gate.charge(ann, DS, Charge.dpsgd(0.125, 1e-6), description="queued, then cancelled")
    (job_id,) = store.submit_many([("demo.echo", {"x": 2}, "later")], owner=CLI_OWNER)
    charged.tie(gate.Admission(None, ("x",), tuple(r["tickets"]), r), [job_id])
    store.cancel(job_id, caller=SYSTEM)
    st = quotas.status(admin(), DS)
    assert st["cap"]["spent"] == pytest.approx(0.25)
    refunds = [e for e in st["history"] if e["kind"] == "refund"]
    assert len(refunds) == 2 and all(e["release"] == "training" for e in refunds)
    assert any("failed" in e["note"] and "the model diverged" in e["note"] for e in refunds)
    assert any("cancelled" in e["note"] for e in refunds)


def test_a_job_reads_a_registered_datasets_rows_only_once_charged_to_it():
    """Defence in depth: whatever queued a job, its first act on rows from a file is to find its ticket; a registered
    dataset's rows with none tied to the job are refused before anything runs (the uploader's own rows pass)."""
    df = datasets.medical(300, seed=13)
    registry.register(admin(), "clinic", df, epsilon=1.0, public_n=True)
    ann = analyst("ann", "clinic", 1.0)
    with pytest.raises(DPError, match="was not charged to its cap"):
        gate.for_job("job-x", df.iloc[:280], wait=0.1)  # a near-duplicate, queued around the gate
    own = gate.for_job("job-y", datasets.medical(300, seed=14), wait=0.1)
    assert own == {"charged_to": [], "owner": gate.OWN_ROWS}
    adm = gate.admit(ann, df, lambda: (Charge.synthetic(0.2, 0.0), None), kind=ReleaseKind.SYNTHETIC, description="u")
    adm.tie(["job-x"])
    block = gate.for_job("job-x", df.iloc[:280], wait=0.1)
    assert block["charged_to"][0]["dataset"] == "clinic" and block["charged_to"][0]["epsilon"] == pytest.approx(0.2)


def test_a_planned_release_is_charged_to_the_same_cap_before_it_runs_and_refunded_if_it_fails():
    """A planned release (issue 35) names a registered dataset: one charge for the whole plan, on the cap that answers
    and training runs share; its statement block names the dataset and whether its number of rows is public."""
    dataset(DS, cap=1.0)  # n not declared public
    ann = analyst("ann", DS, 1.0)
    spend.spend(ann, DS, "COUNT(*)", 0.3, lambda: {"answer": 3})
    adm = gate.admit_dataset(ann, DS, Charge.planned(0.5, 0.0), description="a planned release: 3 statistics")
    assert quotas.status(ann, DS)["cap"]["spent"] == pytest.approx(0.8)
    adm.keep("the table was released")
    (c,) = adm.block()["charged_to"]
    assert c["epsilon"] == pytest.approx(0.5) and c["number_of_rows"] == gate.NOT_RELEASED
    assert _kinds(DS)[-1] == ("spend", "planned")
    with pytest.raises(BudgetExceededError):  # 0.8 + 0.3 > 1: refused before anything is read
        gate.admit_dataset(ann, DS, Charge.planned(0.3, 0.0), description="too much")
    failed = gate.admit_dataset(ann, DS, Charge.planned(0.1, 0.0), description="fails")
    assert failed.refund("the release stopped before anything left the server") == 1
    st = quotas.status(ann, DS)
    assert st["cap"]["spent"] == pytest.approx(0.8) and st["cap"]["by_release"]["planned"]["epsilon"] == pytest.approx(
        0.5
    )
    adm.refund("late")  # a kept release is never refunded
    assert quotas.status(ann, DS)["cap"]["spent"] == pytest.approx(0.8)
    with pytest.raises(registry.Unavailable) as nobody:  # one refusal for "not yours" and "no such dataset"
        gate.admit_dataset(identities.VISITOR, DS, Charge.planned(0.1, 0.0), description="x")
    with pytest.raises(registry.Unavailable) as missing:
        gate.admit_dataset(ann, "f" * 64, Charge.planned(0.1, 0.0), description="x")
    assert str(nobody.value).split("'")[2:] == str(missing.value).split("'")[2:]


def test_a_statement_names_the_dataset_charged_and_whether_its_number_of_rows_is_public(tmp_path):
    df = datasets.medical(300, seed=3)
    registry.register(admin(), "open", df, epsilon=1.0, public_n=True)
    registry.register(admin(), "closed", datasets.medical(300, seed=4), epsilon=1.0)
    for name, rows, n in (("open", df, registry.PUBLIC_N), ("closed", datasets.medical(300, seed=4), "not released")):
        who = analyst(f"u{name}", name, 1.0)
        adm = gate.admit(
            who, rows, lambda: (Charge.synthetic(0.1, 0.0), None), kind=ReleaseKind.SYNTHETIC, description="t"
        )
        (c,) = adm.block()["charged_to"]
        assert c["dataset"] == name and c["number_of_rows"] == n
