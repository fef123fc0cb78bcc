"""Every page registered in app.py renders without an exception (AppTest)."""

import ast

import pytest

from .pages import ROOT, open_page, registered_pages

PAGES = registered_pages()


def test_every_page_file_exists_and_is_registered():
    assert len(PAGES) >= 7
    on_disk = {f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py") if not p.name.startswith("_")}
    assert on_disk == set(PAGES), "every page file must be registered in app.py (and vice versa)"


@pytest.mark.parametrize("page", PAGES)
def test_page_renders_without_exception(page, chdir_root):
    at = open_page(page)
    assert not at.exception, f"{page}: {[e.value for e in at.exception]}"
    assert len(at.title) >= 1, f"{page} has no title"


def test_home_slider_moves_the_reading(chdir_root):
    at = open_page("pages/home.py")
    before = [m.value for m in at.markdown]
    at.select_slider(key="home_eps").set_value(8.0).run()
    assert not at.exception
    after = [m.value for m in at.markdown]
    assert before != after
    assert any("ε = 8" in m for m in after)


@pytest.mark.parametrize("warm_up", [True, False])
def test_home_does_not_import_torch_or_opacus(repo_root, warm_up):
    """Home must render fast: it may not pull torch/opacus in (they load lazily where training happens), nor does
    the warm-up every script run waits for (pages/ui/warmup.py). Home's own imports, the warm-up marked done, leave
    out scipy.stats too."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        + ("" if warm_up else "from pages.ui import warmup\nwarmup._done.set()\n")
        + "at = AppTest.from_file('app.py', default_timeout=60); at.run()\n"
        "assert not at.exception\n"
        "print(sorted(m for m in ('torch', 'opacus', 'scipy.stats', 'sklearn', 'diffprivlib') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=repo_root, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    loaded = set(ast.literal_eval(out.stdout.strip().splitlines()[-1]))
    assert not loaded - ({"scipy.stats"} if warm_up else set())


def test_home_prepares_a_downloadable_report(chdir_root):
    at = open_page("pages/home.py")
    at.button(key="home_report_prepare").click().run()
    assert not at.exception
    html = at.session_state["home_report_html"]
    assert html.startswith("<!DOCTYPE html>") and "Re-identification" in html
