"""Every page with an uploader states the upload limit in the same words as the uploader's own "50MB per file".

Streamlit's uploader counts that MB as the visitor's system does (10^6 bytes on macOS/Linux, 2^20 on Windows;
see dpcore.limits.upload_size), so "50 MiB" on a page would promise more than a Mac's browser accepts.
"""

import re

import pytest

from dpcore import limits

from .pages import open_page

SIZE = re.compile(r"\d+(?:\.\d+)?\s*(?:MiB|MB)\b")


def _uploader_page(page: str):
    at = open_page(page)
    if page.endswith("query_console.py"):  # registering a dataset: the admin's panel
        from tests.budgets_helpers import admin

        at.session_state["_dp_identity"] = admin()
        at.run()
        return at, at.file_uploader(key="adm_upload")
    if page.endswith("training.py"):
        at.selectbox(key="tr_dataset").set_value("csv").run()
        return at, at.file_uploader(key="tr_csv")
    return at, at.file_uploader(key="re_upload")


@pytest.mark.parametrize("page", ["pages/reidentification.py", "pages/training.py", "pages/query_console.py"])
def test_upload_limit_is_written_one_way_and_is_the_one_enforced(chdir_root, page):
    at, uploader = _uploader_page(page)
    assert not at.exception
    # the uploader's own limit (Streamlit writes it as "50MB per file") is the number our words state
    assert uploader.proto.max_upload_size_mb == limits.UPLOAD_MAX_MIB
    texts = [uploader.proto.help] + [e.value for e in (*at.markdown, *at.caption, *at.info, *at.warning)]
    assert any(limits.upload_size() in t for t in texts), texts
    sizes = {m for t in texts for m in SIZE.findall(t)}
    assert sizes == {limits.upload_size()} == {"50 MB"}, sizes  # one unit and number, never "50 MiB" beside it
