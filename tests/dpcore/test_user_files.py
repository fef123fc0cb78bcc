"""Issue 28: files a user names on the command line — never a hang, never a device replaced, never a traceback.

``--data`` on a named pipe hung forever (linkage, uniqueness, query, ``statement --verify``); ``--out`` onto a
symbolic link or a device replaced it with a regular file (as root, ``data --out /dev/full`` turned the device
into a file); ``--json ''`` was silently ignored; a JSON array or deeply nested JSON given to
``statement --verify`` and a name typed in Latin-1 were tracebacks. Each runs the real CLI in a subprocess with a
timeout, so a hang fails the test instead of stalling the suite.
"""

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from dpcore import storage
from dpcore.errors import DPError

ROOT = Path(__file__).resolve().parents[2]


def cli(*args, timeout=60, env=None):
    proc = subprocess.run(
        [sys.executable, "-m", "dpcore", *args],
        cwd=ROOT,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    err = proc.stderr.decode("utf-8", "replace")
    assert "Traceback" not in err, err[-2000:]
    return proc.returncode, proc.stdout.decode(), err


@pytest.fixture
def fifo(tmp_path):
    path = tmp_path / "pipe.csv"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("linkage", "--known", "age=34"),
        ("uniqueness", "--qi", "age"),
        ("query", "--epsilon", "0.1", "--count", "sex=F"),
    ],
)
def test_data_on_a_named_pipe_is_refused_at_once(fifo, args):
    rc, _, err = cli(args[0], "--data", str(fifo), *args[1:], timeout=30)  # hung forever before
    assert rc == 2 and "named pipe" in err, err


def test_statement_verify_on_a_named_pipe_is_refused_at_once(fifo):
    rc, _, err = cli("statement", "--verify", str(fifo), timeout=30)
    assert rc == 2 and "named pipe" in err, err


@pytest.mark.parametrize(
    "content, words",
    [
        ("[1, 2, 3]", "JSON object"),
        ("[" * 100_000 + "]" * 100_000, "could not read"),
        ("{", "could not read"),
        ("\udcff", "could not read"),
    ],
)
def test_statement_verify_on_what_is_not_a_statement_is_one_clear_line(tmp_path, content, words):
    path = tmp_path / "st.json"
    path.write_bytes(content.encode("utf-8", "surrogateescape"))
    rc, _, err = cli("statement", "--verify", str(path))
    assert rc == 2 and words in err and len(err.strip().splitlines()) == 1, err


def test_out_through_a_symbolic_link_writes_the_target_and_keeps_the_link(tmp_path):
    target = tmp_path / "real.csv"
    link = tmp_path / "link.csv"
    link.symlink_to(target)
    rc, out, err = cli("data", "medical", "--n", "20", "--out", str(link))
    assert rc == 0, err
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text().startswith("age,") or "," in target.read_text().splitlines()[0]


def test_out_to_a_pipe_with_a_reader_writes_through_and_without_one_is_refused(tmp_path, fifo):
    rc, _, err = cli("data", "medical", "--n", "20", "--out", str(fifo), timeout=30)  # nobody reads: no hang
    assert rc == 2 and "nothing is reading" in err, err
    got = []
    reader = threading.Thread(target=lambda: got.append(Path(fifo).read_bytes()))
    reader.start()
    rc, _, err = cli("data", "medical", "--n", "20", "--out", str(fifo), timeout=30)
    reader.join(30)
    assert rc == 0, err
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still a pipe, not replaced by a regular file
    assert got and got[0].count(b"\r\n") == 21  # header + 20 rows went through the pipe


@pytest.mark.skipif(os.geteuid() != 0, reason="making a device node needs root (CI runs as root)")
def test_out_onto_a_full_device_is_a_message_and_the_device_stays(tmp_path):
    dev = tmp_path / "full"
    os.mknod(dev, stat.S_IFCHR | 0o666, os.makedev(1, 7))  # the kernel's /dev/full, in our own folder
    rc, _, err = cli("data", "medical", "--n", "20", "--out", str(dev))
    assert rc == 2 and "full" in err, err
    assert stat.S_ISCHR(os.stat(dev).st_mode)  # the old code replaced the device with a regular file


def test_out_to_dev_null_works():
    rc, out, err = cli("data", "medical", "--n", "20", "--out", os.devnull)
    assert rc == 0 and json.loads(out)["rows"] == 20, err
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


@pytest.mark.parametrize(
    "args",
    [
        ("data", "medical", "--n", "20", "--out", ""),
        ("train", "--dataset", "breast_cancer", "--model", "logreg", "--epsilon", "1", "--epochs", "1", "--json", ""),
        ("sweep", "--json", ""),
    ],
)
def test_an_empty_output_path_is_refused_before_any_work(args):
    rc, _, err = cli(*args, timeout=60)
    assert rc == 2 and "empty" in err, err


def test_a_name_typed_in_latin1_is_one_clear_line(tmp_path):
    """``$'M\\xfcller'``: bytes that are not UTF-8 arrive as lone surrogates; storing them failed with a
    UnicodeEncodeError traceback."""
    rc, _, err = cli("data", "medical", "--n", "5", "--out", os.fsdecode(bytes(tmp_path) + b"/caf\xe9.csv"))
    assert rc == 0, err  # a Latin-1 *file name* is a fine path on Linux
    assert (Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.csv"))).exists()
    data = tmp_path / "m.csv"
    data.write_text("age,sex\n34,F\n35,M\n")
    env = {"DP_EXPLORER_ADMIN_TOKEN": "t" * 24, "DP_EXPLORER_HOME": str(tmp_path / "home")}
    rc, _, err = cli("admin", "init", env=env)
    assert rc == 0, err
    name = os.fsdecode(b"M\xfcller")  # what Python makes of the bytes a Latin-1 terminal sends
    rc, _, err = cli("budget", "register", "--data", str(data), "--name", name, "--epsilon", "1", env=env)
    assert rc == 2 and "'Müller' is not UTF-8 text" in err and len(err.strip().splitlines()) == 1, err


def test_read_user_file_refuses_devices_and_folders(tmp_path):
    with pytest.raises(DPError, match="character device"):
        storage.read_user_file(os.devnull, max_bytes=10)
    with pytest.raises(DPError, match="folder"):
        storage.read_user_file(tmp_path, max_bytes=10)
    with pytest.raises(DPError, match="empty"):
        storage.read_user_file("", max_bytes=10)
    f = tmp_path / "a.txt"
    f.write_bytes(b"x" * 50)
    assert storage.read_user_file(f, max_bytes=10) == b"x" * 11  # the caller sees it is too large
