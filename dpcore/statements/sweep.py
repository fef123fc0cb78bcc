"""The statement of a privacy–utility sweep (:func:`for_sweep`: one block per DP point, :func:`for_point`, each with
its audit) and its recomputation (:func:`check`); :func:`gap_words`, the gap between a point's proven and measured
ε in words, read from the same block.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from dpcore import claims, nist
from dpcore.budgets import gate
from dpcore.errors import DPError
from dpcore.statements import dpsgd, signing
from dpcore.statements.checks import Checker, get, obj
from dpcore.statements.common import (
    ADD_REMOVE_N_PUBLIC,
    DIAGNOSTICS_NOTE,
    N_PUBLIC_NOTE,
    check_noise,
    deltas,
    leaks,
    noise,
    public_settings,
)
from dpcore.sweep import runs as sweep_runs
from dpcore.training.config import dataset_kind, dataset_name, delta_warning, unit_of_privacy

Json = dict[str, Any]
KIND = "sweep"
AUDIT_FIELDS = dpsgd.AUDIT_FIELDS


def for_point(p: Mapping[str, Any], *, rows: int | None = None, accountant: bool = False) -> Json:
    """One DP-SGD point of a sweep: ε at δ = 1e-5, 1e-6 and its own δ (PLD; with ``accountant`` also the run's
    own accountant recomputed), μ, the worst-case ROC it stored (``p["tradeoff"]``, the PLD of what was run), the
    run's own claim, the privacy-loss tail, its audit, and its test accuracy as a diagnostic (not covered by ε).
    ``n`` is the rows the point trained on (canaries included), else ``rows``."""
    if not (p.get("noise_multiplier") and p.get("sample_rate") and p.get("steps")):
        raise DPError("this model has no DP-SGD noise multiplier, sample rate and steps to state")
    n = p.get("n_train") or rows
    blk = dpsgd.block(
        p["noise_multiplier"],
        p["sample_rate"],
        p["steps"],
        deltas(p.get("delta")),
        accountant=p.get("accountant") if accountant else None,
        tradeoff=p.get("tradeoff"),
    )
    e = obj(p.get("empirical_epsilon"))
    nz = noise(p)
    blk.update(
        {
            "target_epsilon": p["epsilon"],
            "seed": p.get("seed"),
            "rows": n,
            "diagnostics": {
                "not_covered_by_epsilon": True,
                "note": DIAGNOSTICS_NOTE,
                "test_accuracy": claims.diagnostic(p.get("test_accuracy")),
            },
            "accountant": {"name": p.get("accountant"), "epsilon": p.get("epsilon_spent"), "delta": p.get("delta")},
            "audit": None if not e else {k: e.get(k) for k in AUDIT_FIELDS},
            "leaks": leaks(
                preprocessing=p.get("leaks") or (),
                warnings=delta_warning(p.get("delta"), n),
                reproducible=nz["reproducible_noise"],
                public_n=False,
            ),
            **nz,
        }
    )
    if p.get("preprocessing"):
        blk["preprocessing"] = p["preprocessing"]
    if p.get("epsilon_spent") is not None and p.get("delta"):
        blk["loss_tail"] = dpsgd.loss_tail(
            p["noise_multiplier"], p["sample_rate"], p["steps"], p["epsilon_spent"], p["delta"]
        )
    return blk


def for_sweep(sweep_id: str, *, caller: Any) -> Json:
    """Statement for a stored privacy–utility sweep: one block per DP point, with its audit (for a caller who
    may read the sweep). Unsigned: :func:`dpcore.statements.signing.issue` signs it."""
    rec = sweep_runs.load(sweep_id, caller=caller)
    result = rec.get("result")
    if not result or not result.get("points"):
        raise DPError(f"sweep {sweep_id!r} has no finished points yet; a statement needs finished points")
    cfg = rec.get("config") or {}
    points = [
        for_point(p, rows=cfg.get("train_size"), accountant=True)
        for p in result["points"]
        if p.get("noise_multiplier") and p.get("sample_rate") and p.get("steps")
    ]
    if not points:
        raise DPError(f"sweep {sweep_id!r} has no DP-SGD points to state (only a baseline or diffprivlib models)")
    seen: set[tuple[Any, Any]] = set()
    all_leaks: list[Json] = []
    for pt in points:
        for lk in pt["leaks"]:
            if (lk["kind"], lk["text"]) not in seen:
                seen.add((lk["kind"], lk["text"]))
                all_leaks.append(lk)
    all_leaks.append(
        {
            "kind": "diagnostics",
            "text": "each point's test accuracy and the membership attacks' results are " + DIAGNOSTICS_NOTE,
        }
    )
    all_leaks.append({"kind": "public_n", "text": N_PUBLIC_NOTE})
    out: Json = {
        "kind": KIND,
        "subject": sweep_id,
        "name": rec.get("name"),
        "unit_of_privacy": unit_of_privacy(cfg.get("dataset")),
        "neighbour_relation": ADD_REMOVE_N_PUBLIC,
        "dataset": public_settings(None, cfg.get("dataset"))["dataset"],
        "dataset_kind": dataset_kind(cfg.get("dataset")),
        "model": cfg.get("model"),
        "rows": cfg.get("train_size"),
        "points": points,
        "leaks": all_leaks,
        **({"preprocessing": points[0]["preprocessing"]} if points[0].get("preprocessing") else {}),
        "reproducible_noise": any(pt["reproducible_noise"] for pt in points),
        "budget": gate.statement_block(
            job=[e["job_id"] for e in rec.get("jobs") or [] if e.get("job_id")],
            uploaded=dataset_kind(cfg.get("dataset")) in ("csv", "upload"),
        ),
        "summary": f"{len(points)} DP point(s); each bounded by its own accountant and audited on held-out "
        "rows (lower bound at the stated confidence)",
    }
    out["nist"] = nist.for_statement(out)
    return out


def signed(sweep_id: str, *, caller: Any) -> Json:
    """:func:`for_sweep`, signed: the statement the privacy–utility page and ``statement --sweep`` hand out."""
    return signing.issue(for_sweep(sweep_id, caller=caller))


def check(c: Checker, st: Mapping[str, Any]) -> None:
    """A sweep's statement: its wording for its dataset, n public, and each point's DP-SGD block recomputed."""
    kind = st.get("dataset_kind")
    c.same("dataset", st.get("dataset"), dataset_name(kind), 0)
    c.same("unit_of_privacy", st.get("unit_of_privacy"), unit_of_privacy(kind), 0)
    c.same("neighbour_relation", st.get("neighbour_relation"), ADD_REMOVE_N_PUBLIC, 0)
    raw_leaks = st.get("leaks")
    if not any(isinstance(lk, dict) and lk.get("text") == N_PUBLIC_NOTE for lk in raw_leaks or []):
        c.fail("leaks", "leaks does not say that n and the classes are treated as public")
    points = st.get("points")
    if not isinstance(points, list) or not points:
        c.fail("points", "points is missing or empty (a sweep statement states each DP point)")
        return
    reps = []
    for i, p in enumerate(points):
        if not isinstance(p, dict):
            c.fail(f"points[{i}]", f"points[{i}] is not an object")
            continue
        check_noise(c, p, f"points[{i}].")
        reps.append(p.get("reproducible_noise") is True)
        if get(p, "diagnostics.not_covered_by_epsilon") is not True:
            c.fail(f"points[{i}].diagnostics", f"points[{i}].diagnostics must be labelled not_covered_by_epsilon")
        dpsgd.check(c, p, f"points[{i}].")
    c.same("reproducible_noise", st.get("reproducible_noise"), any(reps), 0)


def ceiling_tpr(blk: Mapping[str, Any], fpr: float) -> float:
    """The worst-case TPR at ``fpr`` on a block's trade-off curve (interpolated in log FPR; the curve is
    concave, so this under-states the ceiling by at most the grid's spacing: for words, not for proofs)."""
    f = np.asarray(blk["tradeoff"]["fpr"], float)
    t = np.asarray(blk["tradeoff"]["tpr"], float)
    keep = f > 0
    return float(np.interp(np.log(fpr), np.log(f[keep]), t[keep]))


def gap_words(
    blk: Mapping[str, Any], mia: Mapping[str, Any] | None = None, *, labels: Mapping[str, str] | None = None
) -> str:
    """The gap between the proven ε (the accountant's upper bound) and the measured one (the audit's lower
    bound) of one :func:`for_point` block, in words; with the point's ``mia`` results, also at 1% FPR: the
    worst-case TPR against the best measured attack's."""
    a = obj(blk.get("accountant"))
    claimed, d = a.get("epsilon"), a.get("delta")
    if claimed is None:
        row = blk["epsilon_at_delta"][0]
        claimed, d = row["epsilon_pld"], row["delta"]
    name = str(a.get("name") or "PLD").upper()
    text = f"**Proven:** ε ≤ {claims.up(claimed)} at δ = {claims.delta(d)} (add/remove one record; {name} accountant)."
    au = blk.get("audit")
    if not au or au.get("lower_bound") is None:
        return text + " No audit was run on this model, so nothing was measured."
    lb, conf = float(au["lower_bound"]), au.get("confidence") or 0.95
    who = "the canary audit" if au.get("attack") == "canary" else "the audit"
    if lb > claimed + 1e-9:
        return text + (
            f" **Measured:** {who} proves ε ≥ {claims.down(lb)} ({conf:.0%} confidence) — *above* the proven ε: "
            f"a bug in training or accounting (or the {1 - conf:.0%} chance that a {conf:.0%} bound is wrong); "
            "please report it."
        )
    if lb <= 0:
        text += (
            f" **Measured:** {who} proves nothing (ε ≥ 0 at {conf:.0%} confidence). The whole gap of "
            f"{claims.up(claimed)} is unmeasured"
        )
    else:
        text += (
            f" **Measured:** {who} proves ε ≥ {claims.down(lb)} ({conf:.0%} confidence). The gap, {claimed - lb:.2f}, "
            f"means the attacks showed {lb / claimed:.0%} of what the accountant allows"
        )
    text += (
        ": either attackers on this model are weaker than the worst case the accountant allows for, or "
        "these attacks are not the strongest — the proven bound is what holds against every attacker."
    )
    cert = au.get("max_certifiable")
    if cert is not None and cert < claimed:
        text += (
            f" This audit could not have proved more than ε ≈ {cert:.1f} even with every guess right, "
            "so it cannot close the gap."
        )
    measured = {k: v["tpr_at_1pct_fpr"] for k, v in (mia or {}).items() if v.get("tpr_at_1pct_fpr") is not None}
    if measured and obj(blk.get("tradeoff")).get("fpr"):
        best = max(measured, key=lambda k: measured[k])
        shown = (labels or {}).get(best, best)
        ceiling = ceiling_tpr(blk, 0.01)
        text += (
            f" At 1% false positives the worst case lets an attacker catch at most {claims.percent(ceiling, up=True)} "
            f"(rounded up) of members; the best attack measured caught {measured[best]:.1%} ({shown})."
        )
        if measured[best] > ceiling:  # the audit above already said whether anything is proved beyond the claim
            n = obj((mia or {}).get(best)).get("n_members")
            few = f"on {n:,} members one more caught moves it by {1 / n:.1%}" if n else "it is measured on a sample"
            text += (
                f" That is above the worst case only as a measured rate can be: {few}, so it is noisy, and "
                "one rate is no proof; the audit's bound, which allows for that noise, is the measurement that "
                "counts."
            )
    return text
