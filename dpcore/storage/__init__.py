"""Where DP Explorer keeps what it stores: one folder, ``$DP_EXPLORER_HOME``.

Default: ``.dp-explorer/`` in the working directory. Ledgers, job stores, run results and uploads
all live below it; tests point it at a temporary folder. The folder is created readable by its owner
only (0700) and SQLite stores in it are created 0600 (:func:`private_file`).

The home also keeps the key privacy statements are signed with (:func:`signing_key`, 0600).

Faults (full disk, read-only folder, a corrupted store) become a :class:`StorageError` — a
:class:`~dpcore.errors.DPError` whose message says what happened and what to do — via
:func:`fault_message`: the CLI prints it as one line (exit 2), pages show it with ``st.error``.
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path

from dpcore.errors import DPError

ENV_VAR = "DP_EXPLORER_HOME"


class StorageError(DPError):
    """The store could not be read or written (full disk, read-only folder, corrupted file)."""


class StorageBusy(StorageError):
    """The store is held by another process past the wait (a lock, not a fault of the disk): try again later."""


#: Below this much free space a disk that fails a write counts as full (SQLite reports a full disk under WAL as
#: "disk I/O error" when its log cannot grow).
NEARLY_FULL_BYTES = 1 << 20


def nearly_full(path) -> bool:
    """Whether the disk holding ``path`` (or its nearest existing folder) has less than :data:`NEARLY_FULL_BYTES`
    free for this user."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    try:
        st = os.statvfs(p)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < NEARLY_FULL_BYTES


def is_busy(exc: BaseException) -> bool:
    """A lock held by someone else (SQLite's "database is locked" / "busy"), not a fault of the disk."""
    text = str(exc).lower()
    return isinstance(exc, StorageBusy) or (
        isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text)
    )


def _configured() -> Path:
    return Path(os.environ.get(ENV_VAR) or ".dp-explorer").expanduser().resolve()


def configured() -> Path:
    """Where the home is, without creating it (checking a statement must leave a machine without a home as it was)."""
    return _configured()


def fault_message(exc: BaseException, path=None, *, store: str = "the store", unharmed: str = "") -> str:
    """One line for a storage fault: what happened, where, and what to do next.

    ``store`` names what failed ("the budget ledger"); ``unharmed`` is what the caller guarantees did not happen
    (e.g. "nothing was spent"), said right after what did."""
    where = f" ({path})" if path else ""
    also = f"; {unharmed}" if unharmed else ""
    text = str(exc).lower()
    code = getattr(exc, "errno", None)
    if isinstance(exc, StorageError):
        return str(exc)
    full = code in (errno.ENOSPC, errno.EDQUOT) or "disk is full" in text or "no space left" in text
    if not full and path is not None and (code == errno.EIO or "disk i/o error" in text):
        full = nearly_full(path)  # a write that failed on a disk with no room left: say so, not "I/O error"
    if full:
        return (
            f"the disk holding ${ENV_VAR}{where} is full{also}; free some space (or set ${ENV_VAR} to a folder "
            "on another disk) and try again — nothing was half-written"
        )
    if (
        code in (errno.EROFS, errno.EACCES, errno.EPERM)
        or "readonly" in text
        or "read-only" in text
        or "unable to open database" in text
    ):
        return (
            f"${ENV_VAR}{where} is read-only or not accessible{also}: reading works where the store already "
            f"exists, but this needs to write. Make it writable or set ${ENV_VAR} to a writable folder"
        )
    if isinstance(exc, sqlite3.DatabaseError) and (
        "not a database" in text or "malformed" in text or "corrupt" in text
    ):
        return (
            f"{store}{where} is damaged (corrupted: not a valid SQLite database){also}. Move the file aside "
            "(keep it for inspection) and restore it from a backup, or a fresh one is created on the next run"
        )
    if isinstance(exc, sqlite3.OperationalError) and ("locked" in text or "busy" in text):
        return f"{store}{where} is busy (another process holds it){also}; try again in a moment"
    if isinstance(exc, (FileExistsError, NotADirectoryError)):
        return (
            f"${ENV_VAR}{where} must be a folder, but a file is in its place{also}; move the file or set "
            f"${ENV_VAR} to another folder"
        )
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return f"storage fault{where}: {first}{also}; check ${ENV_VAR} (free space, permissions) and try again"


def home() -> Path:
    """The storage folder, created (0700) if missing."""
    path = _configured()
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not path.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a folder", str(path))
    except OSError as exc:
        raise StorageError(fault_message(exc, path)) from None
    return path


def subdir(name: str) -> Path:
    path = home() / name
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise StorageError(fault_message(exc, path)) from None
    return path


def private_file(path: Path) -> Path:
    """Create ``path`` if missing, readable and writable by its owner only (0600); leave an existing file."""
    path = Path(path)
    if not path.exists():
        try:
            os.close(os.open(path, os.O_CREAT | os.O_WRONLY, 0o600))
        except OSError as exc:
            raise StorageError(fault_message(exc, path)) from None
    return path


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file so that readers see either the old or the whole new content (temp, fsync, rename).

    A full disk or a read-only folder raises :class:`StorageError`; no temporary file is left behind.
    """
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        raise StorageError(fault_message(exc, path.parent)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError):
            raise StorageError(fault_message(exc, path)) from None
        raise
    dir_fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# --- the home's statement-signing key -------------------------------------------------------------------------

#: The file in the home that holds the key privacy statements are signed with (hex, created 0600 on first use).
SIGNING_KEY_FILE = "statement-signing.key"


def signing_key_path() -> Path:
    return _configured() / SIGNING_KEY_FILE


def create_secret(path: Path, data: bytes, *, store: str = "the secret") -> None:
    """Put ``data`` at ``path`` readable by its owner only (0600) unless a file is there already: written whole to
    a temporary file, then linked into place, so two processes never see half a secret and the first one wins."""
    home()
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".secret.", suffix=".tmp")  # mkstemp: 0600
    except OSError as exc:
        raise StorageError(fault_message(exc, path, store=store)) from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass  # another process made it first: use theirs
    except OSError as exc:
        raise StorageError(fault_message(exc, path, store=store)) from None
    finally:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def read_secret(path: Path, *, store: str, renew: str) -> bytes | None:
    """The bytes of a secret in the home, or None when there is none. A secret that is not a regular file, or that
    others can read, is refused (anyone who can read it can use it); ``renew`` says what moving it aside does."""

    try:
        info = os.stat(path)
        if not stat.S_ISREG(info.st_mode):
            raise StorageError(f"{store} {path} is not a regular file; move it aside")
        if info.st_mode & 0o077:
            raise StorageError(
                f"{store} {path} can be read by others (mode {stat.S_IMODE(info.st_mode):o}): anyone who can read it "
                f"can sign statements. Run chmod 600 {path}, or move it aside to {renew}"
            )
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(fault_message(exc, path, store=store)) from None


def signing_key(*, create: bool = True) -> bytes | None:
    """The home's old statement-signing secret (HMAC statements, :mod:`dpcore.statements.legacy`): 32 random bytes
    from the OS CSPRNG, kept as hex in :data:`SIGNING_KEY_FILE`, readable by its owner only (0600). Created on first
    use when ``create`` (:func:`create_secret`); None when it does not exist and ``create`` is false (verifying
    never makes a key). A key that others can read, or that is not a 64-digit hex file, is refused."""

    path = signing_key_path()
    if not path.exists() and create:
        create_secret(path, (secrets.token_hex(32) + "\n").encode("ascii"), store="the statement-signing key")
    raw = read_secret(
        path,
        store="the statement-signing key",
        renew="make a new key (old statements then verify only with the old key)",
    )
    if raw is None:
        return None
    text = raw.decode("ascii", "replace").strip()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise StorageError(
            f"the statement-signing key {path} is damaged (not 64 hex digits); move it aside "
            "(a new key is made on the next signature; old statements then verify only with it)"
        )
    return bytes.fromhex(text)


# --- files a user names on the command line (--data, --out, --json, --verify) ------------------------------


def _kind(mode: int) -> str:
    return (
        "a folder"
        if stat.S_ISDIR(mode)
        else "a named pipe (FIFO)"
        if stat.S_ISFIFO(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "a block device"
        if stat.S_ISBLK(mode)
        else "a character device"
        if stat.S_ISCHR(mode)
        else "not a regular file"
    )


def _user_error(exc: OSError, path, doing: str) -> DPError:
    if exc.errno == errno.ENOSPC:
        return DPError(f"could not {doing} {path}: the disk is full; free some space or choose another place")
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return DPError(f"could not {doing} {path}: permission denied (read-only or not yours); choose another place")
    if exc.errno == errno.ENXIO:
        return DPError(f"could not {doing} {path}: nothing is reading that pipe; start the reader first")
    if exc.errno == errno.ELOOP:
        return DPError(f"could not {doing} {path}: too many symbolic links (a loop)")
    return DPError(f"could not {doing} {path}: {exc.strerror or exc}")


def read_user_file(path_text, *, max_bytes: int, what: str = "file", option: str = "") -> bytes:
    """The first ``max_bytes + 1`` bytes of a file a user named, never hanging on a special file.

    Only a regular file (through symbolic links) is read: a named pipe would block forever waiting for a writer
    and a device may never end, so both are refused with a message — checked on the opened descriptor
    (opened non-blocking), so a file swapped for a pipe after a check cannot slip through. Returns at most
    ``max_bytes + 1`` bytes: the caller says what "too large" means."""
    name = f"{option} " if option else ""
    if path_text is None or not str(path_text).strip():
        raise DPError(f"{name}needs a path to a {what}; got an empty one")
    path = Path(str(path_text))
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise DPError(f"{what} not found: {path}") from None
    except IsADirectoryError:
        raise DPError(f"expected a {what}, got a folder: {path}") from None
    except OSError as exc:
        raise _user_error(exc, path, "read") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise DPError(f"expected a {what}, but {path} is {_kind(mode)}; give the path of an ordinary file")
        os.set_blocking(fd, True)
        chunks, left = [], max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    except OSError as exc:
        raise _user_error(exc, path, "read") from None
    finally:
        os.close(fd)


def check_user_path(path_text, option: str = "--out", *, special: bool = True) -> Path:
    """Refuse an unusable output path *before* any work: empty, a folder, a missing parent folder, a symbolic
    link that points nowhere, a block device or a socket, a file or folder this process may not write, a device
    that refuses writes (``/dev/full``). Returns the path to write (a link's target).

    ``special=False``: a character device or named pipe is refused too (a command that writes a second file beside
    its output, such as ``synth``'s statement, needs a real file)."""
    if path_text is None or not str(path_text).strip():
        raise DPError(f"{option} needs a file path; got an empty one (leave {option} out to skip the file)")
    path = Path(str(path_text))
    try:
        if path.is_symlink():
            try:
                target = path.resolve(strict=False)  # write through the link: the link stays a link
            except RuntimeError:  # Python 3.11 raises this for a loop of links
                raise DPError(
                    f"{option} {path} is a symbolic link that loops back to itself; choose a file path"
                ) from None
            if not target.parent.is_dir():
                raise DPError(f"{option} {path} is a link to {target}, whose folder does not exist")
            path = target
        if path.exists():
            mode = path.stat().st_mode
            if stat.S_ISDIR(mode):
                raise DPError(f"{option} must be a file path, got a folder: {path}")
            if (
                stat.S_ISBLK(mode)
                or stat.S_ISSOCK(mode)
                or (not special and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)))
            ):
                raise DPError(f"{option} {path} is {_kind(mode)}; refusing to write there, choose a file path")
            if stat.S_ISCHR(mode):
                _probe_device(path)
            elif stat.S_ISREG(mode) and not os.access(path, os.W_OK):
                raise _user_error(OSError(errno.EACCES, "permission denied"), path, "write")
        elif not path.parent.is_dir():
            raise DPError(f"folder {path.parent} does not exist; create it or choose another {option}")
        regular = not path.exists() or stat.S_ISREG(path.stat().st_mode)
        if regular and not os.access(path.parent, os.W_OK | os.X_OK):
            # a file is written whole or not at all through a new file beside it: its folder must take one
            raise _user_error(OSError(errno.EACCES, "permission denied"), path, "write")
    except OSError as exc:  # ELOOP: a loop of links met on the way
        raise _user_error(exc, path, "write") from None
    return path


def _probe_device(path: Path) -> None:
    """Write nothing to a character device: one that refuses every write (``/dev/full``: ENOSPC) says so now,
    before the work whose output it would lose. A terminal or ``/dev/null`` takes it."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise _user_error(exc, path, "write") from None
    try:
        os.write(fd, b"")
    except BlockingIOError:
        pass
    except OSError as exc:
        raise _user_error(exc, path, "write") from None
    finally:
        os.close(fd)


def write_user_file(path_text, data: bytes, *, option: str = "--out") -> Path:
    """Write ``data`` to a path a user named: whole or not at all for a file (:func:`atomic_write_bytes`, on the
    link's target when the path is a symbolic link, so the link stays), and straight through to a character
    device or a named pipe (``/dev/stdout``, ``/dev/null``, a pipe someone reads) instead of replacing it with a
    regular file. A pipe with no reader is refused at once (never a hang); a full device is one message."""
    path = check_user_path(path_text, option)
    try:
        mode = path.stat().st_mode if path.exists() else None
    except OSError as exc:
        raise _user_error(exc, path, "write") from None
    if mode is not None and (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        except OSError as exc:
            raise _user_error(exc, path, "write") from None
        try:
            os.set_blocking(fd, True)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
        except OSError as exc:
            raise _user_error(exc, path, "write") from None
        finally:
            os.close(fd)
        return path
    try:
        atomic_write_bytes(path, data)
    except StorageError as exc:
        cause = exc.__context__ if isinstance(exc.__context__, OSError) else None
        raise (_user_error(cause, path, "write") if cause else exc) from None
    return path


# --- deleting without leaving anything half-deleted --------------------------------------------------------

TRASH = ".trash"  # under $DP_EXPLORER_HOME: the same disk, so moving there is one atomic rename


def move_to_trash(path) -> Path | None:
    """Move a file or folder out of sight in one rename; return where it went (None: it was not there).

    A caller deletes in two steps: move every file of a thing to the trash, commit the deletion of its record,
    and only then :func:`empty_trash`; if the commit fails, :func:`restore` puts the files back. A reader sees the
    thing whole or not at all, never half of it. A fault is a :class:`StorageError`."""

    path = Path(path)
    dest = subdir(TRASH) / f"{path.name}.{secrets.token_hex(4)}"
    try:
        os.rename(path, dest)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise StorageError(fault_message(exc, path)) from None
    return dest


def restore(moved, path) -> None:
    """Undo :func:`move_to_trash` (a deletion that could not be committed)."""
    if moved is not None:
        os.rename(moved, path)


def empty_trash() -> None:
    """Remove what was moved to the trash (best effort: whatever a fault leaves is removed next time)."""

    try:
        folder = home() / TRASH
        entries = list(folder.iterdir()) if folder.is_dir() else []
    except (OSError, StorageError):
        return
    for entry in entries:
        try:
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink()
        except OSError:
            pass
