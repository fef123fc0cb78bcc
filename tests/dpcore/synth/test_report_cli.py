"""The synthetic study in the HTML report and through `synth-study`, from a study with known numbers."""

import json
import re

import pytest

from dpcore.errors import DPError
from dpcore.jobs import registry, runner, store, workers
from dpcore.jobs.owners import CLI, SYSTEM, Caller, NotYours
from dpcore.report import document as report
from dpcore.synth import study as ST

from ..cli_helpers import one_line
from ..cli_helpers import run as cli
from .helpers import fake_result, run


@pytest.fixture
def finished(monkeypatch):
    cfg = ST.StudyConfig(epsilons=(1.0, 10.0), repetitions=2)
    result = fake_result({1.0: [run(neighbour_matches=2), run()], 10.0: [run(two_way_max=2.0), run()]}, cfg)
    monkeypatch.setattr(ST, "run", lambda c, **kw: result)
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=CLI.owner, group=ST.GROUP, label=cfg.label())
    return ST.finished(caller=CLI)[0]["id"]


def test_report_section_states_the_release_and_labels_what_epsilon_does_not_cover(finished):
    sec = report.synth_section(finished, 1.0, caller=CLI)
    # named as the page's picker names it, not by its id
    assert sec.title == "DP synthetic data instead of the table (MST · ε 1, 10 · 2 repetitions · 1,000 patients, ε = 1)"
    assert sec.paragraphs[0].startswith("**At ε = 1 the neighbour is no longer found.** In 2 DP synthetic tables")
    assert "not covered by ε" in sec.paragraphs[2]
    findings, statement, questions = sec.tables
    assert dict(zip(findings["finding"], findings["value"]))["not covered by ε"] == ST.NOT_COVERED
    st = dict(zip(statement["privacy statement"], statement["value"]))
    assert st["ε, δ"] == "ε = 1, δ = 0" and st["neighbouring datasets"] == "add/remove one record"
    assert "salary: whole numbers 0 to 250000 (clamped), 51 bins of width 5000" in st["declared public"]
    assert len(sec.figures) == 3
    assert questions.to_dict("records") == [{"question": "mean age", "real table": "50.5", "synthetic tables": "52.0"}]
    assert report.synth_section(finished, 8.0, caller=CLI).numbers["epsilon"] == 10.0  # the study's nearest ε
    with pytest.raises(NotYours, match="is not yours"):
        report.synth_section(finished, caller=Caller("session:" + "c" * 32))


def test_report_build_adds_the_study_and_the_cli_takes_it(finished, tmp_path, capsys):
    html = report.build(1.0, n=1_000, synth_ids=[finished], caller=CLI)
    body = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    assert "DP synthetic data instead of the table (MST · ε 1, 10 · 2 repetitions" in body
    assert f"(study {finished}" not in body
    assert "Each synthetic table is <strong>ε = 1</strong>" in body
    # the executive summary names the release it would publish, its guarantee and what it keeps (labelled)
    summary = body[body.index("<h2>Executive summary</h2>") : body.index("<h2>Settings</h2>")]
    assert (
        "Instead of the table, a <strong>DP synthetic release</strong> (MST, 1,000 patients): at ε = 1 the "
        "neighbour is no longer found — each synthetic table is differentially private at ε = 1, δ = 0, for "
        "adding or removing one patient (MST through OpenDP); its largest error in the 2-way marginals that "
        "matter is 4.0 percentage points (mean over 2 releases; measured on the real rows: not covered by ε)."
    ) in summary
    plain = report.build(1.0, n=1_000, caller=CLI)
    assert "DP synthetic release" not in plain
    out = tmp_path / "r.html"
    rc, stdout, err = cli(capsys, "report", "--out", str(out), "--n", "1000", "--synth", finished)
    assert rc == 0, err
    assert json.loads(stdout)["synth"] == [finished]
    assert "DP synthetic data instead of the table" in out.read_text()


def test_report_refuses_an_unfinished_or_unknown_study(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)
    job = store.submit(
        registry.SYNTH_STUDY, ST.StudyConfig(epsilons=(1.0,), repetitions=1).to_dict(), owner=CLI.owner, group=ST.GROUP
    )
    with pytest.raises(DPError, match=f"study {job} is queued: its numbers come when it has finished"):
        report.synth_section(job, caller=CLI)
    with pytest.raises(DPError, match="unknown job id"):
        report.build(1.0, synth_ids=["no-such-job"], caller=CLI)
    with pytest.raises(DPError, match="needs the caller"):
        report.build(1.0, synth_ids=[job])


def test_synth_study_cli_runs_and_queues(finished, capsys, monkeypatch):
    rc, stdout, err = cli(capsys, "synth-study", "--epsilons", "1,10", "--repetitions", "2")
    assert rc == 0, err
    out = json.loads(stdout)
    assert out["label"] == "MST · ε 1, 10 · 2 repetitions · 1,000 patients"
    assert out["points"][0]["headline"].startswith("At ε = 1 the neighbour is no longer found. In 2 DP synthetic")
    assert out["points"][1]["findings"]["not covered by ε"] == ST.NOT_COVERED
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)
    rc, stdout, _ = cli(capsys, "synth-study", "--epsilons", "3", "--repetitions", "1", "--background")
    q = json.loads(stdout)
    assert rc == 0 and q["status"] == "queued" and q["releases"] == 2
    assert store.get(q["job"], caller=SYSTEM)["params"]["epsilons"] == [3.0]


@pytest.mark.parametrize(
    "args,message",
    [
        (["--epsilons", "a,b"], "--epsilons must be numbers separated by commas"),
        (["--epsilons", "0.1,0.3,1,3,10"], "choose 1 to 4 values of ε"),
        (["--repetitions", "11"], "argument --repetitions: must be from 1 to 10"),
        (["--epsilons", "1000"], "from 0.01 to 100"),
    ],
)
def test_synth_study_cli_bad_input(capsys, args, message):
    rc, _, err = cli(capsys, "synth-study", *args)
    assert rc == 2 and one_line(err) and message in err, err
