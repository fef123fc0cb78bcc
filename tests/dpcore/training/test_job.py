"""The training job boundary: old stored rows still run, typed metrics read results of older versions,
a config is valid once built, one cancel signal."""

import dataclasses
import json
import math
import sqlite3

import pytest

from dpcore.errors import DPError
from dpcore.jobs import db, records, registry, store, workers
from dpcore.jobs.owners import SYSTEM
from dpcore.training.config import TrainConfig, check_batch_size
from dpcore.training.job import run_job
from dpcore.training.results import TrainMetrics

TINY = dict(dataset="breast_cancer", model="logreg", epsilon=2.0, epochs=1, batch_size=64, reproducible_noise=True)


def test_a_row_stored_with_the_old_training_target_still_runs(dp_home):
    """Rows written before dpcore/training.py became a package hold 'dpcore.training:run_job'."""
    assert registry.resolve("dpcore.training:run_job") is run_job
    store.list_jobs(caller=SYSTEM)
    conn = sqlite3.connect(str(db.db_path()))
    with conn:
        conn.execute(
            "INSERT INTO jobs (id, target, params, grp, label, status, created) "
            "VALUES ('old-train', 'dpcore.training:run_job', ?, 'train', '', 'queued', 1.0)",
            (json.dumps(TrainConfig(**TINY).to_dict()),),
        )
    conn.close()
    assert workers.run_worker("w-old-train", once=True) == 1
    done = store.get("old-train", caller=SYSTEM)
    assert done.status is records.JobStatus.DONE, done.error
    m = TrainMetrics.from_dict(done.result)
    assert m.private and 0 < m.epsilon <= 2.0 and m.delta == 1e-5 and m.release_label


def test_metrics_read_results_stored_by_older_versions():
    old = {
        "dataset": "digits",
        "model": "mlp",
        "private": True,
        "epsilon": 1.5,
        "delta": 1e-5,
        "history": [{"epoch": 1, "loss": 0.5}],
        "leaks": [],
        "warnings": ["w"],
        "weights_file": "model.pt",
        "config": {"epochs": 1},
        "some_key_from_before": 1,
    }  # no diverged, no lr
    m = TrainMetrics.from_dict(old)
    assert m.epsilon == 1.5 and m.diverged is None and m.lr is None and m.warnings == ("w",)
    assert m.history[0]["loss"] == 0.5
    d = m.to_dict()
    assert TrainMetrics.from_dict(d) == m and "release_label" not in d and isinstance(d["history"], list)


def test_metrics_of_a_job_and_the_comparison_chart_read_typed_fields():
    """Pages and figures read a stored run through TrainMetrics.from_job: None until there is a result."""
    from dpcore.figures.training import epsilon_comparison_chart

    assert TrainMetrics.from_job(None) is None
    assert TrainMetrics.from_job({"status": "running", "result": None}) is None
    stored = {
        "dataset": "breast_cancer",
        "model": "logreg",
        "private": True,
        "epsilon": 1.0,
        "delta": 1e-5,
        "target_epsilon": 1.0,
        "epsilon_prv": 0.98,
        "epsilon_rdp": 1.2,
        "shortcut_epsilon": 0.4,
        "weights_file": "model.pt",
        "config": {},
    }
    m = TrainMetrics.from_job({"status": "done", "result": stored})
    assert m.epsilon_prv == 0.98 and m.delta == 1e-5
    for arg in (m, stored):  # typed metrics, or a stored dict read through from_dict: the same chart
        fig = epsilon_comparison_chart(arg)
        assert list(fig.data[0].x) == [0.98, 1.2, 0.4] and "δ = 1e-5" in fig.layout.title.text


def test_a_config_is_valid_once_built():
    """No validate() to forget: building one (also by dataclasses.replace) checks every field."""
    cfg = TrainConfig(**TINY)
    assert not hasattr(cfg, "validate")
    with pytest.raises(DPError, match="epsilon"):
        dataclasses.replace(cfg, epsilon=-1.0)
    with pytest.raises(DPError, match="batch size 500 is larger than the 455 training rows"):
        check_batch_size(500, 455)


def test_epsilon_chart_labels_the_target_at_its_line_on_the_log_axis():
    """add_hline's own label took the value as log10 units: a target of 1 was labelled at 10."""
    from dpcore.figures import training as figs

    hist = [{"epoch": 1, "epsilon": 0.4}, {"epoch": 2, "epsilon": 0.7}]
    fig = figs.epsilon_chart(hist, target_epsilon=2.0, final_epsilon=0.9)
    (note,) = [a for a in fig.layout.annotations if "target" in a.text]
    assert note.yref == "y" and note.y == pytest.approx(math.log10(2.0))


def test_epsilon_chart_says_which_bound_is_live_and_which_final():
    """The live points are the looser RDP bound (they may end above a target PRV meets): the legend says so
    and names the run's accountant for the final point; hovers round both up."""
    from dpcore.figures import training as figs

    hist = [{"epoch": e, "epsilon": v, "loss": 0.5, "accuracy": 0.9} for e, v in ((1, 0.6), (2, 1.0041))]
    fig = figs.epsilon_chart(hist, target_epsilon=1.0, final_epsilon=0.9951, accountant="prv")
    live, final = fig.data
    assert "live RDP" in live.name and final.name == "final ε (PRV accountant)"
    assert list(live.customdata) == ["0.6", "1.01"] and list(final.customdata) == ["0.996"]


def test_datasets_and_models_have_one_readable_name():
    """One mapping for the pages and the report: code names never reach a reader; unknown codes pass through."""
    from dpcore.training.config import BUILTIN_DATASETS, DATASET_NAMES, MODEL_NAMES, MODELS, dataset_name, model_name

    assert dataset_name("breast_cancer") == "Breast cancer" and model_name("logreg") == "Logistic regression"
    assert dataset_name("csv:/data/uploads/ab12.csv") == "Uploaded CSV" and model_name("mlp") == "Small MLP"
    assert dataset_name("upload:0123456789abcdef") == "Uploaded CSV"  # a page's upload: an opaque reference
    assert dataset_name(None) == model_name(None) == "?" and dataset_name("other") == "other"
    # every dataset and model the config accepts has a name
    assert set(BUILTIN_DATASETS) | {"csv", "mnist", "upload"} == set(DATASET_NAMES) and set(MODELS) == set(MODEL_NAMES)


def test_epsilon_chart_labels_several_ticks_on_its_log_axis():
    """A run from ε 0.2 to 1.1 had one labelled tick ("1") on its log axis: the axis now spans the values shown
    (points, target, final) with 1-2-5 ticks, at least two of them inside, and every point inside the range."""
    from dpcore.figures import training as figs

    hist = [
        {"epoch": e, "epsilon": v, "loss": 0.5, "accuracy": 0.9} for e, v in enumerate((0.2, 0.45, 0.7, 0.9, 1.1), 1)
    ]
    fig = figs.epsilon_chart(hist, target_epsilon=1.0, final_epsilon=0.995, accountant="prv")
    y = fig.layout.yaxis
    assert y.type == "log" and y.range is not None
    lo, hi = 10 ** y.range[0], 10 ** y.range[1]
    assert lo < 0.2 and hi > 1.1
    inside = [v for v in y.tickvals if lo <= v <= hi]
    assert len(inside) >= 2 and list(y.ticktext)[: len(y.tickvals)] == [f"{v:g}" for v in y.tickvals], y.tickvals
