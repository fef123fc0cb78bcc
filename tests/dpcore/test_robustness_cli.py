"""Issue 12: every bad CLI input is one line on stderr and exit 2 (no traceback, no silent success)."""

import io
import json
import subprocess
import sys

import pytest

from dpcore import limits
from dpcore.cli import main
from dpcore.data import datasets
from dpcore.jobs.owners import SYSTEM

from ..conftest import ROOT
from .cli_helpers import one_line, run


@pytest.mark.parametrize(
    "args",
    [
        ["data", "medical", "--n", "10", "--seed", "-1", "--out", "x.csv"],
        ["data", "medical", "--n", "10", "--seed", str(2**32), "--out", "x.csv"],
        [
            "noise",
            "--mechanism",
            "laplace",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--value",
            "0",
            "--draws",
            "2",
            "--seed",
            "-5",
        ],
        ["differencing", "--seed", "-1"],
        ["differencing", "--epsilon", "1", "--sim-seed", "-1"],
        ["differencing", "--sim-seed", str(2**53 + 1)],
        ["differencing", "--n", "5000000"],
        ["report", "--out", "r.html", "--seed", "-3"],
        ["jobs", "workers", "--start", "-1"],
        ["jobs", "workers", "--start", "100000"],
        ["jobs", "list", "--limit", "0"],
    ],
)
def test_out_of_range_numbers_are_refused(capsys, tmp_path, monkeypatch, args):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *args)
    assert rc == 2 and out == "" and one_line(err), err
    assert "must be" in err


def test_noise_epsilon_1e_320_is_refused_not_null_draws(capsys):
    rc, out, err = run(
        capsys,
        "noise",
        "--mechanism",
        "laplace",
        "--epsilon",
        "1e-320",
        "--sensitivity",
        "1",
        "--value",
        "0",
        "--draws",
        "3",
    )
    assert rc == 2 and out == "" and one_line(err)
    assert f"at least {limits.EPSILON_MIN:g}" in err


def test_report_out_into_missing_folder(capsys, tmp_path):
    rc, out, err = run(capsys, "report", "--out", str(tmp_path / "nope" / "r.html"))
    assert rc == 2 and one_line(err) and "does not exist" in err
    assert not (tmp_path / "nope").exists()


def test_report_empty_sweep_is_refused(capsys, tmp_path):
    rc, out, err = run(capsys, "report", "--out", str(tmp_path / "r.html"), "--sweep", "")
    assert rc == 2 and one_line(err) and "--sweep needs a value; got an empty one" in err
    assert not (tmp_path / "r.html").exists()


def test_data_out_into_missing_folder(capsys, tmp_path):
    rc, out, err = run(capsys, "data", "medical", "--n", "10", "--out", str(tmp_path / "nope" / "m.csv"))
    assert rc == 2 and one_line(err) and "does not exist" in err


def test_duplicate_columns_are_detected_from_the_header():
    with pytest.raises(datasets.DPError, match="duplicate column names: 'age'"):
        datasets.read_csv(b"age,sex,age\n34,F,35\n")
    with pytest.raises(datasets.DPError, match="duplicate"):
        datasets.read_csv(io.BytesIO(b"\xef\xbb\xbfa, a\n1,2\n"))
    assert list(datasets.read_csv(b"age,age.1\n1,2\n").columns) == ["age", "age.1"]  # distinct names are fine


def test_overlong_column_names_are_refused_with_the_limit(capsys, tmp_path):
    """A column name is shown in chart titles, menus and tables: one past the limit is refused, page and CLI."""
    ok = "n" * limits.UPLOAD_MAX_NAME_CHARS
    assert list(datasets.read_csv(f"age,{ok}\n1,2\n".encode()).columns) == ["age", ok]
    with pytest.raises(
        datasets.DPError,
        match=rf"is {limits.UPLOAD_MAX_NAME_CHARS + 1} characters long; at most "
        rf"{limits.UPLOAD_MAX_NAME_CHARS} are supported",
    ):
        datasets.read_csv(f"age,{ok}x\n1,2\n".encode())
    csv = tmp_path / "long.csv"
    csv.write_text("age," + "<b>" * 400 + "\n1,2\n")
    rc, out, err = run(capsys, "uniqueness", "--data", str(csv), "--qi", "age")
    assert rc == 2 and out == "" and one_line(err)
    assert "1,200 characters long" in err and len(err) < 300  # the name is shown cut short


def test_upload_limit_message_says_mib():
    with pytest.raises(datasets.DPError, match=r"larger than 1 MiB"):
        datasets.read_csv(b"a\n" + b"1\n" * (2**20), max_bytes=2**20)


def test_broken_pipe_is_one_line_exit_2():
    """`python -m dpcore ... | head`: the reader goes away; one line on stderr, exit 2, no traceback.

    The read end is closed before the command writes (it is still importing), so its write fails for sure.
    """
    cmd = [
        sys.executable,
        "-m",
        "dpcore",
        "noise",
        "--mechanism",
        "laplace",
        "--epsilon",
        "1",
        "--sensitivity",
        "1",
        "--value",
        "0",
        "--draws",
        "20000",
        "--seed",
        "1",
    ]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    p.stdout.close()  # what `head` does once it has what it wants
    err = p.stderr.read().decode()
    rc = p.wait(timeout=120)
    assert rc == 2, err
    assert one_line(err) and "broken pipe" in err


def test_broken_pipe_in_process(capsys, monkeypatch):
    class Closed(io.StringIO):
        def write(self, s):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    monkeypatch.setattr("dpcore.cli._quiet_stdout", lambda: None)
    rc = main(
        [
            "noise",
            "--mechanism",
            "laplace",
            "--epsilon",
            "1",
            "--sensitivity",
            "1",
            "--value",
            "0",
            "--draws",
            "3",
            "--seed",
            "1",
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and one_line(err) and "broken pipe" in err


def test_sweep_workers_upper_bound_refused_before_any_job(capsys):
    from dpcore.jobs import store

    rc, out, err = run(capsys, "sweep", "--workers", "100000", "--epsilons", "1")
    assert rc == 2 and one_line(err) and "--workers must be 0" in err
    assert store.list_jobs(caller=SYSTEM) == []  # nothing was submitted


# --- issue 32 §7: hostile input, each one line and exit 2 (or the right answer), nothing replaced, no silent default


def _scores(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text("member,score\n" + "".join(f"{i % 2},{(i % 7) / 7 + 0.2 * (i % 2)}\n" for i in range(200)))
    return path


@pytest.mark.parametrize("eps", ["710", "800", str(limits.EPSILON_MAX)])
def test_audit_a_stated_epsilon_up_to_the_limit_answers(capsys, tmp_path, eps):
    """ε = 710–1000 is allowed and overflowed math.exp (OverflowError): the claim's ceiling is TPR = 1 from FPR
    e^−ε on, and no audit contradicts it."""
    rc, out, err = run(capsys, "audit", "--scores", str(_scores(tmp_path)), "--epsilon", eps)
    assert rc == 0, err
    res = json.loads(out)
    assert res["claimed_epsilon"] == float(eps)
    assert res["ceiling"]["tpr"] and min(res["ceiling"]["tpr"]) == 1.0  # from FPR 1e-6 on: e^ε·1e-6 > 1
    assert res["verdict"]["contradicts"] is False


@pytest.mark.parametrize("sigma", ["1e308", "1e-320", "0", "nan", "1e5"])
def test_a_stated_noise_multiplier_out_of_range_is_one_line(capsys, tmp_path, sigma):
    """σ = 1e308 overflowed the RDP accountant, 1e-320 divided by zero (tracebacks)."""
    rc, out, err = run(
        capsys,
        "audit",
        "--scores",
        str(_scores(tmp_path)),
        "--noise-multiplier",
        sigma,
        "--sample-rate",
        "0.01",
        "--steps",
        "100",
    )
    assert rc == 2 and out == "" and one_line(err), err
    assert "noise multiplier must be" in err


@pytest.mark.slow
def test_report_explains_and_audits_an_epsilon_up_to_the_limit(capsys, tmp_path):
    """`report --epsilon 800` (e^ε in its text) and `--audit-epsilon 800` (the audit's ceiling) overflowed."""
    out = tmp_path / "r.html"
    rc, _, err = run(
        capsys,
        "report",
        "--out",
        str(out),
        "--epsilon",
        "800",
        "--audit",
        str(_scores(tmp_path)),
        "--audit-epsilon",
        "800",
    )
    assert rc == 0, err
    assert "10^348 times more likely" in out.read_text()


def test_report_synth_with_a_training_run_id_is_refused_before_any_work(capsys, tmp_path, monkeypatch):
    """`report --synth <a training job id>` raised KeyError after the slow sections."""
    from dpcore.jobs import registry, runner, store
    from dpcore.jobs.owners import CLI
    from dpcore.report import document

    params = {"dataset": "breast_cancer", "model": "logreg", "epsilon": None, "epochs": 1}
    runner.run_inline(registry.TRAIN, params, owner=CLI.owner)
    (job,) = store.list_jobs(caller=CLI)

    def slow(*a, **k):  # pragma: no cover - reached only if the check comes too late
        raise AssertionError("a slow section was built before the ids were checked")

    monkeypatch.setattr(document, "noise_section", slow)
    rc, out, err = run(capsys, "report", "--out", str(tmp_path / "r.html"), "--synth", job["id"])
    assert rc == 2 and one_line(err), err
    assert f"job {job['id']} is a training run, not a DP synthetic-data study" in err
    assert not (tmp_path / "r.html").exists()


def test_synth_out_onto_a_device_or_pipe_is_refused_and_left_alone(capsys, tmp_path):
    """`synth --out /dev/null` replaced the device with a regular file (the class issue 28 closed elsewhere)."""
    import os
    import stat

    node = tmp_path / "null"
    os.mknod(node, stat.S_IFCHR | 0o600, os.makedev(1, 3))  # a /dev/null of our own (root, as CI runs)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    for target, kind in ((node, "a character device"), (fifo, "a named pipe")):
        rc, out, err = run(capsys, "synth", "--builtin", "--epsilon", "1", "--out", str(target))
        assert rc == 2 and one_line(err), err
        assert kind in err
    assert stat.S_ISCHR(node.stat().st_mode) and stat.S_ISFIFO(fifo.stat().st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["null", "pipe"]  # no statement written beside them


@pytest.mark.parametrize(
    "args, words",
    [
        (["sweep", "--dataset", ""], "--dataset needs a value; got an empty one"),
        (["sweep", "--dataset", "  "], "--dataset needs a value; got an empty one"),
        (["synth", "--builtin", "--epsilon", "1", "--columns", "", "--out", "x.csv"], "--columns needs a value"),
        (["synth", "--builtin", "--epsilon", "1", "--columns", " , ", "--out", "x.csv"], "unknown medical column ''"),
        (["sweep", "--data", "x.csv", "--target", "y", "--bounds", "x=0:1:2"], "a range is COLUMN=LOW:HIGH"),
        (
            ["train", "--data", "x.csv", "--target", "y", "--model", "logreg", "--epsilon", "1", "--bounds", "x=0:1:2"],
            "a range is COLUMN=LOW:HIGH",
        ),
    ],
)
def test_empty_and_malformed_values_are_refused_not_defaulted(capsys, tmp_path, monkeypatch, args, words):
    """`sweep --dataset ''` swept digits; `synth --builtin --columns ''` released the default columns;
    `--bounds x=0:1:2` was taken as the one category '0:1:2'."""
    from dpcore.jobs import store

    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.csv").write_text("x,y\n0.5,a\n0.2,b\n")
    rc, out, err = run(capsys, *args)
    assert rc == 2 and out == "" and one_line(err), err
    assert words in err, err
    assert store.list_jobs(caller=SYSTEM) == [] and not (tmp_path / "x.statement.json").exists()


@pytest.mark.parametrize("generator, delta", [("mst", "0.5"), ("aim", "0.5"), ("aim", "0.001")])
def test_synth_delta_far_above_its_limit_is_refused(capsys, generator, delta):
    """`synth --delta 0.5` released "ε = 1, δ = 0.5": a guarantee that fails half the time."""
    rc, out, err = run(
        capsys, "synth", "--builtin", "--epsilon", "1", "--generator", generator, "--delta", delta, "--out", "x.csv"
    )
    assert rc == 2 and out == "" and one_line(err), err
    assert "is far too large" in err and f"at most {limits.SYNTH_DELTA_MAX:g}" in err


def test_synth_delta_of_the_builtin_patients_is_below_one_over_n(capsys):
    rc, out, err = run(
        capsys, "synth", "--builtin", "--n", "200000", "--epsilon", "1", "--generator", "aim", "--delta", "1e-5",
        "--out", "x.csv",
    )  # fmt: skip
    assert rc == 2 and out == "" and one_line(err), err
    assert "must be below 1/n = 5e-06 for 200,000 patients" in err


def test_statement_verify_with_an_empty_key_is_refused(capsys, tmp_path):
    """`statement --verify F --key ''` ignored the empty key and verified with this home's key."""
    from .test_statement import _fake_sweep

    sid = _fake_sweep()
    assert main(["statement", "--sweep", sid]) == 0
    path = tmp_path / "st.json"
    path.write_text(capsys.readouterr().out)
    rc, out, err = run(capsys, "statement", "--verify", str(path), "--key", "")
    assert rc == 2 and out == "" and one_line(err), err
    assert "--key needs a file path; got an empty one" in err


def test_sweep_json_onto_a_full_device_is_refused_before_training(capsys):
    """`sweep --json /dev/full` trained the whole sweep, then could not write its JSON."""
    from dpcore.jobs import store
    from dpcore.sweep import runs

    rc, out, err = run(
        capsys, "sweep", "--workers", "0", "--dataset", "breast_cancer", "--model", "logreg", "--epsilons", "1",
        "--seeds", "1", "--epochs", "1", "--attacks", "threshold", "--canaries", "20", "--size-fractions", "",
        "--json", "/dev/full",
    )  # fmt: skip
    assert rc == 2 and out == "" and one_line(err), err
    assert "/dev/full: the disk is full" in err
    assert store.list_jobs(caller=SYSTEM) == [] and runs.list_sweeps(caller=SYSTEM) == []


def test_every_e_to_the_epsilon_formula_holds_up_to_the_largest_epsilon():
    """The class of `audit --epsilon 800` (math.exp overflows past ε ≈ 709.78): each formula with e^ε in it, at
    every ε an input may take (limits.EPSILON_MAX), gives its bound instead of OverflowError."""
    from dpcore import claims
    from dpcore.attacks import audit
    from dpcore.noise import composition, interpret, mechanisms
    from dpcore.report import document

    fpr = [0.0, 1e-300, 1e-6, 0.01, 0.5, 1.0]
    for eps in (709.0, 710.0, 800.0, limits.EPSILON_MAX):
        for curve in (audit.dp_roc_ceiling(eps, 1e-5, fpr), audit.simple_roc_ceiling(eps, 0.0, fpr)):
            assert list(curve[2:]) == [1.0] * 4 and 0 <= curve[0] <= curve[1] <= 1
        assert list(audit.laplace_tradeoff(eps, fpr)[2:]) == [1.0] * 4
        assert float(interpret.guess_ceiling(eps, 0.2)) == 1.0 and float(interpret.guess_ceiling(eps, 0.0)) == 0.0
        assert mechanisms.Geometric(epsilon=eps, sensitivity=1.0).expected_abs_error() >= 0.0
        assert composition.advanced_homogeneous(eps, 2, 1e-6)[0] >= 2 * eps
        assert "times more likely" in " ".join(str(p) for p in document.epsilon_section(eps, 1e-5).paragraphs)
    assert claims.exp_up(800.0) == "10^348" and claims.exp_up(1.0) == "2.72"
    from dpcore.advisor import reconstruction

    for eps in (710.0, 800.0, limits.EPSILON_MAX):
        assert reconstruction.laplace(eps).from_epsilon == (1.0,) * len(reconstruction.KAPPAS)


def test_the_last_iterate_heuristic_past_e_to_the_709():
    """A small noise multiplier puts the heuristic ε past 709.78, where e^ε overflowed (OverflowError on the
    promise-and-proof chart of a run at a large ε). With every step's batch the whole data (q = 1) the final model
    is one Gaussian release with μ = √T/σ: the heuristic is that release's exact ε."""
    from dpcore.attacks import last_iterate
    from dpcore.noise.calibration import gaussian_epsilon

    for sigma, steps in ((0.3, 100), (0.01, 1)):
        h = last_iterate.heuristic_epsilon(sigma, 1.0, steps, 1e-5)
        assert h == pytest.approx(gaussian_epsilon(sigma / steps**0.5, 1e-5), rel=1e-5)
    assert last_iterate.heuristic_epsilon(0.3, 1.0, 100, 1e-5) > 690
    assert last_iterate.heuristic_delta(0.3, 1.0, 100, 800.0) < 1e-5


def test_a_posterior_limit_near_one_from_a_tiny_prior_is_solved_not_called_infinite(capsys):
    """`advise --max-posterior 0.9999999999999999 --prior 1e-300` overflowed the odds ratio: "allows ε ≤ inf,
    below the smallest ε the app works with". The limit's ε is log(P/(1−P)) + log((1−p)/p)."""
    import math

    rc, out, err = run(
        capsys, "advise", "--mechanism", "laplace", "--max-posterior", "0.9999999999999999", "--prior", "1e-300"
    )
    assert rc == 0, err
    big = 0.9999999999999999
    assert json.loads(out)["epsilon"] == pytest.approx(math.log(big / (1 - big)) + 300 * math.log(10), rel=1e-12)
