"""SweepConfig: the demo's shape, validation, and how small data adapts the audit and the size control."""

import pytest

from dpcore.errors import DPError
from dpcore.sweep.config import SweepConfig
from tests.dpcore.sweep.helpers import TINY


def test_default_config_has_the_demo_shape():
    """The default run (CLI without arguments, the page's Start): full digits, >= 3 seeds per ε incl. 1 and 8,
    canaries, the size control with its own baselines; baselines first. (Its figures: bench/sweep.py.)"""
    cfg = SweepConfig().validate()
    assert cfg.dataset == "digits" and cfg.train_size is None and cfg.seeds >= 3
    assert {1.0, 8.0} <= set(cfg.epsilons) and 200 <= cfg.canaries <= 500
    assert cfg.size_fractions == (0.25, 0.5) and cfg.reproducible_noise is False
    params = cfg.point_params()
    n = cfg.n_rows()
    assert n > 1400
    assert [p["train"]["epsilon"] for p in params[: cfg.seeds]] == [None] * cfg.seeds
    main = [p for p in params if p["train_fraction"] == 1.0]
    assert len(main) == cfg.seeds * (1 + len(cfg.epsilons)) and all(p["canaries"] == cfg.canaries for p in main)
    control = [p for p in params if p["train_fraction"] < 1.0]
    assert len(control) == 2 * 2 * cfg.seeds and all(p["canaries"] == 0 for p in control)
    assert sorted({p["train"]["train_size"] for p in control}) == [int(n * 0.25), int(n * 0.5)]
    assert {p["train"]["epsilon"] for p in control} == {None, cfg.size_epsilon}


def test_only_the_baselines_train_longer_with_a_decaying_learning_rate():
    """The baselines (full size and size control) get 1.5x the epochs from 1.5x the lr, decaying linearly; every
    DP point trains exactly with the sweep's epochs and constant lr (its noise calibration and accounting
    depend on the steps, which must not change)."""
    cfg = SweepConfig().validate()
    for p in cfg.point_params():
        t = p["train"]
        if t["epsilon"] is None:
            assert (t["epochs"], t["lr"], t["lr_schedule"]) == (30, pytest.approx(0.03), "linear")
        else:
            assert (t["epochs"], t["lr"]) == (cfg.epochs, cfg.lr) and "lr_schedule" not in t
    alike = SweepConfig(baseline_scale=1, baseline_lr_schedule="constant").validate().train_dict(None, 0)
    assert (alike["epochs"], alike["lr"], alike["lr_schedule"]) == (20, 0.02, "constant")


def test_baselines_of_a_sweep_at_the_epoch_limit_stay_within_it():
    """1.5x the epochs of a sweep allowed at the limit used to exceed it: every baseline failed at training time
    ("epochs must be at most 10000") while its DP points ran."""
    from dpcore import limits
    from dpcore.training.config import TrainConfig

    cfg = SweepConfig(epochs=limits.TRAINING_EPOCHS_MAX, epsilons=(4.0,), seeds=1).validate()
    base = cfg.train_dict(None, 0)
    assert base["epochs"] == limits.TRAINING_EPOCHS_MAX
    TrainConfig.from_dict(base)  # the baseline's own config is valid (it raised before)


@pytest.mark.parametrize(
    "bad",
    [
        dict(epsilons=()),
        dict(epsilons=(0.0,)),
        dict(epsilons=(-1,)),
        dict(seeds=0),
        dict(seeds=11),
        dict(attacks=("magic",)),
        dict(attacks=("lira",), shadows=1),
        dict(delta=1.0),
        dict(epochs=0),
        dict(test_size=2.0),
        dict(shadow_trainer="gpu"),
        dict(dataset="foo"),
        dict(model="cnn"),
        dict(canaries=-1),
        dict(canaries=5000),
        dict(size_fractions=(1.5,)),
        dict(size_fractions=(0.0,)),
        dict(reproducible_noise="yes"),
        dict(batch_size=500),
        dict(baseline_lr_schedule="cosine"),
        dict(baseline_scale=0),
        dict(baseline_scale="2"),
    ],
)
def test_bad_config(bad):
    with pytest.raises(DPError):
        SweepConfig(**{**TINY, **bad}).validate()


def test_unknown_setting():
    with pytest.raises(DPError):
        SweepConfig.from_dict({"colour": "red"})


def test_small_data_sweep_adapts_its_audit_and_size_control():
    cfg = SweepConfig(**{**TINY, "canaries": 300, "size_fractions": (0.1, 0.5)}).validate()
    assert cfg.canaries == 40 and cfg.size_fractions == (0.5,)  # a quarter of 160 rows; 16 rows < one batch
    assert SweepConfig(**{**TINY, "train_size": 6, "batch_size": 2, "canaries": 300}).validate().canaries == 0


def test_the_forms_canary_count_is_the_one_validation_keeps(tmp_path):
    """The page's form said the defaults' count; it now says :func:`canaries_for` of the training rows, which
    validation keeps, and an upload's training rows before it is stored are those its sweep will split off."""
    import numpy as np
    import pandas as pd

    from dpcore.sweep.config import canaries_for, for_upload, upload_train_rows

    assert [canaries_for(200, n) for n in (400, 4000, 7, 8, 0)] == [100, 200, 0, 2, 0]
    assert canaries_for(0, 4000) == 0 and canaries_for(1, 4000) == 0
    for rows in (10, 37, 500, 1234):
        df = pd.DataFrame({"age": np.arange(rows) % 90, "label": np.where(np.arange(rows) % 3, "yes", "no")})
        data = df.to_csv(index=False).encode()
        (tmp_path / "t.csv").write_bytes(data)
        b = {"age": {"lower": 0, "upper": 90}, "label": {"categories": ["no", "yes"]}}
        cfg = for_upload(str(tmp_path / "t.csv"), "label", bounds=b, batch_size=2)
        assert upload_train_rows(data) == cfg.n_rows()  # split as training splits it
        assert cfg.canaries == canaries_for(200, upload_train_rows(data))
    assert upload_train_rows(data, train_size=99) == 99
