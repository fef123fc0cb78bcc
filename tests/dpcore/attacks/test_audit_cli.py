"""`python -m dpcore audit --scores FILE.csv`: JSON with the bound and its counts; bad files exit 2 in one line."""

import json

import numpy as np
import pytest

from dpcore.cli import main


def _write(tmp_path, member, score, name="s.csv"):
    p = tmp_path / name
    p.write_text("member,score\n" + "".join(f"{m},{s}\n" for m, s in zip(member, score)))
    return str(p)


def test_audit_cli_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    member = np.r_[np.ones(400, int), np.zeros(400, int)]
    score = rng.laplace(0, 1, 800) + 5.0 * member  # a 5-DP location shift: the bound must be in (0, 5]
    rc = main(["audit", "--scores", _write(tmp_path, member, score), "--delta", "0", "--confidence", "0.9"])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0
    assert 0.5 < out["lower_bound"] <= 5.0 and out["confidence"] == 0.9
    assert out["members"] + out["selection_members"] == 400 and out["rows"] == 800
    assert {"tp", "fp", "nonmembers", "max_certifiable", "threshold", "direction"} <= set(out)


def test_audit_cli_one_run(tmp_path, capsys):
    rng = np.random.default_rng(1)
    member = (rng.random(600) < 0.5).astype(int)
    rc = main(["audit", "--one-run", "--scores", _write(tmp_path, member, rng.laplace(0, 1, 600) + 6.0 * member)])
    out = json.loads(capsys.readouterr().out)
    assert rc == 0 and out["lower_bound"] > 1 and out["n_canaries"] == 600 and out["correct"] <= out["guesses"]


@pytest.mark.parametrize(
    "body,msg",
    [
        ("member,value\n1,0.5\n0,0.1\n", "missing score"),
        ("member,score\n1,0.5\n2,0.1\n1,0.3\n0,0.2\n", "1 (in the training data) or 0"),
        ("member,score\n1,0.5\n0,abc\n1,0.3\n0,0.2\n", "finite number"),
        ("member,score\n1,0.5\n0,0.1\n", "at least 2 members"),
        ("", "empty"),
        ("member,score,canary\n1,0.5,2\n0,0.1,0\n", "canary must be 1"),  # the canary column (issue 26.3)
        ("member,score\n1,0.5\n0,inf\n", "finite number"),
        ("score\n0.5\n", "missing member"),
    ],
)
def test_audit_cli_bad_files_one_line_exit_2(tmp_path, capsys, body, msg):
    p = tmp_path / "bad.csv"
    p.write_text(body)
    rc = main(["audit", "--scores", str(p)])
    err = capsys.readouterr().err
    assert rc == 2 and msg in err and err.count("\n") == 1


def test_audit_cli_missing_file_and_bad_confidence(tmp_path, capsys):
    assert main(["audit", "--scores", str(tmp_path / "nope.csv")]) == 2
    ok = _write(tmp_path, [1, 1, 0, 0], [1, 2, 0, 1])
    assert main(["audit", "--scores", ok, "--confidence", "1.5"]) == 2
    assert main(["audit", "--scores", ok, "--delta", "2"]) == 2
    assert capsys.readouterr().err.count("\n") == 3
