"""`python -m dpcore noise --mechanism {laplace,gaussian,gaussian-classic} --epsilon E [--delta D]
--sensitivity S --value V --draws N [--seed K] [--secure]`

Prints the calibration (scale b or σ), expected |error|, the 95% interval and N draws. By default the
draws are a seeded numpy *simulation* (reproducible, for pictures and checks); with ``--secure`` they go
through the release path (diffprivlib, secure random source, no seed), and each draw costs ε.
"""

from __future__ import annotations

import numpy as np

from .. import limits
from .. import mechanisms as mech
from ..cli import int_arg, seed_arg
from ..errors import DPError
from ..release import basic_composition, release_many

DEFAULT_DELTA = 1e-5


def register(sub) -> None:
    p = sub.add_parser("noise", help="calibrate Laplace / Gaussian noise and draw noisy answers")
    p.add_argument("--mechanism", required=True, choices=list(mech.MECHANISMS),
                   help="laplace (b = Δ/ε), gaussian (analytic, Balle & Wang 2018) or gaussian-classic (ε < 1)")
    p.add_argument("--epsilon", required=True, type=float, help="privacy budget ε > 0")
    p.add_argument("--delta", type=float, default=None,
                   help=f"δ in (0, 1) for the Gaussian mechanisms (default {DEFAULT_DELTA:g}); Laplace has δ = 0")
    p.add_argument("--sensitivity", required=True, type=float, help="sensitivity Δ >= 0 of the query")
    p.add_argument("--value", required=True, type=float, help="the true answer (not private)")
    p.add_argument("--draws", required=True, type=int_arg(1, limits.SIMULATED_DRAWS_MAX),
                   help=f"number of noisy answers to draw, 1 to {limits.SIMULATED_DRAWS_MAX:,} "
                        f"({limits.RELEASE_DRAWS_MAX:,} with --secure)")
    p.add_argument("--seed", type=seed_arg, default=None,
                   help=f"seed for the simulation, 0 to {limits.SEED_MAX} (default: fresh, reported)")
    p.add_argument("--secure", action="store_true",
                   help="draw through the release path (diffprivlib, secure random source); cannot be seeded")
    p.set_defaults(func=run)


def run(args) -> dict:
    if args.secure and args.seed is not None:
        raise DPError("--secure draws from a secure random source and cannot be seeded; drop --seed "
                      "(or drop --secure for a reproducible simulation)")
    delta = args.delta
    if args.mechanism == "laplace":
        if delta is not None:
            from ..validation import check_delta

            check_delta(delta)  # still reject nonsense, but Laplace is pure ε-DP
        delta = None
    elif delta is None:
        delta = DEFAULT_DELTA
    spec = mech.calibrate(args.mechanism, args.epsilon, delta, args.sensitivity)
    value = mech._finite(args.value, "--value (true value)")
    lo, hi = mech.ci95(spec, value)
    out = {
        "mechanism": spec.mechanism,
        "epsilon": spec.epsilon,
        "delta": spec.delta,
        "sensitivity": spec.sensitivity,
        "scale": spec.scale,
        "scale_name": "b" if spec.mechanism == "laplace" else "sigma",
        "value": value,
        "expected_abs_error": mech.expected_abs_error(spec),
        "ci95": [lo, hi],
    }
    if spec.mechanism != "laplace" and spec.sensitivity > 0:
        out["delta_at_epsilon"] = mech.actual_delta(spec)
    if args.secure:
        draws = release_many(value, args.draws, mechanism=spec.mechanism, epsilon=spec.epsilon,
                             delta=spec.delta, sensitivity=spec.sensitivity)
        eps_total, delta_total = basic_composition([(spec.epsilon, spec.delta)] * len(draws))
        out.update(source="release path: diffprivlib, secure random source (not reproducible)",
                   seed=None, total_epsilon=eps_total, total_delta=delta_total)
    else:
        seed = args.seed if args.seed is not None else int(np.random.SeedSequence().entropy % (limits.SEED_MAX + 1))
        if spec.scale == 0:
            from ..validation import check_positive_int

            draws = [value] * check_positive_int(args.draws, "number of draws")
        else:
            draws = mech.simulate(spec, value, args.draws, seed).tolist()
        out.update(source="simulation: numpy Generator (plain floating point; not a safe release)", seed=seed)
    out["draws"] = draws
    return out
