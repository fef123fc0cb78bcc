"""OpenID Connect sign-in end to end in headless Chromium: Streamlit's st.login against a local test provider on
127.0.0.1 (oidc-provider-mock, started here), configured by a secrets.toml this test writes in its own temporary
folder. The provider's verified e-mail is the analyst's identity; admins are listed by identity in the
configuration; a link never carries the identity."""

import re
import secrets
import threading
from pathlib import Path

import pytest

from .conftest import _free_port, serve_app, wait_for_app

pytestmark = pytest.mark.e2e

ANN = {"sub": "ann-sub", "email": "ann@example.org", "email_verified": True}
BOSS = {"sub": "boss-sub", "email": "boss@example.org", "email_verified": True}
EVE = {"sub": "eve-sub", "email": "ann@example.org", "email_verified": False}  # claims ann's address, unverified


@pytest.fixture(scope="module")
def provider():
    """The test identity provider, a Flask app served by werkzeug in a thread on 127.0.0.1 (stopped after)."""
    import oidc_provider_mock
    import werkzeug.serving

    users = [
        oidc_provider_mock.User(sub=u["sub"], claims={k: v for k, v in u.items() if k != "sub"})
        for u in (ANN, BOSS, EVE)
    ]
    server = werkzeug.serving.make_server("127.0.0.1", 0, oidc_provider_mock.app(user_claims=users), threaded=True)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()
    thread.join(5)


@pytest.fixture(scope="module")
def oidc_app(provider, tmp_path_factory):
    """(URL, ledger path): the app with [auth] configured in a secrets.toml outside the repository, and a dataset
    on which the data owner granted ann@example.org a quota by identity (no key)."""
    from dpcore.budgets import quotas, registry
    from dpcore.data import datasets
    from tests.budgets_helpers import admin

    home = tmp_path_factory.mktemp("oidc-home")
    ledger = home / "ledger.sqlite"
    conf = tmp_path_factory.mktemp("oidc-conf") / "secrets.toml"
    port = _free_port()
    conf.write_text(f"""
[auth]
redirect_uri = "http://127.0.0.1:{port}/oauth2callback"
cookie_secret = "{secrets.token_hex(32)}"
client_id = "dp-explorer-test"
client_secret = "{secrets.token_hex(16)}"
server_metadata_url = "{provider}/.well-known/openid-configuration"

[dp_explorer]
admins = ["boss@example.org"]
""")
    registry.register(admin(ledger), "clinic", datasets.medical(600, seed=11), epsilon=2.0, path=ledger)
    quotas.grant(admin(ledger), "ann@example.org", "clinic", epsilon=1.0, oidc=True, path=ledger)
    assert not (Path(__file__).resolve().parents[2] / ".streamlit" / "secrets.toml").exists()
    for url in serve_app(home, port=port, args=("--secrets.files", str(conf))):
        yield url, ledger


def _log_in(page, app_url: str, sub: str) -> None:
    page.goto(f"{app_url}/query_console")
    wait_for_app(page)
    page.get_by_text("Sign in", exact=True).first.click()
    page.get_by_role("button", name="Log in").click()
    page.wait_for_url("**/oauth2/authorize**", timeout=60_000)  # the provider's page
    page.locator(f"button[name=sub][value={sub}]").click()
    page.wait_for_url(f"{app_url}/**", timeout=60_000)  # back through /oauth2callback
    page.goto(f"{app_url}/query_console")
    wait_for_app(page)


@pytest.fixture
def fresh_page(browser):
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    page = ctx.new_page()
    page.set_default_timeout(60_000)
    yield page
    ctx.close()


def test_oidc_sign_in_gives_the_verified_email_its_quota(oidc_app, fresh_page):
    from dpcore.budgets import quotas, registry
    from tests.budgets_helpers import admin

    url, ledger = oidc_app
    page = fresh_page
    page.goto(f"{url}/query_console")
    wait_for_app(page)
    page.get_by_text("You are asking as a visitor").first.wait_for()
    _log_in(page, url, ANN["sub"])
    # an e-mail is shown as text: an invisible word joiner after "@" keeps Streamlit from making it a mailto link
    page.get_by_text(
        re.compile("Signed in as analyst 'ann@\u2060?example\\.org' \\(signed in through the identity provider\\)")
    ).first.wait_for()
    assert "example.org" not in page.url  # the identity lives in the signed cookie and the session, not the link
    page.get_by_role("combobox", name="Dataset").click()
    page.get_by_role("option", name="clinic").click()
    wait_for_app(page)
    page.get_by_text("Your quota: ε = 1 of 1").first.wait_for()
    page.get_by_role("button", name="Ask (spends ε)").click()
    wait_for_app(page)
    page.get_by_text("Noisy answer (DP)").first.wait_for()
    assert not page.locator('[data-testid="stException"]').count()
    q = quotas.status(admin(ledger), "clinic", analyst="ann@example.org", path=ledger)["quota"]
    assert q["spent"] == pytest.approx(0.1) and registry.info("clinic", path=ledger)["spent"] == pytest.approx(0.1)
    # logging out leaves a visitor again
    page.get_by_text("Account", exact=True).first.click()
    # Logging out sends the browser to the provider's end-session page (the mock's confirmation form, where it
    # stays): wait until it is there, or that navigation interrupts the next goto (it did twice under load).
    page.get_by_role("button", name="Log out").click()
    page.wait_for_url(re.compile(r"/oauth2/end_session"), timeout=90_000)
    page.goto(f"{url}/query_console")
    wait_for_app(page)
    page.get_by_text("You are asking as a visitor").first.wait_for()


def test_an_unverified_email_is_not_that_analyst_and_a_listed_admin_is_admin(oidc_app, fresh_page, browser):
    url, _ = oidc_app
    page = fresh_page
    _log_in(page, url, EVE["sub"])  # says ann@example.org, unverified: identity sub:eve-sub, no quota
    page.get_by_text("Signed in as analyst 'sub:eve-sub'").first.wait_for()
    page.get_by_role("combobox", name="Dataset").click()
    assert page.get_by_role("option", name="clinic").count() == 0
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    boss = ctx.new_page()
    boss.set_default_timeout(60_000)
    try:
        _log_in(boss, url, BOSS["sub"])
        boss.get_by_text(re.compile("Signed in as admin 'boss@\u2060?example\\.org'")).first.wait_for()
        boss.get_by_role("heading", name="Admin").wait_for()
    finally:
        ctx.close()
