"""The re-identification story, computed once for the page, the HTML report and the tests.

Every number the re-identification page shows for a set of :class:`StorySettings` comes from the
functions here, and :func:`story` runs all of them for the report, so the two never disagree (they
once did: 62 vs 66 people re-identified, from different register seeds and simulation grids).

The default story (n = 1,000 patients as in the source notebook, seed ``datasets.REID_SEED``): the
neighbour -- 34 years old, zip 10001, salary $50-60k -- is exactly one woman, and her diagnosis shows.
Everything here is computed on raw synthetic data for teaching; the DP part is a numpy simulation.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import pandas as pd

from .. import claims, limits
from ..data import datasets, filters
from ..noise.interpret import guess_ceiling
from ..safe_math import exp_or_inf
from ..validation import check_epsilon
from . import generalise, linkage, uniqueness
from .linkage import LinkageResult
from .uniqueness import UniquenessReport

#: ε values of the DP simulation's curve (the page's slider offers the same ones); defined in dpcore.limits.
EPSILONS = limits.REID_EPSILONS
#: Generalisation the page starts from: 10-year age bands, 3 zip digits, $10k salary bands.
DEFAULT_GENERALISATION = (("age_band", 10), ("zip_digits", 3), ("salary_band", 10_000))
#: Display names of the synthetic medical columns (field labels, sentences, table headers); see :func:`label`.
COLUMN_LABELS = {
    "age": "age",
    "sex": "sex",
    "zip_code": "zip code",
    "birth_year": "birth year",
    "ethnicity": "ethnicity",
    "salary": "salary",
    "has_rare_disease": "rare disease",
    "diagnosis": "diagnosis",
}
QI_LABELS = {q: COLUMN_LABELS[q] for q in datasets.QUASI_IDENTIFIERS}
#: What a matching row tells the attacker, in the order a table shows it (before the facts they knew).
REVEALING_COLUMNS = ("diagnosis", "has_rare_disease")


def label(column: str) -> str:
    """A synthetic column's display name: ``zip_code`` -> ``zip code``, ``has_rare_disease`` -> ``rare disease``;
    any other snake_case name gets spaces (``first_name`` -> ``first name``). Not for uploaded names."""
    return COLUMN_LABELS.get(column, str(column).replace("_", " "))


def shown_table(df: pd.DataFrame, first=()) -> pd.DataFrame:
    """``df`` as a page shows and downloads it: display names, the columns in ``first`` (those present) leading."""
    order = [c for c in first if c in df.columns] + [c for c in df.columns if c not in first]
    return df[order].rename(columns=label)


@dataclass(frozen=True)
class StorySettings:
    """Everything that decides the story's numbers (the page's widgets; the report's defaults)."""

    n: int = datasets.REID_N
    seed: int = datasets.REID_SEED
    facts: tuple[tuple[str, str], ...] = tuple(linkage.DEFAULT_SCENARIO.items())
    qis: tuple[str, ...] = ("age", "sex", "zip_code", "salary")
    sensitive: str = "diagnosis"
    coverage: float = 0.5
    outsiders: float = 0.25
    register_seed: int = 1
    link_on: tuple[str, ...] = ("birth_year", "age", "sex", "zip_code")
    generalisation: tuple[tuple[str, int], ...] = DEFAULT_GENERALISATION
    epsilon: float = 1.0
    releases: int = 100
    n_targets: int = 200
    sim_seed: int = 0


# --- the parts (the page caches each one) ------------------------------------------------------------


def population(n: int, seed: int) -> pd.DataFrame:
    return datasets.medical_population(n, seed)


def release_of(pop: pd.DataFrame) -> pd.DataFrame:
    """What the hospital publishes: the population without names and ids."""
    return pop.drop(columns=["person_id", "name"])


def conditions(facts) -> list:
    """The attacker's facts (column, text) as conditions; blanks are dropped."""
    return [c for c in (filters.parse_field(col, text) for col, text in facts) if c is not None]


@dataclass(frozen=True)
class Neighbour:
    result: linkage.NeighbourResult
    narrowing: pd.DataFrame  # one row per fact, in the order given: matches once that fact is added

    @property
    def matches(self) -> int:
        return self.result.matches

    @property
    def singled_out(self) -> bool:
        return self.result.matches == 1

    def table(self) -> pd.DataFrame:
        """The matching rows as shown: what the attacker learns (diagnosis, rare disease) first, display names."""
        return shown_table(self.result.records, first=REVEALING_COLUMNS)

    def record(self) -> dict | None:
        """The one matching row (the neighbour's record), when the facts single her out."""
        return self.result.records.iloc[0].to_dict() if self.singled_out else None


def neighbour(release: pd.DataFrame, facts) -> Neighbour:
    """Find-your-neighbour on the release, and how the matches fall as each fact is added."""
    conds = conditions(facts)
    res = linkage.find_matches(release, conds, sensitive=list(REVEALING_COLUMNS), label=label)
    rows = [
        {"fact known": _describe(c), "matching patients": int(linkage.match_mask(release, conds[: i + 1]).sum())}
        for i, c in enumerate(conds)
    ]
    return Neighbour(res, pd.DataFrame(rows, columns=["fact known", "matching patients"]))


def _describe(c) -> str:
    label = QI_LABELS.get(c.column, c.column)
    if c.is_range:
        if c.column == "salary":  # one "$" only: two would start a formula in Streamlit's markdown
            return f"{label} ${c.low:,.0f}–{c.high:,.0f}"
        return f"{label} {c.low:g}–{c.high:g}"
    return f"{label} {c.value}" if c.op == "=" else f"{label} {c.op} {c.value}"


def generalised(df: pd.DataFrame, generalisation) -> pd.DataFrame:
    return df if generalisation is None else generalise.generalise_medical(df, **dict(generalisation))


def uniqueness_part(release: pd.DataFrame, qis, sensitive, generalisation=None):
    """(report, incremental table) on the release, exact or generalised."""
    df = generalised(release, generalisation)
    return uniqueness.uniqueness(df, list(qis), sensitive), uniqueness.incremental(df, list(qis), sensitive)


def register_part(pop: pd.DataFrame, coverage: float, outsiders: float, register_seed: int) -> pd.DataFrame:
    return linkage.public_register(pop, coverage=coverage, outsiders=outsiders, seed=register_seed)


def linkage_part(pop: pd.DataFrame, register: pd.DataFrame, on, generalisation=None) -> linkage.LinkageResult:
    rel = generalised(pop.drop(columns=["name"]), generalisation)
    return linkage.link(rel, generalised(register, generalisation), list(on))


def dp_part(
    release: pd.DataFrame, qis, sensitive: str, epsilon: float, releases: int, n_targets: int, sim_seed: int
) -> dict:
    """The DP simulation on the grid plus the chosen ε (each ε's figure is independent of the grid)."""
    eps = check_epsilon(epsilon)
    grid = sorted(set(EPSILONS) | {eps})
    sim = linkage.dp_attack_simulation(
        release, list(qis), sensitive, grid, n_releases=releases, n_targets=n_targets, seed=sim_seed
    )
    curve = sim["curve"]
    sim["at_epsilon"] = float(curve.loc[curve["epsilon"] == eps, "success_rate"].iloc[0])
    sim["epsilon"] = eps
    sim.update(dp_guarantee(eps, sim["prior_guess"]))
    return sim


def dp_guarantee(epsilon: float, prior_guess: float) -> dict:
    """Which guarantee covers the attacker's question, and what it bounds.

    The attacker asks, for the target's quasi-identifiers, one Laplace(1/ε) count per diagnosis. Adding or
    removing one person changes one count by 1: the answers are ε-DP under add/remove-one (the ledger's
    relation). But the attacker already knows the target is in the data and asks *which* diagnosis she has:
    two datasets that differ in her diagnosis only (replace-one) differ in two counts, so the answers are
    2ε-DP for that question. Any output is then at most e^(2ε) times more likely under one diagnosis than
    under another, so whatever the attacker knew before, their chance of guessing right is at most
    e^(2ε) times the chance without the release (:func:`dpcore.noise.interpret.guess_ceiling`).
    """
    eps = check_epsilon(epsilon)
    replace_eps = 2 * eps
    return {
        "epsilon_add_remove": eps,
        "epsilon_replace_one": replace_eps,
        "likelihood_ratio": exp_or_inf(replace_eps),
        "ceiling": float(guess_ceiling(replace_eps, prior_guess)),
        "typical_noise": 1.0 / eps,
    }


def dp_why(sim: dict, label=str) -> str:
    """Why the noisy counts defeat the attacker, in words (markdown), for the simulation at its ε — and, when the
    attacker who trusts the counts does worse than a blind guess, why that happens (it is not DP's doing)."""
    eps, v, what = sim["epsilon"], sim["n_values"], label(sim["sensitive"])
    text = (
        f"**Why the noise defeats the attacker.** The target's group holds one or a few patients, but each "
        f"count carries noise of typically ±{people(sim['typical_noise'])} at ε = {eps:g}. At small ε the noisy "
        "counts say almost nothing."
    )
    at, prior = sim["at_epsilon"], sim["prior_guess"]
    if round(at * 100) < round(prior * 100):
        text += (
            f" Here the attacker who trusts them does **worse than a blind guess** ({at:.0%} against "
            f"{prior:.0%}): in a group of one or a few patients the largest of the {v} noisy counts is close to "
            f"a random pick among the {v} values of {what} (right about {1 / v:.0%} of the time), while the "
            f"blind guess always names the most common {what}. DP never makes the best guess worse than "
            "guessing without the release: an attacker who knows the noise is this large ignores the counts "
            "and guesses blind."
        )
    elif round(at * 100) >= round(sim["no_noise"] * 100):
        text += (
            f" At ε = {eps:g} the noise is small beside a count of one: the attacker reads the counts as if "
            "they were exact."
        )
    return text


def useful_epsilon(prior_guess: float) -> float:
    """The ε (add/remove) below which the replace-one ceiling e^(2ε) × the blind guess stays under 100%."""
    return math.log(1.0 / prior_guess) / 2 if 0 < prior_guess < 1 else 0.0


def dp_guarantee_text(sim: dict, label=str) -> str:
    """The guarantee that covers the attacker's question (markdown). When its ceiling reaches 100% it says the
    bound no longer limits this guess, and below which ε it would (an "at most 100%" says nothing)."""
    eps, what = sim["epsilon"], label(sim["sensitive"])
    ratio = claims.up(sim["likelihood_ratio"])
    text = (
        f"**The guarantee that applies.** Each set of answers is ε = {eps:g} differentially private for adding "
        "or removing one patient (the relation this app's budgets use). The attacker's question is different: "
        f"they know the target is in the data and ask *which* {what} she has. Changing only her {what} moves "
        f"two counts, so for that replace-one question the guarantee is **ε = {sim['epsilon_replace_one']:g}** "
        f"(δ = 0): any answer is at most {ratio}× as likely under one {what} as under another, so whatever the "
        f"attacker knew before, the release can make their guess at most {ratio}× as likely to be right"
    )
    ceiling = claims.percent(sim["ceiling"], 0, up=True)
    if ceiling == "100%":
        return text + (
            f". **At ε = {eps:g} that bound says nothing:** {ratio}× the blind guess's "
            f"{sim['prior_guess']:.0%} is more than certainty. It limits this guess only for ε below "
            f"{claims.down(useful_epsilon(sim['prior_guess']), 2)} — the simulation above is what an "
            "attacker actually gets here."
        )
    return text + (
        f" — here at most {ceiling} for an attacker whose best guess without it was right "
        f"{sim['prior_guess']:.0%} of the time."
    )


# --- the whole story -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Story:
    settings: StorySettings
    neighbour: Neighbour
    uniqueness: UniquenessReport  # the names, not uniqueness.X: these fields shadow the modules in the class
    steps: pd.DataFrame
    linkage: LinkageResult
    generalised_uniqueness: UniquenessReport | None
    generalised_linkage: LinkageResult | None
    dp: dict

    def headline(self) -> tuple[str, str]:
        return headline(self.uniqueness)

    def findings(self) -> pd.DataFrame:
        return findings(self)


def story(settings: StorySettings | None = None, **changes) -> Story:
    """Run every part of the story for these settings (the report; the page calls the parts)."""
    s = replace(settings or StorySettings(), **changes)
    pop = population(s.n, s.seed)
    rel = release_of(pop)
    nb = neighbour(rel, s.facts)
    rep, steps = uniqueness_part(rel, s.qis, s.sensitive)
    reg = register_part(pop, s.coverage, s.outsiders, s.register_seed)
    lr = linkage_part(pop, reg, s.link_on)
    g_rep = g_lr = None
    if s.generalisation is not None:
        g_rep, _ = uniqueness_part(rel, s.qis, s.sensitive, s.generalisation)
        g_lr = linkage_part(pop, reg, s.link_on, s.generalisation)
    dp = dp_part(rel, s.qis, s.sensitive, s.epsilon, s.releases, s.n_targets, s.sim_seed)
    return Story(s, nb, rep, steps, lr, g_rep, g_lr, dp)


def _and(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def headline(rep: uniqueness.UniquenessReport) -> tuple[str, str]:
    """The strongest true figure: the share of patients whom their quasi-identifiers single out, as a short
    claim to show in bold and the detail behind it in plain text (as one bold heading it took six lines on a
    phone). Together they state every fact the single sentence did: share, count, size, which facts."""
    qis = _and([QI_LABELS.get(q, q) for q in rep.qis])
    are = "is" if rep.unique_records == 1 else "are each"
    return (
        f"{rep.unique_fraction:.1%} of patients are unique",
        f"{rep.unique_records:,} of the {rep.n:,} patients {are} the only one in the release with their "
        f"{qis}: anyone who knows those facts about them finds their row.",
    )


def neighbour_sentence(nb: Neighbour, sensitive: str = "diagnosis", quote=str) -> str:
    """Plain-language outcome of the neighbour search (what the page and the report say).

    ``quote`` makes the user's typed facts literal text where the sentence is shown (``textsafe.md`` on a
    page; the report escapes the whole sentence for HTML)."""
    facts = ", ".join(quote(f) for f in nb.narrowing["fact known"])
    if nb.matches == 0:
        return f"No patient matches {facts}: a fact is wrong or the person is not in the release."
    if nb.singled_out:
        rec = nb.record() or {}  # singled out: there is one record
        rare = "has" if bool(rec.get("has_rare_disease")) else "does not have"
        who = {"F": "she", "M": "he"}.get(str(rec.get("sex")), "they")
        return (
            f"Exactly 1 patient matches {facts}: the attacker has found the neighbour's row. "
            f"{who.capitalize()} {'is' if who != 'they' else 'are'} recorded with diagnosis "
            f"'{rec.get(sensitive)}' and {rare} the rare disease."
        )
    return f"{nb.matches:,} patients match {facts}: add another fact (sex, birth year) to narrow them down."


def findings(st: Story) -> pd.DataFrame:
    """The story's numbers as (finding, value) rows, worded as the page words them."""
    s, rep, lr, dp = st.settings, st.uniqueness, st.linkage, st.dp
    facts = ", ".join(st.neighbour.narrowing["fact known"])
    rows = [
        (
            "patients unique on " + ", ".join(QI_LABELS.get(q, q) for q in rep.qis),
            f"{rep.unique_fraction:.1%} ({rep.unique_records:,} of {patients(rep.n)})",
        ),
        (f"patients matching the neighbour ({facts})", patients(st.neighbour.matches)),
        ("k-anonymity (smallest group of identical patients)", patients(rep.k_anonymity)),
        (
            "register entries re-identified (unique match, right person)",
            f"{lr.right_person:,} of {lr.in_release:,} patients in the register ({lr.success_rate:.1%})",
        ),
        ("unique matches that pin a diagnosis on the wrong person", f"{lr.wrong_person:,} people"),
    ]
    if st.generalised_uniqueness is not None:
        g = st.generalised_uniqueness
        rows.append(
            (
                f"patients still unique after generalisation ({_gen_text(s.generalisation)})",
                f"{g.unique_fraction:.1%} ({patients(g.unique_records)})",
            )
        )
    if st.generalised_linkage is not None:
        rows.append(("re-identified by linkage after generalisation", patients(st.generalised_linkage.right_person)))
    rows += [
        (f"attacker right about the {s.sensitive}, exact counts (no DP)", f"{dp['no_noise']:.0%} of targets"),
        (
            f"attacker right about the {s.sensitive}, noisy counts at ε = {dp['epsilon']:g} (simulated)",
            f"{dp['at_epsilon']:.0%} of targets",
        ),
        (f"blind guess (most common {s.sensitive})", f"{dp['prior_guess']:.0%} of targets"),
        (
            f"guarantee for a known patient's {s.sensitive} (replace-one)",
            f"ε = {dp['epsilon_replace_one']:g}: any guess at most {claims.up(dp['likelihood_ratio'])}× as likely to be "
            "right as without the release",
        ),
    ]
    return pd.DataFrame(rows, columns=["finding", "value"])


def patients(k: int) -> str:
    """A count of people as whole patients: "1 patient", "1,234 patients"."""
    return f"{int(k):,} patient{'' if int(k) == 1 else 's'}"


def people(x: float) -> str:
    """A typical (not whole) number of patients, e.g. noise: "1 patient", "2.5 patients"."""
    text = f"{x:.3g}"
    return f"{text} patient{'' if text == '1' else 's'}"


def _gen_text(gen) -> str:
    g = dict(gen)
    return (
        f"{g.get('age_band', 1)}-year age bands, first {g.get('zip_digits', 5)} zip digits, "
        f"${g.get('salary_band', 1):,} salary bands"
    )


def steps_table(steps: pd.DataFrame) -> pd.DataFrame:
    """The incremental-uniqueness table with plain column names and percentages for shares."""
    out = pd.DataFrame(
        {
            "facts known": steps["quasi_identifiers"].str.replace("_", " "),
            "groups": steps["classes"],
            "unique patients": steps["unique_records"],
            "unique share": (steps["unique_fraction"] * 100).round(1).astype(str) + "%",
            "k-anonymity (patients)": steps["k_anonymity"],
            "average risk": (steps["prosecutor_risk_avg"] * 100).round(1).astype(str) + "%",
        }
    )
    if steps["l_diversity"].notna().any():
        out["ℓ-diversity"] = steps["l_diversity"]
    return out
