"""The advisor page's "Verify a statement" box in a real browser: a statement file whose text holds a link, an image
tag and markdown is uploaded; what it says is shown as text (no live link, no image), with the check that fails."""

import json

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dpcore.statements import signing

from .conftest import wait_for_app

pytestmark = pytest.mark.e2e

EVIL = "[click](https://evil.example) <img src=x onerror=alert(1)> **bold**"


def test_an_uploaded_statements_text_stays_text(app_server, page):
    page.goto(f"{app_server}/advisor")
    wait_for_app(page)
    raw = json.dumps(signing.sign({"kind": EVIL, "subject": EVIL}, Ed25519PrivateKey.generate()))
    box = page.locator('[data-testid="stFileUploader"]').filter(has_text="Statement (JSON)")
    box.locator('input[type="file"]').set_input_files(
        files=[{"name": "statement.json", "mimeType": "application/json", "buffer": raw.encode()}]
    )
    wait_for_app(page)
    alert = page.locator('[data-testid="stAlert"]').filter(has_text="Does not check out")
    alert.first.wait_for()
    main = page.locator('[data-testid="stMain"]')
    assert not main.locator('a[href*="evil.example"]').count()  # no live link
    assert not main.locator('img[src="x"]').count()  # no image made from the file
    assert not page.locator('[data-testid="stException"]').count()
    shown = alert.first.inner_text().replace("\u2060", "")
    assert "[click](https://evil.example) <img src=x" in shown, shown  # the file's words, as written
