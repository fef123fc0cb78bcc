"""`python -m dpcore differencing [--n N] [--seed K] [--min-group N] [--target NAME | --target-id I]
[--group COL=VAL[,COL=VAL]] [--epsilon E] [--trials T] [--within K] [--sim-seed S]`

Runs the differencing attack against an interface that only answers COUNT and AVG over groups of at
least N people, and prints the queries, answers, recovered and true value. With ``--epsilon`` the same
queries are answered with Laplace noise (ε per query; total 4ε): one example release through
diffprivlib and a seeded simulation of the attacker's success within ±K years.
"""

from __future__ import annotations

from .. import limits
from ..attacks import differencing as dif
from ..attacks import differencing_dp as dif_dp
from ._args import int_arg, seed_arg


def register(sub) -> None:
    p = sub.add_parser(
        "differencing", help="the differencing attack on 'large groups only' aggregates, with and without DP"
    )
    p.add_argument(
        "--n",
        type=int_arg(1, limits.DIFFERENCING_MAX_N),
        default=dif.DEFAULT_N,
        help=f"population size, at most {limits.DIFFERENCING_MAX_N:,} (default {dif.DEFAULT_N})",
    )
    p.add_argument(
        "--seed",
        type=seed_arg,
        default=dif.DEFAULT_SEED,
        help=f"population seed (default {dif.DEFAULT_SEED}: one 'Jan Kees', 96 Peters)",
    )
    p.add_argument(
        "--min-group",
        type=int,
        default=dif.DEFAULT_MIN_GROUP,
        help=f"smallest group the interface answers (default {dif.DEFAULT_MIN_GROUP})",
    )
    who = p.add_mutually_exclusive_group()
    who.add_argument("--target", metavar="NAME", help="target's full name (must be unique; default 'Jan Kees')")
    who.add_argument("--target-id", type=int, metavar="I", help="target's person id (0 .. n-1)")
    p.add_argument(
        "--group",
        metavar="COL=VAL[,COL=VAL]",
        help="group the target is not in (default first_name=Peter); e.g. zip_code=10002,sex=M",
    )
    p.add_argument("--epsilon", type=float, help="also answer with Laplace noise at this ε per query")
    p.add_argument(
        "--trials",
        type=int_arg(1, limits.DIFFERENCING_MAX_TRIALS),
        default=10_000,
        help=f"simulated releases, at most {limits.DIFFERENCING_MAX_TRIALS:,} (default 10000)",
    )
    p.add_argument(
        "--within",
        type=float,
        default=5.0,
        metavar="K",
        help="success = estimate within ±K years of the truth (default 5)",
    )
    p.add_argument(
        "--sim-seed", type=seed_arg, default=0, help="seed for the example release and simulation (default 0)"
    )
    p.set_defaults(func=run)


def run(args) -> dict:
    pop = dif.population(args.n, args.seed)
    attack = dif.run_attack(
        pop, target_name=args.target, target_id=args.target_id, group=args.group, min_group=args.min_group
    )
    out = {"n": args.n, "seed": args.seed, **attack.as_dict()}
    if args.epsilon is not None:
        k = dif_dp.check_within(args.within)
        release = dif_dp.noisy_release(pop, attack, args.epsilon, seed=args.sim_seed)
        sim = dif_dp.simulate(attack, args.epsilon, k=k, trials=args.trials, seed=args.sim_seed)
        sim.pop("estimates")
        out["noisy"] = {
            **dif_dp.privacy_cost(args.epsilon),
            "example_release": {k_: release[k_] for k_ in ("answers", "naive_estimate", "estimate", "error")}
            | {"note": "drawn with diffprivlib, seeded with --sim-seed for reproducibility (not a secure release)"},
            "simulation": sim,
            "success_probability": sim["success_probability"],
        }
    return out
