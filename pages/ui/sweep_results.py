"""Parts of a finished sweep on the privacy–utility page: the answer in one sentence (what DP costs at ε ≈ 1 and
the most any attack proves), the canaries its accuracies were measured with, who is most exposed, and the
take-aways (statement, script, notebook)."""

import json

import pandas as pd
import streamlit as st

from dpcore import export
from dpcore.figures import exposure as exposure_figs
from dpcore.statements import sweep as sweep_statement
from dpcore.sweep import exposure as sweep_exposure
from dpcore.sweep import who_pays as sweep_who_pays
from dpcore.sweep.config import ATTACK_LABELS
from dpcore.textsafe import md
from pages.ui.common import chart, code_downloads, guarded, headline_md

TOP = 5


def story(result: dict) -> None:
    """The heading a user came for: "At ε = 1, your model loses X points; no attack proves more than ε ≥ …"."""
    s = sweep_exposure.story(result)
    if s is None:
        return
    claim, detail = sweep_exposure.story_words(s)
    st.markdown(headline_md(claim, detail), help=sweep_exposure.PROVED_LOW)


def _span(values, fmt="{}") -> str:
    lo, hi = min(values), max(values)
    return fmt.format(lo) if lo == hi else f"{fmt.format(lo)}–{fmt.format(hi)}"


def canary_note(result: dict) -> str | None:
    """Under the accuracy chart: the canaries its models trained with, from the counts each stored, and what that
    means for the accuracies shown (None for points stored without their counts)."""
    models = [p for p in (result.get("baselines") or [result.get("baseline")]) + (result.get("points") or []) if p]
    if not models:
        return None
    if (result.get("config") or {}).get("canaries") == 0:
        return "No canaries (too few training rows): the audits are on ordinary records only."
    cs = [p.get("canaries") for p in models]
    if not all(isinstance(c, dict) and "included" in c for c in cs):
        return None
    note = (
        f"Every model here, the non-private baselines too, trained with its canaries: {_span([c['n'] for c in cs])} "
        f"planted (public inputs, labels at random), {_span([c['included'] for c in cs])} put in by their coins "
        f"({_span([c['share_of_training_rows'] for c in cs], '{:.1%}')} of the training rows). Each accuracy is that "
        "of a model trained with them, which may lower it a little; no canary-free copy was trained."
    )
    if result.get("size_control"):
        note += " The training-set-size control's models planted none."
    return note


def point_canaries(point: dict) -> str | None:
    """One inspected model's canaries and its accuracy note (:meth:`dpcore.training.canaries.Canaries.summary`)."""
    c = point.get("canaries")
    if not isinstance(c, dict) or "utility_note" not in c:
        return None
    return f"This model planted {c['n']} canaries; {c['included']} went in. The {c['utility_note']}."


def exposure(result: dict) -> None:
    """Who is most exposed: the baseline's most exposed records, how the attack's reach on them falls with ε, and per
    ε the share of records exposed beyond what ε allows."""
    paths = sweep_exposure.paths(result, TOP)
    if not paths:
        return
    st.subheader("Who is most exposed")
    base = result.get("baseline") or {}
    attack = ATTACK_LABELS.get((base.get("exposure") or {}).get("attack"), "attack")
    st.markdown(
        f"Without DP, these {len(paths)} training records are the easiest to spot as members ({md(attack)} scores: "
        "the attack flags them while flagging few or no non-members). Followed model by model, the same records are "
        "harder to spot as ε falls: DP bounds what any attack can learn about *each* of them."
    )
    st.caption(
        ":orange-badge[Private rows, shown to their owner] these are records of the training data as the "
        "model saw them (after public bounding); nothing about them is covered by ε. They are kept with the "
        "sweep on this server and never written to its JSON or its exported code."
    )
    images = [p for p in paths if (p.get("record") or {}).get("pixels")]
    if images:
        chart(
            exposure_figs.image_chart([{"index": p["index"], "record": p["record"]} for p in images]),
            key="pu_fig_exposed_images",
        )
    else:
        rows = [{"row": p["index"], **{k: v for k, v in (p.get("record") or {}).items()}} for p in paths]
        st.dataframe(pd.DataFrame(rows), hide_index=True, key="pu_exposed")
    eps = (result.get("config") or {}).get("epsilons") or []
    chart(exposure_figs.exposure_chart(paths, eps), key="pu_fig_exposure")
    shares = sweep_exposure.shares(result)
    if shares:
        table = pd.DataFrame(
            [
                {
                    "ε": f"{r['epsilon']:g}",
                    "records exposed beyond ε, DP models": f"{r['dp_share']:.1%}",
                    "records the baseline exposes beyond this ε": "—"
                    if r["baseline_share"] is None
                    else f"{r['baseline_share']:.1%}",
                }
                for r in shares
            ]
        )
        st.dataframe(table, hide_index=True, key="pu_exposure_shares")
        st.caption(
            "A record is exposed beyond ε when the attack that flags it proves more than ε about it (95%, "
            "every threshold corrected together): under DP none should be, and a share above 0% would be a "
            "bug to report. The baseline's column says how many records a model without DP exposes beyond "
            "each ε."
        )


def who_pays(result: dict) -> None:
    """Who pays for privacy: each class's (and each subgroup's: the categories of the data's categorical columns)
    test accuracy per ε beside the non-private model's, with 95% intervals."""
    classes, groups = sweep_who_pays.who_pays(result), sweep_who_pays.who_pays(result, by="subgroup")
    if not classes and not groups:
        return
    title = "Who pays for privacy: accuracy per class" + (" and subgroup" if groups else "")
    with st.expander(title, icon=":material/groups:"):
        for table, key in ((classes, "pu_who_pays"), (groups, "pu_who_pays_groups")):
            if table:
                st.markdown(md(sweep_who_pays.reading(table)))
                st.dataframe(pd.DataFrame(sweep_who_pays.shown(table)), hide_index=True, key=key)
        st.caption(
            ":orange-badge[Not covered by ε] computed on the private test rows. Each accuracy is the median seed's "
            "model, with that model's 95% interval and the number of test rows it is measured on. A class or "
            "subgroup pays more only where its interval lies wholly below the non-private model's: small ones have "
            "wide intervals. Subgroups are the categories of the data's categorical columns (public, or declared by "
            "its owner)."
        )


def downloads(sweep_id: str, result: dict, caller) -> None:
    """Take it away: the sweep's privacy statement and the code that re-runs it (a script and a notebook)."""
    st.subheader("Take it with you")
    row = st.container(horizontal=True, gap="small")
    if result.get("points"):
        stmt = guarded(sweep_statement.signed, sweep_id, caller=caller)
        if stmt:
            row.download_button(
                "Privacy statement (JSON)",
                json.dumps(stmt, indent=2).encode(),
                f"statement-{sweep_id}.json",
                "application/json",
                key="pu_dl_statement",
                icon=":material/verified_user:",
                help="Check it on any machine with python -m dpcore statement --verify FILE --public-key "
                "OWNER.pem (the public key on Home), or in the advisor page's Verify box.",
            )
    recipe = guarded(export.for_sweep, sweep_id, caller=caller)
    if recipe is not None:
        code_downloads(recipe, "pu_dl", row)
    st.caption(
        "The script and the notebook re-run this sweep through dpcore's functions, headless, with comments in "
        "plain words; an uploaded file is named by its own name (put it beside them), and neither holds a row "
        "of it."
    )
