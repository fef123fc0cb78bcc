"""The files a statement ships with, by SHA-256: the weights of a training release, a synthetic CSV, a README.

:func:`cover` is what :func:`dpcore.statements.signing.issue` writes into a statement's ``files`` (name, SHA-256,
size of each): the signature then covers each file, so the non-private twin's weights swapped into a release no
longer verify. :func:`read_bundle` reads what ``statement --verify`` was given — a statement file alone, a release
zip or a folder — and :func:`check` compares: in a zip or a folder every file the statement covers must be there
(found by its digest, so a renamed download still counts) and every other file is one the statement does not
cover (a failure); beside a statement file alone, the covered files found next to it by name are checked and the
others reported as not checked.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dpcore import limits, storage
from dpcore.errors import DPError
from dpcore.statements.checks import Checker

FIELD = "files"
#: What a bundle given to ``statement --verify`` may hold: files, and bytes in all (a release is a model and a
#: README; a synthetic release one CSV).
MAX_FILES = 100
MAX_BUNDLE_BYTES = 2_000_000_000
#: The names a statement inside a zip or folder may have.
STATEMENT_NAMES = ("statement.json",)
STATEMENT_SUFFIX = ".statement.json"
_CHUNK = 1 << 20


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def cover(files: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """The ``files`` entry of a statement: each file's name, SHA-256 (hex) and size in bytes, by name."""
    return [{"name": str(n), "sha256": sha256(b), "bytes": len(b)} for n, b in sorted(files.items())]


@dataclass
class Bundle:
    """What verification was given: the statement's bytes and name, the other files' digests by name, and whether
    that set is the whole release (a zip or a folder) or only what lies beside a lone statement file."""

    statement: bytes
    name: str
    files: dict[str, str] = field(default_factory=dict)
    complete: bool = False
    where: str = ""


def _hash_stream(read: Any, budget: list[int], name: str) -> str:
    h = hashlib.sha256()
    while True:
        chunk = read(_CHUNK)
        if not chunk:
            return h.hexdigest()
        budget[0] -= len(chunk)
        if budget[0] < 0:
            raise DPError(
                f"{name}: the release holds more than {MAX_BUNDLE_BYTES:,} bytes; a statement's bundle is smaller"
            )
        h.update(chunk)


def _is_statement_name(name: str) -> bool:
    base = name.rsplit("/", 1)[-1]
    return base in STATEMENT_NAMES or base.endswith(STATEMENT_SUFFIX)


def _pick(names: list[str], where: str) -> str:
    found = [n for n in names if _is_statement_name(n)]
    if len(found) != 1:
        raise DPError(
            f"{where} holds {'no' if not found else len(found)} statement file(s) (statement.json or "
            f"NAME{STATEMENT_SUFFIX}); a release holds exactly one"
        )
    return found[0]


def _zip(path: Path, text: str) -> Bundle:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError):
        raise DPError(f"{text} is not a readable zip file (a release zip as the training page downloads it)") from None
    with zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        if len(infos) > MAX_FILES:
            raise DPError(f"{text} holds {len(infos):,} files; a release holds at most {MAX_FILES}")
        name = _pick([i.filename for i in infos], text)
        budget = [MAX_BUNDLE_BYTES]
        out = Bundle(b"", f"{text}:{name}", complete=True, where=text)
        try:
            for info in infos:
                with zf.open(info) as fh:
                    if info.filename == name:
                        out.statement = fh.read(limits.STATEMENT_MAX_BYTES + 1)
                    else:
                        out.files[info.filename] = _hash_stream(fh.read, budget, text)
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, NotImplementedError):
            raise DPError(f"{text}: a file in the zip cannot be read (damaged or encrypted)") from None
    return out


def _folder(path: Path, text: str) -> Bundle:
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError as exc:
        raise DPError(f"could not read the folder {text}: {exc.strerror or exc}") from None
    regular = [e for e in entries if e.is_file(follow_symlinks=False)]
    if len(regular) > MAX_FILES:
        raise DPError(f"{text} holds {len(regular):,} files; a release holds at most {MAX_FILES}")
    name = _pick([e.name for e in regular], text)
    out = Bundle(
        storage.read_user_file(path / name, max_bytes=limits.STATEMENT_MAX_BYTES, what="statement file"),
        str(path / name),
        complete=True,
        where=text,
    )
    budget = [MAX_BUNDLE_BYTES]
    for e in regular:
        if e.name != name:
            with open(e.path, "rb") as fh:
                out.files[e.name] = _hash_stream(fh.read, budget, text)
    return out


def _beside(path: Path, text: str) -> Bundle:
    out = Bundle(
        storage.read_user_file(text, max_bytes=limits.STATEMENT_MAX_BYTES, what="statement file", option="--verify"),
        text,
        where=str(path.parent),
    )
    return out


def read_bundle(text: str) -> Bundle:
    """What ``statement --verify TEXT`` names: a folder or a ``.zip`` (the whole release), else a statement file."""
    if text is None or not str(text).strip():
        raise DPError("--verify needs a statement file, a release zip or a folder; got an empty path")
    path = Path(str(text))
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DPError(f"statement file not found: {path}") from None
    except OSError as exc:
        raise DPError(f"could not read {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(mode):
        return _folder(path, str(text))
    if stat.S_ISREG(mode) and path.suffix.lower() == ".zip":
        return _zip(path, str(text))
    return _beside(path, str(text))


def siblings(bundle: Bundle, st: Mapping[str, Any]) -> None:
    """Beside a lone statement file: the digests of the covered files found next to it by name."""
    if bundle.complete:
        return
    folder = Path(bundle.where or ".")
    budget = [MAX_BUNDLE_BYTES]
    for entry in listed(st) or []:
        name = str(entry.get("name", ""))
        if not name or "/" in name or name in (".", ".."):
            continue
        p = folder / name
        try:
            if not stat.S_ISREG(os.stat(p).st_mode):
                continue
            with open(p, "rb") as fh:
                bundle.files[name] = _hash_stream(fh.read, budget, str(folder))
        except OSError:
            continue


def listed(st: Mapping[str, Any]) -> list[dict[str, Any]] | None:
    """The statement's ``files`` entries when well formed, else None."""
    raw = st.get(FIELD)
    if not isinstance(raw, list) or not all(
        isinstance(x, dict) and isinstance(x.get("name"), str) and isinstance(x.get("sha256"), str) for x in raw
    ):
        return None
    return raw


def check(c: Checker, st: Mapping[str, Any], bundle: Bundle | None) -> None:
    """The statement's ``files`` against what ``bundle`` holds (nothing is checked without a bundle)."""
    if FIELD in st and listed(st) is None:
        c.fail(FIELD, "files is damaged (a list of {name, sha256, bytes})")
        return
    covered = listed(st) or []
    if bundle is None:
        if covered:
            c.passed(FIELD, f"{len(covered)} file(s) covered by SHA-256; not checked here (give the zip or folder)")
        return
    by_digest = {d: n for n, d in bundle.files.items()}
    for entry in covered:
        name, want = entry["name"], entry["sha256"]
        got = bundle.files.get(name)
        if got == want:
            c.passed(f"{FIELD}: {name[:80]}", f"{name[:80]}: SHA-256 matches ({want[:16]}…)")
        elif want in by_digest:
            c.passed(f"{FIELD}: {name[:80]}", f"{name[:80]}: SHA-256 matches, found as {by_digest[want][:80]}")
        elif got is not None:
            c.fail(
                f"{FIELD}: {name[:80]}",
                f"{name[:80]} is not the file the statement covers (SHA-256 {got[:16]}…, the statement says "
                f"{want[:16]}…): it was swapped or changed",
            )
        elif bundle.complete:
            c.fail(f"{FIELD}: {name[:80]}", f"{name[:80]}, which the statement covers, is not in {bundle.where}")
        else:
            c.passed(f"{FIELD}: {name[:80]}", f"{name[:80]}: not beside the statement, so not checked")
    if bundle.complete:
        wanted = {e["sha256"] for e in covered}
        for name, d in sorted(bundle.files.items()):
            if d not in wanted:
                c.fail(
                    f"{FIELD}: {name[:80]}",
                    f"{name[:80]} is in {bundle.where} but the statement does not cover it (no file with its SHA-256): "
                    "it was added or swapped in",
                )
