"""Audit your model: membership scores from your own attack on your own model -> what they prove about its ε, and,
with the mechanism stated, whether they contradict its claim (the same function as `python -m dpcore audit`)."""

import hashlib
import json

import streamlit as st

from dpcore import claims, export, limits
from dpcore.attacks import model_audit
from dpcore.figures import audit as figs
from dpcore.figures import promise
from dpcore.report.audit import audit_report
from pages.ui import first_screen
from pages.ui.common import chart, code_downloads, guarded, headline_md, unbroken

EXAMPLE_NAME = "example-scores.csv"
MECHS = {"none": "Not stated", "epsilon": "ε and δ", "dpsgd": "DP-SGD run"}

st.title("Audit your model")
# The first screen: the headline and the ROC it is read from, beside the form that feeds them (on a phone the chart
# comes first). Before an upload the page audits the example file, labelled so.
head = first_screen.headline()
plot, form = st.columns([3, 2])
note = form.container()  # says "the example" before any upload, above the uploader where it is seen
with form.expander("What to upload", icon=":material/help:"):
    st.markdown(
        "The scores your own membership attack gave your own model: one row per record, `member` (1 = trained on, "
        "0 = held out) and `score` (higher = more likely a member), optionally `canary` (1 = a record put in "
        "training by a fair coin). The page shows what they **prove** about ε: a lower bound at the confidence you "
        "choose, for datasets that differ by adding or removing one record. State the mechanism, and it shows the "
        "worst case the claim allows and whether your scores contradict it."
    )
with form.container(border=True):
    up = st.file_uploader(
        "Scores CSV",
        type=["csv"],
        key="au_csv",
        help=f"At most {limits.upload_size()} and {limits.AUDIT_MAX_ROWS:,} rows. Columns member, "
        "score and optionally canary (any letter case); other columns are ignored.",
    )
    st.download_button(
        "Example scores file",
        model_audit.example_csv(),
        EXAMPLE_NAME,
        "text/csv",
        key="au_example",
        icon=":material/download:",
        help="1,000 synthetic records and 500 canaries from a leaky model: no one's data.",
    )
    s1, s2 = st.columns(2)
    delta = s1.number_input(
        "δ",
        min_value=0.0,
        max_value=0.999,
        value=1e-5,
        format="%.0e",
        step=1e-6,
        key="au_delta",
        help="The δ at which ε is bounded (for a stated ε and δ, that δ). Keep it below 1/rows.",
    )
    confidence = s2.select_slider(
        "Confidence",
        [0.9, 0.95, 0.99],
        value=0.95,
        key="au_conf",
        format_func="{:.0%}".format,
        help="How often a bound of this kind holds (over repetitions of the audit).",
    )
    how = st.radio(
        "The model's claim",
        list(MECHS),
        format_func=MECHS.get,
        key="au_mech",
        horizontal=True,
        help="State how the model was trained to compare the audit with its claim; the worst case is exact "
        "(from the privacy-loss distribution for DP-SGD).",
    )
    kw = {}
    if how == "epsilon":
        m1, m2 = st.columns(2)
        kw = {
            "epsilon": m1.number_input(
                "Claimed ε", min_value=limits.EPSILON_MIN, max_value=limits.EPSILON_MAX, value=1.0, key="au_eps"
            ),
            "delta": m2.number_input(
                "Claimed δ", min_value=0.0, max_value=0.999, value=1e-5, format="%.0e", step=1e-6, key="au_claim_delta"
            ),
        }
    elif how == "dpsgd":
        m1, m2, m3 = st.columns(3)
        kw = {
            "noise_multiplier": m1.number_input(
                "Noise multiplier σ",
                min_value=limits.NOISE_MULTIPLIER_MIN,
                max_value=limits.NOISE_MULTIPLIER_MAX,
                value=1.0,
                key="au_sigma",
            ),
            "sample_rate": m2.number_input(
                "Sample rate q",
                min_value=1e-9,
                max_value=1.0,
                value=0.01,
                format="%.4g",
                key="au_q",
                help="Expected batch size ÷ training rows.",
            ),
            "steps": m3.number_input("Steps", 1, limits.DPSGD_MAX_STEPS, 1000, key="au_steps"),
            "delta": delta,
        }


@st.cache_data(max_entries=limits.CACHE_MAX_ENTRIES, show_spinner="Auditing your scores…")
def _audit(digest: str, data: bytes, delta: float, confidence: float, split_seed: int, mech: tuple | None) -> dict:
    """One audit per file and settings (the file by its digest: a rerun that changes nothing costs nothing)."""
    table = model_audit.read_scores(data)
    return model_audit.audit_model(
        table["member"],
        table["score"],
        table["canary"],
        delta=delta,
        confidence=confidence,
        split_seed=int(split_seed),
        mech=dict(mech) if mech else None,
    )


example = up is None  # a first visit: the example file's audit, so the picture comes before the upload
if example:
    note.info(
        "Shown: the example file (a leaky model's synthetic scores, no one's data). Upload your scores above.",
        icon=":material/upload_file:",
    )
mech = guarded(model_audit.mechanism, **kw) if how != "none" else None
if how != "none" and mech is None:
    st.stop()  # the message is shown above
data = model_audit.example_csv() if example else up.getvalue()
name = EXAMPLE_NAME if example else up.name
result = guarded(
    _audit,
    hashlib.sha256(data).hexdigest(),
    data,
    delta,
    confidence,
    model_audit.SPLIT_SEED,
    tuple(sorted(mech.items())) if mech else None,
)
if result is None:
    st.stop()
if not example:
    st.session_state["au_report"] = {"result": result, "name": name}  # Home's report can include this audit

# ---------------------------------------------------------------------------------------------- the answer
# the audits together, each re-bounded for the other (the larger of two 95% bounds is not a 95% bound): the same
# number as the verdict's, whether or not a claim is stated
proved = result["proved"]["epsilon"]
conf = f"{result['confidence']:.0%}"
verdict = result.get("verdict")
whose = "The example's scores" if example else "Your scores"
if verdict is not None and verdict["contradicts"]:
    claim = f"{whose} contradict the claimed ε = {claims.up(result['claimed_epsilon'])}"
    head.error(headline_md(claim, verdict["words"]), icon=":material/report:")
else:
    bound = unbroken(f"ε ≥ {claims.down(proved)}")  # the bound and its number on one line on a phone
    claim = f"{whose} prove {bound}" if proved > 0 else f"{whose} prove no leak ({unbroken('ε ≥ 0')})"
    detail = (
        verdict["words"]
        if verdict
        else f"A lower bound at {model_audit.proved_words(result)}, at δ = {claims.delta(result['delta'])} "
        "(add/remove one record): what these attacks prove about the model, not that the model is private. "
        "State the mechanism to compare."
    )
    head.markdown(headline_md(claim, detail))
with plot, first_screen.main_chart():
    chart(figs.roc_chart(result, whose.lower()), key="au_fig_roc")
cols = st.columns(4)
if result["split_audit"]:
    a = result["split_audit"]
    cols[0].metric(
        "Split audit: ε ≥",
        claims.down(a["lower_bound"]),
        help=f"Ordinary records ({a['members'] + a['selection_members']:,} members, "
        f"{a['nonmembers'] + a['selection_nonmembers']:,} non-members): the threshold chosen on a random "
        f"half, the bound ({conf}) computed on the other half; the split is fixed in advance (seed "
        f"{model_audit.SPLIT_SEED}): the {conf} holds for one split, not for the best of several. "
        f"At most {a['max_certifiable']:.2f} could be proved with these rows. "
        f"{model_audit.SPLIT_ASSUMES}",
    )
if result["one_run"]:
    a = result["one_run"]
    cols[1].metric(
        "One-run audit: ε ≥",
        claims.down(a["lower_bound"]),
        help=f"Canaries (Steinke, Nasr & Jagielski 2023): {a['correct']} of {a['guesses']} guesses right on "
        f"{a['n_canaries']:,} canaries, {conf} confidence.",
    )
att = result["attack"] or result["canary_attack"]
if att:
    cols[2].metric(
        "TPR at 1% FPR",
        f"{att['tpr_at_1pct_fpr']:.1%}",
        help="The share of members flagged while flagging 1% of non-members (ordinary records).",
    )
    cols[3].metric(
        "TPR at 0.1% FPR",
        f"{att['tpr_at_0.1pct_fpr']:.1%}",
        help="The same at 0.1% of non-members: the low false-positive regime where leaks show.",
    )
if result["proved"]["audits"] > 1:
    st.caption(
        f"Each audit's ε above holds at {conf} on its own. The headline reads the two together, each at "
        f"{result['proved']['per_audit_confidence']:.1%} (the larger of two {conf} bounds is not a {conf} "
        "bound), so it can sit below the larger of them."
    )
if result.get("ceiling"):
    c = result["ceiling"]
    st.caption(
        f"The claim allows at most {claims.percent(c['tpr_at_1pct_fpr'], up=True)} TPR at 1% FPR and "
        f"{claims.percent(c['tpr_at_0.1pct_fpr'], up=True)} at 0.1% (both rounded up): {c['source']}."
    )
plot.caption(
    "Both axes on a log scale, so the low false-positive rates where membership leaks show are visible; the "
    "dotted lines mark 1% and 0.1% FPR. "
    + (
        "The shaded region is what the stated claim rules out: a curve above its edge at one point is not a "
        "proof on its own (rates measured on a sample are noisy); the bounds above are."
        if result.get("ceiling")
        else "State the model's claim above to draw the region it rules out. A curve is not a proof on its "
        "own (rates measured on a sample are noisy): the bounds above are."
    )
)

with st.expander("Promise and proof: the same scores as trade-off curves (Gaussian DP, f-DP)", expanded=False):
    bounds = figs.promise_bounds(result)
    if any(b.kind == "promise" for b in bounds):
        chart(promise.run_chart(bounds, result["delta"]), key="au_fig_promise")
        st.markdown(promise.verdict(bounds, result["delta"]))
    else:
        st.caption("State the model's claim above to see the promise beside what your scores measure.")
    chart(figs.tradeoff(result, whose.lower()), key="au_fig_tradeoff")
    gd, fd = result.get("gdp"), result.get("one_run_fdp")
    words = []
    if gd:
        words.append(
            f"The records' Gaussian-DP audit (Nasr et al. 2023) proves μ ≥ {claims.down(gd['mu'])} and "
            f"ε ≥ {claims.down(gd['epsilon'])} at δ = {claims.delta(result['delta'])}, from {len(gd['points'])} tests "
            "fixed on one half of the rows and bounded on the other: the proved curve lies under the true one."
        )
    if fd:
        words.append(
            f"The canaries' f-DP audit (Mahloujifar et al. 2024) proves μ ≥ {claims.down(fd['mu'])}: every Gaussian "
            "curve below the dotted one is ruled out."
        )
    st.caption(
        " ".join(words)
        + f" Each is a {conf} measurement on its own, beside the headline's bound (never the largest of them); "
        "none is a guarantee. See the docs' page on the audits for the formulas."
    )

# ---------------------------------------------------------------------------------------------- take it away
row = st.container(horizontal=True, gap="small")
row.download_button(
    "Results (JSON)",
    lambda: json.dumps(result, indent=2).encode(),
    "audit.json",
    "application/json",
    key="au_dl_json",
    icon=":material/download:",
)
row.download_button(
    "Report (HTML)",
    lambda: audit_report(result, name).encode(),
    "audit-report.html",
    "text/html",
    key="au_dl_report",
    icon=":material/description:",
)
recipe = guarded(
    export.for_audit,
    name,
    delta=result["delta"],
    confidence=result["confidence"],
    split_seed=model_audit.SPLIT_SEED,
    mechanism=mech,
)
if recipe is not None:
    code_downloads(recipe, "au_dl", row)
st.caption(
    "The same audit from the command line: `python -m dpcore audit --scores FILE.csv` (with `--epsilon` or "
    "`--noise-multiplier`, `--sample-rate` and `--steps` to state the claim). The two code downloads (Python and "
    "Jupyter) re-run it headless; they name your file by its own name and hold none of its rows. Home's *Prepare "
    "report* can include this audit as a section (`report --audit FILE.csv` from the command line)."
)
