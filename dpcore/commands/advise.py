"""`python -m dpcore advise --mechanism {gaussian,laplace,dpsgd} RISK [UTILITY] [--delta D]`

RISK, one of: ``--max-tpr T --at-fpr A`` (membership attacker), ``--max-posterior P --prior p``,
``--max-advantage A``. UTILITY (optional): ``--within K [--confidence 0.95]`` for a COUNT (``--query count``,
Δ = 1), SUM (``--bounds LO:HI``) or MEAN (``--bounds LO:HI --n N``), or any ``--sensitivity``; for DP-SGD
``--min-accuracy X --sweep ID`` (a stored sweep's accuracy-vs-ε curve). DP-SGD needs ``--sample-rate q
--steps T`` (or the sweep's). Prints JSON with ``epsilon`` (at ``delta``), ``epsilon_range``, ``feasible`` and
``sigma`` (Gaussian), ``scale_b`` (Laplace) or ``noise_multiplier`` (DP-SGD); see :mod:`dpcore.advisor`.
``--statement FILE`` also writes the decision as a signed statement (:mod:`dpcore.advisor.decision`): risk limit →
ε → expected error or accuracy, with the failure probabilities; ``statement --verify FILE`` recomputes it.
"""

from __future__ import annotations

from dpcore.statements import signing

from ..advisor import decision, links, targets
from ..errors import DPError
from ..serialize import check_json_path, write_json


def register(sub) -> None:
    p = sub.add_parser("advise", help="solve a risk limit and a utility target for ε (σ, noise multiplier)")
    p.add_argument(
        "--mechanism",
        required=True,
        choices=list(targets.MECHANISMS),
        help="gaussian, laplace (any pure ε-DP) or dpsgd",
    )
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help=f"δ of the ε reported (default {targets.DEFAULT_DELTA:g}; Laplace has δ = 0)",
    )
    p.add_argument("--sensitivity", type=float, default=None, help="sensitivity Δ (default: the query's, or 1)")
    r = p.add_argument_group("risk limit (one)")
    r.add_argument("--max-tpr", type=float, help="attacker TPR at most T ...")
    r.add_argument("--at-fpr", type=float, help="... at FPR α (with --max-tpr)")
    r.add_argument("--max-posterior", type=float, help="attacker's posterior at most P ...")
    r.add_argument("--prior", type=float, help="... starting from prior p (with --max-posterior)")
    r.add_argument("--max-advantage", type=float, help="attacker advantage TPR − FPR at most A")
    u = p.add_argument_group("utility target (optional)")
    u.add_argument(
        "--query",
        choices=["count", "sum", "mean"],
        default=None,
        help="what --within is about (default: mean with --n, sum with --bounds, else count)",
    )
    u.add_argument("--within", type=float, help="answer within ±K ...")
    u.add_argument("--confidence", type=float, default=0.95, help="... with this probability (default 0.95)")
    u.add_argument("--bounds", default=None, metavar="LO:HI", help="public bounds of the column (sum, mean)")
    u.add_argument("--n", type=int, default=None, help="public number of rows (mean)")
    u.add_argument("--min-accuracy", type=float, help="DP-SGD: test accuracy at least X ...")
    u.add_argument("--sweep", default=None, help="... read from this stored sweep (id)")
    d = p.add_argument_group("DP-SGD")
    d.add_argument("--sample-rate", type=float, default=None, help="Poisson sampling rate q = batch / rows")
    d.add_argument("--steps", type=int, default=None, help="number of steps T")
    p.add_argument(
        "--statement",
        metavar="FILE.json",
        default=None,
        help="also write the decision as a signed statement (python -m dpcore statement --verify FILE)",
    )
    p.set_defaults(func=run)


def risk_from_args(args) -> targets.RiskLimit:
    given = [
        name
        for name, v in (
            ("--max-tpr", args.max_tpr),
            ("--max-posterior", args.max_posterior),
            ("--max-advantage", args.max_advantage),
        )
        if v is not None
    ]
    if len(given) != 1:
        raise DPError(
            "give exactly one risk limit: --max-tpr T --at-fpr A, --max-posterior P --prior p, or "
            f"--max-advantage A (got {', '.join(given) or 'none'})"
        )
    if args.max_tpr is not None:
        if args.at_fpr is None:
            raise DPError("--max-tpr needs --at-fpr (the false-positive rate it is measured at, e.g. 0.01)")
        return targets.RiskLimit("tpr", args.max_tpr, args.at_fpr)
    if args.max_posterior is not None:
        if args.prior is None:
            raise DPError("--max-posterior needs --prior (the attacker's belief before the release, e.g. 0.01)")
        return targets.RiskLimit("posterior", args.max_posterior, args.prior)
    return targets.RiskLimit("advantage", args.max_advantage)


def utility_from_args(args) -> targets.UtilityTarget | None:
    if args.min_accuracy is not None:
        if args.within is not None:
            raise DPError("give one utility target: --within K or --min-accuracy X, not both")
        return targets.UtilityTarget("accuracy", accuracy=args.min_accuracy, sweep=args.sweep)
    if args.within is None:
        for opt, v in (("--bounds", args.bounds), ("--n", args.n), ("--query", args.query), ("--sweep", args.sweep)):
            if v is not None:
                raise DPError(f"{opt} belongs to a utility target: add --within K (or --min-accuracy X with --sweep)")
        return None
    kind = args.query or ("mean" if args.n is not None else "sum" if args.bounds is not None else "count")
    sens = args.sensitivity if kind != "count" or args.sensitivity is not None else None
    return targets.UtilityTarget(
        kind, within=args.within, confidence=args.confidence, sensitivity=sens, bounds=args.bounds, n=args.n
    )


def run(args) -> dict:
    risk = risk_from_args(args)
    util = utility_from_args(args)
    if args.mechanism == "laplace" and args.delta not in (None, 0.0):
        raise DPError("Laplace is pure ε-DP (δ = 0): drop --delta, or choose --mechanism gaussian")
    if args.statement is not None:
        check_json_path(args.statement, "--statement")  # before the solve: an unusable path fails first
    inp = decision.inputs(
        args.mechanism,
        risk,
        util,
        delta=args.delta,
        sensitivity=args.sensitivity if util is None or util.kind == "count" else None,
        sample_rate=args.sample_rate,
        steps=args.steps,
    )
    out = decision.solve_inputs(inp)
    out["link"] = links.page_link(out)  # the same links the advisor page offers
    out["console_link"] = links.console_link(out)  # None when no COUNT/SUM/MEAN query is advised
    if args.statement is not None:
        write_json(args.statement, signing.issue(decision.statement(inp, out)), "--statement")
        out["statement"] = args.statement
    return out
