"""AppTest: a public clinical table (tests/data/gbsg2.csv) uploaded on the re-identification page's "Your own data"
tab, every column declared, released as a DP synthetic table by a background job — the release that failed with
OpenDP's raw "FFI(…" text on the page — and, when a release fails, one sentence saying what to do, never an
exception's text."""

import pytest

from dpcore.jobs import registry, store, workers
from dpcore.jobs.owners import SYSTEM
from dpcore.synth import release as R

from ..dpcore.synth import clinical
from .pages import declare
from .test_reidentification_synth import page

TAB = "7 · Your own data"


@pytest.fixture(autouse=True)
def no_workers(monkeypatch):
    monkeypatch.setattr(workers, "ensure_workers", lambda n=2: 0)  # the test runs the job itself


def _release(columns, generator="mst"):
    at = page({"re_tab": TAB})
    at.file_uploader(key="re_upload").set_value(("gbsg2.csv", clinical.GBSG2.read_bytes(), "text/csv")).run()
    assert not at.exception
    declare(at, columns)
    at.checkbox(key="re_up_syn_measure").uncheck().run()
    if generator == "aim":
        at.radio(key="re_up_syn_gen").set_value("aim").run()
    at.button(key="re_up_syn_go").click().run()
    assert not at.error, [e.value for e in at.error]
    (job,) = store.list_jobs(caller=SYSTEM, group=registry.SYNTH_RELEASE_GROUP)
    assert workers.run_worker(once=True) == 1
    at.run()
    assert not at.exception
    return at, store.get(job["id"], caller=SYSTEM)


@pytest.mark.slow
def test_gbsg2_with_every_column_declared_is_released(chdir_root):
    at, job = _release(clinical.GBSG2_COLUMNS)
    assert job["status"] == "done", job["error"]
    box = " ".join(i.value for i in at.info)
    assert "**Released.** ε = 1, δ = 0 (MST); add/remove one record" in box
    names = [c.split("=")[0] for c in clinical.GBSG2_COLUMNS]
    shown = next(d.value for d in at.dataframe if "tgrade" in d.value.columns)
    assert list(shown.columns) == names and set(shown["tgrade"]) <= {"I", "II", "III"}
    assert job["result"]["statement"]["epsilon"] <= 1.0


@pytest.mark.slow
def test_a_failed_release_says_what_to_do_in_one_message(chdir_root, monkeypatch):
    real = R.plan

    def stopping(schema, cfg):  # OpenDP's measurement stops part-way, with its kind of text
        p = real(schema, cfg)

        def stops(_frame):
            raise RuntimeError('FFI("Continued stack trace … OpenDPException: insufficient budget for query")')

        return R.Plan(stops, p.epsilon, p.delta, p.rho, p.noise)

    monkeypatch.setattr(R, "plan", stopping)
    at, job = _release(clinical.GBSG2_COLUMNS[:3])
    assert job["status"] == "failed"
    (err,) = [e.value for e in at.error]
    assert err.startswith("The release failed: the synthetic release stopped inside OpenDP's generator")
    assert "try again with fewer columns, wider bins or a larger ε" in err
    for raw in ("FFI", "OpenDPException", "RuntimeError", "Traceback", "insufficient budget"):
        assert raw not in err
        assert all(raw not in str(x.value) for x in [*at.markdown, *at.caption, *at.info, *at.warning])
