"""The privacy–utility page's ROC chart: one ceiling (the PLD worst case of what was run), every attack under it."""

import numpy as np

from dpcore import claims
from dpcore.figures import privacy_utility as figs
from dpcore.figures import style
from dpcore.statements import sweep as sweep_st
from dpcore.training import accounting


def _attack(n, auc):
    f = np.linspace(0, 1, 11)
    return {
        "auc": auc,
        "n_members": n,
        "n_nonmembers": n,
        "tpr_at_1pct_fpr": 0.01,
        "roc": {"fpr": f.tolist(), "tpr": f.tolist()},
    }


def _point(tradeoff=True):
    p = {
        "epsilon": 2.0,
        "epsilon_spent": 1.98,
        "delta": 1e-5,
        "seed": 0,
        "n_train": 80,
        "noise_multiplier": 1.2,
        "sample_rate": 0.5,
        "steps": 20,
        "accountant": "prv",
        "mia": {"loss": _attack(100, 0.52), "threshold": _attack(100, 0.51), "canary": _attack(40, 0.55)},
    }
    if tradeoff:
        p["tradeoff"] = accounting.dpsgd_tradeoff(1.2, 0.5, 20)
    return p


def _by_meta(fig):
    return {t.meta: t for t in fig.data if t.meta}


def test_one_ceiling_the_runs_own_pld_curve_with_epsilons_and_mu():
    """Before: the (ε, δ) ceiling and the PLD curve were two lines, and neither μ nor ε at 1e-6 and 1/n was
    shown; now the PLD curve of what was run is the one ceiling, and the words under it state ε at 1e-5 and 1e-6
    and μ."""
    p = _point()
    fig = figs.roc_chart(p)
    metas = [t.meta for t in fig.data if t.meta]
    assert metas.count("ceiling") == 1
    assert {"attack:loss", "attack:threshold", "attack:canary", "chance"} <= set(metas)
    ceil = _by_meta(fig)["ceiling"]
    floor = 1 / (2 * 100)
    keep = np.asarray(p["tradeoff"]["fpr"]) >= floor
    assert np.allclose(ceil.y, np.asarray(p["tradeoff"]["tpr"])[keep]) and min(ceil.x) >= floor
    b = sweep_st.for_point(p)
    words = figs.ceiling_words(b)
    for r in b["epsilon_at_delta"]:
        assert f"ε ≤ {claims.up(r['epsilon_pld'])} at δ = {claims.delta(r['delta'])}" in words  # rounded up
    assert "1/n" not in words and f"μ ≈ {b['mu']['value']:.2f}" in words and "not a bound" in words
    assert fig.layout.xaxis.type == fig.layout.yaxis.type == "log"
    lg = fig.layout.legend  # horizontal, along the chart's bottom edge: phones
    assert lg.orientation == "h" and (lg.yref, lg.y) == ("container", 0)


def test_points_without_a_curve_fall_back_to_the_epsilon_delta_ceiling_and_baseline_has_none():
    fig = figs.roc_chart(_point(tradeoff=False))
    assert [t.meta for t in fig.data].count("ceiling") == 1
    assert "(ε, δ) ceiling at ε = 1.98" in _by_meta(fig)["ceiling"].name
    base = {**_point(tradeoff=False), "epsilon": None, "epsilon_spent": None}
    assert "ceiling" not in [t.meta for t in figs.roc_chart(base).data]


def test_given_block_is_used_as_is():
    b = sweep_st.for_point(_point())
    b["epsilon_at_delta"][0]["epsilon_pld"] = 0.123456
    assert "ε ≤ 0.124 at δ" in figs.ceiling_words(b)  # rounded up, never to 0.123


def test_the_worst_case_takes_one_legend_line_and_its_figures_go_under_the_chart():
    """The worst-case entry took three legend lines (ε at two δ, then μ): now one, with ε and μ in the caption
    (:func:`ceiling_words`); the older (ε, δ) ceiling is one line too."""
    p = _point()
    for fig in (figs.roc_chart(p), figs.roc_chart(_point(tradeoff=False))):
        name = _by_meta(fig)["ceiling"].name
        assert "<br>" not in name and "μ" not in name and "≤" not in name
    assert _by_meta(figs.roc_chart(p))["ceiling"].name == "worst case for this run (exact PLD)"
    assert "μ ≈" in figs.ceiling_words(sweep_st.for_point(p))


def test_the_roc_legend_is_grouped_promise_then_measured_then_reference():
    """Issue 34.5: a dozen ROC lines read as one flat list; the legend now groups what the accountant promises,
    what the attacks measured and the reference line, each under its title, in that order."""
    fig = figs.roc_chart(_point())
    assert fig.layout.legend.traceorder == "grouped"
    shown = [t for t in fig.data if t.showlegend is not False]
    groups = [t.legendgroup for t in sorted(shown, key=lambda t: t.legendrank)]
    assert groups[0] == "promise" and groups[-1] == "reference" and set(groups) == {"promise", "measured", "reference"}
    assert groups == sorted(groups, key=["promise", "measured", "reference"].index)  # each group in one run
    by = {t.legendgroup: t.legendgrouptitle.text for t in shown}
    assert by["promise"].startswith("promised") and by["measured"].startswith("measured")
    assert all(t.legendgroup == "measured" for t in shown if str(t.meta).startswith("attack:"))


def test_each_attack_takes_one_legend_line_and_the_counts_sit_under_the_title():
    """Issue 34.5: each attack's entry was two lines (its AUC, then its member counts), so a sweep's ROC legend ran
    to 13 lines; the counts, shared by the attacks on records, are now said once under the title."""
    fig = figs.roc_chart(_point())
    attacks = [t for t in fig.data if str(t.meta).startswith("attack:")]
    assert attacks and all("<br>" not in t.name and ": AUC 0.5" in t.name for t in attacks)
    title = " ".join(html for _, html in style.title_lines(fig.layout.title.text))  # as the page shows it
    assert "records: 100 in / 100 out" in title and "canaries: 40 in / 40 out" in title
    shown = [t for t in fig.data if t.showlegend is not False]
    assert sum(t.name.count("<br>") + 1 for t in shown) == len(shown) == 2 + len(attacks)  # ceiling, attacks, chance
