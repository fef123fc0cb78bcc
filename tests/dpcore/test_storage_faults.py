"""Issue 12 faults and issue 11 item 10: full disk, read-only or misplaced home, corrupted job store,
0600 stores. Each is one clear line on the CLI (exit 2) and a StorageError (a DPError) for pages."""

import errno
import os
import shutil
import stat
import subprocess
import sys

import pytest

from dpcore import storage
from dpcore.jobs import db, store
from dpcore.jobs.owners import CLI_OWNER as OWNER

from ..conftest import ROOT
from .cli_helpers import one_line, run


def test_job_store_is_created_owner_only(dp_home):
    store.submit("demo.echo", {"x": 1}, owner=OWNER)
    mode = stat.S_IMODE(os.stat(dp_home / db.DB_NAME).st_mode)
    assert mode == 0o600, oct(mode)
    assert stat.S_IMODE(os.stat(dp_home).st_mode) & 0o077 == 0  # the home folder too: 0700
    for side in ("-wal", "-shm"):  # SQLite gives its side files the database's mode
        p = dp_home / (db.DB_NAME + side)
        if p.exists():
            assert stat.S_IMODE(os.stat(p).st_mode) & 0o077 == 0


def test_corrupted_job_store_is_a_clear_message(capsys, dp_home):
    dp_home.mkdir(parents=True)
    (dp_home / db.DB_NAME).write_bytes(os.urandom(4096))  # garbage where the SQLite file should be
    for args in (["jobs", "list"], ["jobs", "show", "abc"], ["jobs", "workers"]):
        rc, out, err = run(capsys, *args)
        assert rc == 2 and out == "" and one_line(err), (args, err)
        assert "corrupted" in err and "Move the file aside" in err
    with pytest.raises(storage.StorageError, match="corrupted"):
        store.submit("demo.echo", {}, owner=OWNER)


def test_file_in_place_of_home(capsys, tmp_path, monkeypatch):
    """A file where the folder should be: every open fails (how a broken home looks without root tricks)."""
    bad = tmp_path / "not-a-folder"
    bad.write_text("x")
    monkeypatch.setenv(storage.ENV_VAR, str(bad))
    rc, out, err = run(capsys, "jobs", "list")
    assert rc == 2 and one_line(err) and "a file is in its place" in err


def test_full_disk_leaves_nothing_half_written(tmp_path, monkeypatch):
    """Simulated ENOSPC during the write (monkeypatched os.fsync): a StorageError, the old file intact."""
    target = tmp_path / "r.html"
    target.write_bytes(b"old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storage.os, "fsync", full)
    with pytest.raises(storage.StorageError, match="is full"):
        storage.atomic_write_bytes(target, b"new content")
    assert target.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]  # no temp file left behind


def test_full_disk_on_cli_isone_line(capsys, tmp_path, monkeypatch):
    def full(*a, **k):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(storage.tempfile, "mkstemp", full)
    rc, out, err = run(capsys, "data", "medical", "--n", "20", "--out", str(tmp_path / "m.csv"))
    assert rc == 2 and one_line(err) and "is full" in err


def test_sqlite_full_disk_message():
    import sqlite3

    msg = storage.fault_message(sqlite3.OperationalError("database or disk is full"), "/x/jobs.sqlite")
    assert "is full" in msg and "free some space" in msg


def _can_bind_ro() -> bool:
    if shutil.which("unshare") is None or os.geteuid() != 0:
        return False
    r = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    return r.returncode == 0


@pytest.mark.skipif(not _can_bind_ro(), reason="needs root and `unshare -m` for a read-only bind mount")
def test_read_only_home_lists_but_refuses_writes(dp_home):
    """A real read-only $DP_EXPLORER_HOME: a read-only bind mount in a private mount namespace (root ignores
    chmod, so chmod'ing the folder would not stop writes). `jobs list` works; a write is one line, exit 2."""
    job_id = store.submit("demo.echo", {"x": 1}, label="before", owner=OWNER)
    env = {**os.environ, storage.ENV_VAR: str(dp_home)}
    py = sys.executable
    script = (
        f"mount --bind -o ro {dp_home} {dp_home} && "
        f"{py} -m dpcore jobs list; echo rc=$?; "
        f"{py} -m dpcore jobs show {job_id} --no-history >/dev/null; echo rc=$?; "
        f"{py} -m dpcore jobs cancel {job_id}; echo rc=$?"
    )
    r = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, cwd=ROOT, env=env, timeout=120
    )
    assert "Traceback" not in r.stderr, r.stderr
    codes = [line for line in r.stdout.splitlines() if line.startswith("rc=")]
    assert codes == ["rc=0", "rc=0", "rc=2"], (r.stdout, r.stderr)
    assert job_id in r.stdout  # the list shows the stored job
    assert "read-only" in r.stderr and len(r.stderr.strip().splitlines()) == 1
