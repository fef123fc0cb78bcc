"""Recorded utility of DP-SGD (not a timed test): median test accuracy over seeds.

.venv/bin/python bench/utility.py                 # breast cancer logreg at ε=1 (target: median ≥ 0.95), 3 seeds
.venv/bin/python bench/utility.py --grid          # also digits logreg (target ≥ 0.90 at ε=1, ≥ 0.96 at ε=8), CNN, medical MLP
.venv/bin/python bench/utility.py --quick         # one seed at ε=1: a smoke test
.venv/bin/python bench/utility.py --canaries 0    # without the run's own audit canaries (default: auto_count)
"""

from __future__ import annotations

import argparse
import statistics
import warnings

import torch

from dpcore.training.config import TrainConfig, recommended
from dpcore.training.loop import train


def median_acc(dataset, model, epsilon, seeds, target=None, canaries=None):
    accs, last = [], None
    for seed in seeds:
        cfg = TrainConfig(
            dataset=dataset,
            model=model,
            epsilon=epsilon,
            seed=seed,
            target=target,
            canaries=None if epsilon is None else canaries,
            **recommended(dataset, model),
        )
        last = train(cfg).metrics
        accs.append(last.test_accuracy)
    return statistics.median(accs), accs, last


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--grid", action="store_true")
    ap.add_argument("--quick", action="store_true", help="one seed at ε=1: a smoke test")
    ap.add_argument("--canaries", type=int, default=None, help="audit canaries a DP run plants (default: auto)")
    args = ap.parse_args(argv)
    if args.quick:
        args.seeds, args.grid = 1, False
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    seeds = range(args.seeds)
    runs = [("breast_cancer", "logreg", None, [1.0] if args.quick else [1.0, None])]
    if args.grid:
        runs += [
            ("digits", "logreg", None, [1.0, 8.0, None]),
            ("digits", "cnn", None, [0.5, 1.0, 2.0, 8.0, None]),
            ("medical", "mlp", "diagnosis", [0.5, 1.0, 2.0, 8.0, None]),
        ]
    print(
        f"{'dataset':14} {'model':7} {'ε':>5} {'median acc':>10}  per seed            σ      ε(PRV)  ε(RDP)  shortcut"
    )
    for dataset, model, target, epsilons in runs:
        for eps in epsilons:
            med, accs, m = median_acc(dataset, model, eps, seeds, target, args.canaries)
            e = "none" if eps is None else f"{eps:g}"
            extra = (
                ""
                if eps is None
                else (f"{m.noise_multiplier:6.2f} {m.epsilon_prv:7.3f} {m.epsilon_rdp:7.3f} {m.shortcut_epsilon:8.3f}")
            )
            print(
                f"{dataset:14} {model:7} {e:>5} {med:10.3f}  {' '.join(f'{a:.3f}' for a in accs):18} {extra}",
                flush=True,
            )


if __name__ == "__main__":
    main()
