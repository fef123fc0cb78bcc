"""`python -m dpcore plan`: a template to start from, a preview that spends nothing, one release charged once with
its files in a folder; every bad request one line and exit 2, a plan over the budget exit 3 with nothing spent."""

import json

import pandas as pd
import pytest

from dpcore.budgets import visitors
from dpcore.statements import files as shipped

from .cli_helpers import one_line, run


def _template(tmp_path, capsys, name="plan.yaml"):
    path = tmp_path / name
    rc, _, err = run(capsys, "plan", "--template", "--out", str(path))
    assert rc == 0, err
    return path


def _spent(n=200, seed=0) -> float:
    return visitors.open_builtin(n, seed)["spent"]


def test_template_then_preview_spends_nothing(tmp_path, capsys):
    rc, out, err = run(capsys, "plan", "--template")
    assert rc == 0, err
    assert len(json.loads(out)["statistics"]) == 5
    path = _template(tmp_path, capsys)
    assert path.read_text().startswith("title:")  # YAML by the file's name
    rc, out, err = run(capsys, "plan", "--plan", str(path), "--preview")
    assert rc == 0, err
    p = json.loads(out)
    assert p["spent"] == 0.0 and p["epsilon"] == 1.0 and p["delta"] == 0.0
    assert p["epsilon_per_person"] == 1.0 and p["charged"] == 1.0
    assert sum(s["epsilon"] for s in p["statistics"]) == pytest.approx(1.0)
    assert len(p["statistics"]) == 5 and all(s["error_95"] for s in p["statistics"])
    assert _spent() == 0.0


def test_release_on_the_builtin_visits_charges_once_and_writes_the_files(tmp_path, capsys):
    path = _template(tmp_path, capsys, "plan.json")
    out_dir = tmp_path / "release"
    args = ("plan", "--plan", str(path), "--builtin", "visits", "--n", "200", "--out", str(out_dir))
    rc, out, err = run(capsys, *args)
    assert rc == 0, err
    r = json.loads(out)
    assert r["spent"] == pytest.approx(1.0) and not r["reused"]
    assert _spent() == pytest.approx(1.0)  # exactly the plan's total, charged once
    assert set(r["files"]) == {
        "release.csv",
        "release.statement.json",
        "plan.json",
        "plan.ipynb",
        "plan.py",
        "registry-draft.yaml",
    }
    table = pd.read_csv(out_dir / "release.csv")
    assert set(table["statistic"]) == {1, 2, 3, 4, 5} and len(table) == r["rows"]
    st = json.loads((out_dir / "release.statement.json").read_text())
    assert st["kind"] == "plan" and st["level"] == "person-level" and st["epsilon_per_person"] == 1.0
    assert {f["name"] for f in st[shipped.FIELD]} == set(r["files"]) - {"release.statement.json"}
    assert "registry" in r and r["registry"]
    rc, out, err = run(capsys, *args)  # the same plan again: the stored release, free
    assert rc == 0, err
    assert json.loads(out)["reused"] and _spent() == pytest.approx(1.0)


def test_a_plan_over_the_budget_is_refused_with_exit_3_and_nothing_spent(tmp_path, capsys):
    plan = json.loads(run(capsys, "plan", "--template")[1])
    plan["epsilon"] = 50.0  # above the visitors' largest release
    path = tmp_path / "big.json"
    path.write_text(json.dumps(plan))
    rc, _, err = run(capsys, "plan", "--plan", str(path), "--builtin", "visits", "--n", "200", "--out", str(tmp_path))
    assert rc == 3 and one_line(err), err
    assert _spent() == 0.0


@pytest.mark.parametrize(
    "args, words",
    [
        ([], "--plan FILE"),
        (["--plan", "@missing"], "not found"),
        (["--plan", "@notplan"], "statistics"),
        (["--plan", "@binary"], "UTF-8"),
        (["--plan", "@plan"], "name the data"),
        (["--plan", "@plan", "--builtin", "visits"], "--out DIR"),
        (["--plan", "@plan", "--builtin", "visits", "--out", "@plan"], "is a file"),
        (["--plan", "@nobounds", "--preview"], "bounds"),
        (["--plan", "@plan", "--data", "@wrongcols", "--out", "@dir"], "column"),
        (["--plan", "@plan", "--builtin", "visits", "--n", "1"], "--n"),
        (["--plan", "@plan", "--dataset", "nobody", "--out", "@dir"], "nobody"),
        (["--plan", "@plan", "--builtin", "visits", "--out", "@unmakeable"], "could not make the folder"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, words):
    plan = json.loads(run(capsys, "plan", "--template")[1])
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    (tmp_path / "notplan.json").write_text(json.dumps({"title": "x"}))
    (tmp_path / "binary.yaml").write_bytes(b"\xff\xfe\x00\x01")
    bad = dict(plan, statistics=[{"kind": "sum", "column": "cost"}])
    (tmp_path / "nobounds.json").write_text(json.dumps(bad))
    pd.DataFrame({"x": [1, 2, 3]}).to_csv(tmp_path / "wrong.csv", index=False)
    tokens = {
        "@missing": str(tmp_path / "no" / "plan.json"),
        "@notplan": str(tmp_path / "notplan.json"),
        "@binary": str(tmp_path / "binary.yaml"),
        "@plan": str(tmp_path / "plan.json"),
        "@nobounds": str(tmp_path / "nobounds.json"),
        "@wrongcols": str(tmp_path / "wrong.csv"),
        "@dir": str(tmp_path / "out"),
        "@unmakeable": str(tmp_path / "plan.json" / "release"),
    }
    rc, out, err = run(capsys, "plan", *[tokens.get(a, a) for a in args])
    assert rc == 2, (rc, out, err)
    assert one_line(err), err
    assert words.lower() in err.lower(), err
    assert _spent() == 0.0


def test_help_prints(capsys):
    rc, out, _ = run(capsys, "plan", "--help")
    assert rc == 0 and "--preview" in out and "95% error" in out


def test_an_upload_of_own_rows_charges_nothing_and_says_so(tmp_path, capsys):
    from dpcore.data import datasets

    path = _template(tmp_path, capsys, "plan.json")
    data = tmp_path / "visits.csv"
    datasets.medical_visits(150, 3).to_csv(data, index=False)
    rc, out, err = run(capsys, "plan", "--plan", str(path), "--data", str(data), "--out", str(tmp_path / "o"))
    assert rc == 0, err
    r = json.loads(out)
    assert r["spent"] == 0.0 and r["budget"]["charged_to"] == [] and "own data" in r["budget"]["owner"]
    st = json.loads((tmp_path / "o" / "release.statement.json").read_text())
    assert st["budget"]["charged_to"] == []
