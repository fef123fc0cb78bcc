"""The end of the re-identification story: the DP synthetic table, in words and side by side with the other
defences at the same ε. The page and the HTML report both call these, so they say the same thing.

Every number here comes from a finished :mod:`dpcore.synth.study` (several releases per ε: means with their
range) and from the story's own parts (:mod:`dpcore.attacks.reidentification`): the release, its generalisation
and the noisy-counts simulation, all scored on the same patients (:func:`dpcore.attacks.linkage.pick_targets`).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.stats import fisher_exact

from .. import claims
from ..attacks import linkage
from ..attacks import reidentification as reid
from .study import NOT_COVERED, Study


def _count(mean: float, lo: int, hi: int) -> str:
    """Rows over the releases: "2" when every release had 2, else the mean and range, "1.4 (0–3)"."""
    return f"{lo}" if lo == hi else f"{mean:.1f} ({lo}–{hi})"


def count_text(nb: dict) -> str:
    """The neighbour's matching rows over the releases, as the tab's metric shows them."""
    return _count(nb["mean"], nb["min"], nb["max"])


def _times(k: float, r: int) -> str:
    k = int(round(k))
    return f"{k} of {r} release{'' if r == 1 else 's'}"


def _spread(s: dict | None) -> str:
    """A share over the releases: its mean and range, "46% (44–48%)"."""
    if not s:
        return "—"
    if round(s["min"] * 100) == round(s["max"] * 100):
        return f"{s['mean']:.0%}"
    return f"{s['mean']:.0%} ({s['min'] * 100:.0f}–{s['max'] * 100:.0f}%)"


def neighbour_counts(study: Study, epsilon: float) -> dict:
    """The neighbour over the repetitions at ``epsilon``: matches (mean, min, max), releases where exactly one
    row matched, releases where the diagnosis read off the matches was hers, and the same for the baseline."""
    runs = study.point(epsilon)["runs"]
    m = [r["neighbour_matches"] for r in runs]
    right = [r["neighbour_right"] for r in runs if r["neighbour_right"] is not None]
    base = [r["baseline_neighbour_right"] for r in runs if r["baseline_neighbour_right"] is not None]
    bm = [r["baseline_neighbour_matches"] for r in runs]
    return {
        "repetitions": len(runs),
        "mean": float(np.mean(m)),
        "min": int(min(m)),
        "max": int(max(m)),
        "single": sum(x == 1 for x in m),
        "right": sum(right),
        "judged": len(right),
        "baseline_right": sum(base),
        "baseline_mean": float(np.mean(bm)),
        "baseline_min": int(min(bm)),
        "baseline_max": int(max(bm)),
    }


def her_named(nb: dict) -> bool:
    """Is her diagnosis named because her record is in the table? Yes when the matching rows name it in most
    releases, or significantly more often than the tables fitted without her (one-sided Fisher exact test at 5%):
    with a few releases, one lucky match in the tables of the patients is chance, and the baseline shows it."""
    r, a, b = nb["judged"], nb["right"], nb["baseline_right"]
    if not r or not a:
        return False
    if a > r / 2:
        return True
    return fisher_exact([[a, r - a], [b, r - b]], alternative="greater")[1] < 0.05


def headline(study: Study, epsilon: float, sensitive_label: str = "diagnosis") -> tuple[str, str]:
    """(short claim, detail) for the synthetic tab at ``epsilon``: is the neighbour still found, is her
    diagnosis named more often than without her record, and how the many-targets guess compares with blind."""
    p = study.point(epsilon)
    e, ref = p["epsilon"], study.result["reference"]
    nb = neighbour_counts(study, e)
    r = nb["repetitions"]
    t, tb = p["summary"]["targets_right"], p["summary"].get("baseline_targets_right")
    blind = ref["blind_right"]
    found = her_named(nb)
    beats_blind = t["mean"] > max(blind, tb["mean"] if tb else 0) + 0.05
    if not found and not beats_blind:
        claim = f"At ε = {e:g} the neighbour is no longer found"
    elif found:
        claim = f"At ε = {e:g} the synthetic table still points at her"
    else:
        claim = f"At ε = {e:g} the synthetic table still reveals diagnoses"
    matches = (
        f"{nb['min']}–{nb['max']} rows ({nb['mean']:.1f} on average)"
        if nb["min"] != nb["max"]
        else f"{nb['min']} row{'' if nb['min'] == 1 else 's'}"
    )
    her = (
        f"the attacker's guess of her {sensitive_label} (read off those rows, or blind when none match) is right "
        f"('{ref['neighbour_value']}') in {_times(nb['right'], r)} ({_times(nb['baseline_right'], r)} for tables "
        "fitted without her)"
        if nb["judged"]
        else ""
    )
    u, ub = p["summary"]["unique_exposed"], p["summary"].get("baseline_unique_exposed")
    detail = (
        f"In {r} DP synthetic table{'' if r == 1 else 's'} of the {study.config.n:,} patients, {matches} "
        f"match what you know about her" + (f", and {her}" if her else "") + ". "
        f"Over {study.config.n_targets} patients, the same linkage names the {sensitive_label} right "
        f"{_spread(t)} of the time; tables without them reach {_spread(tb)}, and a blind guess of the most "
        f"common one ('{ref['blind_value']}') {blind:.0%}. The exact combination and {sensitive_label} of "
        f"{_spread(u)} of the unique patients appear in the tables ({_spread(ub)} in tables without them)."
    )
    return claim, detail


def guarantee(study: Study, epsilon: float, sensitive_label: str = "diagnosis") -> str:
    """The guarantee that applies, in words (markdown): the statement's ε and δ for add/remove one patient, the
    replace-one reading for a known patient's value, and what was declared public."""
    st = study.statement(epsilon)
    if not st:
        return ""
    eps, d = st["epsilon"], st["delta"]
    dtext = "δ = 0" if not d else f"δ = {claims.delta(d)}"
    ratio = math.exp(2 * eps)
    cols = ", ".join(reid.label(c["name"]) for c in st["declared_public"]["columns"])
    return (
        f"**The guarantee that applies.** Each synthetic table is **ε = {claims.up(eps)}** ({dtext}) "
        f"differentially private for adding or removing one patient: OpenDP's privacy map of "
        f"{st['generator']['name']}, whose noise comes from OpenDP's secure samplers. For a known patient's "
        f"{sensitive_label} (replace-one) it is ε = {claims.up(2 * eps)}: any table is at most "
        f"{claims.up(ratio)}× as likely under one {sensitive_label} as under another. Declared public "
        f"beforehand, not read from the rows: the categories or bounds and bins of {cols}; the number of rows is "
        f"{st['declared_public']['rows']}."
    )


def comparison(
    study: Study,
    epsilon: float,
    *,
    release: pd.DataFrame,
    generalisation,
    dp: dict,
    qis,
    sensitive: str,
    facts,
    target_seed: int = 0,
    n_targets: int = 200,
) -> pd.DataFrame:
    """The defences side by side at ``epsilon``: rows matching the neighbour, her diagnosis named, the patients'
    diagnoses named correctly, and the guarantee. ``dp`` is the noisy-counts simulation at the same ε
    (:func:`dpcore.attacks.reidentification.dp_part`); ``generalisation`` the page's bands."""
    p = study.point(epsilon)
    e, ref, r = p["epsilon"], study.result["reference"], len(p["runs"])
    qis = list(qis)
    targets = linkage.pick_targets(len(release), n_targets, target_seed)
    mask = linkage.match_mask(release, reid.conditions(facts))
    her = np.flatnonzero(mask) if mask.sum() == 1 else None
    truth = release[sensitive].astype(str).to_numpy()

    def table_row(name, table, guarantee):
        guess, _ = linkage.attribute_guess(table, table.iloc[targets], qis, sensitive)
        right = f"{np.mean(guess.astype(str) == truth[targets]):.0%}"
        if her is None:
            return [name, "—", right, "—", guarantee]
        g, matched = linkage.attribute_guess(table, table.iloc[her], qis, sensitive)
        return [name, "yes" if str(g[0]) == truth[her][0] else "no", right, f"{int(matched[0]):,}", guarantee]

    rows = [table_row("names removed", release, "none")]
    if generalisation is not None:
        rows.append(table_row("generalised", reid.generalised(release, generalisation), "none (k is not one)"))
    rows.append(
        [
            f"noisy counts, ε = {e:g}",
            "—",
            f"{dp['at_epsilon']:.0%}",
            "no rows",
            f"ε = {e:g} (δ = 0); {claims.up(2 * e)} replace-one",
        ]
    )
    nb = neighbour_counts(study, e)
    st = study.statement(e) or {}
    d = claims.delta(st["delta"]) if st.get("delta") else 0
    rows.append(
        [
            f"DP synthetic, ε = {e:g}",
            _times(nb["right"], r) if nb["judged"] else "—",
            _spread(p["summary"]["targets_right"]),
            _count(nb["mean"], nb["min"], nb["max"]),
            f"ε = {claims.up(st.get('epsilon', e))} (δ = {d}); {claims.up(2 * st.get('epsilon', e))} replace-one",
        ]
    )
    rows.append(
        [
            "synthetic, without them",
            _times(nb["baseline_right"], r) if nb["judged"] else "—",
            _spread(p["summary"].get("baseline_targets_right")),
            _count(nb["baseline_mean"], nb["baseline_min"], nb["baseline_max"]),
            "nobody's record in it",
        ]
    )
    rows.append(
        [
            "blind guess",
            "no" if ref.get("neighbour_value") not in (None, ref.get("blind_value")) else "yes",
            f"{ref['blind_right']:.0%}",
            "—",
            "—",
        ]
    )
    what = reid.label(sensitive)
    return pd.DataFrame(
        rows,
        columns=[
            "defence",
            f"her {what} named",
            f"{what} named ({n_targets} patients)",
            "rows matching her",
            "guarantee",
        ],
    )


def comparison_note(study: Study, epsilon: float, generalisation) -> str:
    """What the side-by-side table's rows and columns are, in words (the caption under it)."""
    p = study.point(epsilon)
    r = len(p["runs"])
    gen = f"generalised: {reid._gen_text(generalisation)}; " if generalisation is not None else ""
    return (
        f"Rows: the release with names removed; {gen}noisy counts simulated as on the DP defence tab; {r} DP "
        f"synthetic table{'' if r == 1 else 's'} of the patients, and as many fitted to an independent population "
        "(nobody in the story is in them); a blind guess of the most common value. Columns: is her diagnosis "
        f"named (in how many releases), the share of {study.config.n_targets} patients whose diagnosis the "
        "linkage names, the rows that match her facts (mean and range over releases), and the guarantee "
        "(add/remove one patient; replace-one for a known patient's value)."
    )


def findings(study: Study, epsilon: float) -> pd.DataFrame:
    """The synthetic release's numbers at ``epsilon`` as (finding, value) rows (the report's table)."""
    p = study.point(epsilon)
    e, s, ref = p["epsilon"], p["summary"], study.result["reference"]
    nb = neighbour_counts(study, e)
    r = nb["repetitions"]
    st = study.statement(e) or {}
    floor = (ref.get("sampling_floor") or {}).get("two_way_max")
    rows = [
        ("privacy statement", st.get("summary", "—")),
        ("synthetic releases measured", f"{r} at ε = {e:g} (and {r} fitted to an independent population)"),
        (
            "rows matching the neighbour's facts",
            f"{nb['mean']:.1f} on average ({nb['min']}–{nb['max']}); exactly one in {_times(nb['single'], r)}",
        ),
        (
            "her diagnosis named by the matching rows",
            f"{_times(nb['right'], r)} (without her record: {_times(nb['baseline_right'], r)})",
        ),
        (
            "patients' diagnosis named correctly",
            f"{_spread(s['targets_right'])} (without them: "
            f"{_spread(s.get('baseline_targets_right'))}; blind guess "
            f"{ref['blind_right']:.0%}; the table itself "
            f"{ref['exact']['targets_right']:.0%})",
        ),
        (
            "unique patients whose exact combination and diagnosis appear",
            f"{_spread(s['unique_exposed'])} (without them: {_spread(s.get('baseline_unique_exposed'))})",
        ),
        (
            "membership audit (one run, 2,000 canaries)",
            f"AUC {s['membership_auc']['mean']:.2f}; proves ε ≥ {claims.down(s['membership_lower_bound']['max'])} at "
            "best (95% confidence each)",
        ),
        (
            "2-way marginals that matter: largest cell error",
            f"{s['two_way_max']['mean']:.1f} points ({s['two_way_max']['min']:.1f}–{s['two_way_max']['max']:.1f})"
            + (f"; two real samples differ by {floor:.1f}" if floor is not None else ""),
        ),
    ]
    if "model_accuracy" in s and ref.get("model_accuracy") is not None:
        rows.append(
            (
                "model trained on synthetic rows, tested on real ones",
                f"{_spread(s['model_accuracy'])} accuracy (trained on the real table: {ref['model_accuracy']:.0%})",
            )
        )
    rows.append(("not covered by ε", NOT_COVERED))
    return pd.DataFrame(rows, columns=["finding", "value"])
