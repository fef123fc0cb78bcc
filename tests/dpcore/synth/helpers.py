"""Study results with known numbers (no release runs: fast and deterministic)."""

import numpy as np
import pandas as pd

from dpcore.synth import release as R
from dpcore.synth import schema as S
from dpcore.synth import study as ST
from dpcore.synth.statement import release_statement

NEIGHBOUR_VALUE = "hypertension"


def fake_release(epsilon: float, delta: float = 0.0, rows: int = 10, seed: int = 7) -> R.SynthRelease:
    sch = S.medical()
    codes = pd.DataFrame({c.name: np.zeros(rows, dtype=np.int64) for c in sch.columns})
    cfg = R.SynthConfig(epsilon, delta, "mst" if not delta else "aim", pairs=ST.STORY_PAIRS, sample_seed=seed)
    plan = R.Plan(
        None,
        epsilon * (1 - 1e-12),
        delta,
        None if not delta else 0.02,
        "discrete Laplace (pure ε-DP)" if not delta else "discrete Gaussian (zCDP)",
    )
    return R.SynthRelease(sch.decode(codes, np.random.default_rng(0)), codes, sch, cfg, plan, seed, rows, 1.0)


def run(**kw) -> dict:
    base = {
        "neighbour_matches": 0,
        "neighbour_single": False,
        "neighbour_right": False,
        "targets_right": 0.45,
        "targets_matched": 0.1,
        "unique_exposed": 0.02,
        "baseline_neighbour_matches": 0,
        "baseline_neighbour_right": False,
        "baseline_targets_right": 0.46,
        "baseline_unique_exposed": 0.02,
        "membership_auc": 0.5,
        "membership_tpr_at_1pct_fpr": 0.01,
        "membership_lower_bound": 0.0,
        "one_way_mean": 2.0,
        "two_way_mean": 3.0,
        "two_way_max": 4.0,
        "model_accuracy": 0.7,
        "rows": 1000,
        "seconds": 10.0,
        "two_way": {},
        "one_way": {},
        "notes": [],
        "questions": [{"question": "mean age", "unit": "years", "real": 50.5, "synthetic": 52.0, "error": 1.5}],
    }
    base.update(kw)
    base["neighbour_single"] = base["neighbour_matches"] == 1
    return base


def fake_result(points: dict, cfg: ST.StudyConfig | None = None) -> dict:
    """``points``: {ε: [run(...), ...]} -> a study result as :func:`dpcore.synth.study.run` returns it."""
    cfg = cfg or ST.StudyConfig(epsilons=tuple(points), repetitions=len(next(iter(points.values()))))
    return {
        "config": cfg.to_dict(),
        "points": [{"epsilon": e, "runs": runs, "summary": ST.summarise(runs)} for e, runs in sorted(points.items())],
        "reference": {
            "exact": {
                "neighbour_matches": 1,
                "neighbour_right": True,
                "targets_right": 0.89,
                "targets_matched": 1.0,
                "unique_exposed": 1.0,
            },
            "blind_right": 0.47,
            "unique_patients": 763,
            "neighbour_found": True,
            "neighbour_value": NEIGHBOUR_VALUE,
            "blind_value": "none",
            "model_accuracy": 0.88,
            "prior_share": 0.428,
            "sampling_floor": {"two_way_max": 2.5},
        },
        "statements": {
            str(e): release_statement(fake_release(e), "synthetic medical, 1,000 patients (seed 31)") for e in points
        },
        "sample": None,
        "seconds": 1.0,
        "not_covered_by_epsilon": ST.NOT_COVERED,
    }
