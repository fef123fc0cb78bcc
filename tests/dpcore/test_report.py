import json
import re

import pytest

from dpcore import report
from dpcore.cli import main
from dpcore.errors import DPError


def test_report_is_self_contained_and_has_findings():
    html = report.build(1.0, n=2000, seed=0)
    # plotly.js embedded once, no external scripts: opens offline
    assert html.count("<script src=") == 0
    assert not re.search(r"<link[^>]+href=[\"']https?:", html)
    assert html.count("Plotly.newPlot") >= 6
    for text in ("What the chosen ε means", "Laplace", "Re-identification", "k-anonymity",
                 "not private", "ε = 1"):
        assert text in html
    assert re.search(r"records matching the neighbour.*?<td>\d+</td>", html, re.S)


def test_report_rejects_bad_epsilon():
    with pytest.raises(DPError, match="epsilon must be > 0"):
        report.build(0)


def test_cli_report(tmp_path, capsys):
    out = tmp_path / "r.html"
    assert main(["report", "--out", str(out), "--n", "1500"]) == 0
    info = json.loads(capsys.readouterr().out)
    assert info["bytes"] == out.stat().st_size > 100_000
    assert main(["report", "--out", str(tmp_path / "missing" / "r.html")]) == 2
    assert "does not exist" in capsys.readouterr().err


def test_report_with_a_stored_sweep(tmp_path):
    from dpcore import sweep

    result = sweep.run_sweep_inline({"dataset": "breast_cancer", "model": "logreg", "epsilons": [1.0],
                                     "epochs": 2, "train_size": 60, "hidden": None, "lr": 0.5})
    html = report.build(1.0, n=1500, sweep_id=result["id"])
    assert "Privacy–utility curve and membership inference" in html
    assert "empirical" in html
    with pytest.raises(DPError, match="no stored sweep"):
        report.build(1.0, n=1500, sweep_id="nope")
