"""AppTest: the advisor page's "Verify a statement" box — each check shown passed or failed, against this server's
key or the one inside the statement; an untrusted file is bounded and its text shown as text."""

import json

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dpcore.advisor import decision, targets
from dpcore.statements import keys, signing

from .pages import open_page

EVIL = "[click](https://evil.example) <img src=x onerror=alert(1)> **bold**"


def _statement(key=None, **extra):
    inp = decision.inputs("gaussian", targets.RiskLimit("tpr", 0.05, 0.01), None)
    st = decision.statement(inp, decision.solve_inputs(inp))
    return signing.sign({**st, **extra}, key)


def _rows(at):
    df = at.dataframe[-1].value  # the box is the last thing on the page
    return list(zip(df["Check"], df["Result"], df["Detail"]))


def test_an_uploaded_statement_shows_each_check_passing(chdir_root):
    at = open_page("pages/advisor.py")
    at.file_uploader(key="adv_verify_file").set_value(
        ("decision.json", json.dumps(_statement()).encode(), "application/json")
    ).run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.success and "Verified" in at.success[-1].value
    rows = _rows(at)
    assert rows and all(r == "pass" for _, r, _ in rows) and rows[-1][0] == "signature"
    assert "checked with the public key given" in rows[-1][2] and keys.published()["fingerprint"] in rows[-1][2]


def test_an_edited_or_foreign_statement_fails_naming_the_check(chdir_root):
    at = open_page("pages/advisor.py")
    edited = _statement()
    edited["advice"]["epsilon_range"] = [0.01, 0.02]
    at.text_area(key="adv_verify_text").set_value(json.dumps(edited)).run()
    assert not at.exception
    assert at.error and "Does not check out" in at.error[-1].value
    failed = [(c, d) for c, r, d in _rows(at) if r == "FAIL"]
    assert any(c == "signature" and "advice" in d for c, d in failed), failed
    foreign = _statement(Ed25519PrivateKey.generate())
    at.text_area(key="adv_verify_text").set_value(json.dumps(foreign)).run()
    assert any(c == "signature" and "not by the key given" in d for c, r, d in _rows(at) if r == "FAIL")
    at.radio(key="adv_verify_against").set_value("embedded").run()  # its own key: unchanged, but whose?
    assert at.success and "Verified" in at.success[-1].value
    assert "proves who signed only when this fingerprint is the data owner's" in at.caption[-1].value


def test_untrusted_text_stays_text_and_bad_files_are_one_message(chdir_root):
    at = open_page("pages/advisor.py")
    at.text_area(key="adv_verify_text").set_value(json.dumps(_statement(kind=EVIL))).run()
    assert not at.exception
    shown = at.error[-1].value
    assert "\\[click\\]" in shown and "\\<img" in shown and "<img" not in shown.replace("\\<img", "")
    assert any(EVIL[:20] in d for _, _, d in _rows(at))  # the table holds the text as it is, unrendered
    for raw, words in (("[1, 2]", "not a statement"), ("{" * 40, "nested"), ('{"a": 1, "a": 2}', "appears twice")):
        at.text_area(key="adv_verify_text").set_value(raw).run()
        assert not at.exception and at.error and words in at.error[-1].value, (raw, [e.value for e in at.error])


def test_a_server_key_others_can_read_is_one_message_not_a_traceback(chdir_root):
    import os

    keys.private_key()
    os.chmod(keys.private_key_path(), 0o644)
    at = open_page("pages/advisor.py")
    at.text_area(key="adv_verify_text").set_value(json.dumps({"kind": "advice"})).run()
    assert not at.exception
    assert any("can be read by others" in e.value for e in at.error)
