"""Issue 12 injection: a column named like a markdown link/image/HTML and a =HYPERLINK cell in an upload are
shown as text (no link, no image fetched from another host) on the pages, and neutralised in CSV exports."""

import re

import pytest

from .pages import ME, open_page

EVIL = '[x](http://evil/)![i](http://evil/i.png)<a href="http://evil">a</a>'
CSV = (
    f'age,"{EVIL.replace(chr(34), chr(34) * 2)}",sex\n'
    '34,"=HYPERLINK(""http://evil"",""x"")",F\n35,b,M\n34,"=HYPERLINK(""http://evil"",""x"")",F\n'
).encode()

# an unescaped [ or < , or a bare autolink: what would become a link, an image or HTML in Streamlit markdown
LIVE = re.compile(r"(?<!\\)[\[<]|(?<!\\)://")


def _rendered_markdown(at):
    out = []
    for kind in ("markdown", "caption", "error", "warning", "info", "success"):
        out += [e.value for e in getattr(at, kind)]
    out += [w.label for w in at.number_input] + [m.label for m in at.metric]
    return [v for v in out if "evil" in v]


def _live_html(at):
    """The page's raw HTML (chart titles, pages/ui/common.chart) that names the evil column and holds a live tag:
    an ``<a`` or ``<img`` that the browser would follow or fetch (markdown syntax means nothing there)."""
    bodies = [h.proto.body for h in at.get("html") if "evil" in h.proto.body]
    return bodies, [b for b in bodies if re.search(r"<(a|img)\b", b, re.I)]


@pytest.fixture
def reid(chdir_root):
    return open_page("pages/reidentification.py")


def test_reidentification_upload_shows_evil_column_as_text(reid):
    at = reid
    at.file_uploader(key="re_upload").set_value(("x.csv", CSV, "text/csv")).run()
    assert not at.exception, [e.value for e in at.exception]
    at.multiselect(key="re_up_qis").set_value(["age", EVIL]).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = _rendered_markdown(at)
    assert shown, "the column name should be shown somewhere (as text)"
    assert not [v for v in shown if LIVE.search(v)], shown
    titles, live = _live_html(at)
    assert titles and not live, live  # the chart's title names it, as text
    # the uniqueness chart's labels are escaped for Plotly: no live <a> tag
    for chart in at.get("plotly_chart"):
        assert '<a href=\\"http://evil' not in chart.proto.spec and "<a href=" not in chart.proto.spec


def test_training_run_on_an_upload_names_its_columns_as_text(chdir_root):
    """A finished run on an uploaded CSV quotes the upload's column names in its 'Preprocessing leak' warning
    (scaling from the rows' own min/max): as text, no link, image or HTML (it was shown raw)."""
    from dpcore.jobs import registry, runner
    from dpcore.training.config import TrainConfig
    from dpcore.training.data import save_upload

    rows = "".join(f"{20 + i % 50},{i % 7},{i % 2}\n" for i in range(120))
    data = f'age,"{EVIL.replace(chr(34), chr(34) * 2)}",label\n{rows}'.encode()
    params = TrainConfig(
        dataset=save_upload(data), target="label", model="logreg", epsilon=1.0, epochs=1, batch_size=16
    ).to_dict()
    runner.run_inline(registry.TRAIN, params, group="train", label="evil upload", owner=ME)
    at = open_page("pages/training.py", owner=ME)
    assert not at.exception, [e.value for e in at.exception]
    leaks = [w.value for w in at.warning if "Preprocessing leak" in w.value]
    assert leaks and any("evil" in v for v in leaks), [w.value for w in at.warning]
    shown = _rendered_markdown(at)
    assert not [v for v in shown if LIVE.search(v)], shown
