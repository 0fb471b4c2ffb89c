"""The ledger's connection, kept by each thread of a process (a `zapcli run`
settles every child it spawned: opening `zapcli.db` anew for each, with its
WAL switch and schema check, cost ~1 ms and waits on SQLite's lock against the
runners writing as they end). What is asserted is what lands in the files: a
database moved aside, another ZAPCLI_HOME, a fork, a transaction left open,
threads."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading

import pytest

from zapcli import ledger, statedb

T = ledger.Tokens(10, 5)


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "home"))
    yield tmp_path / "home"
    ledger._drop()


def _settled(db) -> set[str]:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return {sid for (sid,) in conn.execute("SELECT subagent_id FROM ledger_settlement")}
    finally:
        conn.close()


def test_a_process_that_settles_many_opens_the_database_once(home, monkeypatch):
    opened = []
    real = statedb.connect
    monkeypatch.setattr(statedb, "connect", lambda *a, **k: opened.append(1) or real(*a, **k))
    for n in range(20):
        ledger.settle(f"sa_{n}", "s", "completed", T)
    assert len(opened) == 1
    assert _settled(home / "zapcli.db") == {f"sa_{n}" for n in range(20)}


def test_a_database_moved_aside_is_not_written_again(home):
    """A user moves a damaged (or any) zapcli.db aside while a long-lived
    process holds it open: what is settled next goes to the new file at the
    path, not into the one moved away."""
    ledger.settle("before", "s", "completed", T)
    db = home / "zapcli.db"
    db.rename(home / "zapcli.db.broken")
    for suffix in ("-wal", "-shm"):
        if (home / f"zapcli.db{suffix}").exists():
            (home / f"zapcli.db{suffix}").rename(home / f"zapcli.db.broken{suffix}")
    ledger.settle("after", "s", "completed", T)
    assert _settled(db) == {"after"}
    assert "after" not in _settled(home / "zapcli.db.broken")


def test_another_state_folder_gets_its_own_rows(home, tmp_path, monkeypatch):
    ledger.settle("first", "s", "completed", T)
    monkeypatch.setenv("ZAPCLI_HOME", str(tmp_path / "other"))
    ledger.settle("second", "s", "completed", T)
    assert _settled(home / "zapcli.db") == {"first"}
    assert _settled(tmp_path / "other" / "zapcli.db") == {"second"}


def test_a_transaction_left_open_is_rolled_back_so_other_processes_can_write(home):
    """A body that fails inside BEGIN IMMEDIATE (here a KeyboardInterrupt, not
    a SQLite error) must not leave the kept connection holding the write
    lock: another process's settlement goes through at once."""
    ledger.settle("first", "s", "completed", T)
    with pytest.raises(KeyboardInterrupt):
        with ledger.db() as conn:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO ledger_run (run_id, updated_at) VALUES ('r', 0)")
            raise KeyboardInterrupt
    other = subprocess.run(
        [sys.executable, "-c", "import sqlite3, sys; c = sqlite3.connect(sys.argv[1], timeout=2, "
         "isolation_level=None); c.execute('BEGIN IMMEDIATE'); c.execute(\"INSERT INTO "
         "ledger_run (run_id, updated_at) VALUES ('other', 0)\"); c.execute('COMMIT')",
         str(home / "zapcli.db")], capture_output=True, text=True, timeout=60)
    assert other.returncode == 0, other.stderr
    with ledger.db() as conn:
        runs = {r for (r,) in conn.execute("SELECT run_id FROM ledger_run")}
    assert runs == {"other"}


def test_a_forked_child_opens_its_own_and_the_parent_keeps_working(home):
    ledger.settle("parent-1", "s", "completed", T)
    pid = os.fork()
    if pid == 0:  # the child: settles through a connection of its own, then leaves at once
        code = 0
        try:
            ledger.settle("child", "s", "completed", T)
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    ledger.settle("parent-2", "s", "completed", T)
    assert _settled(home / "zapcli.db") == {"parent-1", "child", "parent-2"}


def test_threads_settle_at_once_each_on_its_own_connection(home):
    errors: list[BaseException] = []

    def settle(n: int) -> None:
        try:
            for k in range(10):
                ledger.settle(f"sa_{n}_{k}", "s", "completed", T)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=settle, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert len(_settled(home / "zapcli.db")) == 40

