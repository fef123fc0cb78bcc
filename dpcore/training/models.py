"""The torch models a run trains (logreg, mlp, cnn), their size limit, and the array dataset the loaders read."""

from __future__ import annotations

from ..errors import DPError
from .config import BEST_GRAD_SAMPLE_MODE, MAX_PARAMS, TrainConfig
from .data import Split


def _append_one_class():
    # lazy: torch takes ~2 s to import
    import torch
    import torch.nn as nn

    class AppendOne(nn.Module):
        """Adds a constant-1 input so that a bias-free Linear layer carries its bias in the weight.
        Same model class as Linear(bias=True), but one parameter tensor per layer instead of two:
        DP-SGD's per-parameter work (per-sample grads, norms, noise) halves."""

        def forward(self, x):
            return torch.nn.functional.pad(x, (0, 1), value=1.0)

    return AppendOne


def build_model(cfg: TrainConfig, split: Split):
    # lazy: torch takes ~2 s to import
    import torch.nn as nn

    d, c = split.n_features, split.n_classes
    one = _append_one_class()
    if cfg.model == "logreg":
        return nn.Sequential(one(), nn.Linear(d + 1, c, bias=False))
    if cfg.model == "mlp":
        return nn.Sequential(
            one(), nn.Linear(d + 1, cfg.hidden, bias=False), nn.ReLU(), one(), nn.Linear(cfg.hidden + 1, c, bias=False)
        )
    if cfg.model == "cnn":
        if split.image_shape is None:
            raise DPError("the cnn model needs image data: use dataset digits or mnist:PATH")
        ch, h, w = split.image_shape
        # tanh (bounded activations) trains markedly better than ReLU under DP-SGD's clipping and noise
        # (digits, ε = 1: ~0.82 vs ~0.66 test accuracy; Papernot et al. 2021, "tempered sigmoids")
        return nn.Sequential(
            nn.Unflatten(1, (ch, h, w)),
            nn.Conv2d(ch, 8, 3, padding=1),
            nn.Tanh(),
            nn.AvgPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1),
            nn.Tanh(),
            nn.AvgPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * (h // 4) * (w // 4), c),
        )
    raise DPError(f"{cfg.model} is not a torch model")


def n_parameters(cfg: TrainConfig, split: Split) -> int:
    """Number of weights :func:`build_model` would create (without creating them)."""
    d, c = split.n_features, split.n_classes
    if cfg.model.startswith("diffprivlib"):
        return 2 * d * c + 2 * c
    if cfg.model == "logreg":
        return (d + 1) * c
    if cfg.model == "mlp":
        return (d + 1) * cfg.hidden + (cfg.hidden + 1) * c
    if split.image_shape is None:
        return 0
    ch, h, w = split.image_shape
    return (ch * 9 + 1) * 8 + (8 * 9 + 1) * 16 + (16 * (h // 4) * (w // 4) + 1) * c


def check_model_size(cfg: TrainConfig, split: Split) -> int:
    """Refuse a model above :data:`MAX_PARAMS` weights before any memory is spent on it."""
    n = n_parameters(cfg, split)
    if n > MAX_PARAMS:
        raise DPError(
            f"the model would have {n:,} parameters; the limit is {MAX_PARAMS:,}. "
            "Use fewer hidden units (e.g. 32–512) or fewer features"
        )
    return n


def resolve_grad_sample_mode(cfg: TrainConfig) -> str:
    if cfg.grad_sample_mode != "auto":
        return cfg.grad_sample_mode
    return BEST_GRAD_SAMPLE_MODE.get(cfg.model, "hooks")


def make_dataset(X, y, on_batch=None):
    """The training rows as a torch dataset whose batches are gathered with one index op (``__getitems__``).
    ``on_batch(indices)``: called with the indices of every batch gathered — what the accounting check counts
    (:class:`dpcore.training.accounting_check.Witness`), whatever sampler asked for them."""
    # lazy: torch takes ~2 s to import
    import torch
    from torch.utils.data import Dataset

    class ArrayDataset(Dataset):
        """Tensor dataset whose batches are gathered with one index op (``__getitems__``)."""

        def __init__(self, X, y):
            self.X, self.y = torch.from_numpy(X), torch.from_numpy(y)

        def __len__(self):
            return len(self.y)

        def __getitem__(self, i):
            return self.X[i], self.y[i]

        def __getitems__(self, idx):
            idx = torch.as_tensor(idx, dtype=torch.long)
            if on_batch is not None:
                on_batch(idx)
            return [self.X[idx], self.y[idx]]

    return ArrayDataset(X, y)


def batch_as_is(batch):
    return batch
