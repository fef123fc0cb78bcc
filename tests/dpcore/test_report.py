import json
import re

import pandas as pd
import pytest

from dpcore import claims
from dpcore.cli import main
from dpcore.errors import DPError
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM
from dpcore.report import document as report


def test_report_is_self_contained_and_has_findings():
    html = report.build(1.0, n=2000, seed=0)
    # plotly.js embedded once, no external scripts: opens offline
    assert html.count("<script src=") == 0
    assert not re.search(r"<link[^>]+href=[\"']https?:", html)
    assert html.count("Plotly.newPlot") >= 6
    for text in ("What the chosen ε means", "Laplace", "Re-identification", "k-anonymity", "not private", "ε = 1"):
        assert text in html
    assert re.search(r"patients matching the neighbour.*?<td>1 patient</td>", html, re.S)


def _text(html: str) -> str:
    return re.sub(r"<script.*?</script>", "", html, flags=re.S)


def test_report_opens_with_an_executive_summary_and_renders_markdown():
    html = report.build(1.0, n=1500)
    body = _text(html)
    first_h2 = re.search(r"<h2>(.*?)</h2>", body).group(1)
    assert first_h2 == "Executive summary"
    summary = body[body.index("Executive summary") : body.index("<h2>Settings</h2>")]
    assert summary.count("<p class='summary'>") == 5  # five sentences a board needs
    assert "<strong>ε = 1</strong>" in summary and "<strong>99.8%</strong>" in summary
    assert "*" not in re.sub(r"<[^>]+>", "", body)  # markdown rendered: no literal asterisks
    assert "adding or removing one person" in body  # the neighbour relation beside ε


def test_report_and_page_share_the_story_numbers():
    """One dpcore function for both: the report's table is the story's findings (was 66 vs 62)."""
    from dpcore.attacks import reidentification as reid

    html = report.build(1.0, n=1500)
    st = reid.story()
    for value in st.findings()["value"]:
        assert report.inline_markdown(value) in html
    assert f"re-identifies <strong>{st.linkage.right_person:,} of the {st.linkage.in_release:,}</strong>" in html
    claim, detail = st.headline()  # the page's short bold claim and its detail, in one paragraph
    assert f"<p><strong>{claim}.</strong> {detail}</p>" in html


def test_inline_markdown_escapes_first():
    out = report.inline_markdown("<script>alert(1)</script> **bold** *it* `c` 2*3*4")
    assert "<script>" not in out and "&lt;script&gt;" in out
    assert "<strong>bold</strong>" in out and "<em>it</em>" in out and "<code>c</code>" in out


def test_report_writes_e_to_the_epsilon_as_maths_in_its_own_text_only():
    """e^ε is mathematics, as the pages write it ($e^{\\varepsilon}$), not "e^ε" typed as code; the markup is the
    report's own fixed text: text a user chose that holds "e^ε" or tags is still escaped."""
    body = _text(report.build(1.0, n=1500))
    assert "Any output is at most e<sup>ε</sup> = 2.72 times more likely with a given person&#x27;s data" in body
    assert "e^ε" not in body
    evil = "e^ε <sup>x</sup> **b**"
    out = report.render([report.Section(evil, [evil], tables=[pd.DataFrame({evil: [evil]})])], {evil: evil})
    assert "<sup>" not in out and "e^ε &lt;sup&gt;x&lt;/sup&gt;" in out


def test_posterior_reading_flags_delta_in_the_report():
    """With δ > 0 the report says how often the bound fails (P[privacy loss > ε]), not "up to δ" (issue 25 §4)."""
    from dpcore.noise.interpret import loss_tail

    html = _text(report.build(1.0, delta=1e-6, n=1500))
    assert "privacy loss exceeds ε" in html and "up to δ" not in html and "fails outright" not in html
    assert f"probability {claims.up(loss_tail(1.0, 1e-6), 2)}" in html


def test_report_words_each_reading_for_the_question_it_bounds():
    body = _text(report.build(1.0, n=1500))
    assert "50% sure that a person is in the data can become at most <strong>73.2%</strong>" in body
    assert "a fact such as their diagnosis goes from 50% to at most <strong>88.1%</strong>" in body
    assert "e<sup>2ε</sup> = 7.39 times more likely with one value of a known person&#x27;s record" in body
    assert "fact about a person can become at most" not in body  # the old reading of a fact off e^ε


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
    assert main(["report", "--out", str(out), "--job", "nope"]) == 2  # a statement needs a finished run
    capsys.readouterr()
    from dpcore.budgets import visitors

    name = visitors.open_builtin(1500, 0)["name"]  # a visitor's report: the built-in data as a whole
    assert main(["report", "--out", str(out), "--n", "1500", "--ledger", name]) == 0
    assert json.loads(capsys.readouterr().out)["ledgers"] == 1
    assert "Privacy statement: dataset synthetic medical (n=1,500, seed=0), every answer by anyone" in out.read_text()
    assert main(["report", "--out", str(out), "--n", "1500", "--ledger", "med"]) == 2
    assert "not a dataset you may use" in capsys.readouterr().err


def test_report_with_a_stored_sweep(tmp_path):
    from dpcore.sweep import runs as sweep_runs

    result = sweep_runs.run_sweep_inline(
        {
            "dataset": "breast_cancer",
            "model": "logreg",
            "epsilons": [1.0],
            "epochs": 2,
            "train_size": 60,
            "hidden": None,
            "lr": 0.5,
            "batch_size": 16,
            "canaries": 0,
            "size_fractions": [],
        },
        owner=OWNER,
    )
    html = report.build(1.0, n=1500, sweep_id=result["id"], caller=SYSTEM)
    assert "Privacy–utility: Breast cancer, Logistic regression, ε 1, " in html  # what it is, in words; not its id
    assert result["id"] not in _text(html)
    # the page's headers (sweep_summary.column_label): each column computed on the private rows says so
    assert "<th>test accuracy (mean), not covered by ε</th>" in html
    assert (
        "<th>proved ε (95% over all seeds), not covered by ε</th>" in html and "<th>ε spent (accountant)</th>" in html
    )
    assert "empirical" in html
    with pytest.raises(DPError, match="no stored sweep"):
        report.build(1.0, n=1500, sweep_id="nope", caller=SYSTEM)


EVIL = "<img src=x onerror=alert(1)>**bold**"


def test_report_has_a_privacy_statement_per_run_sweep_and_ledger(monkeypatch):
    """One section per statement the report covers (run, sweep, ledger): escaped names, ε at several δ, the
    trade-off chart, and nothing wider than the page (1280 px screen, 1100 px body)."""
    from dpcore.budgets import visitors
    from dpcore.data import datasets
    from dpcore.jobs import store
    from dpcore.queries import answering, fingerprint, model
    from tests.budgets_helpers import analyst
    from tests.dpcore.test_statement import _fake_sweep

    real_get = store.get
    run = {
        "id": "job-1",
        "target": "train",
        "status": "done",
        "label": EVIL,
        "result": {
            "private": True,
            "dataset": "breast_cancer",
            "model": "logreg",
            "n_train": 400,
            "noise_multiplier": 1.1,
            "sample_rate": 0.1,
            "steps": 50,
            "accountant": "rdp",
            "epsilon": 2.0,
            "delta": 1e-5,
            "clip": 1.0,
            "reproducible_noise": False,
            "noise_source": "secrets.SystemRandom",
            "dp_release": True,
        },
    }
    monkeypatch.setattr(
        store,
        "get",
        lambda j, *, caller, history=True: run if j == "job-1" else real_get(j, caller=caller, history=history),
    )
    df = datasets.medical(1500, 0)
    fp = visitors.open_builtin(1500, 0, fingerprint.dataset_identity(df))["fingerprint"]
    who = analyst(EVIL, fp, 2.0)
    answering.ask(df, who, model.make_query("count", epsilon=0.5, condition="age>50"))
    sid = _fake_sweep()
    html = report.build(1.0, n=1500, sweep_id=sid, job_ids=["job-1"], ledgers=[(fp,)], caller=SYSTEM, viewer=who)
    body = _text(html)
    heads = re.findall(r"<h2>(Privacy statement: .*?)</h2>", body)
    assert len(heads) == 3, heads  # the sweep, the run, the ledger
    # issue 28: the ledger's section is titled by its dataset's name (a 64-hex fingerprint titled it), its ε table
    # has no repeated row, and no table holds NaN
    assert heads[-1].startswith("Privacy statement: dataset synthetic medical") and not re.search(
        r"[0-9a-f]{64}", "".join(heads)
    )
    ledger_part = body[body.index(heads[-1]) :]
    rows = re.findall(r"<tr>\s*(<td>.*?)</tr>", ledger_part[: ledger_part.index("<div class='fig'>")], re.S)
    assert len(rows) == len(set(rows)), rows
    assert "NaN" not in body and ">nan<" not in body
    assert "<img" not in body and "<strong>bold</strong>" not in body  # user text is escaped, never rendered
    assert "&lt;img src=x onerror=alert(1)&gt;**bold**" in body
    assert "add/remove one record" in body and "one patient's record" in body
    for d in ("1e-5", "1e-6"):  # ε at δ = 1e-5 and 1e-6, never at 1/n (n = 400 training rows: 0.0025)
        assert f"<td>{d}</td>" in body
    assert "<td>0.0025</td>" not in body
    assert "empirical ε ≥ 0.3 with 95% confidence" in body  # the sweep point's audit
    # datasets and models by the names the pages use, never their code names (breast_cancer, logreg)
    assert "<td>Breast cancer</td>" in body and "<td>Logistic regression</td>" in body
    assert not re.search(r"\b(breast_cancer|logreg|mlp)\b", body), re.findall(
        r".{60}(?:breast_cancer|logreg|mlp)\b", body
    )
    assert "REPRODUCIBLE" in body  # the fake sweep's points carry no noise source: not called a DP release
    assert html.count("Best possible attack on") == 3
    # nothing fixed-width beyond the page: figures autosize, wide tables scroll inside their box
    assert not re.search(r'"width":\s*(1[1-9]\d\d|[2-9]\d\d\d)', html)
    assert html.count("<div class='tbl'><table") == html.count("<table")


def test_report_statement_for_a_missing_run_says_so():
    with pytest.raises(DPError):
        report.build(1.0, n=1500, job_ids=["nope"], caller=SYSTEM)


def test_report_shows_the_proved_epsilon_over_all_seeds():
    """Issue 11.8: the sweep section's table and reading carry the bound at 95% over all seeds of an ε."""
    from dpcore.sweep import summary as sweep_summary
    from tests.dpcore.sweep.helpers import multi_seed_result

    res = multi_seed_result(sweep_id="20250101-000000-c3c4")
    (row,) = sweep_summary.by_epsilon(res)
    per_seed = [p["empirical_epsilon"]["lower_bound"] for p in res["points"]]
    body = _text(report.build(1.0, n=1500, sweep_id="20250101-000000-c3c4", caller=SYSTEM))
    assert "<th>proved ε (95% over all seeds), not covered by ε</th>" in body
    # lower bounds, written rounded down (dpcore.claims)
    assert f"<td>{claims.down(row['empirical_epsilon'])}</td>" in body
    assert f"<td>{claims.down(row['empirical_epsilon_median'])}</td>" in body
    assert "over 4 seeds, at 95% confidence overall" in body
    assert not any(f"<td>{claims.down(v)}</td>" in body for v in per_seed)


def test_statement_names_what_a_canary_audit_counted():
    """Each model's statement names its canary audit's counts (guesses right of canaries), not 'None members'."""
    from dpcore.sweep import runs as sweep_runs
    from tests.dpcore.sweep.helpers import multi_seed_result

    res = multi_seed_result(seeds=1)
    res["points"][0].update(noise_multiplier=1.0, sample_rate=0.1, steps=100, n_train=1000)
    e = res["points"][0]["empirical_epsilon"]
    sweep_runs.save(
        {
            "id": "20250101-000000-c3c5",
            "name": "one seed",
            "created": 1.0,
            "status": "done",
            "config": res["config"],
            "jobs": [],
            "failed": [],
            "result": res,
        }
    )
    body = _text(report.build(1.0, n=1500, sweep_id="20250101-000000-c3c5", caller=SYSTEM))
    assert f"one-run canary audit, {e['correct']} of {e['guesses']} guesses right on 300 canaries" in body
    assert "None members" not in body


def test_report_words_agree_with_the_pages(monkeypatch):
    """The report words things as the pages now do, under the pages' own rules (tests/app/test_plain_words.py):
    numpy beside 'ordinary random numbers', PLD / PRV / RDP spelt out, no field name (has_rare_disease), no maths
    typed as 'e^ε', and δ as people write it (1e-5, not Python's 1e-05)."""
    import html as _html

    from dpcore.budgets import visitors
    from dpcore.data import datasets
    from dpcore.jobs import store
    from dpcore.queries import answering, fingerprint, model
    from tests.app.test_plain_words import GLOSSED, NEVER, SNAKE
    from tests.budgets_helpers import analyst
    from tests.dpcore.test_statement import _fake_sweep

    real_get = store.get
    run = {
        "id": "job-1",
        "target": "train",
        "status": "done",
        "label": "run",
        "result": {
            "private": True,
            "dataset": "digits",
            "model": "mlp",
            "n_train": 400,
            "noise_multiplier": 1.1,
            "sample_rate": 0.1,
            "steps": 50,
            "accountant": "rdp",
            "epsilon": 2.0,
            "delta": 1e-5,
            "clip": 1.0,
            "reproducible_noise": False,
            "dp_release": True,
        },
    }
    monkeypatch.setattr(
        store,
        "get",
        lambda j, *, caller, history=True: run if j == "job-1" else real_get(j, caller=caller, history=history),
    )
    df = datasets.medical(1500, 0)
    fp = visitors.open_builtin(1500, 0, fingerprint.dataset_identity(df))["fingerprint"]
    ana = analyst("ana", fp, 2.0)
    answering.ask(df, ana, model.make_query("count", epsilon=0.5, condition="age>50"))
    html = report.build(
        1.0, n=1500, sweep_id=_fake_sweep(), job_ids=["job-1"], ledgers=[(fp,)], caller=SYSTEM, viewer=ana
    )
    text = _html.unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<(script|style)\b.*?</\1>", "", html, flags=re.S)))
    problems = [f"{tok!r}" for tok in NEVER if tok in text]
    problems += [
        f"{tok!r} without {gloss!r}"
        for tok, gloss in GLOSSED.items()
        if re.search(rf"\b{tok}\b", text) and gloss not in text
    ]
    problems += [f"field name {m!r}" for m in SNAKE.findall(text)]
    problems += [f"δ written {m!r}" for m in re.findall(r"δ = [\d.]+e-0\d", text)]
    assert not problems, problems
    assert "ordinary random numbers (numpy, fixed by seed 0)" in text and "patients with the rare disease" in text
    assert "RDP (Rényi DP): ε = 2 at δ = 1e-5" in text and "accountant PRV (privacy-loss random variables)" in text


@pytest.mark.parametrize("eps", ["1e308", "1001", "inf", "nan"])
def test_report_refuses_an_epsilon_beyond_the_apps_range_in_one_line(eps, tmp_path, capsys):
    """`report --epsilon 1e308` was an OverflowError traceback (issue 28)."""
    assert main(["report", "--out", str(tmp_path / "r.html"), "--epsilon", eps]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and not (tmp_path / "r.html").exists()


def test_report_adds_the_advisors_decision_record(tmp_path, capsys):
    path = tmp_path / "decision.json"
    assert (
        main(
            [
                "advise",
                "--mechanism",
                "laplace",
                "--max-tpr",
                "0.05",
                "--at-fpr",
                "0.01",
                "--within",
                "1",
                "--statement",
                str(path),
            ]
        )
        == 0
    )
    capsys.readouterr()
    out = tmp_path / "r.html"
    assert main(["report", "--out", str(out), "--n", "1500", "--advice", str(path)]) == 0
    body = _text(out.read_text())
    assert "<h2>Decision record: choosing ε from a risk limit</h2>" in body
    assert "Decision: no ε meets both" in body and "To reconcile: accept a coarser answer" in body
    assert re.search(r"<td>recommended ε</td>\s*<td>1.6 \(δ = 0\)</td>", body)
    # issue 34.3: without --epsilon the report explains the record's ε, and says so; with one, it names the other
    assert "At the chosen <strong>ε = 1.6</strong> (δ = 0) (the advisor" in body
    assert json.loads(capsys.readouterr().out)["epsilon"] == 1.6
    assert main(["report", "--out", str(out), "--n", "1500", "--advice", str(path), "--epsilon", "2"]) == 0
    body = _text(out.read_text())
    assert "At the chosen <strong>ε = 2</strong> (δ = 0) (--epsilon)" in body
    assert "The advisor's decision record below recommends ε = 1.6" in body.replace("&#x27;", "'")
    original = json.loads(path.read_text())
    tampered = json.loads(path.read_text())
    tampered["advice"]["epsilon"] = 3.0
    path.write_text(json.dumps(tampered))
    capsys.readouterr()
    assert main(["report", "--out", str(out), "--advice", str(path)]) == 2
    assert "does not check out: advice.epsilon is 3.0" in capsys.readouterr().err
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from dpcore.statements import signing

    path.write_text(json.dumps(signing.sign(original, Ed25519PrivateKey.generate())))
    assert main(["report", "--out", str(out), "--advice", str(path)]) == 2  # checks out, but signed elsewhere
    assert "not by the key given" in capsys.readouterr().err


def test_report_reads_on_a_phone_and_keeps_words_whole():
    """Issue 28: no mobile viewport, headers broken mid-word ("tar get"), a column split per δ = 1/n with NaN."""
    from tests.dpcore.test_statement import _fake_sweep

    html = report.build(1.0, n=1500, sweep_id=_fake_sweep(), caller=SYSTEM)
    assert "<meta name='viewport' content='width=device-width, initial-scale=1'>" in html
    th = re.search(r"(?m)^th\{[^}]*\}", html).group(0)
    assert "overflow-wrap:normal" in th and "word-break:normal" in th  # a header wraps between words only
    body = _text(html)
    table = body[body.rindex("<th>target ε</th>") :]  # the statement's table (the sweep section's comes first)
    table = table[: table.index("</table>")]
    heads = re.findall(r"<th>(.*?)</th>", table)
    assert [h for h in heads if h.startswith("ε at δ")] == ["ε at δ = 1e-5 (PLD)", "ε at δ = 1e-6 (PLD)"]
    assert "test accuracy (not covered by ε)" in heads
    assert "NaN" not in table and "<td>—</td>" not in table.split("</thead>")[1].split("<td>reproducible")[0]


def test_report_quotes_the_noise_page_s_figures_and_its_release_path():
    """The report's noise figures are the page's: a count released with whole-number noise, typically off by
    "0.9 patients" at ε = 1 (the page's headline) — it said "1 patient" (the continuous curve's) in its summary and
    its noise section, beside its own table's 0.8509 — and its release path is OpenDP's, as the page says (the report
    said diffprivlib, whose samplers the house does not release with)."""
    from dpcore.noise import interpret
    from dpcore.noise.mechanisms import for_release

    html = report.build(1.0, n=10_000, seed=0)
    text = re.sub(r"<[^>]+>", " ", _text(html))
    page = interpret.patients(
        for_release("laplace", epsilon=1.0, delta=None, sensitivity=1.0, integer=True).expected_abs_error()
    )
    assert page == "0.9 patients"
    assert f"is off by  {page}  on average" in text  # the summary's bold number
    assert f"typically off by {page}" in text and "OpenDP" in text and "(diffprivlib)" not in text
    assert "1 patient on average" not in text and "expected absolute error 1 patient" not in text
