"""A self-contained HTML report: settings, ε meaning, noise, re-identification and (if any) sweep results.

The file embeds plotly.js once and every figure inline, so it opens offline. Sections are built by
small functions that reuse the same figure builders as the pages.
"""

from __future__ import annotations

import datetime as _dt
import html
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio

from .interpret import posterior_bound, privacy_level, reading
from .errors import DPError
from .validation import check_epsilon


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)  # plain text (escaped)
    figures: list[go.Figure] = field(default_factory=list)
    tables: list[pd.DataFrame] = field(default_factory=list)


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;
color:#1f2933;padding:0 1em;line-height:1.5}
h1{color:#264653}h2{color:#2a9d8f;border-bottom:2px solid #e9ecef;padding-bottom:.2em;margin-top:2em}
table{border-collapse:collapse;margin:1em 0;font-size:.9em}td,th{border:1px solid #dee2e6;padding:.3em .6em}
th{background:#f1f3f5}.meta{color:#6c757d;font-size:.9em}.fig{margin:1em 0}
"""


def render(sections: list[Section], settings: dict, title: str = "DP Explorer report") -> str:
    """Render sections into one HTML string with plotly.js embedded once (opens without network)."""
    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p class='meta'>Generated {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')} by DP Explorer.</p>"]
    if settings:
        rows = "".join(f"<tr><th>{html.escape(str(k))}</th><td>{html.escape(str(v))}</td></tr>"
                       for k, v in settings.items())
        parts.append(f"<h2>Settings</h2><table>{rows}</table>")
    first = True
    for sec in sections:
        parts.append(f"<h2>{html.escape(sec.title)}</h2>")
        parts.extend(f"<p>{html.escape(p)}</p>" for p in sec.paragraphs)
        for tab in sec.tables:
            parts.append(tab.to_html(index=False, border=0, float_format=lambda x: f"{x:.4g}"))
        for fig in sec.figures:
            if not fig.layout.template.layout.to_plotly_json():  # page figures may rely on Streamlit's theme
                fig = go.Figure(fig).update_layout(template="plotly_white")
            parts.append("<div class='fig'>" + pio.to_html(fig, include_plotlyjs=first, full_html=False,
                                                           config={"displaylogo": False}) + "</div>")
            first = False
    parts.append("</body></html>")
    return "\n".join(parts)


def epsilon_section(epsilon: float, delta: float | None = None) -> Section:
    from .figures import home

    eps = check_epsilon(epsilon)
    d = f" and δ = {delta:g}" if delta else ""
    return Section(
        "What the chosen ε means",
        [
            f"Chosen ε = {eps:g}{d}: privacy level '{privacy_level(eps)}'.",
            reading(eps, 0.5),
            reading(eps, 0.01),
            f"Any output is at most e^ε = {posterior_bound(0.5, eps) / (1 - posterior_bound(0.5, eps)):.3g} "
            "times more likely with a given person's data than without it.",
        ],
        [home.deployments_chart(eps), home.posterior_chart(eps)],
    )


def noise_section(epsilon: float, *, n: int = 10_000, seed: int = 0) -> Section:
    """The default noise scenario: count of patients with the rare disease, Laplace at the chosen ε."""
    from . import datasets, mechanisms
    from .figures import noise as noise_figs

    df = datasets.medical(n, seed)
    q = mechanisms.query(df, "count", "has_rare_disease")
    view = mechanisms.noise_view("laplace", epsilon, None, q.sensitivity, q.true_value, draws=20_000, seed=seed)
    figs = noise_figs.figures(view, "released count of patients with the rare disease", "patients")
    table = mechanisms.epsilon_table("laplace", None, q.sensitivity, q.true_value, integer=True, seed=seed)
    lo, hi = view.ci95
    return Section(
        "Noise: a count released with the Laplace mechanism",
        [
            f"Query: {q.description} on the synthetic medical data (n = {n:,}, seed {seed}); sensitivity Δ = 1.",
            f"At ε = {epsilon:g} the Laplace scale is b = {view.spec.scale:.4g}; expected absolute error "
            f"{view.expected_abs_error:.3g} patients; 95% of releases fall within ±{(hi - lo) / 2:.3g} of the truth.",
            "The histogram is a simulation (plain numpy) for illustration; released answers go through the "
            "secure release path (diffprivlib). Example releases in the table are seeded: reproducible, not secure.",
        ],
        [figs["distribution"], figs["why"], figs["error"]],
        [table],
    )


def reidentification_section(epsilon: float, *, n: int = 10_000, seed: int = 0) -> Section:
    """The default re-identification scenario: the neighbour, uniqueness, linkage, and DP's effect."""
    import numpy as np

    from . import datasets, linkage, uniqueness
    from .figures import reidentification as rfigs

    pop = datasets.medical_population(n, seed)
    release = pop.drop(columns=["person_id", "name"])
    facts = [linkage.parse_known("age=34"), linkage.parse_known("zip_code=10001"),
             linkage.parse_range("salary=50000:60000")]
    neighbour = linkage.find_matches(release, facts, sensitive=datasets.SENSITIVE_COLUMNS)
    qis = ["age", "sex", "zip_code", "salary"]
    uniq = uniqueness.uniqueness(release, qis, "diagnosis")
    steps = uniqueness.incremental(release, qis, "diagnosis")
    register = linkage.public_register(pop, coverage=0.5, outsiders=0.25, seed=seed)
    linked = linkage.link(pop.drop(columns=["name"]), register, ["age", "sex", "zip_code", "birth_year"])
    grid = sorted({0.01, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, float(epsilon)})
    sim = linkage.dp_attack_simulation(release, qis, "diagnosis", np.array(grid), n_releases=100, seed=seed)
    at = sim["curve"].loc[sim["curve"]["epsilon"] == float(epsilon), "success_rate"].iloc[0]
    summary = pd.DataFrame([
        {"finding": "records matching the neighbour (34, zip 10001, salary 50–60k)", "value": neighbour.matches},
        {"finding": f"unique records on {', '.join(qis)}", "value": f"{uniq.unique_fraction:.1%}"},
        {"finding": "k-anonymity (smallest class)", "value": uniq.k_anonymity},
        {"finding": "ℓ-diversity of diagnosis", "value": uniq.l_diversity},
        {"finding": "highest / average prosecutor risk",
         "value": f"{uniq.prosecutor_risk_max:.2f} / {uniq.prosecutor_risk_avg:.3f}"},
        {"finding": "register entries re-identified (right person, unique match)", "value": linked.right_person},
        {"finding": "diagnoses disclosed by linkage", "value": linked.diagnoses_disclosed},
        {"finding": "attacker right about the diagnosis, exact counts (no DP)", "value": f"{sim['no_noise']:.0%}"},
        {"finding": f"attacker right about the diagnosis, noisy counts at ε = {epsilon:g} (simulated)",
         "value": f"{at:.0%}"},
    ])
    summary["value"] = summary["value"].astype(str)
    return Section(
        "Re-identification of the 'anonymised' release (not private: computed on raw data)",
        [f"Synthetic release of n = {n:,} patients (seed {seed}) with names removed.", *neighbour.learned,
         "Guessing the most common diagnosis would be right "
         f"{sim['prior_guess']:.0%} of the time: DP noise pushes the attacker towards that guess."],
        [rfigs.incremental_chart(steps), rfigs.linkage_chart(linked), rfigs.dp_success_chart(sim, epsilon)],
        [summary],
    )


def sweep_section(sweep_id: str) -> Section:
    """Accuracy vs ε and membership-inference results of a stored sweep (finished points so far)."""
    from . import sweep as sweep_mod
    from .figures import privacy_utility as pfigs

    st = sweep_mod.state(sweep_id)
    result = st["result"]
    if not result.get("points") and not result.get("baseline"):
        raise DPError(f"sweep {sweep_id!r} has no finished points yet; wait for it or choose another")
    rows = sweep_mod.by_epsilon(result)
    cfg = result.get("config", {})
    paras = [f"Sweep {st.get('name') or sweep_id} ({st['status']}, {st['done']} of {st['total']} trainings "
             f"finished): {cfg.get('dataset', '?')}, model {cfg.get('model', '?')}, δ = {cfg.get('delta', '?')}, "
             f"accountant {cfg.get('accountant', '?')}. Each DP point's ε is the accountant's upper bound; the "
             "empirical ε is a lower bound from membership-inference attacks (95% Clopper–Pearson)."]
    paras += [sweep_mod.reading(result, r["epsilon"]) for r in rows]
    bad = sweep_mod.violations(result)
    paras.append("No point's empirical lower bound exceeds its claimed ε." if not bad else
                 f"WARNING: {len(bad)} point(s) have an empirical lower bound above the claimed ε — a bug to find.")
    table = pd.DataFrame([{k: v for k, v in r.items() if not k.endswith("_sd")} for r in rows])
    figs = [pfigs.accuracy_chart(result), pfigs.attack_chart(result, "auc"),
            pfigs.attack_chart(result, "tpr_at_1pct_fpr"), pfigs.empirical_epsilon_chart(result)]
    return Section("Privacy–utility curve and membership inference", paras, figs, [table])


def build(epsilon: float = 1.0, *, delta: float | None = None, sweep_id: str | None = None,
          n: int = 10_000, seed: int = 0) -> str:
    """The whole report as one HTML string."""
    eps = check_epsilon(epsilon)
    sections = [epsilon_section(eps, delta), noise_section(eps, n=n, seed=seed),
                reidentification_section(eps, n=n, seed=seed)]
    settings = {"ε": f"{eps:g}", "δ": f"{delta:g}" if delta else "0 (pure ε-DP for the Laplace queries)",
                "dataset": f"synthetic medical, n = {n:,}, seed {seed}",
                "accountant": "exact (sequential composition) for queries"}
    if sweep_id:
        sec = sweep_section(sweep_id)
        sections.append(sec)
        settings["sweep"] = sweep_id
        settings["accountant"] += "; Opacus accountant for DP-SGD (see the sweep section)"
    return render(sections, settings)
