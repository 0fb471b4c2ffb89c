"""What zapcli says when SQLite cannot use `zapcli.db` (issue 28, the chaos
round): the real cause — another process holding it locked, or a full disk —
never "check the permissions" for either. Real SQLite errors, a real lock
held by a second connection, a real full tmpfs."""

from __future__ import annotations

import sqlite3

import pytest

from zapcli import statedb


def _error(run) -> sqlite3.Error:
    with pytest.raises(sqlite3.Error) as caught:
        run()
    return caught.value


def test_a_locked_database_is_said_to_be_locked(tmp_path):
    db = tmp_path / "zapcli.db"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")
    other = sqlite3.connect(db, timeout=0)
    said = statedb.problem(_error(lambda: other.execute("INSERT INTO t VALUES (1)")), db)
    assert "permission" not in said, said
    assert "locked" in said and "another" in said, said
    holder.rollback()


def test_a_full_disk_is_said_to_be_full(small_disk):
    db = small_disk.path / "zapcli.db"
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    small_disk.fill()
    said = []
    for _ in range(3):  # whichever error SQLite meets first: SQLITE_FULL, an I/O error...
        try:
            conn.execute("INSERT INTO t VALUES (?)", ("y" * 200000,))
        except sqlite3.Error as exc:
            said.append(statedb.problem(exc, db))
    try:
        sqlite3.connect(small_disk.path / "new.db").execute("CREATE TABLE t (x)")
    except sqlite3.Error as exc:
        said.append(statedb.problem(exc, small_disk.path / "new.db"))
    assert said
    for line in said:
        assert "permission" not in line and "free some space" in line, line
