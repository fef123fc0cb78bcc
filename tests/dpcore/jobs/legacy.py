"""A jobs.sqlite as older versions wrote it (before owners, or before shared jobs), for the migration tests."""

import sqlite3
from pathlib import Path

_COLUMNS = (
    "id TEXT PRIMARY KEY, target TEXT NOT NULL, params TEXT NOT NULL, grp TEXT, label TEXT NOT NULL DEFAULT "
    "'', status TEXT NOT NULL, progress TEXT NOT NULL DEFAULT '{}', created REAL NOT NULL, started REAL, "
    "ended REAL, error TEXT, result TEXT, worker TEXT, heartbeat REAL, cancel_requested INTEGER NOT NULL "
    "DEFAULT 0"
)


def old_store(home: Path, row: dict, *, owners: bool) -> None:
    """A store with one job ``row`` (column -> value) and no ``shared`` column; ``owners``: with the owner column
    (default 'cli'), as before shared jobs; without it, as before owners."""
    home.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(str(home / "jobs.sqlite"))
    with conn:
        owner = ", owner TEXT NOT NULL DEFAULT 'cli'" if owners else ""
        conn.execute(f"CREATE TABLE jobs ({_COLUMNS}{owner})")
        conn.execute(f"INSERT INTO jobs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    conn.close()
