"""Training as a background job: checks before a job is queued (:func:`preflight`), the job target
``"train"`` (:func:`run_job`), and :func:`train_in_job`, the one wrapper around :func:`~dpcore.training.loop.train`
inside a job (threads, warnings, cancel, upload clean-up) that ``run_job`` and a sweep point share."""

from __future__ import annotations

import warnings

from .config import TrainConfig, check_batch_size, delta_warnings
from .data import Split, is_upload, load_split, release_uploads
from .loop import train
from .models import check_model_size, n_parameters
from .results import TrainResult


def preflight(cfg: TrainConfig | dict) -> dict:
    """Check a run before it is queued (load the data, batch size vs rows, model size); raise DPError with a
    clear message. Returns a short summary (rows, features, classes, warnings)."""
    cfg = cfg if isinstance(cfg, TrainConfig) else TrainConfig.from_dict(cfg)
    split = load_split(cfg)
    check_model_size(cfg, split)
    n = split.n_train
    check_batch_size(cfg.batch_size, n)
    return {
        "n_train": n,
        "n_test": int(len(split.y_test)),
        "n_features": split.n_features,
        "n_classes": split.n_classes,
        "n_parameters": n_parameters(cfg, split),
        "warnings": delta_warnings(cfg, n),
        "leaks": split.leaks,
    }


def baseline_params(params: dict) -> dict:
    """Job params of the non-private baseline for a run: same model, data split, epochs and optimiser."""
    return TrainConfig.from_dict(params).baseline().to_dict()


# --- inside a job ---------------------------------------------------------------------------------


def _release_after_job(job_id) -> None:
    """This job no longer needs its upload: delete uploads no *other* queued or running job reads."""
    try:
        release_uploads(finished_job=job_id)
    except Exception:
        pass


def train_in_job(
    cfg: TrainConfig, ctx=None, split: Split | None = None, progress=None, *, compare_accountants: bool = True
) -> TrainResult:
    """:func:`~dpcore.training.loop.train` inside a job (``ctx``: the job's context, or None): one torch thread,
    Opacus's per-step notices silenced, the job's cancel flag checked every step (a cancel raises
    :class:`~dpcore.errors.Cancelled`), and a stored upload released once no other job reads it.
    ``progress`` defaults to ``ctx.progress``; ``compare_accountants`` as in ``train``."""
    try:
        # lazy: torch takes ~2 s to import
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover
        pass
    if progress is None and ctx is not None:
        progress = ctx.progress
    stop = ctx.cancelled if ctx is not None else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # Opacus's per-step hook notices flood the log
            return train(cfg, progress=progress, should_stop=stop, split=split, compare_accountants=compare_accountants)
    finally:
        if is_upload(cfg):
            _release_after_job(getattr(ctx, "job_id", None))


def run_job(params: dict, ctx) -> dict:
    """Job target ``"train"`` (:mod:`dpcore.jobs.registry`): train, report progress, save weights + metrics.
    Returns :meth:`TrainMetrics.to_dict` plus ``weights_file`` and ``config``."""
    cfg = TrainConfig.from_dict(params)
    result = train_in_job(cfg, ctx)
    ctx.save_bytes(result.weights_filename, result.state_dict_bytes())
    ctx.save_bytes("metrics.json", result.metrics_json())
    return {**result.metrics.to_dict(), "weights_file": result.weights_filename, "config": cfg.to_dict()}
