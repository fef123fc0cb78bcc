"""The ``--json`` files a user names on the command line: written whole, through a link, to a device or a pipe, in
the one JSON encoding (:mod:`dpcore.storage.jsonio`: non-finite floats become null)."""

from __future__ import annotations

from .storage import check_user_path, write_user_file
from .storage.jsonio import dumps


def write_json(path_text: str, obj, option: str = "--json") -> None:
    """Write obj as JSON to a user-given path (whole or not at all; through a link, to a device or a pipe with
    a reader: :func:`dpcore.storage.write_user_file`); a bad path is a DPError that names the option."""
    write_user_file(path_text, dumps(obj).encode(), option=option)


def check_json_path(path_text: str | None, option: str = "--json") -> None:
    """Refuse an unusable ``--json`` target *before* a long run starts (None: no file asked for). An empty path
    is refused too: ``--json ''`` was silently ignored."""
    if path_text is None:
        return
    check_user_path(path_text, option)
