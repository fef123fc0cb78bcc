"""A self-contained HTML report: settings, ε meaning, noise, re-identification and (if any) sweep results.

The file embeds plotly.js once and every figure inline, so it opens offline. Sections are built by
small functions that reuse the same figure builders as the pages.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go

from . import claims, textsafe
from .noise.interpret import level_sentence, posterior_bound, privacy_level, reading
from .errors import DPError
from .training.config import accountant_name, dataset_name, model_name
from .validation import check_epsilon


class Html(str):
    """A paragraph of HTML the report's own code wrote, shown as is: fixed markup (``e<sup>ε</sup>``) around
    parts already made safe with :func:`inline_markdown`. Never wrap text a user chose in it."""


#: e^ε written as mathematics (the pages write $e^{\varepsilon}$); plain "e^ε" reads as code.
E_EPS = "e<sup>ε</sup>"


@dataclass
class Section:
    title: str
    paragraphs: list[str] = field(default_factory=list)  # inline markdown (escaped, then rendered), or Html
    figures: list[go.Figure] = field(default_factory=list)
    tables: list[pd.DataFrame] = field(default_factory=list)
    numbers: dict = field(default_factory=dict)  # what the executive summary quotes


SUMMARY_TITLE = "Executive summary"



_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:1100px;margin:2em auto;
color:#1f2933;padding:0 1em;line-height:1.5;overflow-wrap:anywhere}
h1{color:#264653}h2{color:#2a9d8f;border-bottom:2px solid #e9ecef;padding-bottom:.2em;margin-top:2em}
.tbl{max-width:100%;overflow-x:auto}table{border-collapse:collapse;margin:1em 0;font-size:.9em;max-width:100%}
td,th{border:1px solid #dee2e6;padding:.3em .6em;overflow-wrap:anywhere;vertical-align:top}
th{background:#f1f3f5;text-align:left}.meta{color:#6c757d;font-size:.9em}.fig{margin:1em 0;max-width:100%}
.summary{background:#f1f8f7;border-left:4px solid #2a9d8f;padding:.6em 1em}
"""

_MD = [(re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"), (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"),
                                                                r"<em>\1</em>"),
       (re.compile(r"`([^`]+)`"), r"<code>\1</code>")]


def inline_markdown(text: str) -> str:
    """Escape ``text`` for HTML, then render the inline markdown the app's sentences use (**bold**,
    *italic*, `code`): no literal asterisks in the report, and no markup from user text gets through."""
    out = textsafe.html(text)
    for pattern, repl in _MD:
        out = pattern.sub(repl, out)
    return out


def render(sections: list[Section], settings: dict, title: str = "DP Explorer report") -> str:
    """Render sections into one HTML string with plotly.js embedded once (opens without network)."""
    import plotly.io as pio  # only when rendering: its HTML export is slow to import (Home imports us)

    parts = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{textsafe.html(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{textsafe.html(title)}</h1>",
             f"<p class='meta'>Generated {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')} by DP Explorer.</p>"]
    if settings:
        rows = "".join(f"<tr><th>{textsafe.html(k)}</th><td>{textsafe.html(v)}</td></tr>"
                       for k, v in settings.items())
        settings_html = f"<h2>Settings</h2><div class='tbl'><table>{rows}</table></div>"
    first = True
    for i, sec in enumerate(sections):
        if settings and i == (1 if sections and sections[0].title == SUMMARY_TITLE else 0):
            parts.append(settings_html)  # after the executive summary, before the details
        parts.append(f"<h2>{textsafe.html(sec.title)}</h2>")
        cls = " class='summary'" if sec.title == SUMMARY_TITLE else ""
        parts.extend(f"<p{cls}>{p if isinstance(p, Html) else inline_markdown(p)}</p>" for p in sec.paragraphs)
        for tab in sec.tables:  # to_html escapes every cell and header
            parts.append("<div class='tbl'>" + tab.to_html(index=False, border=0, float_format=lambda x: f"{x:.4g}")
                         + "</div>")
        for fig in sec.figures:
            if not fig.layout.template.layout.to_plotly_json():  # page figures may rely on Streamlit's theme
                fig = go.Figure(fig).update_layout(template="plotly_white")
            parts.append("<div class='fig'>" + pio.to_html(fig, include_plotlyjs=first, full_html=False,
                                                           config={"displaylogo": False}) + "</div>")
            first = False
    if settings and not sections:
        parts.append(settings_html)
    parts.append("</body></html>")
    return "\n".join(parts)


def epsilon_section(epsilon: float, delta: float | None = None) -> Section:
    from .figures import home

    eps = check_epsilon(epsilon)
    d = f" and δ = {claims.delta(delta)}" if delta else ""
    return Section(
        "What the chosen ε means",
        [
            f"Chosen ε = {eps:g}{d}, for datasets that differ by adding or removing one person: privacy level "
            f"'{level_sentence(eps)}'.",
            reading(eps, 0.5, delta),
            reading(eps, 0.01, delta),
            Html(f"Any output is at most {E_EPS} = " + inline_markdown(
                f"{claims.up(math.exp(eps))} times more likely with a given person's data than without it.")),
        ],
        [home.deployments_chart(eps), home.posterior_chart(eps)],
    )


def noise_section(epsilon: float, *, n: int = 10_000, seed: int = 0) -> Section:
    """The default noise scenario: count of patients with the rare disease, Laplace at the chosen ε."""
    from .attacks.reidentification import people
    from .data import datasets
    from .noise import teaching, view as noise_page
    from .figures import noise as noise_figs

    df = datasets.medical(n, seed)
    q = teaching.query(df, "count", "has_rare_disease")
    draws = 20_000
    view = noise_page.noise_view("laplace", epsilon, None, q.sensitivity, q.true_value, draws=draws, seed=seed)
    figs = noise_figs.figures(view, "released count of patients with the rare disease", "patients")
    table = noise_page.epsilon_table("laplace", None, q.sensitivity, q.true_value, integer=True, seed=seed)
    table = table.rename(columns={"epsilon": "ε", "noise scale": "noise scale (patients)",  # the page's download
                                  "expected |error|": "expected |error| (patients)",
                                  "95% within ±": "95% within ± (patients)"})
    return Section(
        "Noise: a count released with the Laplace mechanism",
        [
            f"Query: a count of patients with the rare disease on the synthetic medical data (n = {n:,}, seed "
            f"{seed}); sensitivity Δ = 1.",
            f"At ε = {epsilon:g} the Laplace scale is b = {view.spec.scale:.4g}; expected absolute error "
            f"{people(view.expected_abs_error)}; 95% of releases fall within ±{claims.up(view.ci95[1] - view.value)} "
            "of the truth.",
            f"The histogram is a simulation to show the shape: {draws:,} draws of ordinary random numbers (numpy, "
            f"fixed by seed {seed}), not releases; released answers go through the secure release path "
            "(diffprivlib). The table is exact (no random draw): for a count, the geometric mechanism's figures, "
            "which is what the release path draws.",
        ],
        [figs["distribution"], figs["why"], figs["error"]],
        [table],
        {"expected_abs_error": float(view.expected_abs_error), "true_value": q.true_value},
    )


def reidentification_section(epsilon: float, settings=None) -> Section:
    """The re-identification story: the same dpcore function and settings as the page, so the same numbers."""
    from .attacks import reidentification as reid
    from .figures import reidentification as rfigs

    st = reid.story(settings, epsilon=check_epsilon(epsilon))
    s = st.settings
    return Section(
        "Re-identification of the 'anonymised' release (not private: computed on raw data)",
        ["**{}.** {}".format(*st.headline()),
         f"Synthetic release of {s.n:,} patients (data seed {s.seed}) with names removed; the re-identification "
         "page shows the same numbers for the same settings.",
         reid.neighbour_sentence(st.neighbour, s.sensitive),
         f"DP defence: each set of noisy counts is ε = {st.dp['epsilon']:g}-DP for adding or removing one patient; "
         f"for a known patient's {s.sensitive} (replace-one) the guarantee is ε = "
         f"{st.dp['epsilon_replace_one']:g}, so any guess is at most {claims.up(st.dp['likelihood_ratio'])}× as likely "
         "to be right as without the release. Guessing the most common value would be right "
         f"{st.dp['prior_guess']:.0%} of the time."],
        [rfigs.narrowing_chart(st.neighbour.narrowing, s.n), rfigs.incremental_chart(st.steps),
         rfigs.linkage_chart(st.linkage), rfigs.dp_success_chart(st.dp, st.dp["epsilon"])],
        [st.findings()],
        {"story": st},
    )


def sweep_section(sweep_id: str, *, caller) -> Section:
    """Accuracy vs ε and membership-inference results of a stored sweep (finished points so far)."""
    from .sweep import runs as sweep_runs, summary as sweep_summary
    from .figures import privacy_utility as pfigs

    st = sweep_runs.state(sweep_id, caller=caller)
    result = st["result"]
    if not result.get("points") and not result.get("baseline"):
        raise DPError(f"sweep {sweep_id!r} has no finished points yet; wait for it or choose another")
    rows = sweep_summary.by_epsilon(result)
    cfg = result.get("config", {})
    title = sweep_summary.sweep_title({**st, "config": {**(st.get("config") or {}), **cfg}})
    paras = [f"Sweep: {title} ({st['status']}, {st['done']} of {st['total']} trainings finished); "
             f"δ = {claims.delta(cfg['delta']) if 'delta' in cfg else '?'}, neighbours differ by adding or removing "
             f"one training example, accountant {accountant_name(cfg.get('accountant', '?'))}. Each DP point's ε is the accountant's upper bound; the "
             "empirical ε is a lower bound from membership-inference attacks at 95% confidence over all the "
             "seeds of an ε together (each seed's audit corrected for their number), with the median seed's bound "
             "as a separate 95% statement."]
    paras += [sweep_summary.reading(result, r["epsilon"]) for r in rows]
    bad = sweep_summary.violations(result)
    paras.append("No point's empirical lower bound exceeds its claimed ε." if not bad else
                 f"WARNING: {len(bad)} point(s) have an empirical lower bound above the claimed ε — a bug to find.")
    fields = ("epsilon", "epsilon_spent", "n", "accuracy", "empirical_epsilon", "empirical_epsilon_median")
    words = {k: sweep_summary.column_label(k) for k in fields} | {"accuracy": "test accuracy"}  # its one accuracy
    table = pd.DataFrame([{words[k]: sweep_summary.shown_row(r).get(k, "—") for k in fields}
                          for r in rows])  # the page's table: its words and its rounding
    base = sweep_summary.baseline_summary(result)
    figs = [pfigs.accuracy_chart(result), pfigs.attack_chart(result, "auc"),
            pfigs.attack_chart(result, "tpr_at_1pct_fpr"), pfigs.empirical_epsilon_chart(result)]
    return Section(f"Privacy–utility: {title}", paras, figs, [table],
                   {"title": title, "rows": rows, "baseline": base})


def _fmt(x, spec=".3g") -> str:
    return "—" if x is None else format(float(x), spec)


def _noise_fact(st: dict) -> str:
    if st.get("reproducible_noise"):
        return f"REPRODUCIBLE (seeded) noise: not a DP release. {st.get('noise_source') or ''}".strip()
    return st.get("noise_source") or "secure random source (never stored or shown)"


def _eps_table(rows: list[dict]) -> pd.DataFrame:
    out = []
    for r in rows:
        row = {"δ": claims.delta(r['delta'], 3)}
        if "epsilon_pld" in r:
            row[f"ε, {accountant_name('pld')}"] = _fmt(r["epsilon_pld"])
            row.update({f"ε, {accountant_name(k.removeprefix('epsilon_'))}": _fmt(v) for k, v in r.items()
                        if k.startswith("epsilon_") and k != "epsilon_pld"})
        else:
            row["ε"] = _fmt(r.get("epsilon"))
            row["composition rule"] = r.get("rule") or ""
        out.append(row)
    return pd.DataFrame(out)


def _audit_fact(a: dict | None) -> str:
    if not a:
        return "no membership audit"
    return (f"empirical ε ≥ {claims.down(a.get('lower_bound'))} with {_fmt(a.get('confidence'), '.0%')} confidence "
            f"({_audit_counts(a)}, {'within' if a.get('within_claim') else 'ABOVE'} the claimed ε)")


def _audit_counts(a: dict) -> str:
    if a.get("n_canaries") is not None:  # the one-run canary audit has guesses, not members / non-members
        return (f"one-run canary audit, {a.get('correct')} of {a.get('guesses')} guesses right on "
                f"{a.get('n_canaries')} canaries")
    return f"{a.get('attack')} attack, {a.get('members')} members / {a.get('nonmembers')} non-members"


def statement_section(st: dict, name: str | None = None) -> Section:
    """A privacy statement (:mod:`dpcore.statement`) as a report section: its facts and ε at several δ as
    tables (every cell escaped), its summary, and its worst-case trade-off curve. Names that came from users
    (run labels, analysts, datasets) go in tables and the escaped title only, never through inline markdown.
    ``name``: what the section calls its subject (a sweep is named by what it is, never by its id)."""
    from .figures import advisor as adv_figs

    kind = st.get("kind")
    facts = {"unit of privacy": st.get("unit_of_privacy"), "neighbour relation": st.get("neighbour_relation")}
    tables: list[pd.DataFrame] = []
    paras = []
    if kind == "training_run":
        title = f"Privacy statement: training run {st.get('label') or st.get('subject')}"
        facts.update({"run": st.get("subject"), "dataset": dataset_name(st.get("dataset")),
                      "model": model_name(st.get("model")),
                      "training rows": st.get("rows")})
    elif kind == "sweep":
        title = f"Privacy statement: sweep {name or st.get('name') or dataset_name(st.get('dataset'))}"
        facts.update({"dataset": dataset_name(st.get("dataset")), "model": model_name(st.get("model")),
                      "training rows": st.get("rows"), "sampling": "Poisson (each record joins each batch "
                      "independently with probability q)"})
    else:
        subj = st.get("subject") or {}
        title = f"Privacy statement: queries by {subj.get('analyst')} on dataset {subj.get('dataset')}"
        facts.update({"analyst": subj.get("analyst"), "dataset": subj.get("dataset"),
                      "answers since the last reset": len(st.get("queries") or [])})
    if kind != "sweep":
        samp = st.get("sampling") or {}
        facts["sampling"] = samp.get("scheme") + (f", q = {samp['sample_rate']:.4g}" if samp.get("sample_rate")
                                                  else "") if samp else "—"
        mech = st.get("mechanism") or {}
        if mech.get("noise_multiplier") is not None:
            facts["mechanism"] = (f"{mech.get('name')}: noise multiplier {mech['noise_multiplier']:.4g}, "
                                  f"q = {mech['sample_rate']:.4g}, {mech['steps']} steps, clip {mech.get('clip')}")
        acc = st.get("accountant") or {}
        if acc:
            facts["accountant"] = (f"{accountant_name(acc.get('name'))}: ε = {_fmt(acc.get('epsilon'))} at "
                                   f"δ = {claims.delta(acc.get('delta'))}")
        if (st.get("mu") or {}).get("value") is not None:
            facts["μ (Gaussian DP)"] = f"{st['mu']['value']:.4g} — {st['mu']['kind']}"
        facts["audit"] = _audit_fact(st.get("audit")) if st.get("audit") else (st.get("audit_note") or
                                                                            "no membership audit")
    facts["noise"] = _noise_fact(st)
    facts["how to check"] = ("every number is recomputed from the statement's own inputs by "
                             "python -m dpcore statement --verify FILE.json")
    tables.append(pd.DataFrame({"": list(facts), "statement": ["—" if v is None else str(v) for v in facts.values()]}))
    if kind == "training_run" and not st.get("private"):
        paras.append("Not private: this run trained without DP, so no ε bounds what the model reveals about a record.")
        return Section(title, paras, [], tables)
    if kind == "sweep":
        tables.append(pd.DataFrame([{
            "target ε": f"{p.get('target_epsilon', 0):g}", "seed": p.get("seed"),
            "noise multiplier": _fmt(p["mechanism"]["noise_multiplier"], ".4g"),
            "q": _fmt(p["mechanism"]["sample_rate"], ".4g"), "steps": p["mechanism"]["steps"],
            "ε (run's accountant)": f"{claims.up((p.get('accountant') or {}).get('epsilon'))} at δ = "
                                    f"{claims.delta((p.get('accountant') or {}).get('delta'))}",
            **{f"ε at δ = {claims.delta(r['delta'])} (PLD)": claims.up(r.get("epsilon_pld")) for r in p["epsilon_at_delta"]},
            "μ (CLT, approx.)": _fmt((p.get("mu") or {}).get("value")),
            "audit": _audit_fact(p.get("audit")),
            "noise": "reproducible: not a DP release" if p.get("reproducible_noise") else "secure",
        } for p in st.get("points") or []]))
        paras.append(f"{len(st.get('points') or [])} DP point(s). Each point's ε is an upper bound from its own "
                     "accountant and from a privacy-loss distribution (PLD, Google's dp-accounting library) at "
                     "several δ; the audit is a lower bound measured by membership attacks on held-out rows.")
    elif st.get("epsilon_at_delta"):
        tables.append(_eps_table(st["epsilon_at_delta"]))
        paras.append("ε at several δ, each an upper bound for the neighbour relation above: δ = 1e-5, 1e-6 and 1/n "
                     "where the number of rows n is known.")
    else:
        paras.append("Nothing spent: no queries were answered since the last reset.")
        return Section(title, paras, [], tables)
    if st.get("reproducible_noise"):
        paras.append("**Warning:** some noise behind this statement was drawn from a seed (reproducible), so that "
                     "part is not a DP release.")
    paras.append("The chart is the worst-case ROC of a membership attacker: no attack's true- and false-positive "
                 "rates lie above the curve.")
    return Section(title, paras, [adv_figs.statement_tradeoff_chart(st)], tables)


def executive_summary(eps: float, delta, sections: list[Section]) -> Section:
    """Five sentences a board needs, from the numbers the sections below show."""
    from .attacks import reidentification as reid

    noise = next(sec for sec in sections if sec.title.startswith("Noise"))
    st = next(sec for sec in sections if sec.title.startswith("Re-identification")).numbers["story"]
    post = float(posterior_bound(0.5, eps))
    d = f" (δ = {claims.delta(delta)}, which this bound does not cover)" if delta else " (δ = 0)"
    lr, dp, rep = st.linkage, st.dp, st.uniqueness
    out = [
        f"At the chosen **ε = {eps:g}**{d}, anyone who was 50% sure of a fact about a person can become at most "
        f"**{claims.percent(post, up=True)}** sure from a release, whatever else they know: privacy level '{privacy_level(eps)}'.",
        f"Removing names does not anonymise: **{rep.unique_fraction:.1%}** of {rep.n:,} synthetic patients are "
        f"unique on {', '.join(rep.qis).replace('_', ' ')}, and a public register re-identifies "
        f"**{lr.right_person:,} of the {lr.in_release:,}** patients it lists ({lr.success_rate:.0%}).",
        f"Coarsening the data (generalisation) lowers that risk but gives no guarantee; differential privacy does: "
        f"with noisy counts at ε = {eps:g} a simulated attacker names a patient's {st.settings.sensitive} "
        f"correctly **{dp['at_epsilon']:.0%}** of the time, against {dp['no_noise']:.0%} from the raw release and "
        f"{dp['prior_guess']:.0%} by blind guessing.",
        f"The price is accuracy: a count of patients released at ε = {eps:g} is off by "
        f"**{reid.people(noise.numbers['expected_abs_error'])}** on average.",
    ]
    sweep = next((sec for sec in sections if sec.title.startswith("Privacy–utility")), None)
    rows = (sweep.numbers.get("rows") or []) if sweep else []
    if rows:
        r = min(rows, key=lambda r: abs(math.log(r["epsilon"] / eps)))
        base = sweep.numbers.get("baseline") or {}
        vs = f", against {base['accuracy']:.1%} without privacy" if base.get("accuracy") else ""
        out.append(f"For model training ({sweep.numbers['title']}), the DP model at ε = {r['epsilon']:g} reaches "
                   f"**{r['accuracy']:.1%}** test accuracy{vs}.")
    else:
        out.append("Every ε in this report is an upper bound for datasets that differ by adding or removing one "
                   "person, except where a section names the replace-one guarantee it uses.")
    return Section(SUMMARY_TITLE, out)


def build(epsilon: float = 1.0, *, delta: float | None = None, sweep_id: str | None = None,
          n: int = 10_000, seed: int = 0, story_settings=None, job_ids=(), ledgers=(), caller=None) -> str:
    """The whole report as one HTML string: the executive summary first, then the details.

    ``n``/``seed``: the noise section's data. The re-identification section uses the page's default story
    (``story_settings``, default :class:`dpcore.attacks.reidentification.StorySettings`), so its numbers match the page.
    A privacy statement section follows for the sweep, each finished training run in ``job_ids`` and each
    ``(analyst, dataset key[, rows])`` in ``ledgers``. ``caller`` (:class:`dpcore.jobs.owners.Caller`): whom the
    sweep and the runs are read for — someone else's is refused (NotYours), as everywhere.
    """
    from .attacks import reidentification as reid
    from . import statement

    eps = check_epsilon(epsilon)
    story = story_settings or reid.StorySettings()
    # statements first: a wrong run id or an unfinished run fails before the slow sections are built
    if (sweep_id or job_ids) and caller is None:
        raise DPError("a report with a sweep or training runs needs the caller they are read for")
    statements = [statement.for_job(j, caller=caller) for j in dict.fromkeys(job_ids)]
    statements += [statement.for_ledger(lg[0], lg[1], n_rows=lg[2] if len(lg) > 2 else None) for lg in ledgers]
    sections = [epsilon_section(eps, delta), noise_section(eps, n=n, seed=seed),
                reidentification_section(eps, story)]
    settings = {"ε": f"{eps:g}", "δ": claims.delta(delta) if delta else "0 (pure ε-DP for the Laplace queries)",
                "neighbouring datasets": "differ by adding or removing one person (replace-one where a section "
                                         "says so)",
                "noise data": f"synthetic medical, {n:,} patients, seed {seed}",
                "re-identification data": f"synthetic medical, {story.n:,} patients, seed {story.seed}",
                "accountant": "exact (sequential composition) for queries"}
    if sweep_id:
        sec = sweep_section(sweep_id, caller=caller)
        sections.append(sec)
        settings["sweep"] = sec.numbers["title"]
        settings["accountant"] += "; Opacus accountant for DP-SGD (see the sweep section)"
        try:
            sections.append(statement_section(statement.for_sweep(sweep_id, caller=caller), sec.numbers["title"]))
        except DPError:  # only a baseline or diffprivlib points: nothing to state beyond the sweep section
            pass
    sections += [statement_section(s) for s in statements]
    n_st = sum(sec.title.startswith("Privacy statement") for sec in sections)
    if n_st:
        settings["privacy statements"] = f"{n_st} (training runs, sweeps and query histories: see their sections)"
    return render([executive_summary(eps, delta, sections), *sections], settings)
