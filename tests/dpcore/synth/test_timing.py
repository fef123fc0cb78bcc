"""The study's time on the page is measured: from the finished studies' start and end times in the job store before
a study starts, from its own pace while it runs (known answers; no release runs)."""

import time

import pytest

from dpcore.jobs import registry, runner, workers
from dpcore.jobs.owners import Caller
from dpcore.synth import study as ST
from dpcore.synth import timing

from .helpers import fake_result, run

ANN = "session:" + "a" * 32
BOB = "session:" + "b" * 32


@pytest.fixture(autouse=True)
def no_workers(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)


def _finish(cfg: ST.StudyConfig, owner: str, seconds: float, monkeypatch) -> None:
    result = fake_result({e: [run()] * cfg.repetitions for e in cfg.epsilons}, cfg)

    def slow(c, **kw):
        time.sleep(seconds)
        return result

    monkeypatch.setattr(ST, "run", slow)
    runner.run_inline(registry.SYNTH_STUDY, cfg.to_dict(), owner=owner, group=ST.GROUP, label=cfg.label())


def test_before_any_study_the_page_says_the_first_one_measures_it():
    assert timing.per_release(caller=Caller(ANN)) is None
    text = timing.before(24, caller=Caller(ANN))
    assert text.startswith("24 synthetic releases in a background worker; the time they take is measured")


def test_the_estimate_is_the_median_time_per_release_of_finished_studies(monkeypatch):
    cfg = ST.StudyConfig(epsilons=(1.0,), repetitions=2)  # 4 releases
    _finish(cfg, ANN, 0.4, monkeypatch)
    each, n = timing.per_release(caller=Caller(ANN))
    assert n == 4 and 0.1 <= each < 0.1 + 0.5  # 0.4 s over 4 releases, and the job's own bookkeeping
    assert timing.per_release(caller=Caller(BOB)) is None  # someone else's own study is not read
    _finish(ST.StudyConfig(), BOB, 0.0, monkeypatch)  # the shared default study: everyone reads it
    assert timing.per_release(caller=Caller(ANN))[1] == 4 + 24
    text = timing.before(24, caller=Caller(ANN))
    assert "each on this server (measured over its last 28 releases)" in text and "in all" in text


def test_a_running_study_reports_its_own_pace():
    job = {"status": "running", "started": 1000.0, "progress": {"step": 4, "total_steps": 24}}
    assert timing.during(job, now=1010.0) == "2.5 s per release so far, about 50 s left"
    assert timing.during({**job, "progress": {"step": 0, "total_steps": 24}}, now=1010.0) is None
    assert timing.during({**job, "status": "queued"}, now=1010.0) is None
    assert timing.during({**job, "started": None}) is None


def test_a_demo_server_queues_the_default_study_once(monkeypatch, repo_root):
    from dpcore.jobs import store
    from dpcore.jobs.owners import SYSTEM

    started = []
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: started.append(n) or 0)
    job_id = ST.prepare_default()
    (job,) = store.list_jobs(caller=SYSTEM, group=ST.GROUP)
    assert job.id == job_id and job.shared and job.owner == "cli" and ST.is_default(job.params) and started
    assert ST.prepare_default() is None  # queued already: nothing more
    assert len(store.list_jobs(caller=SYSTEM, group=ST.GROUP)) == 1
    assert f'os.environ.get("{ST.PREPARE_ENV}") == "1"' in (repo_root / "app.py").read_text()
