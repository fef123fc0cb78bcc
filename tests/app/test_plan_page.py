"""AppTest: Plan a release — the first screen is the headline and the preview (nothing spent); one release charges
the plan's whole ε once to the built-in patients' cap and hands out its files; the same plan again is free; a bad
plan is one message."""

import json
import re

import pytest

from dpcore.budgets import visitors
from dpcore.statements import files as shipped

from .pages import open_page, shown

pytestmark = pytest.mark.usefixtures("chdir_root")

PAGE = "pages/plan.py"


def _ok(at):
    assert not at.exception, [e.value for e in at.exception]
    return at


def _spent(n=2000, seed=0) -> float:
    return visitors.open_builtin(n, seed)["spent"]


def _page():
    return _ok(open_page(PAGE, timeout=120))


def test_the_first_screen_is_the_headline_and_the_preview_and_nothing_is_spent():
    at = _page()
    assert at.title[0].value == "Plan a release"
    heads = [m.value for m in at.markdown if "statistics for" in m.value]
    assert heads and "5 statistics for ε = 1 per person" in heads[0], heads
    assert "nothing read, nothing spent" in heads[0]
    assert "Worst expected 95% error" in heads[0]
    assert at.get("plotly_chart"), "the preview chart"
    assert _spent() == 0.0  # the preview spends nothing
    side = at.dataframe[3].value  # ε per row and per person, side by side
    assert list(side["release"]) == ["this plan (person-level)", "the same statistics, row-level"], side
    assert side["ε per person"][0] == "1"
    # NIST SP 800-226's checks, and the registry beside the ε
    assert any(e.label.startswith("NIST SP 800-226 checks:") for e in at.expander)
    assert any("deployments" in shown(c.value).lower() for c in at.caption)


def test_empty_cells_in_the_editors_are_blank_not_none():
    """A count's bins, α and target are empty: the statistics editor showed a grey "None" in each."""
    at = _page()
    stats, keys = at.data_editor[0], at.data_editor[1]
    assert stats.value["bins"].isna().any()  # there are empty numeric cells to show
    for editor in (stats, keys):
        assert editor.proto.HasField("placeholder") and editor.proto.placeholder == ""


def test_release_once_charges_the_whole_plan_and_hands_out_its_files():
    at = _page()
    at.button(key="pl_release").click().run()
    _ok(at)
    assert any("Released once: ε = 1 charged to" in s.value for s in at.success), [s.value for s in at.success]
    assert _spent() == pytest.approx(1.0)  # one charge, exactly the plan's total
    table = at.dataframe[-1].value
    assert set(table["statistic"]) == {1, 2, 3, 4, 5}
    names = {b.label for b in at.get("download_button")}
    assert {"release.csv", "release.statement.json", "plan.json", "plan.ipynb", "plan.py"} <= names
    assert "registry-draft.yaml" in names
    _, _, files = at.session_state["pl_outcome"]
    st = json.loads(files["release.statement.json"])
    assert st["kind"] == "plan" and st["level"] == "person-level"
    assert {f["name"] for f in st[shipped.FIELD]} >= {
        "release.csv",
        "plan.json",
        "plan.ipynb",
        "plan.py",
        "registry-draft.yaml",
    }
    at.button(key="pl_release").click().run()  # the same plan again: the stored release, free
    _ok(at)
    assert any("stored release, free" in i.value for i in at.info)
    assert _spent() == pytest.approx(1.0)


def test_a_row_level_plan_on_the_patients():
    at = _page()
    at.selectbox(key="pl_source").set_value("Built-in patients (one row each)").run()
    _ok(at)
    heads = [m.value for m in at.markdown if "statistics for" in m.value]
    assert heads and "4 statistics for ε = 1 per row" in heads[0], heads


def test_a_bad_plan_is_one_message_and_no_preview():
    at = _page()
    at.toggle(key="pl_person").set_value(False).run()
    _ok(at)
    # a sum without bounds cannot be planned: the editor's rows go through Plan.from_dict
    rows = at.session_state["pl_rows"].copy()
    rows.loc[2, "bounds"] = ""
    at.session_state["pl_rows"] = rows
    at.session_state["pl_editor_v"] = at.session_state["pl_editor_v"] + 1
    at.run()
    _ok(at)
    assert len(at.error) == 1, [e.value for e in at.error]
    assert "Traceback" not in at.error[0].value
    assert any("Fix the plan" in m.value for m in at.markdown)
    assert _spent() == 0.0


def test_the_plan_words_say_what_the_release_covers():
    at = _page()
    words = " ".join(shown(c.value) for c in at.caption)
    assert "Charged to the built-in patients' cap" in words
    assert re.search(r"One charge of ε = 1 for the whole plan", words)
