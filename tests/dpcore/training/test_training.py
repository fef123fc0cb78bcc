"""Training: config validation, leak-free preprocessing, DP-SGD correctness vs Opacus, honest epsilon,
reproducibility, loaders (CSV, tiny MNIST .npz), diffprivlib models, the job entry point."""

import copy
import json
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from dpcore.errors import Cancelled, DPError
from dpcore.jobs.owners import CLI_OWNER as OWNER
from dpcore.jobs.owners import SYSTEM
from dpcore.training import accounting
from dpcore.training.config import BEST_GRAD_SAMPLE_MODE, REPRODUCIBLE_LABEL, TrainConfig
from dpcore.training.data import (
    MNIST_NOT_USABLE,
    data_dir,
    load_split,
    release_uploads,
    save_upload,
    upload_columns,
    upload_file,
)
from dpcore.training.fused import FusedDPSGD
from dpcore.training.job import preflight, run_job
from dpcore.training.loop import train
from dpcore.training.models import batch_as_is, build_model, check_model_size, make_dataset, n_parameters
from dpcore.training.results import divergence

torch.set_num_threads(1)

FAST = dict(dataset="breast_cancer", model="logreg", epochs=2, batch_size=32)


class FakeCtx:
    def __init__(self, tmp_path, cancel_after=None):
        self.result_dir = Path(tmp_path)
        self.events = []
        self.files = {}
        self.cancel_after = cancel_after
        self.calls = 0

    def progress(self, **fields):
        self.events.append(fields)

    def cancelled(self):
        self.calls += 1
        return self.cancel_after is not None and self.calls > self.cancel_after

    def save_bytes(self, name, data):
        self.files[name] = data
        (self.result_dir / name).write_bytes(data)
        return self.result_dir / name


# --- config ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs,match",
    [
        (dict(epsilon=0), "epsilon"),
        (dict(epsilon=-1), "epsilon"),
        (dict(delta=1.0), "delta"),
        (dict(delta=0), "delta"),
        (dict(epochs=0), "epochs"),
        (dict(lr=0), "learning rate"),
        (dict(clip=-1), "clip"),
        (dict(optimizer="rmsprop"), "optimizer"),
        (dict(lr_schedule="cosine"), "lr_schedule"),
        (dict(accountant="gdp"), "accountant"),
        (dict(model="transformer"), "model"),
        (dict(dataset="imagenet"), "dataset"),
        (dict(dataset="csv:"), "path"),
        (dict(model="cnn"), "image data"),
        (dict(epsilon=1, noise_multiplier=1.0), "either"),
        (dict(epsilon=None, noise_multiplier=0), "noise multiplier"),
        (dict(test_size=1.5), "test size"),
        (dict(dataset="medical", target="favourite_colour"), "target"),
    ],
)
def test_bad_config(kwargs, match):
    with pytest.raises(DPError, match=match):
        TrainConfig(**{**FAST, **kwargs})


def test_from_dict_round_trip_and_unknown_key():
    cfg = TrainConfig.from_dict({**FAST, "epsilon": "none", "epochs": "3"})
    assert cfg.epsilon is None and cfg.epochs == 3 and not cfg.private
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(DPError, match="unknown training parameter"):
        TrainConfig.from_dict({"epsilonn": 1})


def test_batch_larger_than_data():
    with pytest.raises(DPError, match="larger than the 20 training rows"):
        train(TrainConfig(**{**FAST, "batch_size": 64, "train_size": 20}))


# --- data -----------------------------------------------------------------------------------------


def test_split_uses_public_bounds_and_is_seeded():
    a = load_split(TrainConfig(**FAST, seed=1))
    b = load_split(TrainConfig(**FAST, seed=1))
    c = load_split(TrainConfig(**FAST, seed=2))
    assert np.array_equal(a.X_train, b.X_train) and not np.array_equal(a.y_test, c.y_test)
    assert a.X_train.dtype == np.float32 and a.y_train.dtype == np.int64
    assert a.X_train.min() >= -1 and a.X_train.max() <= 1 and a.leaks == []
    assert "public" in a.bounds_note or "published" in a.bounds_note
    # scaling does not depend on which rows are in the training split: the union of rows is identical
    other = load_split(TrainConfig(**FAST, seed=2, test_size=0.5))
    rows = lambda s: sorted(map(tuple, np.concatenate([s.X_train, s.X_test]).round(6)))  # noqa: E731
    assert rows(a) == rows(other)


def test_medical_targets():
    s = load_split(TrainConfig(dataset="medical", target="diagnosis", model="logreg", epsilon=None))
    assert s.n_classes == 6 and "has_rare_disease" in s.feature_names
    s2 = load_split(TrainConfig(dataset="medical", target="has_rare_disease", model="logreg", epsilon=None))
    assert s2.n_classes == 2 and any(n.startswith("diagnosis=") for n in s2.feature_names)
    assert s.leaks == []


def test_train_size_subsamples():
    s = load_split(TrainConfig(**FAST, train_size=50))
    assert s.n_train == 50


def test_csv_loader(tmp_path):
    rng = np.random.default_rng(0)
    n = 120
    import pandas as pd

    df = pd.DataFrame(
        {
            "age": rng.integers(18, 90, n),
            "score": rng.normal(0, 1, n),
            "city": rng.choice(["a", "b", "c"], n),
            "label": rng.choice(["yes", "no"], n),
        }
    )
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    cfg = TrainConfig(dataset=f"csv:{path}", target="label", model="logreg", epsilon=None, epochs=1, batch_size=16)
    s = load_split(cfg)
    assert s.n_classes == 2 and "city=a" in s.feature_names and "age" in s.feature_names
    assert any("score" in leak for leak in s.leaks)  # no public bounds for 'score': said on screen
    with pytest.raises(DPError, match="unknown target column"):
        load_split(TrainConfig(dataset=f"csv:{path}", target="nope", model="logreg"))
    df[["city", "label"]].to_csv(tmp_path / "cat.csv", index=False)  # a text feature alone is usable (one-hot)
    assert (
        load_split(TrainConfig(dataset=f"csv:{tmp_path / 'cat.csv'}", target="label", model="logreg")).n_features == 3
    )
    df.assign(city=[f"c{i}" for i in range(n)])[["city", "label"]].to_csv(tmp_path / "ids.csv", index=False)
    with pytest.raises(DPError, match="no feature columns besides the target"):  # 120 values: dropped, none left
        load_split(TrainConfig(dataset=f"csv:{tmp_path / 'ids.csv'}", target="label", model="logreg"))


def _tiny_mnist(path, n_train=60, n_test=20):
    rng = np.random.default_rng(0)
    np.savez(
        path,
        x_train=rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
        y_train=rng.integers(0, 10, n_train),
        x_test=rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
        y_test=rng.integers(0, 10, n_test),
    )
    return path


def test_mnist_npz_loader_and_cnn(tmp_path):
    path = _tiny_mnist(data_dir() / "mnist.npz")
    cfg = TrainConfig(
        dataset=f"mnist:{path}", model="cnn", epsilon=None, noise_multiplier=1.0, epochs=1, batch_size=20, delta=0.02
    )
    s = load_split(cfg)
    assert s.X_train.shape == (60, 784) and s.image_shape == (1, 28, 28) and s.X_train.max() <= 1
    r = train(cfg)
    assert r.predict_proba(s.X_test).shape == (20, 10)
    assert r.metrics.grad_sample_mode == BEST_GRAD_SAMPLE_MODE["cnn"]
    assert r.metrics.warnings  # delta 0.02 >= 1/60


def test_mnist_bad_files(tmp_path):
    np.savez(data_dir() / "bad.npz", x_train=np.zeros((2, 28, 28)))
    with pytest.raises(DPError, match="lacks arrays"):
        load_split(TrainConfig(dataset="mnist:bad.npz", model="cnn"))  # a name in the data folder
    assert load_split(TrainConfig(dataset=f"mnist:{_tiny_mnist(data_dir() / 'm.npz').name}", model="cnn")).n_train == 60


def test_mnist_only_from_the_data_folder_with_one_message(tmp_path):
    """12: the path box must not tell a visitor whether a file exists anywhere on the server."""
    outside = _tiny_mnist(tmp_path / "mnist.npz")  # a real, valid file outside the data folder
    messages = set()
    for path in (
        outside,
        tmp_path / "missing.npz",
        "/etc/passwd",
        "../" * 8 + "etc/passwd",
        tmp_path,
        "missing.npz",
        data_dir(),
    ):
        with pytest.raises(DPError) as err:
            load_split(TrainConfig(dataset=f"mnist:{path}", model="cnn"))
        messages.add(str(err.value))
    assert messages == {MNIST_NOT_USABLE}
    (data_dir() / "link.npz").symlink_to(outside)  # a link out of the folder is outside too
    with pytest.raises(DPError, match="not usable"):
        load_split(TrainConfig(dataset="mnist:link.npz", model="cnn"))


def test_upload_validated_in_memory_and_deleted_when_its_job_ends(tmp_path):
    from dpcore import storage
    from dpcore.jobs import registry, store

    with pytest.raises(DPError):
        upload_columns(b"\xff\xfe not csv \x00")
    assert list(storage.subdir("uploads").glob("*")) == []  # a rejected file leaves nothing on disk
    data = b"age,score,label\n" + b"".join(f"{20 + i % 50},{i % 7},{i % 2}\n".encode() for i in range(80))
    assert upload_columns(data) == ["age", "score", "label"]
    assert list(storage.subdir("uploads").glob("*")) == []
    ref = save_upload(data)  # an opaque reference: job parameters never hold the server's path
    assert re.fullmatch(r"upload:[0-9a-f]{16}", ref) and str(storage.home()) not in ref
    path = upload_file(ref.split(":", 1)[1])
    params = TrainConfig(dataset=ref, target="label", model="logreg", epsilon=1.0, epochs=1, batch_size=16).to_dict()
    queued = store.submit(registry.TRAIN, params, group="train", label="t", owner=OWNER)
    assert release_uploads() == [] and Path(path).exists()  # a queued job still needs it
    store.cancel(queued, caller=SYSTEM)  # cancelled (or deleted) before it ran: released at the next clean-up
    assert release_uploads() == [Path(path).name] and not Path(path).exists()
    with pytest.raises(DPError, match="no longer kept") as gone:
        load_split(TrainConfig.from_dict(params))
    assert str(storage.home()) not in str(gone.value)  # the message names no server path either
    ref = save_upload(data)
    ctx = FakeCtx(tmp_path)
    ctx.job_id = "job-x"
    run_job(dict(params, dataset=ref), ctx)  # the job's own end deletes it
    assert not Path(path).exists()


# --- DP-SGD ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("model,dataset", [("logreg", "breast_cancer"), ("mlp", "digits"), ("cnn", "digits")])
def test_fused_clipped_gradient_equals_opacus(model, dataset):
    from opacus import PrivacyEngine

    cfg = TrainConfig(dataset=dataset, model=model, epsilon=None, hidden=8)
    s = load_split(cfg)
    torch.manual_seed(0)
    m1 = build_model(cfg, s)
    m2 = copy.deepcopy(m1)
    X, y = torch.from_numpy(s.X_train[:40]) * 3, torch.from_numpy(s.y_train[:40])
    dl = torch.utils.data.DataLoader(make_dataset(s.X_train, s.y_train), batch_size=32, collate_fn=batch_as_is)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gm, opt, _ = PrivacyEngine().make_private(
            module=m2,
            optimizer=torch.optim.SGD(m2.parameters(), lr=0.1),
            data_loader=dl,
            noise_multiplier=0.0,
            max_grad_norm=0.5,
        )
        opt.zero_grad()
        torch.nn.functional.cross_entropy(gm(X), y).backward()
        opt.pre_step()
    FusedDPSGD(m1, 0.5, 0.0, opt.expected_batch_size, None).backward(X, y)
    for a, b in zip(m1.parameters(), m2.parameters()):
        assert torch.allclose(a.grad, b.grad, atol=1e-6)


def test_fused_refuses_layers_it_has_no_backward_for():
    from dpcore.errors import DPError
    from dpcore.training.models import _append_one_class

    nn = torch.nn
    with pytest.raises(DPError, match="BatchNorm1d"):
        FusedDPSGD(nn.Sequential(nn.Linear(4, 4), nn.BatchNorm1d(4), nn.Linear(4, 2)), 1.0, 1.0, 8, None)
    with pytest.raises(DPError, match="plain convolutions"):
        FusedDPSGD(nn.Sequential(nn.Conv2d(2, 2, 3, groups=2), nn.Flatten(), nn.Linear(2, 2)), 1.0, 1.0, 8, None)
    with pytest.raises(DPError, match="last layer"):
        FusedDPSGD(nn.Sequential(nn.Linear(4, 2), nn.ReLU()), 1.0, 1.0, 8, None)
    with pytest.raises(DPError, match="AppendOne"):
        FusedDPSGD(nn.Sequential(_append_one_class()(), nn.ReLU(), nn.Linear(5, 2, bias=False)), 1.0, 1.0, 8, None)


def test_fused_noise_has_the_right_scale():
    cfg = TrainConfig(**FAST)
    s = load_split(cfg)
    m = build_model(cfg, s)
    with torch.no_grad():
        m[1].weight.zero_()
    f = FusedDPSGD(
        m, clip=2.0, noise_multiplier=3.0, expected_batch_size=10, generator=torch.Generator().manual_seed(0)
    )
    X, y = torch.zeros(0, s.n_features), torch.zeros(0, dtype=torch.long)  # empty Poisson batch: noise only
    f.backward(X, y)
    assert m[1].weight.grad.std().item() == pytest.approx(3.0 * 2.0 / 10, rel=0.35)


@pytest.mark.parametrize("accountant", ["prv", "rdp"])
def test_private_run_reports_honest_epsilon(accountant):
    r = train(TrainConfig(**FAST, epsilon=1.0, accountant=accountant))
    m = r.metrics.to_dict()
    assert m["epsilon"] <= 1.0
    q, steps = m["sample_rate"], m["steps"]
    assert steps == 2 * accounting.steps_per_epoch(q)
    assert m["epsilon"] == pytest.approx(accounting.epsilon(m["noise_multiplier"], q, steps, 1e-5, accountant))
    assert m["epsilon_prv"] < m["epsilon_rdp"]
    assert m["shortcut_epsilon"] == pytest.approx(accounting.shortcut_epsilon(m["noise_multiplier"], q, steps, 1e-5))
    for key in (
        "dataset",
        "model",
        "delta",
        "noise_multiplier",
        "accountant",
        "test_accuracy",
        "train_accuracy",
        "train_seconds",
        "grad_sample_mode",
        "history",
    ):
        assert key in m
    assert len(m["history"]) == 2 and m["history"][-1]["epsilon"] == m["epsilon"]
    json.loads(r.metrics_json())  # metrics serialise to valid JSON


def test_noise_multiplier_mode_and_nonprivate_baseline():
    r = train(TrainConfig(**{**FAST, "epsilon": None, "noise_multiplier": 2.0}))
    assert r.metrics.noise_multiplier == 2.0 and r.metrics.epsilon > 0
    b = train(TrainConfig(**FAST, epsilon=1.0).baseline())
    assert b.metrics.epsilon is None and b.metrics.noise_multiplier is None and not b.metrics.private


def test_linear_lr_schedule_decays_to_zero_over_the_planned_steps(monkeypatch):
    """The sweep's baselines use it: lr·(1 − k/T) at step k of T (the last step at lr/T); "constant" keeps lr."""
    from dpcore.training import loop

    seen, step = [], loop._step
    monkeypatch.setattr(
        loop, "_step", lambda cfg, run, xb, yb: (seen.append(run.opt.param_groups[0]["lr"]), step(cfg, run, xb, yb))[1]
    )
    r = train(TrainConfig(**{**FAST, "epochs": 3}, epsilon=None, lr=0.3, lr_schedule="linear"))
    T = r.metrics.steps
    assert T == len(seen) > 6 and r.metrics.lr_schedule == "linear"
    assert seen == pytest.approx([0.3 * (1 - k / T) for k in range(T)])
    seen.clear()
    assert train(TrainConfig(**FAST, epsilon=None, lr=0.3)).metrics.lr_schedule == "constant"
    assert set(seen) == {0.3}


def _weights(r):
    return [v.clone() for v in r.model.state_dict().values()]


def _same(a, b):
    return all(torch.equal(x, y) for x, y in zip(_weights(a), _weights(b)))


@pytest.mark.parametrize("model,mode", [("logreg", "auto"), ("logreg", "hooks")])
def test_default_dp_runs_are_not_reproducible_from_the_seed(model, mode):
    """11.6: an attacker who re-runs training with the public seed must not get the released weights."""
    cfg = TrainConfig(**{**FAST, "model": model, "epochs": 1}, epsilon=1.0, seed=3, grad_sample_mode=mode)
    a, b = train(cfg), train(cfg)
    assert np.array_equal(a.split.X_train, b.split.X_train)  # same split (the seed keeps it)
    assert not _same(a, b)  # different sampling and noise
    assert a.metrics.reproducible_noise is False and a.metrics.dp_release is True
    assert "secure" in a.metrics.noise_source and a.metrics.release_label is None


def test_default_cnn_run_is_not_reproducible_from_the_seed():
    cfg = TrainConfig(dataset="digits", model="cnn", epsilon=4.0, epochs=1, batch_size=64, train_size=200, seed=1)
    assert not _same(train(cfg), train(cfg))


def test_reproducible_noise_mode_is_explicit_and_labelled():
    cfg = TrainConfig(**FAST, epsilon=1.0, seed=3, reproducible_noise=True)
    a, b = train(cfg), train(cfg)
    assert _same(a, b)
    assert a.metrics.reproducible_noise is True and a.metrics.dp_release is False
    assert a.metrics.release_label == REPRODUCIBLE_LABEL == "reproducible noise: not a DP release"
    c = train(TrainConfig(**FAST, epsilon=1.0, seed=4, reproducible_noise=True))
    assert not torch.equal(a.model[1].weight, c.model[1].weight)
    assert TrainConfig.from_dict({**FAST, "reproducible_noise": "true"}).reproducible_noise is True
    with pytest.raises(DPError, match="reproducible_noise"):
        TrainConfig(**FAST, reproducible_noise="maybe")


def test_diffprivlib_noise_is_secure_by_default():
    cfg = TrainConfig(dataset="breast_cancer", model="diffprivlib_logreg", epsilon=1.0, seed=0)
    a, b = train(cfg), train(cfg)
    assert not np.array_equal(a.model.coef_, b.model.coef_)
    rep = dict(dataset="breast_cancer", model="diffprivlib_logreg", epsilon=1.0, seed=0, reproducible_noise=True)
    c, d = train(TrainConfig(**rep)), train(TrainConfig(**rep))
    assert np.array_equal(c.model.coef_, d.model.coef_) and c.metrics.release_label


def test_model_size_is_bounded_before_training():
    with pytest.raises(DPError, match="at most 4,096"):
        TrainConfig(**{**FAST, "model": "mlp"}, hidden=2_000_000_000)
    cfg = TrainConfig(dataset="digits", model="mlp", hidden=4096, epsilon=None)
    assert preflight(TrainConfig(dataset="digits", model="mlp", hidden=64))["n_parameters"] == 65 * 64 + 65 * 10
    split = load_split(cfg)
    assert n_parameters(cfg, split) == sum(p.numel() for p in build_model(cfg, split).parameters())
    split.X_train = np.zeros((4, 1000), np.float32)  # 1,000 features x 4,096 hidden > 2,000,000
    with pytest.raises(DPError, match="limit is 2,000,000"):
        check_model_size(cfg, split)


def test_opacus_modes_train(tmp_path):
    for mode in ("hooks", "ghost"):
        r = train(TrainConfig(**{**FAST, "epochs": 1}, epsilon=2.0, grad_sample_mode=mode))
        assert r.metrics.grad_sample_mode == mode and r.metrics.epsilon <= 2.0


def test_delta_warning():
    r = train(TrainConfig(**FAST, epsilon=1.0, delta=0.01))
    assert any("1/n" in w for w in r.metrics.warnings)


def test_cnn_digits_small():
    r = train(TrainConfig(dataset="digits", model="cnn", epsilon=4.0, epochs=1, batch_size=64, train_size=300))
    assert 0 <= r.metrics.test_accuracy <= 1 and r.metrics.epsilon <= 4.0


def test_should_stop_cancels_promptly():
    with pytest.raises(Cancelled):
        train(TrainConfig(**FAST, epsilon=1.0), should_stop=lambda: True)


# --- diffprivlib ----------------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["diffprivlib_logreg", "diffprivlib_nb"])
def test_diffprivlib_models_without_leak_warning(model):
    from diffprivlib.utils import PrivacyLeakWarning

    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        r = train(
            TrainConfig(dataset="breast_cancer", model=model, epsilon=1.0, seed=0, reproducible_noise=True)
        )  # an accuracy bound needs a fixed draw
    assert 0.5 <= r.metrics.test_accuracy <= 1 and r.metrics.epsilon == 1.0
    assert r.predict_proba(r.split.X_test).shape == (len(r.split.y_test), 2)
    assert r.state_dict_bytes()


# --- job entry point ------------------------------------------------------------------------------


def test_run_job_saves_weights_and_metrics(tmp_path):
    ctx = FakeCtx(tmp_path)
    out = run_job({**FAST, "epsilon": 1.0}, ctx)
    assert set(ctx.files) == {"model.pt", "metrics.json"}
    assert json.loads(ctx.files["metrics.json"])["epsilon"] == out["epsilon"]
    epochs = [e for e in ctx.events if "accuracy" in e and "loss" in e]
    assert [e["epoch"] for e in epochs] == [1, 2]
    state = torch.load(tmp_path / "model.pt")
    assert any(v.ndim == 2 for v in state.values())


def test_run_job_cancel(tmp_path):
    with pytest.raises(Cancelled):
        run_job({**FAST, "epsilon": 1.0}, FakeCtx(tmp_path, cancel_after=3))


def test_preflight_catches_bad_runs_before_a_job(tmp_path):
    assert preflight(TrainConfig(**FAST))["n_train"] == 455
    with pytest.raises(DPError, match="larger than the 455 training rows"):
        preflight(TrainConfig(**{**FAST, "batch_size": 1000}))


def test_cli_train_json_and_bad_input(tmp_path, capsys):
    from dpcore import cli

    out = tmp_path / "run.json"
    rc = cli.main(
        [
            "train",
            "--dataset",
            "breast_cancer",
            "--model",
            "logreg",
            "--epsilon",
            "1",
            "--epochs",
            "1",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    m = json.loads(out.read_text())
    for key in (
        "dataset",
        "model",
        "epsilon",
        "delta",
        "noise_multiplier",
        "sample_rate",
        "steps",
        "accountant",
        "test_accuracy",
        "train_accuracy",
        "train_seconds",
    ):
        assert key in m
    assert m["epsilon"] <= 1.0
    capsys.readouterr()
    rc = cli.main(["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "none", "--epochs", "1"])
    assert rc == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["epsilon"] is None and printed["test_accuracy"] > 0.5
    assert cli.main(["train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "-1"]) == 2
    assert "epsilon must be > 0" in capsys.readouterr().err


@pytest.mark.parametrize("mode", ["ew", "fused"])
def test_empty_poisson_batches_still_count_as_noisy_steps(mode):
    # q = 0.1 on 20 rows: about one batch in eight is empty; each one is still a (noise-only) DP step
    r = train(
        TrainConfig(
            dataset="digits",
            model="cnn",
            epsilon=None,
            noise_multiplier=1.0,
            epochs=3,
            batch_size=2,
            train_size=20,
            delta=1e-3,
            seed=1,
            grad_sample_mode=mode,
        )
    )
    assert r.metrics.steps == 30 and r.metrics.grad_sample_mode == mode
    assert r.metrics.epsilon == pytest.approx(accounting.epsilon(1.0, 0.1, 30, 1e-3))


def test_cli_refuses_huge_model_and_json_folder_before_the_run(tmp_path, capsys, monkeypatch):
    from dpcore import cli
    from dpcore.jobs import runner

    ran = []
    monkeypatch.setattr(runner, "run_inline", lambda *a, **k: ran.append(a) or {})
    base = ["train", "--dataset", "digits", "--model", "mlp", "--epsilon", "1", "--epochs", "1"]
    assert cli.main(base + ["--hidden", "2000000000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "hidden units must be at most" in err
    assert cli.main(base + ["--json", str(tmp_path)]) == 2
    assert "got a folder" in capsys.readouterr().err
    assert cli.main(base + ["--json", str(tmp_path / "nope" / "x.json")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert ran == []  # refused before any training


def test_cli_reproducible_noise_is_labelled(tmp_path, capsys):
    from dpcore import cli

    out = tmp_path / "r.json"
    rc = cli.main(
        [
            "train",
            "--dataset",
            "breast_cancer",
            "--model",
            "logreg",
            "--epsilon",
            "1",
            "--epochs",
            "1",
            "--reproducible-noise",
            "--json",
            str(out),
        ]
    )
    assert rc == 0
    m = json.loads(out.read_text())
    assert m["reproducible_noise"] is True and m["release_label"] == "reproducible noise: not a DP release"
    assert "not a DP release" in capsys.readouterr().err


def test_a_diverging_run_says_so():
    assert divergence([{"loss": 0.7}, {"loss": 0.4}]) is None
    assert "diverged" in divergence([{"loss": 0.7}, {"loss": float("nan")}])
    assert "ends at 3 nats" in divergence([{"loss": 0.7}, {"loss": 3.0}], 2)
    assert divergence([{"loss": 2.4}, {"loss": 2.3}], 10) is None  # a weak model is not a diverged one
    r = train(TrainConfig(**{**FAST, "epochs": 3}, epsilon=None, lr=1e3, optimizer="sgd"))
    assert r.metrics.diverged and "learning rate" in r.metrics.diverged
    assert train(TrainConfig(**FAST, epsilon=None)).metrics.diverged is None


def test_a_noise_multiplier_past_prvs_grid_fails_before_training_and_trains_with_rdp():
    """σ typed on the training page: a σ whose ε is past PRV's grid is refused at the plan, before a step (σ = 0.05
    trained, then asked numpy for gigabytes); one whose RDP ε is above 1,000 is refused whatever the accountant (its
    statement's exact PLD took gigabytes and its last-iterate heuristic failed after training). σ = 0.3 (RDP ε 256)
    trains with the RDP accountant and states RDP's ε, PRV's beside it left empty rather than computed."""
    phases = []
    cfg = TrainConfig(dataset="digits", noise_multiplier=0.3, epsilon=None, epochs=30, batch_size=256)
    with pytest.raises(accounting.AccountantTooCostly, match="choose the RDP accountant"):
        train(cfg, progress=lambda **kw: phases.append(kw.get("phase")))
    assert "training" not in phases
    for acc in ("prv", "rdp"):
        with pytest.raises(DPError, match="allows ε above 1,000"):
            train(TrainConfig(**{**cfg.to_dict(), "noise_multiplier": 0.05, "accountant": acc}))
    m = train(TrainConfig(**{**cfg.to_dict(), "accountant": "rdp"})).metrics
    assert m.epsilon == m.epsilon_rdp and 200 < m.epsilon < 1_000 and m.epsilon_prv is None
    assert m.audit is not None  # the run audited itself, heuristic included


def test_a_target_past_prvs_grid_is_calibrated_short_of_it_and_the_run_says_so():
    """ε = 1,000 asked with PRV on digits (q = 1/6, 180 steps): calibration stops at the least noise PRV's grid can
    bound (ε ≈ 171), silently before; the plan now carries a warning the run stores and the page shows."""
    from dpcore.training.loop import plan

    cfg = TrainConfig(dataset="digits", epsilon=1_000.0, epochs=30, batch_size=256)
    pl = plan(cfg, 1437)
    assert pl["planned_epsilon"] < 1_000 and len(pl["warnings"]) == 1
    assert "below the target ε = 1000" in pl["warnings"][0] and "more noise than asked" in pl["warnings"][0]
    assert "warnings" not in plan(TrainConfig(dataset="digits", epsilon=8.0, epochs=30, batch_size=256), 1437)


def test_the_page_refuses_a_noise_multiplier_no_accountant_can_bound_before_queueing():
    """preflight (the page's and the CLI's check before a job is queued) plans a given σ: the refusal is one message
    at once, not a failed job."""
    with pytest.raises(DPError, match="allows ε above 1,000"):
        preflight(TrainConfig(dataset="digits", noise_multiplier=0.05, epsilon=None, epochs=30, batch_size=256))
    assert preflight(TrainConfig(dataset="digits", noise_multiplier=1.0, epsilon=None, epochs=2))["n_train"] == 1438
