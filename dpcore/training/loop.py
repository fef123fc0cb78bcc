"""The DP-SGD training loop: :func:`train` fits one model (DP-SGD through Opacus or the fused step, or the
non-private baseline with the same model, split and epochs) and returns a
:class:`~dpcore.training.results.TrainResult`.

DP-SGD runs with Poisson sampling. The reported epsilon is the accountant's value for the run's own (noise
multiplier, sample rate, steps actually taken).

Randomness: the seed fixes the data split and the initial weights only. Poisson sampling and gradient noise
of every DP run (fused engine, Opacus modes, diffprivlib) come from generators seeded from :mod:`secrets` (64
bits for the noise, 128 for :mod:`~dpcore.training.sampling`'s sampler) that are never stored or shown, so nobody
can re-run training on D and D minus one row and compare. ``reproducible_noise=True`` (tests, teaching) seeds them from the seed instead; such a run is
labelled :data:`~dpcore.training.config.REPRODUCIBLE_LABEL` everywhere it is shown.
Metrics on private rows (losses, train and test accuracy, their curves) are *not* covered by ε: they are labelled
as such and rounded to what a chart needs (:func:`dpcore.claims.diagnostic`) before they are stored or shown —
at full precision a test loss gave away a test patient's diagnosis to whoever knew every other row.

Nearly 500 lines, one idea: one training run from plan to result (plan, set-up, steps, finish); the model,
data, accounting and audit code it calls live in their own modules.
"""

from __future__ import annotations

import contextlib
import math
import secrets
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .. import claims, limits
from ..errors import Cancelled, DPError
from ..jobs.executors import resolve_device
from . import accounting, accounting_check, self_audit
from . import canaries as canary_mod
from .config import NOT_DP_NOTE, TrainConfig, check_batch_size, delta_warnings, noise_fields
from .data import Split, load_split
from .dplib import train_diffprivlib
from .fused import FusedDPSGD
from .models import batch_as_is, build_model, check_model_size, make_dataset, resolve_grad_sample_mode
from .results import SHORTCUT_NOTE, TrainMetrics, TrainResult, divergence, per_class_accuracy, per_group_accuracy
from .sampling import poisson_loader, sampling_seed


def plan(cfg: TrainConfig, n_train: int) -> dict:
    """Sample rate, steps per epoch and steps; for a private run also the noise multiplier (calibrated when a
    target epsilon is given)."""
    check_batch_size(cfg.batch_size, n_train)
    if not cfg.private:  # the baseline shuffles into fixed batches
        per_epoch = math.ceil(n_train / cfg.batch_size)
        return {
            "sample_rate": min(1.0, cfg.batch_size / n_train),
            "steps": cfg.epochs * per_epoch,
            "steps_per_epoch": per_epoch,
        }
    q = accounting.sample_rate_for(n_train, cfg.batch_size)
    steps = cfg.epochs * accounting.steps_per_epoch(q)
    out: dict[str, Any] = {"sample_rate": q, "steps": steps, "steps_per_epoch": accounting.steps_per_epoch(q)}
    if cfg.epsilon is not None:
        t0 = time.perf_counter()
        sigma, eps = accounting.calibrate_noise(cfg.epsilon, cfg.delta, q, steps, cfg.accountant)
        out.update(noise_multiplier=sigma, planned_epsilon=eps, calibration_seconds=time.perf_counter() - t0)
        if eps < (1 - accounting.CALIBRATION_TOLERANCE) * cfg.epsilon:  # PRV's grid stopped it short of the target
            out["warnings"] = [
                f"calibrated to ε = {claims.up(eps)}, below the target ε = {cfg.epsilon:g}: the PRV accountant cannot "
                "bound a larger ε for these settings here, so the run has more noise than asked (the RDP accountant "
                "reaches further)"
            ]
    elif cfg.noise_multiplier is not None:  # private without a target ε: the multiplier is given
        sigma = float(cfg.noise_multiplier)
        out.update(noise_multiplier=sigma)
        # before any training: a claim weaker than ε = 1,000 bounds nothing (and its exact PLD for the statement took
        # gigabytes, its last-iterate heuristic failed), and the run's own accountant must bound it (PRV's grid)
        rdp = accounting.epsilon(sigma, q, steps, cfg.delta, "rdp")
        if rdp > limits.EPSILON_MAX:
            raise DPError(
                f"σ = {sigma:g} over {steps:,} steps at sample rate {q:.3g} allows ε above {limits.EPSILON_MAX:,.0f} at "
                f"δ = {claims.delta(cfg.delta)} (RDP: ε ≤ {claims.up(rdp)}): no privacy a model could claim; use a "
                "larger σ, fewer epochs or smaller batches"
            )
        accounting.epsilon(sigma, q, steps, cfg.delta, cfg.accountant)
    return out


def _evaluate(model, X, y):
    # lazy: torch takes ~2 s to import
    import torch

    model.eval()
    with torch.no_grad():
        logits = model(X)
        acc = float((logits.argmax(1) == y).float().mean()) if len(y) else float("nan")
        loss = float(torch.nn.functional.cross_entropy(logits, y)) if len(y) else float("nan")
    model.train()
    return acc, loss


def secure_seed() -> int:
    """64 bits from the operating system's CSPRNG, for a generator whose state is never stored."""
    return secrets.randbits(64)


@dataclass
class _Run:
    """What the epochs need: the (possibly Opacus-wrapped) model and its bare module, optimiser, loader,
    the DP machinery (accountant, fused step or noise generator) and the plan."""

    dev: Any
    model: Any
    core: Any
    opt: Any
    crit: Any
    loader: Any
    plan: dict
    mode: str | None = None
    accountant: Any = None
    fused: Any = None
    noise_gen: Any = None
    witness: accounting_check.Witness | None = None

    @property
    def sigma(self):
        return self.plan.get("noise_multiplier")

    @property
    def q(self) -> float:
        return self.plan["sample_rate"]


def _check_sample_rate(planned: float, actual: float) -> None:
    if abs(actual - planned) > 1e-12:  # accounting must describe what really runs
        raise RuntimeError(f"sample rate mismatch: planned {planned}, Opacus {actual}")


def _watch_noise(opt, witness: accounting_check.Witness) -> None:
    """Opacus's optimiser: after each ``add_noise`` hand the noise actually added (``p.grad − p.summed_grad``, before
    the division by the batch size) to the witness."""
    add_noise = opt.add_noise

    def add_noise_watched():
        add_noise()
        witness.on_noise([p.grad.detach().view_as(p.summed_grad) - p.summed_grad for p in opt.params])

    opt.add_noise = add_noise_watched


def _setup(cfg: TrainConfig, split: Split, pl: dict, n_real: int | None = None) -> _Run:
    """Model, optimiser and loader on the run's device; for a DP run Poisson sampling and noise from secret
    seeds (see the module docstring), through the fused step or Opacus's PrivacyEngine, with the accounting check's
    witness on the dataset, the optimiser step and the noise draw. ``n_real``: the training rows without canaries
    (the expected batch size is theirs, so nothing depends on the canaries' coins)."""
    # lazy: torch takes ~2 s to import
    import torch
    from torch.utils.data import DataLoader

    torch.manual_seed(cfg.seed)
    dev = torch.device(resolve_device(cfg.device))  # cuda asked without a GPU: a clear DPError
    model = build_model(cfg, split).to(dev)
    crit = torch.nn.CrossEntropyLoss()
    opt_cls = torch.optim.SGD if cfg.optimizer == "sgd" else torch.optim.Adam
    opt = opt_cls(model.parameters(), lr=cfg.lr)
    gen = torch.Generator().manual_seed(cfg.seed)  # the baseline's shuffling: not a DP release, seeded
    secure = cfg.private and not cfg.reproducible_noise
    sample_seed = sampling_seed() if secure else cfg.seed
    noise_gen = torch.Generator(device=dev).manual_seed(secure_seed() if secure else cfg.seed + 7919)
    if not cfg.private:
        ds = make_dataset(split.X_train, split.y_train)
        shuffled = DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, generator=gen, collate_fn=batch_as_is)
        return _Run(dev, model, model, opt, crit, shuffled, pl)
    witness = accounting_check.Witness(split.n_train)
    ds = make_dataset(split.X_train, split.y_train, on_batch=witness.on_batch)
    q = pl["sample_rate"]
    ebs = int((n_real or split.n_train) * q)  # Opacus's expected batch size, of the real rows
    mode = resolve_grad_sample_mode(cfg)
    loader = poisson_loader(ds, q, sample_seed)
    if mode == "fused":
        # lazy: Opacus imports torch (~2 s)
        from opacus.accountants import create_accountant

        fused = FusedDPSGD(model, cfg.clip, pl["noise_multiplier"], ebs, noise_gen, on_noise=witness.on_noise)
        # Opacus's accountant, stepped once per optimizer step
        acc = create_accountant(cfg.accountant)
        return _Run(dev, model, model, opt, crit, loader, pl, mode, acc, fused, noise_gen, witness)
    # lazy: Opacus imports torch (~2 s)
    from opacus import PrivacyEngine

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # secure RNG / functorch / "Poisson sampling off" notices
        engine = PrivacyEngine(accountant=cfg.accountant)
        out = engine.make_private(
            module=model,
            optimizer=opt,
            criterion=crit,
            data_loader=loader,
            noise_multiplier=pl["noise_multiplier"],
            max_grad_norm=cfg.clip,
            poisson_sampling=False,  # the loader above already samples (Poisson, at the plan's rate)
            grad_sample_mode=mode,
            noise_generator=noise_gen,
        )
    if len(out) == 4:
        model, opt, crit, loader = out
    else:
        model, opt, loader = out
    _check_sample_rate(q, 1 / len(loader))
    opt.expected_batch_size = ebs
    _watch_noise(opt, witness)
    core = model._module if hasattr(model, "_module") else model
    return _Run(dev, model, core, opt, crit, loader, pl, mode, engine.accountant, None, noise_gen, witness)


def _step(cfg: TrainConfig, run: _Run, xb, yb):
    """One optimiser step on one batch; returns the batch's mean loss (not DP)."""
    # lazy: torch takes ~2 s to import
    import torch

    if run.fused is None:  # the fused step sets every weight's .grad itself: nothing to zero first
        run.opt.zero_grad(set_to_none=True)
    if run.fused is not None:
        loss = run.fused.backward(xb, yb)
        run.opt.step()
        run.accountant.step(noise_multiplier=run.fused.sigma, sample_rate=run.q)
    elif cfg.private and len(yb) == 0:
        # An empty Poisson batch (some Opacus modes, e.g. "ew", cannot run one): the DP-SGD update is
        # noise only — exactly what Opacus's optimizer computes for zero clipped gradients.
        noise = [
            torch.normal(0.0, run.sigma * cfg.clip, p.shape, generator=run.noise_gen, device=p.device)
            for p in run.opt.params
        ]
        assert run.witness is not None  # a private run's setup always attaches one
        run.witness.on_noise(noise)
        for p, z in zip(run.opt.params, noise):
            p.grad = z / run.opt.expected_batch_size
        run.opt.original_optimizer.step()
        run.accountant.step(noise_multiplier=run.sigma, sample_rate=run.q)
        loss = torch.zeros(())
    else:
        loss = run.crit(run.model(xb), yb)
        loss.backward()
        run.opt.step()
    if run.witness is not None:
        run.witness.on_step()
    return loss


def _run_epochs(
    cfg: TrainConfig, run: _Run, split: Split, progress, should_stop, diagnostics: bool = True
) -> tuple[list, int, float]:
    """Every epoch: the steps (cancel checked before each), then held-out accuracy and ε so far (not without
    ``diagnostics``: the training loss alone). Returns (history, steps taken, seconds in the steps)."""
    # lazy: torch takes ~2 s to import
    import torch

    pl, dev = run.plan, run.dev
    X_te, y_te = torch.from_numpy(split.X_test).to(dev), torch.from_numpy(split.y_test).to(dev)
    total, per_epoch = pl["steps"], pl["steps_per_epoch"]
    report_every = max(1, per_epoch // 4)
    history, step, t_train = [], 0, 0.0
    progress(
        epoch=0,
        step=0,
        total_steps=total,
        epochs=cfg.epochs,
        phase="training",
        noise_multiplier=run.sigma,
        sample_rate=run.q,
        private=cfg.private,
    )
    for epoch in range(1, cfg.epochs + 1):
        t_ep = time.perf_counter()
        losses, seen = 0.0, 0
        run.model.train()
        for xb, yb in run.loader:
            if should_stop():
                raise Cancelled("training was cancelled")
            if dev.type != "cpu":
                xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
            if cfg.lr_schedule == "linear":  # lr to ~0 at the last planned step (no effect on accounting)
                for g in run.opt.param_groups:
                    g["lr"] = cfg.lr * max(0.0, 1.0 - step / total)  # never negative past the plan
            loss = _step(cfg, run, xb, yb)
            step += 1
            if len(yb):
                losses += float(loss.detach()) * len(yb)
                seen += len(yb)
            if step % report_every == 0 and step % per_epoch != 0:  # a diagnostic: rounded (claims.diagnostic)
                progress(
                    epoch=epoch - 1 + (step % per_epoch) / per_epoch,
                    step=step,
                    total_steps=total,
                    batch_loss=claims.diagnostic(float(loss.detach())) if len(yb) else None,
                )
        t_train += time.perf_counter() - t_ep
        acc = test_loss = eps_so_far = None
        if diagnostics:
            acc, test_loss = _evaluate(run.core, X_te, y_te)  # the bare module: no per-sample machinery
            eps_so_far = accounting.fast_rdp_epsilon(run.sigma, run.q, step, cfg.delta) if cfg.private else None
        # loss and accuracy on private rows: diagnostics, stored and shown at a chart's precision only
        row = {
            "epoch": epoch,
            "step": step,
            "total_steps": total,
            "loss": claims.diagnostic(losses / max(seen, 1)),
            "accuracy": claims.diagnostic(acc),
            "test_loss": claims.diagnostic(test_loss),
            "epsilon": eps_so_far,
        }
        history.append(row)
        progress(**row, epsilon_bound="rdp (integer orders), an upper bound" if cfg.private else None)
    return history, step, t_train


def _spent(cfg: TrainConfig, run: _Run, step: int, compare: bool = True) -> dict:
    """ε of the steps actually taken, from the accountant's own history (both accountants, or with ``compare``
    False only the run's own), at the run's δ."""
    if not cfg.private:
        return {}
    acc_hist = list(run.accountant.history)
    assert sum(h[2] for h in acc_hist) == step, "accountant saw a different number of steps"
    rdp = accounting.epsilon_from_history(acc_hist, cfg.delta, "rdp") if compare or cfg.accountant == "rdp" else None
    prv = None
    if cfg.accountant == "prv":
        prv = accounting.epsilon_from_history(acc_hist, cfg.delta, "prv")
    elif compare:  # PRV beside an RDP run, where its grid allows (an ε far too large for it is RDP's alone)
        with contextlib.suppress(accounting.AccountantTooCostly):
            prv = accounting.epsilon_from_history(acc_hist, cfg.delta, "prv")
    return {
        "epsilon_prv": prv,
        "epsilon_rdp": rdp,
        "epsilon": prv if cfg.accountant == "prv" else rdp,
        "shortcut_epsilon": accounting.shortcut_epsilon(run.sigma, run.q, step, cfg.delta) if step else 0.0,
    }


def _finish(
    cfg: TrainConfig,
    run: _Run,
    split: Split,
    history: list,
    step: int,
    t_start: float,
    t_train: float,
    checked: dict | None = None,
    canaries: canary_mod.Canaries | None = None,
    audit_it: bool = True,
    compare: bool = True,
) -> TrainResult:
    """A fresh copy of the trained weights (no Opacus hooks), its accuracy (overall and per class), the run's own
    audit (a DP-SGD run) and the run's metrics. ``split``: the run's data without its canaries; ``checked``: the
    accounting check's record."""
    # lazy: torch takes ~2 s to import
    import torch

    final = build_model(cfg, split).to(run.dev)
    final.load_state_dict(run.core.state_dict())
    final.eval()
    dev = run.dev
    test_acc, test_loss = _evaluate(
        final, torch.from_numpy(split.X_test).to(dev), torch.from_numpy(split.y_test).to(dev)
    )
    train_acc, train_loss = _evaluate(
        final, torch.from_numpy(split.X_train).to(dev), torch.from_numpy(split.y_train).to(dev)
    )
    spent = _spent(cfg, run, step, compare)
    if history and cfg.private:
        history[-1]["epsilon"] = spent["epsilon"]
    # metrics set below, before the result leaves here: predict_proba needs only the model
    result = TrainResult(cfg, None, final, split, canaries)  # type: ignore[arg-type]
    predicted = result.predict(split.X_test)
    per_class = per_class_accuracy(split.y_test, predicted, split.class_names, split.n_classes)
    per_group = per_group_accuracy(split.X_test, split.y_test, predicted, split.layout)
    audit, t_audit = None, None
    if audit_it and (cfg.private or canaries is not None):  # a baseline audits itself only with canaries (sweeps)
        t0 = time.perf_counter()
        audit = self_audit.audit_run(
            result.predict_proba,
            canaries,
            split,
            epsilon=spent.get("epsilon"),
            delta=cfg.delta,
            noise_multiplier=run.sigma,
            sample_rate=run.q,
            steps=step,
            accountant=cfg.accountant,
            seed=cfg.seed,
        )
        t_audit = time.perf_counter() - t0
    metrics = TrainMetrics(
        dataset=cfg.dataset,
        target=cfg.target,
        model=cfg.model,
        private=cfg.private,
        seed=cfg.seed,
        device=dev.type,
        delta=cfg.delta if cfg.private else None,
        target_epsilon=cfg.epsilon,
        accountant=cfg.accountant if cfg.private else None,
        noise_multiplier=run.sigma,
        sample_rate=run.q,
        steps=step,
        shortcut_note=SHORTCUT_NOTE,
        **spent,
        **noise_fields(cfg),
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        clip=cfg.clip if cfg.private else None,
        lr_schedule=cfg.lr_schedule,
        optimizer=cfg.optimizer,
        grad_sample_mode=run.mode,
        test_accuracy=claims.diagnostic(test_acc),
        test_loss=claims.diagnostic(test_loss),
        train_accuracy=claims.diagnostic(train_acc),
        train_loss=claims.diagnostic(train_loss),
        train_metrics_note=NOT_DP_NOTE,
        diverged=divergence(history, split.n_classes),
        history=tuple(history),
        n_train=split.n_train,
        n_test=int(len(split.y_test)),
        n_features=split.n_features,
        n_classes=split.n_classes,
        bounds_note=split.bounds_note,
        leaks=tuple(split.leaks),
        warnings=tuple(delta_warnings(cfg, split.n_train)) + tuple(run.plan.get("warnings", ())),
        per_class=tuple(per_class),
        per_group=tuple(per_group),
        canaries=None if audit is None else audit.get("canaries"),
        audit=audit,
        accounting_check=checked,
        train_seconds=time.perf_counter() - t_start,
        loop_seconds=t_train,
        calibration_seconds=run.plan.get("calibration_seconds"),
        audit_seconds=t_audit,
    )
    result.metrics = metrics
    return result


def _canaries(cfg: TrainConfig, split: Split) -> canary_mod.Canaries | None:
    """The run's canaries: as many as ``cfg.canaries`` says (None: :func:`~dpcore.training.canaries.auto_count` for a
    DP-SGD run, none for the baseline), inputs from the seed, coins secret (seeded in reproducible-noise mode)."""
    n = cfg.canaries if cfg.canaries is not None else (canary_mod.auto_count(split.n_train) if cfg.private else 0)
    if not n:
        return None
    return canary_mod.make(split, int(n), cfg.seed, reproducible=cfg.reproducible_noise)


def train(
    cfg: TrainConfig | dict,
    progress: Callable[..., None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    split: Split | None = None,
    *,
    audit: bool = True,
    diagnostics: bool = True,
    compare_accountants: bool = True,
) -> TrainResult:
    """Train one model: plan (steps, calibrated noise), set up, run the epochs, finish.

    ``cfg`` is a :class:`TrainConfig` (already valid) or job params (validated here, once). ``split``: data
    already loaded by the caller (not loaded again). ``progress(**fields)`` is called every epoch and every few
    steps; ``should_stop()`` is checked every step (raises :class:`~dpcore.errors.Cancelled`). ``audit=False``: no
    self-audit (a LiRA shadow model, no run of its own); the accounting check runs whatever it says.

    For models nobody watches train (a sweep's LiRA shadows), ``diagnostics=False`` leaves out each epoch's
    held-out accuracy and ε so far; ``compare_accountants=False`` computes ε with the run's own accountant only
    (Opacus's RDP beside PRV took ~0.7 s per new setting, a third of a sweep's accounting). Neither changes the
    training, its noise or its ε."""
    cfg = cfg if isinstance(cfg, TrainConfig) else TrainConfig.from_dict(cfg)
    split = split if split is not None else load_split(cfg)
    check_model_size(cfg, split)
    progress = progress or (lambda **_: None)
    if cfg.model.startswith("diffprivlib"):
        return train_diffprivlib(cfg, split, progress)
    t_start = time.perf_counter()
    pl = plan(cfg, split.n_train)  # q and T from the real rows: the canaries' coins change neither
    canaries = _canaries(cfg, split)
    run = _setup(cfg, canaries.add_to(split) if canaries is not None else split, pl, split.n_train)
    history, step, t_train = _run_epochs(cfg, run, split, progress, should_stop or (lambda: False), diagnostics)
    checked = None
    if cfg.private:  # before any ε: the loop did what the accountant was told, or the run fails here
        assert run.witness is not None  # a private run's setup always attaches one
        checked = accounting_check.check(run.accountant.history, run.witness, clip=cfg.clip)
    result = _finish(cfg, run, split, history, step, t_start, t_train, checked, canaries, audit, compare_accountants)
    progress(
        phase="done",
        step=step,
        total_steps=run.plan["steps"],
        epsilon=result.metrics.epsilon,
        test_accuracy=result.metrics.test_accuracy,
    )
    return result
