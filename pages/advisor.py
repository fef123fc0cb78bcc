"""ε advisor: state a risk limit and a utility target; get the ε range (σ, noise multiplier) that meets both."""

import json

import streamlit as st

from dpcore import claims, export, textsafe
from dpcore.advisor import decision, links, reconstruction, targets
from dpcore.advisor.advice import Advice
from dpcore.errors import sentence
from dpcore.figures import advisor as figs
from dpcore.noise import view as noise_page
from dpcore.statements import signing
from dpcore.sweep import runs as sweep_runs
from pages.ui import first_screen
from pages.ui.common import (
    chart,
    code_downloads,
    from_url,
    guarded,
    headline_md,
    job_caller,
    required,
    share_in_url,
    unbroken,
)
from pages.ui.reid_synth import advice_section
from pages.ui.verify_box import verify_box

MECHS = {"gaussian": "Gaussian noise", "laplace": "Laplace (pure ε-DP)", "dpsgd": "DP-SGD training"}
RISKS = {
    "tpr": "Membership: TPR at a given FPR",
    "posterior": "Posterior belief from a prior",
    "advantage": "Attacker advantage (TPR − FPR)",
}
QUERIES = {"none": "No utility target", "count": "COUNT within ±k", "sum": "SUM within ±k", "mean": "MEAN within ±k"}

st.title("Choose ε from risk")
# The first screen: the answer (headline) and the ε axis it is read from, filled once the settings below are read.
head = first_screen.headline()
band = first_screen.main_chart()
with st.expander("How the advisor works", icon=":material/help:"):
    st.markdown(
        "Say how much an attacker may learn about **one patient's record** and how accurate the answer must be; "
        "the advisor solves for the **ε range that meets both**, from the mechanism's exact worst-case trade-off "
        "curve (neighbours: add/remove one record). When none does, it says by how much they conflict and what "
        "would reconcile them."
    )

BOUNDS_HELP = "Known without looking at the data: they set how far one record can move the answer."
# Numbers are used as typed: the widgets have no min/max (Streamlit kept an out-of-range number in the box while
# the answer used another); dpcore refuses what it cannot use with a message. Links clamp to this range.
P_LO, P_HI = 0.0001, 0.9999
RISK_HELP = (
    "A membership test guesses whether one person's record is in the data. TPR (true-positive rate): "
    "the share of people in the data it flags. FPR (false-positive rate): the share of people not in "
    "the data it flags wrongly. Posterior: the attacker's belief that the person is in, after seeing the "
    "answer, from a prior belief. Advantage: TPR − FPR, the best test's edge over guessing."
)
c1, c2 = st.columns(2)
mechanism = c1.radio(
    "Mechanism",
    list(MECHS),
    format_func=MECHS.get,
    key="adv_mech",
    index=list(MECHS).index(from_url("adv_mech", "gaussian", list(MECHS))),
)
risk_kind = c2.radio(
    "Risk limit",
    list(RISKS),
    format_func=RISKS.get,
    key="adv_risk",
    help=RISK_HELP,
    index=list(RISKS).index(from_url("adv_risk", "tpr", list(RISKS))),
)

r1, r2, r3 = st.columns(3)
if risk_kind == "tpr":
    limit = r1.number_input(
        "True-positive rate at most",
        value=from_url("adv_t", 0.05, lo=P_LO, hi=P_HI),
        format="%g",
        step=0.01,
        key="adv_t",
        help="TPR: the share of people in the data that the attacker's membership test flags.",
    )
    at = r2.number_input(
        "… at false-positive rate",
        value=from_url("adv_a", 0.01, lo=P_LO, hi=P_HI),
        format="%g",
        step=0.01,
        key="adv_a",
        help="FPR: the share of people not in the data that the same test flags wrongly.",
    )
elif risk_kind == "posterior":
    limit = r1.number_input(
        "Posterior belief at most",
        value=from_url("adv_t", 0.2, lo=P_LO, hi=P_HI),
        format="%g",
        step=0.01,
        key="adv_t",
        help="The attacker's belief that one person's record is in the data, after the answer.",
    )
    at = r2.number_input(
        "… from a prior of",
        value=from_url("adv_a", 0.05, lo=P_LO, hi=P_HI),
        format="%g",
        step=0.01,
        key="adv_a",
        help="The attacker's belief before seeing the answer.",
    )
else:
    limit = r1.number_input(
        "Advantage at most",
        value=from_url("adv_t", 0.1, lo=P_LO, hi=P_HI),
        format="%g",
        step=0.01,
        key="adv_t",
        help="TPR − FPR (true- minus false-positive rate): how much better than a guess the best membership test does.",
    )
    at = None
risk = targets.RiskLimit(risk_kind, limit, at)
delta = None
if mechanism != "laplace":
    delta = r3.select_slider(
        "δ (chance the guarantee fails)",
        options=list(noise_page.DELTA_GRID),
        value=from_url("adv_delta", 1e-5, list(noise_page.DELTA_GRID)),
        format_func=claims.delta,
        key="adv_delta",
        help="The small chance the ε guarantee fails; ε is stated at this δ. Keep it well below 1/n (n = rows).",
    )
else:
    r3.caption("Laplace is pure ε-DP: δ = 0.")

utility, sample_rate, steps = None, None, None
st.markdown("**Utility target**")
if mechanism == "dpsgd":
    sweeps = [s for s in (guarded(sweep_runs.list_sweeps, caller=job_caller()) or []) if s.get("status") == "done"]
    u1, u2, u3 = st.columns(3)
    names = {"": "No accuracy target"} | {s["id"]: f"{s.get('name') or s['id']} · {s['id']}" for s in sweeps}
    sid = u1.selectbox(
        "Accuracy from a stored sweep", list(names), format_func=lambda k: textsafe.md(names[k]), key="adv_sweep"
    )
    if sid:
        acc = u2.number_input("Test accuracy at least", value=0.8, format="%g", step=0.01, key="adv_acc")
        utility = targets.UtilityTarget("accuracy", accuracy=acc, sweep=sid, caller=job_caller())
        u3.caption("Read at the lower end of each ε's spread over seeds, at its seeds' median q and steps.")
    else:
        sample_rate = u2.number_input(
            "Sample rate q",
            value=0.01,
            format="%g",
            step=0.001,
            key="adv_q",
            help="The expected batch size ÷ the training rows.",
        )
        steps = u3.number_input("Steps T", value=1000, step=100, key="adv_steps", help="Training steps: epochs ÷ q.")
        if not sweeps:
            st.caption("No finished sweep yet: run one on the Privacy–utility page to add an accuracy target.")
else:
    u1, u2, u3 = st.columns(3)
    qkind = u1.selectbox(
        "Query",
        list(QUERIES),
        format_func=QUERIES.get,
        key="adv_query",
        index=list(QUERIES).index(from_url("adv_query", "count", list(QUERIES))),
    )
    if qkind == "none":
        u2.caption("No utility target: the advice is the largest ε the risk limit allows.")
    else:
        k = u2.number_input(
            "Allowed error ±k",
            value=from_url("adv_k", 10.0, lo=1e-6, hi=1e12),
            format="%g",
            key="adv_k",
            help="The noisy answer should be within ±k of the true one.",
        )
        conf = u3.select_slider(
            "Confidence",
            [0.8, 0.9, 0.95, 0.99],
            value=0.95,
            key="adv_conf",
            help="How often the answer must fall within ±k.",
        )
        bounds = n = None
        if qkind in ("sum", "mean"):
            v1, v2, v3 = st.columns(3)
            lo = v1.number_input("Public lower bound", value=18.0, key="adv_lo", help=BOUNDS_HELP)
            hi = v2.number_input("Public upper bound", value=90.0, key="adv_hi", help=BOUNDS_HELP)
            bounds = (lo, hi)
            if qkind == "mean":
                n = v3.number_input("Public number of rows n", value=10_000, step=1000, key="adv_n")
        utility = targets.UtilityTarget(qkind, within=k, confidence=conf, bounds=bounds, n=n)
share_in_url("adv_mech", "adv_risk", "adv_delta", "adv_t", "adv_a", "adv_query", "adv_k")


@st.cache_data(show_spinner="Solving on the privacy-loss distribution…", max_entries=16)
def _solve(mechanism, risk, utility, delta, sample_rate, steps):
    inp = decision.inputs(mechanism, risk, utility, delta=delta, sample_rate=sample_rate, steps=steps)
    out = decision.solve_inputs(inp, caller=getattr(utility, "caller", None))  # a sweep is read as its viewer
    out["link"] = links.page_link(out)
    out["console_link"] = links.console_link(out)
    return out, decision.statement(inp, out)


res, record = required(_solve, mechanism, risk, utility, delta, sample_rate, steps)
st.session_state["adv_decision"] = record  # Home's report can add it (this session only)
adv = Advice.from_dict(res)

if adv.feasible:
    head.markdown(headline_md(f"Recommended: {unbroken(f'ε = {links.recommended_text(res)}')}", adv.summary()))
else:
    head.markdown(headline_md("No ε meets both", textsafe.md_message(sentence(adv.conflict_text)) + "."))
with band:
    chart(figs.feasible_band_chart(res), key="adv_band")

st.subheader("Answer")
lo, hi = adv.epsilon_range
m = st.columns(4)
# written so that the number a reader copies keeps its side: what the risk limit allows rounds down, what the
# utility target needs rounds up, the recommendation as whichever of the two it is (dpcore.claims)
m[0].metric("Recommended ε", links.recommended_text(res), help=f"at δ = {claims.delta(adv.delta)}; an upper bound")
m[1].metric("Risk limit allows", f"ε ≤ {claims.down(hi)}")
m[2].metric("Utility needs", f"ε ≥ {claims.up(lo)}" if lo else "—")
name, value, why = adv.noise_setting()
m[3].metric(name, value, help=why or None)
if adv.feasible:
    st.success(adv.summary())
else:
    st.error(textsafe.md_message(f"No ε meets both: {adv.conflict_text}."))
    st.markdown("**What would reconcile them:**\n" + "\n".join(f"- {textsafe.md_message(o)}" for o in adv.reconcile))
st.markdown(f"**What the risk limit bounds:** {adv.question}.")
if adv.loss_tail_text:  # where the posterior reading of ε fails: not δ (the DP-SGD view dropped it)
    st.caption(textsafe.md_message(sentence(adv.loss_tail_text)) + ".")
for note in adv.notes:
    st.caption(textsafe.md_message(sentence(note)))  # the advice's notes start lower-case, like dpcore's errors


@st.cache_data(show_spinner=False, max_entries=16)
def _reconstruction(mechanism, epsilon, delta, sigma, sensitivity, noise_multiplier, sample_rate, steps):
    return reconstruction.for_advice(
        dict(
            mechanism=mechanism,
            epsilon=epsilon,
            delta=delta,
            sigma=sigma,
            sensitivity=sensitivity,
            noise_multiplier=noise_multiplier,
            sample_rate=sample_rate,
            steps=steps,
        )
    )


recon = guarded(
    _reconstruction,
    *(res.get(k) for k in ("mechanism", "epsilon", "delta", "sigma", "sensitivity", "noise_multiplier")),
    res.get("sample_rate"),
    res.get("steps"),
)
if recon is not None:
    rows = recon.rows()
    mid = next(r for r in rows if r["baseline"] == 1e-3)
    st.markdown(
        f"**Reconstruction risk** at the recommended setting: a record an attacker would guess right once in "
        f"1,000 tries without the release can be rebuilt at most **{claims.percent(mid['bound'], 2, up=True)}** of "
        "the time with it — the same curve as the membership limit, read at FPR 0.1% (Hayes, Mahloujifar & Balle "
        "2023)."
    )
    with st.expander("Reconstruction risk at other baselines", expanded=False):
        st.markdown(
            r"| Right without the release | At most, with it | From ε alone ($e^{\varepsilon}\kappa + \delta$) |"
            "\n|---|---|---|\n"
            + "\n".join(
                f"| {claims.percent(r['baseline'], 2, up=True)} | {claims.percent(r['bound'], 2, up=True)} "
                f"({r['times_baseline']:.1f}× the baseline) | "
                + ("—" if r["from_epsilon"] is None else claims.percent(r["from_epsilon"], 2, up=True))
                + " |"
                for r in rows
            )
        )
        st.caption(
            "The baseline κ is how often the attacker's best guess of the record, made without the release, is "
            "right (a rare diagnosis guessed at random: small κ). For any attack, success ≤ 1 − f(κ), f the "
            "mechanism's trade-off curve (Kaissis et al. 2023); a promise, like ε. ε alone gives the looser "
            r"$e^{\varepsilon}\kappa + \delta$."
        )

chart(figs.advice_tradeoff_chart(res), key="adv_roc")
st.caption(
    "The curve is the highest TPR *any* membership test can reach at each FPR against the recommended "
    "setting, from the same privacy-loss distribution (PLD) as its ε (exact for Gaussian and ε-DP; a "
    "pessimistic PLD for DP-SGD). Measured attacks sit below it."
)

link = adv.link
if link is not None and link.page == "pages/training.py":
    if st.button(link.label, key="adv_go", icon=":material/arrow_forward:"):
        for key, value in link.state.items():
            st.session_state[key] = value
        st.switch_page(link.page)
elif link is not None:
    st.link_button(links.link_label(link), link.url, icon=":material/arrow_forward:")
if link is not None:
    st.caption(links.link_note(adv))
console = adv.console_link
if (
    console is not None
):  # the same setting as a real, budgeted query (the analyst is chosen there, never carried by a link)
    st.link_button(console.label, console.url, icon=":material/terminal:")
    for note in links.console_notes(adv):
        st.caption(note)
st.markdown(
    "**Decision record** — the risk limit, the ε chosen, the error and how often each may fail, for a "
    "data-protection officer. *Prepare report* on Home adds it to the HTML report."
)
for line in record["words"]:
    st.markdown(f"- {textsafe.md_message(line)}")
row = st.container(horizontal=True, gap="small")
signed = guarded(signing.issue, record)
if signed:
    row.download_button(
        "Decision record (signed JSON)",
        json.dumps(signed, indent=2, default=float).encode(),
        "decision.json",
        "application/json",
        key="adv_dl_decision",
        icon=":material/verified_user:",
        help="Check it with python -m dpcore statement --verify decision.json: the advice is solved "
        "again from its inputs and every figure compared.",
    )
row.download_button(
    "Advice (JSON)",
    json.dumps(res, indent=2, default=float).encode(),
    "advice.json",
    "application/json",
    key="adv_dl",
    icon=":material/download:",
)
# the decision as code that solves it again (dpcore.export): the same limits through dpcore.advisor
recipe = guarded(
    export.for_advice,
    mechanism,
    {"kind": risk.kind, "value": risk.value, "at": risk.at},
    None if utility is None else {k: v for k, v in vars(utility).items() if v is not None and k != "caller"},
    delta=delta,
    sample_rate=sample_rate,
    steps=steps,
)
if recipe is not None:
    code_downloads(recipe, "adv_dl", row)

st.divider()
advice_section()  # the synthetic-data question (dpcore/synth/advise.py), from a finished study

st.divider()
verify_box()  # check any statement: its signature and every figure, recomputed
