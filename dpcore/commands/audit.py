"""`python -m dpcore audit --scores FILE.csv [--delta D] [--confidence 0.95] [--split-seed K] [--one-run]
[--epsilon E | --noise-multiplier S --sample-rate Q --steps T]`

FILE has a column ``member`` (1 = in the training data, 0 = not), a column ``score`` (higher means "more likely a
member", e.g. from your own attack on your own model) and optionally ``canary`` (1 = a canary that was put in
training by a fair coin: audited with the one-run method of Steinke, Nasr & Jagielski 2023). Prints JSON from
:func:`dpcore.attacks.model_audit.audit_model` — the split audit's lower bound on ε at the stated confidence and the
counts it rests on (also at the top level, as before), the ROC figures (AUC, TPR at 1% and 0.1% FPR), the one-run
audit of the canaries, and with a stated mechanism the exact worst-case ceiling and whether the audit contradicts the
claim. ``--one-run``: every row is a canary. The same function as the "Audit your model" page.
"""

from __future__ import annotations

from ..attacks import model_audit
from ..cli import seed_arg


def register(sub) -> None:
    p = sub.add_parser("audit", help="what membership scores prove about a model's ε (member, score[, canary] CSV)")
    p.add_argument("--scores", required=True, metavar="FILE.csv",
                   help="CSV with columns member (1/0) and score (higher = more likely a member), optionally canary "
                        "(1/0)")
    p.add_argument("--delta", type=float, default=1e-5, help="δ of the claim being audited (default 1e-5)")
    p.add_argument("--confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    p.add_argument("--split-seed", type=seed_arg, default=model_audit.SPLIT_SEED,
                   help="seed of the random half/half split (choose vs bound), fixed before looking at any result "
                        "(default 0, as the page): the confidence holds for one seed, not for the largest bound "
                        "over several")
    p.add_argument("--one-run", action="store_true",
                   help="rows are canaries included with probability 1/2: one-run audit (Steinke et al. 2023)")
    p.add_argument("--epsilon", type=float, default=None,
                   help="the model's claimed ε (at --delta): adds the worst-case ceiling and whether the audit "
                        "contradicts it")
    p.add_argument("--noise-multiplier", type=float, default=None, help="DP-SGD's noise multiplier σ (with "
                   "--sample-rate and --steps, instead of --epsilon): the claim and ceiling from its exact PLD")
    p.add_argument("--sample-rate", type=float, default=None, help="DP-SGD's sample rate q (batch size / rows)")
    p.add_argument("--steps", type=int, default=None, help="DP-SGD's number of noisy steps")
    p.set_defaults(func=run)


def run(args) -> dict:
    t = model_audit.read_scores(args.scores)
    mech = model_audit.mechanism(epsilon=args.epsilon, delta=args.delta, noise_multiplier=args.noise_multiplier,
                                 sample_rate=args.sample_rate, steps=args.steps)
    canary = t["canary"]
    if args.one_run:
        canary = [True] * len(t["member"])
    out = model_audit.audit_model(t["member"], t["score"], canary, delta=args.delta, confidence=args.confidence,
                                  split_seed=args.split_seed, mech=mech)
    main = out["one_run"] if args.one_run else (out["split_audit"] or out["one_run"])
    return {**(main or {}), **out}
