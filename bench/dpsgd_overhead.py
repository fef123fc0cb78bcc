"""DP-SGD step time vs the non-private step, per model and per-sample-gradient mode (CPU, 1 thread): our fused
step and Opacus's grad_sample_modes; "<- auto" marks the one the automatic mode picks.

Prints one line per (model, mode): ms per non-private step, ms per DP step, and the ratio.
A "step" is what the training loop does per batch: fetch the batch from the data loader (the loop's Poisson
sampler for DP, shuffled batches for non-private), forward, backward, optimizer step.

    .venv/bin/python bench/dpsgd_overhead.py [--steps 200] [--models logreg,mlp,cnn] [--modes hooks,ghost,ew,functorch]
        [--quick]
"""

from __future__ import annotations

import argparse
import time
import warnings

import torch

from dpcore.training.accounting import sample_rate_for
from dpcore.training.config import BEST_GRAD_SAMPLE_MODE, TrainConfig
from dpcore.training.data import load_split
from dpcore.training.fused import FusedDPSGD
from dpcore.training.models import batch_as_is, build_model, make_dataset
from dpcore.training.sampling import poisson_loader

DATA = {"logreg": "breast_cancer", "mlp": "medical", "cnn": "digits"}
TARGET = {"medical": "has_rare_disease"}  # the medical table needs its target named (the others have one)


def loop_time(cfg: TrainConfig, split, steps: int, repeats: int = 9) -> float:
    """Seconds per step: the best of `repeats` timings of `steps` steps (after a warm-up). The minimum
    is robust to other processes sharing the CPU."""
    torch.manual_seed(0)
    model = build_model(cfg, split)
    crit = torch.nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=cfg.lr)
    ds = make_dataset(split.X_train, split.y_train)
    loader = torch.utils.data.DataLoader(ds, batch_size=cfg.batch_size, shuffle=True, collate_fn=batch_as_is)
    fused = None
    if cfg.private:  # the loop's own Poisson loader, at the plan's rate
        q = sample_rate_for(len(ds), cfg.batch_size)
        loader = poisson_loader(ds, q, 0)
    if cfg.private and cfg.grad_sample_mode == "fused":
        from opacus.accountants import create_accountant

        fused = FusedDPSGD(model, 1.0, 1.0, int(len(ds) * q), torch.Generator().manual_seed(0))
        accountant = create_accountant("prv")
    elif cfg.private:
        from opacus import PrivacyEngine

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = PrivacyEngine(accountant="prv").make_private(
                module=model,
                optimizer=opt,
                criterion=crit,
                data_loader=loader,
                noise_multiplier=1.0,
                max_grad_norm=1.0,
                poisson_sampling=False,  # as the loop: the loader above samples
                grad_sample_mode=cfg.grad_sample_mode,
            )
        model, opt, crit, loader = out if len(out) == 4 else (out[0], out[1], crit, out[2])
        opt.expected_batch_size = int(len(ds) * q)

    def run(n):
        done = 0
        while done < n:
            for xb, yb in loader:
                if fused is not None:  # as the loop: it sets every .grad, nothing to zero
                    fused.backward(xb, yb)
                    opt.step()
                    accountant.step(noise_multiplier=1.0, sample_rate=q)
                else:
                    opt.zero_grad(set_to_none=True)
                    loss = crit(model(xb), yb)
                    loss.backward()
                    opt.step()
                done += 1
                if done >= n:
                    break

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        run(20)
        best = float("inf")
        for _ in range(repeats):
            t = time.perf_counter()
            run(steps)
            best = min(best, (time.perf_counter() - t) / steps)
        return best


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--models", default="logreg,mlp,cnn")
    ap.add_argument("--modes", default="fused,hooks,ghost,ew,functorch")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--quick", action="store_true", help="logreg, fused and hooks, a few steps: a smoke test")
    args = ap.parse_args(argv)
    repeats = 9
    if args.quick:
        args.steps, args.models, args.modes, repeats = 5, "logreg", "fused,hooks", 1
    torch.set_num_threads(1)
    print(f"{'model':8} {'dataset':14} {'mode':10} {'non-private ms':>15} {'DP ms':>8} {'ratio':>7}")
    for model in args.models.split(","):
        base = TrainConfig(
            dataset=DATA[model], target=TARGET.get(DATA[model]), model=model, epsilon=None, batch_size=args.batch_size
        )
        split = load_split(base)
        t_np = loop_time(base, split, args.steps, repeats)
        for mode in args.modes.split(","):
            cfg = TrainConfig(
                dataset=DATA[model],
                target=TARGET.get(DATA[model]),
                model=model,
                noise_multiplier=1.0,
                epsilon=None,
                batch_size=args.batch_size,
                grad_sample_mode=mode,
            )
            try:
                t_dp = loop_time(cfg, split, args.steps, repeats)
            except Exception as exc:
                print(f"{model:8} {DATA[model]:14} {mode:10} {'':>15} {'n/a':>8} ({type(exc).__name__}: {exc})"[:160])
                continue
            chosen = " <- auto" if BEST_GRAD_SAMPLE_MODE.get(model) == mode else ""
            print(
                f"{model:8} {DATA[model]:14} {mode:10} {t_np * 1e3:15.3f} {t_dp * 1e3:8.3f} {t_dp / t_np:6.2f}x{chosen}"
            )


if __name__ == "__main__":
    main()
