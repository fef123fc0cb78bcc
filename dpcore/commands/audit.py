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
from ._args import seed_arg


def register(sub) -> None:
    p = sub.add_parser("audit", help="what membership scores prove about a model's ε (member, score[, canary] CSV)")
    p.add_argument(
        "--scores",
        required=True,
        metavar="FILE.csv",
        help="CSV with columns member (1/0) and score (higher = more likely a member), optionally canary (1/0)",
    )
    add_options(p)
    p.set_defaults(func=run)


def add_options(p, prefix: str = "") -> None:
    """The audit's settings and the stated claim, as options (``prefix``: ``"audit-"`` in ``report``, whose own
    ``--epsilon`` is the ε it explains). The one definition for ``audit`` and ``report --audit``."""
    o = f"--{prefix}"
    p.add_argument(f"{o}delta", type=float, default=1e-5, help="δ of the claim being audited (default 1e-5)")
    p.add_argument(f"{o}confidence", type=float, default=0.95, help="confidence of the bound (default 0.95)")
    p.add_argument(
        f"{o}split-seed",
        type=seed_arg,
        default=model_audit.SPLIT_SEED,
        help="seed of the random half/half split (choose vs bound), fixed before looking at any result "
        "(default 0, as the page): the confidence holds for one seed, not for the largest bound "
        "over several",
    )
    p.add_argument(
        f"{o}one-run",
        action="store_true",
        help="rows are canaries included with probability 1/2: one-run audit (Steinke et al. 2023)",
    )
    p.add_argument(
        f"{o}epsilon",
        type=float,
        default=None,
        help=f"the model's claimed ε (at {o}delta): adds the worst-case ceiling and whether the audit contradicts it",
    )
    p.add_argument(
        f"{o}noise-multiplier",
        type=float,
        default=None,
        help="DP-SGD's noise multiplier σ (with "
        f"{o}sample-rate and {o}steps, instead of {o}epsilon): the claim and ceiling from its exact PLD",
    )
    p.add_argument(f"{o}sample-rate", type=float, default=None, help="DP-SGD's sample rate q (batch size / rows)")
    p.add_argument(f"{o}steps", type=int, default=None, help="DP-SGD's number of noisy steps")


def given(args, prefix: str = "") -> list[str]:
    """The options of :func:`add_options` given away from their defaults (``report`` refuses them without
    ``--audit``)."""
    d = prefix.replace("-", "_")
    defaults = {
        "delta": 1e-5,
        "confidence": 0.95,
        "split_seed": model_audit.SPLIT_SEED,
        "one_run": False,
        "epsilon": None,
        "noise_multiplier": None,
        "sample_rate": None,
        "steps": None,
    }
    return [f"--{prefix}{k.replace('_', '-')}" for k, v in defaults.items() if getattr(args, d + k) != v]


def audit(path, args, prefix: str = "") -> dict:
    """The audit of the scores file ``path`` with :func:`add_options`' settings: the same function as the page."""
    d = prefix.replace("-", "_")

    def opt(name):
        return getattr(args, d + name)

    t = model_audit.read_scores(path)
    mech = model_audit.mechanism(
        epsilon=opt("epsilon"),
        delta=opt("delta"),
        noise_multiplier=opt("noise_multiplier"),
        sample_rate=opt("sample_rate"),
        steps=opt("steps"),
    )
    canary = [True] * len(t["member"]) if opt("one_run") else t["canary"]
    return model_audit.audit_model(
        t["member"],
        t["score"],
        canary,
        delta=opt("delta"),
        confidence=opt("confidence"),
        split_seed=opt("split_seed"),
        mech=mech,
    )


def run(args) -> dict:
    out = audit(args.scores, args)
    main = out["one_run"] if args.one_run else (out["split_audit"] or out["one_run"])
    return {**(main or {}), **out}
