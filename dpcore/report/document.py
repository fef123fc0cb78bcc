"""A self-contained HTML report: settings, ε meaning, noise, re-identification and (if any) sweep results.

The file embeds plotly.js once and every figure inline, so it opens offline. Sections are built by
small functions that reuse the same figure builders as the pages.

Past 500 formatted lines for now, one idea: the report's sections and the document around them; the
codebase issue moves it into a ``report/`` package with a module per section.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from dataclasses import dataclass, field

import pandas as pd
import plotly.graph_objects as go

from dpcore import claims, limits, textsafe
from dpcore.errors import DPError
from dpcore.noise.interpret import (
    WHATEVER_ELSE,
    fact_bound,
    fact_reading,
    level_sentence,
    loss_tail,
    patients,
    posterior_bound,
    privacy_level,
    reading,
)
from dpcore.training.config import accountant_name
from dpcore.validation import check_epsilon


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
th{background:#f1f3f5;text-align:left;overflow-wrap:normal;word-break:normal;hyphens:manual;min-width:4em}.meta{color:#6c757d;font-size:.9em}.fig{margin:1em 0;max-width:100%}
.summary{background:#f1f8f7;border-left:4px solid #2a9d8f;padding:.6em 1em}
"""

_MD = [
    (re.compile(r"\*\*(.+?)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![\w*])\*(?!\s)(.+?)(?<!\s)\*(?![\w*])"), r"<em>\1</em>"),
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
]


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

    parts = [
        f"<!DOCTYPE html><html><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"  # a phone: its width, not 980 px
        f"<title>{textsafe.html(title)}</title>"
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{textsafe.html(title)}</h1>",
        f"<p class='meta'>Generated {_dt.datetime.now().strftime('%Y-%m-%d %H:%M')} by DP Explorer.</p>",
    ]
    if settings:
        rows = "".join(f"<tr><th>{textsafe.html(k)}</th><td>{textsafe.html(v)}</td></tr>" for k, v in settings.items())
        settings_html = f"<h2>Settings</h2><div class='tbl'><table>{rows}</table></div>"
    first = True
    for i, sec in enumerate(sections):
        if settings and i == (1 if sections and sections[0].title == SUMMARY_TITLE else 0):
            parts.append(settings_html)  # after the executive summary, before the details
        parts.append(f"<h2>{textsafe.html(sec.title)}</h2>")
        cls = " class='summary'" if sec.title == SUMMARY_TITLE else ""
        parts.extend(f"<p{cls}>{p if isinstance(p, Html) else inline_markdown(p)}</p>" for p in sec.paragraphs)
        for tab in sec.tables:  # to_html escapes every cell and header; a missing cell reads "—", never NaN
            parts.append(
                "<div class='tbl'>"
                + tab.to_html(index=False, border=0, na_rep="—", float_format=lambda x: f"{x:.4g}")
                + "</div>"
            )
        for fig in sec.figures:
            if not fig.layout.template.layout.to_plotly_json():  # page figures may rely on Streamlit's theme
                fig = go.Figure(fig).update_layout(template="plotly_white")
            parts.append(
                "<div class='fig'>"
                + pio.to_html(fig, include_plotlyjs=first, full_html=False, config={"displaylogo": False})
                + "</div>"
            )
            first = False
    if settings and not sections:
        parts.append(settings_html)
    parts.append("</body></html>")
    return "\n".join(parts)


ADVISOR_SOURCE = "the advisor's recommendation in the decision record below"


def chosen_epsilon(epsilon: float, advice=(), *, given: bool = True) -> tuple[float, float | None, str | None]:
    """The one ε a report explains, its δ (None: pure) and where it comes from (None: the ε given).

    With a decision record and no ε given, the report explains the advisor's recommended ε (as written in the
    record: the number a reader copies, rounded on its safe side), at its δ; otherwise the ε given, and the summary
    names the recommendation it differs from (:func:`executive_summary`)."""
    if advice and not given:
        d = advice[0]["decision"]
        return float(d["epsilon_text"]), float(d["delta"]) if d.get("delta") else None, ADVISOR_SOURCE
    return float(epsilon), None, None


def epsilon_section(epsilon: float, delta: float | None = None, source: str | None = None) -> Section:
    from dpcore.figures import home

    eps = check_epsilon(epsilon)
    d = f" and δ = {claims.delta(delta)}" if delta else ""
    whence = f" ({source})" if source else ""
    return Section(
        "What the chosen ε means",
        [
            f"Chosen ε = {eps:g}{d}{whence}, for datasets that differ by adding or removing one person: privacy level "
            f"'{level_sentence(eps)}'.",
            reading(eps, 0.5, delta),
            reading(eps, 0.01),
            fact_reading(eps, 0.5),
            Html(
                f"Any output is at most {E_EPS} = "
                + inline_markdown(
                    f"{claims.exp_up(eps)} times more likely with a given person's data than without it (whether "
                    "they are in the data), and at most "
                )
                + "e<sup>2ε</sup> = "
                + inline_markdown(
                    f"{claims.exp_up(2 * eps)} times more likely with one value of a known person's record than "
                    "with another (a fact about them)."
                )
            ),
        ],
        [home.deployments_chart(eps), home.posterior_chart(eps)],
    )


def noise_section(epsilon: float, *, n: int = 10_000, seed: int = 0) -> Section:
    """The default noise scenario: count of patients with the rare disease, Laplace at the chosen ε."""
    from dpcore.data import datasets
    from dpcore.figures import noise as noise_figs
    from dpcore.noise import teaching
    from dpcore.noise import view as noise_page

    df = datasets.medical(n, seed)
    q = teaching.query(df, "count", "has_rare_disease")
    draws = 20_000
    view = noise_page.noise_view(
        "laplace", epsilon, None, q.sensitivity, q.true_value, draws=draws, seed=seed, integer=True
    )  # a count's whole-number noise: view.released's figures, as the page
    error, half = view.released.expected_abs_error(), view.released.halfwidth(0.95)
    figs = noise_figs.figures(view, "released count of patients with the rare disease", "patients")
    table = noise_page.epsilon_table("laplace", None, q.sensitivity, q.true_value, integer=True, seed=seed)
    table = table.rename(
        columns={
            "epsilon": "ε",
            "noise scale": "noise scale (patients)",  # the page's download
            "expected |error|": "expected |error| (patients)",
            "95% within ±": "95% within ± (patients)",
        }
    )
    return Section(
        "Noise: a count released with the Laplace mechanism",
        [
            f"Query: a count of patients with the rare disease on the synthetic medical data (n = {n:,}, seed "
            f"{seed}); sensitivity Δ = 1.",
            f"At ε = {epsilon:g} (δ = 0; add or remove one patient's record) the Laplace scale is b = "
            f"{view.spec.scale:.4g}; a released count is typically off by {patients(error)} and 95% of releases "
            f"fall within ±{claims.up(half)} of the truth — whole-number noise, the figures the noise page shows.",
            f"The histogram is a simulation to show the shape: {draws:,} draws of ordinary random numbers (numpy, "
            f"fixed by seed {seed}), not releases; released answers go through the safe release path (OpenDP's exact "
            "samplers, whole-number noise, a secure random source). The curves are the continuous Laplace density; "
            "the table is exact (no random draw): the whole-number (geometric) mechanism's, which releases draw.",
        ],
        [figs["distribution"], figs["why"], figs["error"]],
        [table],
        {"expected_abs_error": float(error), "true_value": q.true_value},
    )


def reidentification_section(epsilon: float, settings=None) -> Section:
    """The re-identification story: the same dpcore function and settings as the page, so the same numbers."""
    from dpcore.attacks import reidentification as reid
    from dpcore.figures import reidentification as rfigs

    st = reid.story(settings, epsilon=check_epsilon(epsilon))
    s = st.settings
    return Section(
        "Re-identification of the 'anonymised' release (not private: computed on raw data)",
        [
            "**{}.** {}".format(*st.headline()),
            f"Synthetic release of {s.n:,} patients (data seed {s.seed}) with names removed; the re-identification "
            "page shows the same numbers for the same settings.",
            reid.neighbour_sentence(st.neighbour, s.sensitive),
            f"DP defence: each set of noisy counts is ε = {st.dp['epsilon']:g}-DP for adding or removing one patient; "
            f"for a known patient's {s.sensitive} (replace-one) the guarantee is ε = "
            f"{st.dp['epsilon_replace_one']:g}, so any guess is at most {claims.up(st.dp['likelihood_ratio'])}× as likely "
            "to be right as without the release. Guessing the most common value would be right "
            f"{st.dp['prior_guess']:.0%} of the time.",
        ],
        [
            rfigs.narrowing_chart(st.neighbour.narrowing, s.n),
            rfigs.incremental_chart(st.steps),
            rfigs.linkage_chart(st.linkage),
            rfigs.dp_success_chart(st.dp, st.dp["epsilon"]),
        ],
        [st.findings()],
        {"story": st},
    )


def synth_section(job_id: str, epsilon: float | None = None, *, caller) -> Section:
    """A DP synthetic-data study (the re-identification page's last defence): the release's privacy statement,
    the attacks and the utility at the study's ε nearest ``epsilon`` (default 1), as the page shows them. Read
    for ``caller`` (someone else's study is NotYours)."""
    from dpcore.figures import synth as sfigs
    from dpcore.jobs import registry, store
    from dpcore.jobs.display import ran_at
    from dpcore.synth import story as synth_story
    from dpcore.synth import study as synth_study

    job = store.get(job_id, caller=caller, history=False)
    registry.check_kind(job, registry.SYNTH_STUDY)
    study = synth_study.from_job(job)
    e = study.point(1.0 if epsilon is None else check_epsilon(epsilon))["epsilon"]
    shared = (
        f" The shared default study (the page's default settings on the default patients), finished {ran_at(job)}."
        if job.shared
        else ""
    )
    claim, detail = synth_story.headline(study, e)
    st = study.statement(e) or {}
    rows = (
        [
            ("generator", (st.get("generator") or {}).get("method", "—")),
            ("ε, δ", f"ε = {claims.up(st['epsilon'])}, δ = {claims.delta(st['delta']) if st['delta'] else 0}"),
            ("neighbouring datasets", st["neighbour_relation"]),
            ("unit of privacy", st["unit_of_privacy"]),
            ("noise", st["generator"]["noise"] + "; " + st["randomness"]["measurement"]),
            ("post-processing", st["randomness"]["post_processing"]),
            (
                "declared public",
                "; ".join(f"{c['name']}: {c['declared']}" for c in st["declared_public"]["columns"])
                + f"; rows: {st['declared_public']['rows']}",
            ),
        ]
        if st
        else []
    )
    return Section(
        f"DP synthetic data instead of the table ({job.label or study.config.label()}, ε = {e:g})",  # its name, not id
        [
            f"**{claim}.** {detail}",
            synth_story.guarantee(study, e),
            f"Study: {study.config.label()}; every ε released {study.config.repetitions} times, each with a twin fitted "
            "to an independent population (the baseline). Attack and utility numbers are computed on the real rows: "
            "not covered by ε." + shared,
        ],
        [sfigs.attack_chart(study, e), sfigs.utility_chart(study, e), sfigs.model_chart(study, e)],
        [
            synth_story.findings(study, e),
            pd.DataFrame(rows, columns=["privacy statement", "value"]),
            study.questions(e),
        ],
        {"study": study, "epsilon": e},
    )


def sweep_section(sweep_id: str, *, caller) -> Section:
    """Accuracy vs ε and membership-inference results of a stored sweep (finished points so far)."""
    from dpcore.figures import privacy_utility as pfigs
    from dpcore.sweep import runs as sweep_runs
    from dpcore.sweep import summary as sweep_summary
    from dpcore.sweep import who_pays

    st = sweep_runs.state(sweep_id, caller=caller)
    result = st["result"]
    if not result.get("points") and not result.get("baseline"):
        raise DPError(f"sweep {sweep_id!r} has no finished points yet; wait for it or choose another")
    rows = sweep_summary.by_epsilon(result)
    cfg = result.get("config", {})
    title = sweep_summary.sweep_title({**st, "config": {**(st.get("config") or {}), **cfg}})
    paras = [
        f"Sweep: {title} ({st['status']}, {st['done']} of {st['total']} trainings finished); "
        f"δ = {claims.delta(cfg['delta']) if 'delta' in cfg else '?'}, neighbours differ by adding or removing "
        f"one training example, accountant {accountant_name(cfg.get('accountant', '?'))}. Each DP point's ε is the accountant's upper bound; the "
        "empirical ε is a lower bound from membership-inference attacks at 95% confidence over all the "
        "seeds of an ε together (each seed's audit corrected for their number), with the median seed's bound "
        "as a separate 95% statement."
    ]
    paras += [sweep_summary.reading(result, r["epsilon"]) for r in rows]
    bad = sweep_summary.violations(result)
    paras.append(
        "No point's empirical lower bound exceeds its claimed ε."
        if not bad
        else f"WARNING: {len(bad)} point(s) have an empirical lower bound above the claimed ε — a bug to find."
    )
    fields = ("epsilon", "epsilon_spent", "n", "accuracy", "empirical_epsilon", "empirical_epsilon_median")
    words = {k: sweep_summary.column_label(k) for k in fields}  # the page's headers: private columns say so
    table = pd.DataFrame(
        [{words[k]: sweep_summary.shown_row(r).get(k, "—") for k in fields} for r in rows]
    )  # the page's table: its words and its rounding
    tables = [table]
    for by in ("class", "subgroup"):  # who pays for privacy: each class's and subgroup's accuracy across ε
        pays = who_pays.who_pays(result, by=by)
        if pays:
            paras.append(who_pays.reading(pays))
            tables.append(pd.DataFrame(who_pays.shown(pays)))
    base = sweep_summary.baseline_summary(result)
    figs = [
        pfigs.accuracy_chart(result),
        pfigs.attack_chart(result, "auc"),
        pfigs.attack_chart(result, "tpr_at_1pct_fpr"),
        pfigs.empirical_epsilon_chart(result),
    ]
    return Section(f"Privacy–utility: {title}", paras, figs, tables, {"title": title, "rows": rows, "baseline": base})


def synth_summary(study, epsilon: float) -> str:
    """The executive summary's sentence for a DP synthetic-data study at the ε its section shows: what the
    release would be (its statement's ε and δ, the relation), whether the story's attacker still finds the
    neighbour, and what it keeps of the real table (measured on the real rows: not covered by ε)."""
    from dpcore.synth import story as synth_story

    claim, _ = synth_story.headline(study, epsilon)
    st = study.statement(epsilon) or {}
    guarantee = (
        f"each synthetic table is differentially private at ε = {claims.up(st['epsilon'])}, δ = "
        f"{claims.delta(st['delta']) if st['delta'] else 0}, for adding or removing one patient "
        f"({st['generator']['name']} through OpenDP)"
        if st
        else ""
    )
    two = study.stat(epsilon, "two_way_max")
    keeps = (
        f"; its largest error in the 2-way marginals that matter is {two['mean']:.1f} percentage points (mean "
        f"over {two['count']} release{'s' if two['count'] != 1 else ''}; measured on the real rows: not covered "
        "by ε)"
        if two
        else ""
    )
    return (
        f"Instead of the table, a **DP synthetic release** ({study.config.generator.upper()}, "
        f"{study.config.n:,} patients): {claim[0].lower() + claim[1:]}"
        + (f" — {guarantee}" if guarantee else "")
        + f"{keeps}."
    )


def executive_summary(eps: float, delta, sections: list[Section], source: str | None = None, advice=()) -> Section:
    """Five sentences a board needs, from the numbers the sections below show. ``source``: where the report's one ε
    comes from; a decision record in ``advice`` that recommends another ε is named as such, beside it."""
    noise = next(sec for sec in sections if sec.title.startswith("Noise"))
    st = next(sec for sec in sections if sec.title.startswith("Re-identification")).numbers["story"]
    post, fact = float(posterior_bound(0.5, eps)), float(fact_bound(0.5, eps))
    d = (
        f" (δ = {claims.delta(delta)}: the bounds fail only where the privacy loss exceeds ε, for the continuous "
        f"Gaussian mechanism with probability {claims.up(loss_tail(eps, delta), 2)}; each released answer states its "
        "own)"
        if delta
        else " (δ = 0)"
    )
    lr, dp, rep = st.linkage, st.dp, st.uniqueness
    out = [
        f"At the chosen **ε = {eps:g}**{d}{f' ({source})' if source else ''}, anyone who was 50% sure that a person is in the data can become at "
        f"most **{claims.percent(post, up=True)}** sure from a release, {WHATEVER_ELSE}; about someone known "
        f"to be in it, a fact such as their diagnosis goes from 50% to at most **{claims.percent(fact, up=True)}**: "
        f"privacy level '{privacy_level(eps)}'.",
        f"Removing names does not anonymise: **{rep.unique_fraction:.1%}** of {rep.n:,} synthetic patients are "
        f"unique on {', '.join(rep.qis).replace('_', ' ')}, and a public register re-identifies "
        f"**{lr.right_person:,} of the {lr.in_release:,}** patients it lists ({lr.success_rate:.0%}).",
        f"Coarsening the data (generalisation) lowers that risk but gives no guarantee; differential privacy does: "
        f"with noisy counts at ε = {eps:g} a simulated attacker names a patient's {st.settings.sensitive} "
        f"correctly **{dp['at_epsilon']:.0%}** of the time, against {dp['no_noise']:.0%} from the raw release and "
        f"{dp['prior_guess']:.0%} by blind guessing.",
        f"The price is accuracy: a count of patients released at ε = {eps:g} is off by "
        f"**{patients(noise.numbers['expected_abs_error'])}** on average.",
    ]
    others = [a["decision"]["epsilon_text"] for a in advice if float(a["decision"]["epsilon_text"]) != eps]
    if others:  # one number per claim: a second ε in the report says whose it is and that it is not this one
        out.append(
            f"The advisor's decision record below recommends ε = {', '.join(dict.fromkeys(others))} for its own risk "
            f"limit and utility target; the figures above are for ε = {eps:g}, not for that recommendation."
        )
    for sec in sections:
        if "study" in sec.numbers:  # a DP synthetic-data study: the release a data owner would publish
            out.append(synth_summary(sec.numbers["study"], sec.numbers["epsilon"]))
        if "audit" in sec.numbers:  # an audit of the reader's own model
            out.append(sec.numbers["audit"])
    sweep = next((sec for sec in sections if sec.title.startswith("Privacy–utility")), None)
    rows = (sweep.numbers.get("rows") or []) if sweep else []
    if sweep and rows:
        r = min(rows, key=lambda r: abs(math.log(r["epsilon"] / eps)))
        base = sweep.numbers.get("baseline") or {}
        vs = f", against {base['accuracy']:.1%} without privacy" if base.get("accuracy") else ""
        out.append(
            f"For model training ({sweep.numbers['title']}), the DP model at ε = {r['epsilon']:g} reaches "
            f"**{r['accuracy']:.1%}** test accuracy{vs}."
        )
    else:
        out.append(
            "Every ε in this report is an upper bound for datasets that differ by adding or removing one "
            "person, except where a section names the replace-one guarantee it uses."
        )
    return Section(SUMMARY_TITLE, out)


def build(
    epsilon: float = 1.0,
    *,
    delta: float | None = None,
    sweep_id: str | None = None,
    n: int = 10_000,
    seed: int = 0,
    story_settings=None,
    job_ids=(),
    ledgers=(),
    advice=(),
    progress=None,
    caller=None,
    viewer=None,
    synth_ids=(),
    audits=(),
    epsilon_source: str | None = None,
) -> str:
    """The whole report as one HTML string: the executive summary first, then the details.

    ``epsilon_source``: where ``epsilon`` comes from ("Home's ε slider", :data:`ADVISOR_SOURCE`), said beside it
    wherever the report states it (:func:`chosen_epsilon` picks the ε and its source).

    ``n``/``seed``: the noise section's data. The re-identification section uses the page's default story
    (``story_settings``, default :class:`dpcore.attacks.reidentification.StorySettings`), so its numbers match the page.
    A privacy statement section (:mod:`dpcore.report.statements`) follows for the sweep, each finished training
    run in ``job_ids`` and each ``(dataset[, analyst])`` in ``ledgers``, as ``viewer`` (a checked identity;
    default: a visitor) may see it; a decision record for each advice statement in ``advice``
    (:mod:`dpcore.advisor.decision`); each finished synthetic-data study in ``synth_ids`` adds its section
    (statement, attacks and utility at the study's ε nearest ``epsilon``); each audit of your own model in ``audits``
    (``{"result": dpcore.attacks.model_audit.audit_model(...), "name": the scores file's name}``: the Audit your model
    page's, or ``report --audit``'s) adds the section :func:`dpcore.report.audit.audit_section` builds (the one
    builder; the page's own audit report uses it too). ``progress(fraction, text)`` is told each step (the Home page
    shows it).
    ``caller`` (:class:`dpcore.jobs.owners.Caller`): whom the sweep, the runs and the studies are read for — someone else's is
    refused (NotYours), as everywhere.
    """
    from dpcore.attacks import reidentification as reid
    from dpcore.report.statements import advice_section, statement_section
    from dpcore.statements import ledger as ledger_statement
    from dpcore.statements import sweep as sweep_statement
    from dpcore.statements import training as training_statement

    step = progress or (lambda fraction, text: None)

    eps = check_epsilon(epsilon)
    if eps > limits.EPSILON_MAX:  # e^ε overflowed at 1e308 (OverflowError); the pages offer up to this too
        raise DPError(
            f"the report explains ε up to {limits.EPSILON_MAX:g}, got {eps:g}; choose a smaller ε (0.1–10 is usual)"
        )
    story = story_settings or reid.StorySettings()
    # statements first: a wrong run id or an unfinished run fails before the slow sections are built
    if (sweep_id or job_ids or synth_ids) and caller is None:
        raise DPError(
            "a report with a sweep, training runs or synthetic-data studies needs the caller they are read for"
        )
    step(0.05, "Privacy statements of the runs and query histories")
    statements = [training_statement.for_job(j, caller=caller) for j in dict.fromkeys(job_ids)]
    if ledgers and viewer is None:
        from dpcore.budgets.identities import VISITOR as viewer
    statements += [
        ledger_statement.for_ledger(lg[0], viewer=viewer, analyst=lg[1] if len(lg) > 1 else None) for lg in ledgers
    ]
    synth = [synth_section(j, eps, caller=caller) for j in dict.fromkeys(synth_ids)]  # unfinished: fails early
    step(0.2, "What the chosen ε means")
    sections = [epsilon_section(eps, delta, epsilon_source)]
    step(0.35, "Noise: a count released at this ε")
    sections.append(noise_section(eps, n=n, seed=seed))
    step(0.55, "Re-identification of the 'anonymised' release")
    sections.append(reidentification_section(eps, story))
    sections += synth
    settings = {
        "ε": f"{eps:g}" + (f" ({epsilon_source})" if epsilon_source else ""),
        "δ": claims.delta(delta) if delta else "0 (pure ε-DP for the Laplace queries)",
        "neighbouring datasets": "differ by adding or removing one person (replace-one where a section says so)",
        "noise data": f"synthetic medical, {n:,} patients, seed {seed}",
        "re-identification data": f"synthetic medical, {story.n:,} patients, seed {story.seed}",
        "accountant": "exact (sequential composition) for queries",
    }
    if sweep_id:
        step(0.7, "The privacy–utility sweep and its statement")
        sec = sweep_section(sweep_id, caller=caller)
        sections.append(sec)
        settings["sweep"] = sec.numbers["title"]
        settings["accountant"] += "; Opacus accountant for DP-SGD (see the sweep section)"
        try:
            sections.append(statement_section(sweep_statement.for_sweep(sweep_id, caller=caller), sec.numbers["title"]))
        except DPError:  # only a baseline or diffprivlib points: nothing to state beyond the sweep section
            pass
    sections += [statement_section(s) for s in statements]
    sections += [advice_section(a) for a in advice]
    if audits:
        from dpcore.report.audit import audit_section  # it imports this module: read when asked

        sections += [audit_section(a["result"], a.get("name")) for a in audits]
    n_st = sum(sec.title.startswith("Privacy statement") for sec in sections)
    if n_st:
        settings["privacy statements"] = f"{n_st} (training runs, sweeps and query histories: see their sections)"
    step(0.85, "Writing the HTML (charts embedded, opens offline)")
    html = render([executive_summary(eps, delta, sections, epsilon_source, advice), *sections], settings)
    step(1.0, "Report ready")
    return html
