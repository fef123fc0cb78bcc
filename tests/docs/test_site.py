"""The documentation site builds with ``mkdocs build --strict`` and without the network; README stays a short
guide that points into it (issue 34)."""

import re
import subprocess
import sys

from mkdocs.config import load_config
from pymdownx.slugs import slugify

from ..conftest import ROOT

# The real CLI, in its own process, with every way out to the network closed: a theme or plugin that fetched fonts,
# icons or anything else at build time fails the build instead of hanging or passing only online.
_BUILD_OFFLINE = """
import socket

def _refuse(*args, **kwargs):
    raise OSError("the docs build tried to reach the network")

socket.socket.connect = _refuse
socket.socket.connect_ex = _refuse
socket.create_connection = _refuse
socket.getaddrinfo = _refuse

from mkdocs.__main__ import cli

cli()
"""


def test_site_builds_strict_offline(tmp_path):
    site = tmp_path / "site"
    env = {"NO_MKDOCS_2_WARNING": "1", "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    cmd = [sys.executable, "-c", _BUILD_OFFLINE, "build", "--strict", "-f", str(ROOT / "mkdocs.yml"), "-d", str(site)]
    done = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "WARNING" not in done.stderr, done.stderr
    assert (site / "index.html").is_file()
    # the screenshots come from assets/ (docs/assets links there), so `make screenshots` refreshes both
    assert (site / "assets" / "screenshots" / "home.png").read_bytes() == (
        ROOT / "assets" / "screenshots" / "home.png"
    ).read_bytes()
    for page in site.rglob("*.html"):
        html = page.read_text()
        assert "fonts.googleapis" not in html and "fonts.gstatic" not in html, page
        # nothing the browser loads (scripts, styles, images) comes from another host: the site reads offline
        assert not re.search(r'<(script|img|link)[^>]+(src|href)="https?://', html), page


def test_strict_checks_stay_on():
    """An orphan page, a broken link or a missing anchor fails the build (strict turns these warnings into errors)."""
    cfg = load_config(str(ROOT / "mkdocs.yml"))
    assert cfg["strict"] is True
    assert cfg["theme"]["font"] is False  # no web fonts fetched by the reader's browser
    v = cfg["validation"]
    assert v["nav"]["omitted_files"] >= 30 and v["nav"]["not_found"] >= 30  # logging.WARNING
    assert all(v["links"][k] >= 30 for k in ("not_found", "absolute_links", "unrecognized_links", "anchors"))
    assert {p.__class__.__name__ for p in cfg["plugins"].values()} <= {"SearchPlugin"}  # no social/privacy plugin


def _readme() -> str:
    return (ROOT / "README.md").read_text()


def test_readme_is_a_short_guide():
    text = _readme()
    assert len(text.splitlines()) <= 250
    assert "make run" in text and "make test" in text and "make docs" in text
    assert "![Home](assets/screenshots/home.png)" in text
    for title in _app_pages():  # the tour: every page in the sidebar has a row that links to its docs page
        row = rf"^\| [^|]+ \| \[{re.escape(title)}\]\(docs/app/[\w-]+\.md\) \|"
        assert re.search(row, text, re.M), f"README's tour needs a row for the page {title!r} linking to docs/app/"


def _app_pages() -> list[str]:
    titles = re.findall(r'st\.Page\([^)]*title="([^"]+)"', (ROOT / "app.py").read_text())
    assert len(titles) >= 9
    return titles


def test_every_app_page_has_a_docs_page():
    nav = load_config(str(ROOT / "mkdocs.yml"))["nav"]
    section = next(item for item in nav if "The app, page by page" in item)["The app, page by page"]
    titles = [next(iter(entry)) for entry in section]
    assert titles == _app_pages(), "mkdocs.yml's 'The app, page by page' lists app.py's pages, in the sidebar's order"


def test_readme_links_resolve():
    """Every file README links to exists, and every #anchor into a docs page is one of its headings."""
    slug = slugify(case="lower")  # the site's own anchors (mkdocs.yml's toc.slugify)
    for target, anchor in re.findall(r"\]\(([^)#\s]+)(?:#([^)]*))?\)", _readme()):
        if "://" in target:
            continue
        assert (ROOT / target).exists(), target
        if anchor:
            headings = re.findall(r"^#+ (.+)$", (ROOT / target).read_text(), re.M)
            assert anchor in {slug(h, "-") for h in headings}, f"{target}#{anchor}"


def test_ci_runs_the_readme_test_command():
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_newcomer_questions_have_answers_where_the_overview_points():
    """Overview → how to give an analyst a key, what ε the console's answers carry, what ε does not cover."""
    index = (ROOT / "docs" / "index.md").read_text()
    assert "operations/admin.md#give-an-analyst-a-key" in index
    admin = (ROOT / "docs" / "operations" / "admin.md").read_text()
    section = admin.split("## Give an analyst a key", 1)[1].split("\n## ", 1)[0]
    assert "python -m dpcore analyst add" in section and "shown once" in section.lower()
    console = (ROOT / "docs" / "app" / "query-console.md").read_text()
    assert "What ε an answer carries" in console and "adding or\n    removing one record" in console
    model = (ROOT / "docs" / "privacy-model.md").read_text()
    assert "## What ε does not protect" in model and "not covered by ε" in model
