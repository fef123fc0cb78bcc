"""Every admin action the README names exists on the CLI (issue 32 §2) — each refused with one line and exit 2
without the admin token (or before `admin init`), and done with it. The data owner's actions (`budget register`,
`cap`, `reset`, `analyst add|key|list|revoke`, `budget status` of anyone's quota) and everything an admin may do
to someone else's run or sweep on the pages (`jobs … --admin`, `export --admin`, `statement --admin`,
`report --admin`)."""

import json

import pytest

from dpcore.budgets import identities
from dpcore.cli import main
from dpcore.data import datasets
from dpcore.jobs import registry, runner, store
from dpcore.jobs.owners import SYSTEM, visitor_owner
from dpcore.sweep import runs as sweep_runs
from dpcore.sweep.config import SweepConfig

from ..budgets_helpers import TOKEN
from .cli_helpers import one_line
from .sweep.helpers import TINY as SWEEP

ADMIN = identities.ADMIN_ENV
THEIRS = visitor_owner("v" * 43)  # a visitor of the app: not the command line's
RUN = {"dataset": "breast_cancer", "model": "logreg", "epsilon": 2.0, "epochs": 1, "batch_size": 64}
TINY = SweepConfig(  # one private point and its baseline, seconds to train
    **{**SWEEP, "epsilons": (1.0,), "epochs": 1, "train_size": 80, "attacks": ("threshold",), "canaries": 0}
)


def _run(capsys, *args):
    code = main(list(args))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.fixture
def owner_home(tmp_path, monkeypatch, capsys):
    """`admin init` done, a registered dataset `clinic` and an analyst `ann` with a quota on it; no token set."""
    data = tmp_path / "medical.csv"
    datasets.medical(1000, seed=1).to_csv(data, index=False)
    monkeypatch.setenv(ADMIN, TOKEN)
    for args in (
        ["admin", "init"],
        ["budget", "register", "--data", str(data), "--name", "clinic", "--epsilon", "2"],
        ["analyst", "add", "ann", "--dataset", "clinic", "--epsilon", "1"],
    ):
        code, _, err = _run(capsys, *args)
        assert code == 0, err
    monkeypatch.delenv(ADMIN)
    return {"data": str(data), "other": str(tmp_path / "other.csv")}


#: The data owner's actions, as the README's CLI section lists them ("# admin").
OWNER_ACTIONS = {
    "budget register": ["budget", "register", "--data", "OTHER", "--name", "second", "--epsilon", "1"],
    "budget cap": ["budget", "cap", "--dataset", "clinic", "--epsilon", "3", "--reason", "second study approved"],
    "budget reset": ["budget", "reset", "--dataset", "clinic", "--analyst", "ann", "--confirm", "--reason", "quarter"],
    "analyst add": ["analyst", "add", "bob", "--dataset", "clinic", "--epsilon", "0.5"],
    "analyst add --oidc": ["analyst", "add", "bob@example.org", "--dataset", "clinic", "--epsilon", "0.5", "--oidc"],
    "analyst key": ["analyst", "key", "ann"],
    "analyst list": ["analyst", "list"],
    "analyst revoke": ["analyst", "revoke", "ann"],
    "analyst revoke --dataset": ["analyst", "revoke", "ann", "--dataset", "clinic"],
    "budget status (anyone's)": ["budget", "status", "--dataset", "clinic", "--analyst", "ann"],
    "statement --ledger --admin": ["statement", "--ledger", "--dataset", "clinic", "--admin"],
}


@pytest.mark.parametrize("action", list(OWNER_ACTIONS))
def test_each_data_owner_action_needs_the_admin_token_and_works_with_it(action, owner_home, monkeypatch, capsys):
    args = OWNER_ACTIONS[action]
    if "OTHER" in args:
        datasets.medical(700, seed=9).to_csv(owner_home["other"], index=False)
        args = [owner_home["other"] if a == "OTHER" else a for a in args]
    code, out, err = _run(capsys, *args)  # no token
    assert code == 2 and not out and one_line(err), (action, err)
    monkeypatch.setenv(ADMIN, "made-up-by-the-caller-0000")
    code, out, err = _run(capsys, *args)
    assert code == 2 and not out and one_line(err) and "admin token is missing or wrong" in err, (action, err)
    monkeypatch.setenv(ADMIN, TOKEN)
    code, out, err = _run(capsys, *args)
    assert code == 0, (action, err)
    assert json.loads(out) is not None


@pytest.fixture
def their_work(monkeypatch):
    """A visitor's finished training run and finished sweep (not the command line's), and a queued study."""
    runner.run_inline(registry.TRAIN, RUN, owner=THEIRS, group=registry.TRAIN_GROUP, label="their run")
    (run,) = store.list_jobs(caller=SYSTEM, group=registry.TRAIN_GROUP)
    sweep = sweep_runs.run_sweep_inline(TINY, owner=THEIRS, name="their sweep")["id"]
    study = store.submit(registry.SYNTH_STUDY, {"epsilons": [1.0]}, owner=THEIRS, group=registry.SYNTH_GROUP)
    return {"run": run.id, "sweep": sweep, "study": study}


def test_an_admin_reads_and_changes_someone_elses_run_and_sweep_on_every_command(
    their_work, tmp_path, monkeypatch, capsys
):
    run, sweep, study = their_work["run"], their_work["sweep"], their_work["study"]
    html = str(tmp_path / "report.html")
    reads = {
        "jobs list": ["jobs", "list"],
        "jobs show": ["jobs", "show", run],
        "export --job": ["export", "--job", run],
        "export --sweep": ["export", "--sweep", sweep],
        "statement --job": ["statement", "--job", run],
        "statement --sweep": ["statement", "--sweep", sweep],
        "report --job": ["report", "--out", html, "--job", run],
        "report --sweep": ["report", "--out", html, "--sweep", sweep],
    }
    for name, args in reads.items():  # the command line's own only: someone else's is not yours
        code, out, err = _run(capsys, *args)
        if name == "jobs list":
            assert code == 0 and json.loads(out)["count"] == 0
        else:
            assert code == 2 and not out and one_line(err) and "not yours" in err, (name, err)
    code, _, err = _run(capsys, "report", "--out", html, "--synth", study)
    assert code == 2 and "not yours" in err

    identities.init_admin(TOKEN)
    for name, args in reads.items():  # --admin without the token: one line, exit 2
        code, out, err = _run(capsys, *args, "--admin")
        assert code == 2 and not out and one_line(err) and ADMIN in err, (name, err)

    monkeypatch.setenv(ADMIN, TOKEN)
    for name, args in reads.items():
        code, out, err = _run(capsys, *args, "--admin")
        assert code == 0, (name, err)
        if name == "jobs list":
            assert json.loads(out)["count"] >= 2
        elif name.startswith("export"):
            assert "dpcore" in out  # the script that re-runs it
        elif name.startswith("statement"):
            assert json.loads(out)["signature"]
    code, _, err = _run(capsys, "report", "--out", html, "--synth", study, "--admin")
    assert "not yours" not in err  # past the ownership check (a queued study has no numbers yet)

    changes = [
        ["jobs", "rename", run, "renamed by the admin"],
        ["jobs", "rename", sweep, "sweep renamed", "--sweep"],
        ["jobs", "cancel", study],
        ["jobs", "delete", run],
        ["jobs", "delete", sweep, "--sweep"],
    ]
    monkeypatch.delenv(ADMIN)
    for args in changes:
        code, _, err = _run(capsys, *args)
        assert code == 2 and one_line(err) and "not yours" in err, (args, err)
    monkeypatch.setenv(ADMIN, TOKEN)
    for args in changes:
        code, _, err = _run(capsys, *args, "--admin")
        assert code == 0, (args, err)
    assert store.get(study, caller=SYSTEM).status == "cancelled"
    assert [j.id for j in store.list_jobs(caller=SYSTEM, group=registry.TRAIN_GROUP)] == []
    assert sweep_runs.list_sweeps(caller=SYSTEM) == []


def test_verify_needs_no_admin(capsys):
    code, _, err = _run(capsys, "statement", "--verify", "x.json", "--admin")
    assert code == 2 and one_line(err) and "anyone may check" in err
