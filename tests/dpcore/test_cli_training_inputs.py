"""Issue 28: hostile numbers and empty file names on train, sweep and audit are one line and exit 2 (they were
tracebacks or a silently ignored --json), and a semicolon-separated CSV is refused in words, not read as one
column."""

import pytest

from dpcore.data import datasets
from dpcore.errors import DPError
from dpcore.training.config import TrainConfig

from .cli_helpers import one_line, run

TRAIN = ["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--epochs", "1"]


@pytest.mark.parametrize(
    "args, words",
    [
        (TRAIN + ["--lr", "1e308"], "learning rate must be at most 1000"),
        (TRAIN + ["--clip", "1e308"], "clip (max grad norm) must be at most 1000"),
        (
            TRAIN + ["--seed", "99999999999999999999999"],
            "must be from 0 to 4,294,967,295, got 99,999,999,999,999,999,999,999",
        ),
        (TRAIN + ["--seed", "-1"], "must be from 0 to"),
        (TRAIN + ["--json", ""], "--json needs a file path"),
        (["sweep", "--json", ""], "--json needs a file path"),
        (["sweep", "--json", "   "], "--json needs a file path"),
    ],
)
def test_train_and_sweep_refuse_in_one_line(capsys, tmp_path, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    rc, out, err = run(capsys, *args)
    assert rc == 2 and out == "" and one_line(err), err
    assert words in err, err


def test_audit_split_seed_must_be_a_seed(capsys, tmp_path):
    scores = tmp_path / "s.csv"
    scores.write_text("member,score\n" + "".join(f"{i % 2},{i}\n" for i in range(20)))
    rc, out, err = run(capsys, "audit", "--scores", str(scores), "--split-seed", "-5")
    assert rc == 2 and out == "" and one_line(err) and "--split-seed: must be from 0 to" in err, err
    rc, out, err = run(capsys, "audit", "--scores", str(scores), "--split-seed", "5")
    assert rc == 0, err


def test_train_config_refuses_what_torch_cannot_seed_or_hold():
    with pytest.raises(DPError, match="seed must be from 0 to 4,294,967,295"):
        TrainConfig(seed=2**64)
    with pytest.raises(DPError, match="learning rate must be at most"):
        TrainConfig(lr=1e308)
    TrainConfig(lr=10.0, clip=1000.0, seed=2**32 - 1)  # the limits themselves are fine


@pytest.mark.parametrize("sep, word", [(";", "';'"), ("\t", "tabs"), ("|", "'|'")])
def test_a_csv_with_another_separator_is_refused_in_words(sep, word):
    data = sep.join(["age", "sex", "label"]).encode() + b"\n" + sep.join(["34", "F", "1"]).encode() + b"\n"
    with pytest.raises(DPError) as err:
        datasets.read_csv(data)
    assert f"separates values with {word}, not commas" in str(err.value)
    assert len(datasets.read_csv(b"age\n34\n").columns) == 1  # a real one-column CSV is still read
