"""`python -m dpcore noise --mechanism {laplace,gaussian,gaussian-classic} --epsilon E [--delta D]
--sensitivity S --value V --draws N [--seed K] [--secure]`

Prints the calibration (scale b or σ), expected |error|, the 95% interval and N draws. By default the
draws are a seeded numpy *simulation* (reproducible, for pictures and checks); with ``--secure`` they go
through the release path (:mod:`dpcore.noise.release`: the value rounded to a public grid, OpenDP's exact discrete
Laplace or discrete Gaussian noise from a secure source, no seed), and each draw costs ε. Values, Δ and ε outside
what a release can represent are refused (exit 2) before anything is drawn.
"""

from __future__ import annotations

import numpy as np

from .. import limits
from ..errors import DPError
from ..noise import mechanisms as mech
from ..noise import release
from ..noise.charge import compose
from ..noise.grid import check_release
from ..validation import check_delta, check_positive_int
from ._args import int_arg, seed_arg

DEFAULT_DELTA = 1e-5


def _fresh_seed() -> int:
    """A seed from the operating system's entropy, for a picture (never for a release)."""
    return int(np.random.SeedSequence().generate_state(1)[0]) % (limits.SEED_MAX + 1)


def register(sub) -> None:
    p = sub.add_parser("noise", help="calibrate Laplace / Gaussian noise and draw noisy answers")
    p.add_argument(
        "--mechanism",
        required=True,
        choices=list(mech.MECHANISMS),
        help="laplace (b = Δ/ε), gaussian (analytic, Balle & Wang 2018) or gaussian-classic (ε < 1)",
    )
    p.add_argument("--epsilon", required=True, type=float, help="privacy budget ε > 0")
    p.add_argument(
        "--delta",
        type=float,
        default=None,
        help=f"δ in (0, 1) for the Gaussian mechanisms (default {DEFAULT_DELTA:g}); Laplace has δ = 0",
    )
    p.add_argument("--sensitivity", required=True, type=float, help="sensitivity Δ >= 0 of the query")
    p.add_argument("--value", required=True, type=float, help="the true answer (not private)")
    p.add_argument(
        "--draws",
        required=True,
        type=int_arg(1, limits.SIMULATED_DRAWS_MAX),
        help=f"number of noisy answers to draw, 1 to {limits.SIMULATED_DRAWS_MAX:,} "
        f"({limits.RELEASE_DRAWS_MAX:,} with --secure)",
    )
    p.add_argument(
        "--seed",
        type=seed_arg,
        default=None,
        help=f"seed for the simulation, 0 to {limits.SEED_MAX} (default: fresh, reported)",
    )
    p.add_argument(
        "--secure",
        action="store_true",
        help="draw through the release path (a public grid, OpenDP's exact discrete noise, secure random "
        "source); cannot be seeded",
    )
    p.set_defaults(func=run)


def run(args) -> dict:
    if args.secure and args.seed is not None:
        raise DPError(
            "--secure draws from a secure random source and cannot be seeded; drop --seed "
            "(or drop --secure for a reproducible simulation)"
        )
    delta = args.delta
    if mech.mechanism_class(args.mechanism).pure:
        if delta is not None:
            check_delta(delta)  # still reject nonsense, but Laplace is pure ε-DP
        delta = None
    elif delta is None:
        delta = DEFAULT_DELTA
    m = mech.get(args.mechanism, epsilon=args.epsilon, delta=delta, sensitivity=args.sensitivity)
    value = mech._finite(args.value, "--value (true value)")
    check_release(magnitude=abs(value), sensitivity=m.sensitivity, what="--value (the true value)")
    lo, hi = m.interval(value, 0.95)
    out = {
        "mechanism": m.name,
        "epsilon": m.epsilon,
        "delta": m.delta,
        "sensitivity": m.sensitivity,
        "scale": m.scale,
        "scale_name": m.scale_ascii,
        "value": value,
        "expected_abs_error": m.expected_abs_error(),
        "ci95": [lo, hi],
    }
    if not m.pure and m.sensitivity > 0:
        out["delta_at_epsilon"] = m.actual_delta()
    if args.secure:
        if args.draws > limits.RELEASE_DRAWS_MAX:
            raise DPError(f"--draws must be at most {limits.RELEASE_DRAWS_MAX:,} with --secure, got {args.draws:,}")
        r = release.release_value(
            value,
            mechanism=m.name,
            epsilon=m.epsilon,
            delta=m.delta or 0.0,
            sensitivity=m.sensitivity,
            draws=args.draws,
        )
        draws = r.values
        total = compose([r.noise.charge()] * len(draws))  # basic composition: each draw costs its charge
        out.update(
            source=f"release path: {release.SECURE_SOURCE}",
            grid=r.grid.text(),
            rounding=r.describe(),
            released_ci95_halfwidth=r.halfwidth,
            seed=None,
            total_epsilon=total.epsilon,
            total_delta=total.delta,
        )
    else:
        seed = args.seed if args.seed is not None else _fresh_seed()
        if m.scale == 0:
            draws = [value] * check_positive_int(args.draws, "number of draws")
        else:
            draws = m.simulate(value, args.draws, seed).tolist()
        out.update(source="simulation: numpy Generator (plain floating point; not a safe release)", seed=seed)
    out["draws"] = draws
    return out
