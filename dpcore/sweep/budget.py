"""What a sweep costs a registered dataset, and the gate it passes before any point is queued.

A sweep of a file whose rows are (or nearly are) a registered dataset's is charged as the basic composition of its
DP points — every model trained with DP-SGD at its target ε and the sweep's δ (calibration never goes above the
target, so each point's accountant ε is at most what is charged) — in one transaction, before anything runs. Each
point holds its own ticket: a point whose job fails or is cancelled is refunded, a finished one never. What the
sweep computes from the rows besides its DP models — the non-private baselines, the attacks' and audits' figures,
the accuracies — are diagnostics, labelled "not covered by ε" as everywhere.
"""

from __future__ import annotations

from ..budgets import gate
from ..budgets.identities import Identity
from ..errors import DPError
from ..noise.charge import Charge, ReleaseKind
from ..training.config import REPRODUCIBLE_LABEL
from ..training.job import rows_of
from .config import SweepConfig


def dp_points(cfg: SweepConfig) -> list[int]:
    """Indices, in :meth:`SweepConfig.point_params` order, of the points that train a DP model."""
    return [i for i, p in enumerate(cfg.point_params()) if p["train"].get("epsilon") is not None]


def price(cfg: SweepConfig) -> tuple[Charge, list[gate.Part]]:
    """The sweep's charge (the composition of its DP points) and one part per DP point."""
    if cfg.reproducible_noise:
        raise DPError(
            f"a sweep with reproducible noise is {REPRODUCIBLE_LABEL}: on a registered dataset's rows anyone with "
            "the seeds could replay it; drop --reproducible-noise; nothing was spent and nothing was run"
        )
    params = cfg.point_params()
    parts = []
    for i in dp_points(cfg):
        t = params[i]["train"]
        size = f", {params[i]['train_fraction']:g} of the rows" if params[i].get("train_fraction", 1.0) < 1 else ""
        parts.append(
            gate.Part(
                Charge.dpsgd(float(t["epsilon"]), float(t["delta"])),
                f"ε={t['epsilon']:g} seed {params[i]['seed']}{size}",
            )
        )
    if not parts:
        raise DPError("this sweep trains no DP model; on a registered dataset's rows only DP models may be trained")
    return Charge.composed([p.charge for p in parts], ReleaseKind.SWEEP), parts


def admit(who: Identity, cfg: SweepConfig) -> gate.Admission:
    """The gate for a sweep (:func:`dpcore.budgets.gate.admit`): the uploader's own rows are charged nothing."""
    df = rows_of(cfg.dataset)
    if df is None:
        return gate.Admission(None, (), (), {})
    return gate.admit(
        who,
        df,
        lambda: price(cfg),
        kind=ReleaseKind.SWEEP,
        description=f"privacy–utility sweep: {len(cfg.epsilons)} ε × {cfg.seeds} seed(s), {cfg.model}",
    )


def point_jobs(cfg: SweepConfig, record: dict) -> list[str]:
    """The job ids of a started sweep's DP points, in the order of its charged parts."""
    jobs = record.get("jobs") or []
    return [jobs[i]["job_id"] for i in dp_points(cfg)]
