"""A little room kept back on the home's disk, so that a full disk can still be written down.

When the disk holding ``$DP_EXPLORER_HOME`` fills up, nothing can be recorded — not even that a job failed
because the disk is full, and then the job reads "running" with no message until someone frees space. The job
machinery therefore keeps :data:`RESERVE_BYTES` allocated in one file (:data:`RESERVE_NAME`, in the home): a
writer that meets a full disk frees it (:func:`free`) and writes its one small record — a job's end with the
storage message — into the room that appears. :func:`keep` makes the reserve again once there is space, best
effort (never on a disk that is nearly full, never by writing zeros where the filesystem cannot allocate).
"""

from __future__ import annotations

import os
from pathlib import Path

from . import StorageError, home

RESERVE_NAME = ".reserve"
#: About a hundred small SQLite transactions (a job's end writes a few 4 KiB pages to the write-ahead log).
RESERVE_BYTES = 2 << 20


def path() -> Path:
    return home() / RESERVE_NAME


def keep() -> bool:
    """Make sure the reserve exists (allocated, not written) when the disk has room for it four times over.
    Returns whether a reserve is in place. Never raises."""
    try:
        where = path()
        if where.exists():
            return True
        st = os.statvfs(where.parent)
        if st.f_bavail * st.f_frsize < 4 * RESERVE_BYTES:
            return False
        fd = os.open(where, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except (OSError, StorageError):
        return False
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
        return True
    except (OSError, AttributeError):  # no fallocate here: no reserve rather than megabytes of zeros
        os.close(fd)
        fd = -1
        try:
            os.unlink(where)
        except OSError:
            pass
        return False
    finally:
        if fd >= 0:
            os.close(fd)


def free() -> bool:
    """Give the reserve back to the disk (a writer just met a full disk); True if there was one."""
    try:
        os.unlink(path())
    except (OSError, StorageError):
        return False
    return True
