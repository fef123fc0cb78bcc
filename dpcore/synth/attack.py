"""The attacks that broke the "anonymised" release, run against a synthetic one.

Everything compares tables at the synthetic release's resolution: real and synthetic rows are both turned into
declared codes (:meth:`dpcore.synth.schema.Schema.encode`), so "the same combination" means the same age, sex,
zip code, salary *bin* and diagnosis. The linkage itself is :mod:`dpcore.attacks.linkage` (the neighbour's facts
through :func:`~dpcore.attacks.linkage.match_mask`, the many-targets guess through
:func:`~dpcore.attacks.linkage.attribute_guess`) and the grouping :mod:`dpcore.attacks.uniqueness`; the
membership test is the one-run audit of :func:`dpcore.attacks.one_run.one_run_lower_bound`.

A synthetic row is nobody: a row that matches the neighbour's facts is a row the model drew because people like
her are common, or because her record moved a marginal. The baseline separates the two: the same attacks on a
synthetic table fitted to an independent population from the same generator (nobody in the story is in it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from ..attacks import linkage, mia, one_run
from ..attacks.uniqueness import class_size_per_record, group_ids
from .schema import Schema


@dataclass(frozen=True)
class Attacker:
    """What the attacker knows and whom they target, fixed once per story: the neighbour's facts (conditions on
    the released columns) and her true sensitive code; the targets' codes; the patients unique on the
    quasi-identifiers in the real table (at release resolution)."""

    qis: tuple[str, ...]
    sensitive: str
    conditions: tuple
    neighbour_code: int | None  # her sensitive value as a code, when her facts single her out in the real table
    targets: pd.DataFrame  # codes (qis + sensitive) of the targets
    unique: pd.DataFrame  # codes (qis + sensitive) of the real patients unique on the qis
    prior_code: int  # the most common sensitive code in the real table (the blind guess)


def attacker(real: pd.DataFrame, real_codes: pd.DataFrame, qis, sensitive: str, conditions, target_rows) -> Attacker:
    qis = tuple(qis)
    cols = list(qis) + [sensitive]
    mask = linkage.match_mask(real, conditions) if conditions else np.zeros(len(real), bool)
    nb = int(real_codes[sensitive].to_numpy()[mask][0]) if mask.sum() == 1 else None
    unique = class_size_per_record(real_codes, list(qis)) == 1
    s = real_codes[sensitive].to_numpy()
    prior = int(np.bincount(s[s >= 0]).argmax())
    return Attacker(
        qis,
        sensitive,
        tuple(conditions),
        nb,
        real_codes.iloc[np.asarray(target_rows)][cols].reset_index(drop=True),
        real_codes[unique][cols].reset_index(drop=True),
        prior,
    )


@dataclass(frozen=True)
class TableAttack:
    """One synthetic table attacked (JSON-able through :meth:`to_dict`)."""

    neighbour_matches: int  # synthetic rows that match every fact the attacker knows about her
    neighbour_right: bool | None  # the diagnosis the attacker reads off them (or guesses blind) is hers
    targets_right: float  # share of targets whose sensitive value the attacker names correctly
    targets_matched: float  # share of targets with at least one synthetic row sharing their quasi-identifiers
    unique_exposed: float  # share of the real unique patients whose combination *and* sensitive value appear

    def to_dict(self) -> dict:
        return asdict(self)


def _present(table: pd.DataFrame, probe: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """For each probe row: does ``table`` hold a row with the same values in ``cols``?"""
    n = len(table)
    ids, g = group_ids(pd.concat([table[cols], probe[cols]], ignore_index=True), cols)
    return np.isin(ids[n:], ids[:n])


def attack_table(
    att: Attacker, synthetic: pd.DataFrame, synthetic_codes: pd.DataFrame, *, seed: int = 0
) -> TableAttack:
    """The neighbour search, the many-targets guess and the exact-combination check on one synthetic table."""
    s_codes = synthetic_codes[att.sensitive].to_numpy()
    fallback = int(np.bincount(s_codes[s_codes >= 0]).argmax()) if (s_codes >= 0).any() else att.prior_code
    matches, right = 0, None
    if att.conditions and len(synthetic):
        mask = linkage.match_mask(synthetic, att.conditions)
        matches = int(mask.sum())
        if att.neighbour_code is not None:
            found = s_codes[mask]
            found = found[found >= 0]
            best = fallback if not len(found) else _majority(found, seed)
            right = bool(best == att.neighbour_code)
    if len(synthetic_codes):
        guess, matched = linkage.attribute_guess(
            synthetic_codes, att.targets, att.qis, att.sensitive, fallback=fallback, seed=seed
        )
        t_right = float(np.mean(guess.astype(np.int64) == att.targets[att.sensitive].to_numpy()))
        t_matched = float(np.mean(matched > 0))
        exposed = (
            float(_present(synthetic_codes, att.unique, list(att.qis) + [att.sensitive]).mean())
            if len(att.unique)
            else 0.0
        )
    else:
        t_right = float(np.mean(att.targets[att.sensitive].to_numpy() == fallback))
        t_matched = exposed = 0.0
    return TableAttack(matches, right, t_right, t_matched, exposed)


def _majority(codes: np.ndarray, seed: int) -> int:
    counts = np.bincount(codes)
    best = np.flatnonzero(counts == counts.max())
    return int(best[np.random.default_rng(seed).integers(len(best))])


def membership_scores(synthetic_codes: pd.DataFrame, candidates: pd.DataFrame, schema: Schema) -> np.ndarray:
    """Each candidate's score: how many synthetic rows equal its whole record (every declared column, at release
    resolution). The attacker's bet: a record the model saw is drawn more often."""
    cols = schema.names
    n = len(synthetic_codes)
    ids, g = group_ids(pd.concat([synthetic_codes[cols], candidates[cols]], ignore_index=True), cols)
    counts = np.bincount(ids[:n], minlength=g)
    return counts[ids[n:]].astype(np.float64)


def membership_test(
    synthetic_codes: pd.DataFrame, pool_codes: pd.DataFrame, included: np.ndarray, schema: Schema, delta: float
) -> dict:
    """One-run membership audit (Steinke, Nasr & Jagielski 2023) on a synthetic table fitted to the ``included``
    half of ``pool`` (each pool record put in by a coin flip): the ε it proves at 95% confidence, and the
    attack's AUC and true-positive rate at 1% false positives."""
    scores = membership_scores(synthetic_codes, pool_codes, schema)
    inc = np.asarray(included, dtype=bool)
    r = mia.roc(scores[inc], scores[~inc])
    lb = one_run.one_run_lower_bound(scores, inc, delta=delta)
    return {
        "auc": r.auc,
        "tpr_at_1pct_fpr": r.tpr_at_fpr(0.01),
        "advantage": r.advantage,
        "lower_bound": lb["lower_bound"],
        "confidence": lb["confidence"],
        "n_canaries": lb["n_canaries"],
        "guesses": lb["guesses"],
        "correct": lb["correct"],
        "tried": lb["tried"],
        "delta": lb["delta"],
        "members_in_synthetic": float(np.mean(scores[inc] > 0)),
        "nonmembers_in_synthetic": float(np.mean(scores[~inc] > 0)),
    }
