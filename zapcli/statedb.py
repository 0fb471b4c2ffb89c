"""`<state>/zapcli.db`: what it holds, what to tell a user when SQLite cannot
use it, how it is opened, and doctor's look at it. Imports `zapcli.paths`,
`zapcli.boundedread`; sqlite3 only in `connect` and `check`. A FIFO, socket
or device in its place is refused before SQLite opens it (its open blocks).

The database holds the definitions' switches and model overrides
(`definitions.store`), the token ledger (`ledger`) and the sessions' task
boards (`team.board`). All say the same
thing when it fails: a file that is not a database (or is corrupt) is moved
aside and zapcli creates a new one; a full disk needs space; a file or
folder zapcli may not write needs its permissions or another ZAPCLI_HOME; a
database another process holds locked is said to be locked.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from zapcli.paths import SANDBOXED, state_dir, writable_hint

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3
    from typing import Literal

HOLDS = "definition switches, model overrides, the token ledger and the task boards"
_CORRUPT = ("SQLITE_NOTADB", "SQLITE_CORRUPT")


def path() -> Path:
    return state_dir() / "zapcli.db"


def problem(exc: BaseException, db: Path | None = None) -> str:
    """One line for a sqlite3 error on the database: what happened and what to do."""
    db = db or path()
    name = str(getattr(exc, "sqlite_errorname", "") or "")  # Python 3.11+
    text = str(exc)
    if "not a regular file" in text:
        from shlex import quote

        return (f"{db} cannot be used ({text}): it holds zapcli's {HOLDS}; move what is in "
                f"its place aside (mv {quote(str(db))} {quote(f'{db}.broken')}) and zapcli "
                "creates a new, empty one")
    if name.startswith(_CORRUPT) or "not a database" in text or "malformed" in text:
        from shlex import quote

        return (f"{db} is damaged ({text}): it holds zapcli's {HOLDS}; move it aside "
                f"(mv {quote(str(db))} {quote(f'{db}.broken')}) and zapcli creates a new, "
                "empty one")
    if name.startswith("SQLITE_FULL") or "disk is full" in text or _full(db):
        return f"{db} cannot be written ({text}): the disk is full; free some space in {db.parent}"
    if name.startswith(("SQLITE_BUSY", "SQLITE_LOCKED")) or "database is locked" in text:
        return (f"{db} is locked ({text}): another zapcli process held it longer than zapcli "
                "waits; try again in a moment (a process stopped while holding it — fuser "
                f"{db} names it — keeps it locked until it ends)")
    if os.environ.get(SANDBOXED):
        return f"{db} cannot be used ({text}): {writable_hint()}"
    return (f"{db} cannot be used ({text}): check the permissions of the file and its folder, "
            "or set ZAPCLI_HOME to a writable folder")


def _full(db: Path) -> bool:
    """The disk under the database has no room left (an I/O error or a file
    SQLite could not create is often how SQLite meets it)."""
    try:
        st = os.statvfs(db.parent)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 64 * 1024


def _refuse_non_regular(db: Path) -> None:
    """Raise sqlite3.OperationalError when the database (or its -wal / -shm
    file) is there but is not a regular file: SQLite's own open of a FIFO
    blocks for ever. Checked with lstat, never an open: closing any file
    descriptor of the database drops every POSIX lock this process holds on
    it, so a connection still open here (the ledger keeps one for its check
    before each model call) would lose its WAL locks and another process
    could reset the WAL index under it, losing committed writes."""
    import sqlite3
    import stat

    from zapcli.boundedread import _kind

    for name in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        try:
            mode = os.stat(name).st_mode
        except FileNotFoundError:
            continue
        except OSError as exc:
            if exc.errno in (errno.EACCES, errno.EPERM):
                continue  # SQLite says so itself, in its words
            raise sqlite3.OperationalError(f"{name.name} {exc.strerror or exc}") from None
        if not stat.S_ISREG(mode):
            what = "it" if name == db else name.name
            kind = _kind(mode)
            why = f"is {kind}, not a regular file" if kind.startswith("a ") else f"is {kind}"
            raise sqlite3.OperationalError(f"{what} {why}") from None


def connect(schema: str, db: Path | None = None, *, timeout: float = 30,
            isolation_level: Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None = "DEFERRED",
            ) -> sqlite3.Connection:
    """Open the database for writing: created 0600 in a 0700 folder before
    SQLite opens it (SQLite would create it 0644; its -wal and -shm copy the
    mode), WAL mode, `schema` ensured. Raises sqlite3.Error (pass it to
    `problem`); a file that cannot be created is an OperationalError too."""
    import sqlite3

    from zapcli.paths import create_private, ensure_dir

    db = db or path()
    try:
        if not db.exists():  # an existing one is opened as it is (a read-only folder too)
            ensure_dir(db.parent)
            create_private(db)
    except OSError as exc:
        raise sqlite3.OperationalError(f"cannot create {db}: {exc.strerror or exc}") from None
    _refuse_non_regular(db)
    conn = sqlite3.connect(str(db), timeout=timeout, isolation_level=isolation_level)
    import time

    # Processes opening a new database at once race to switch it to WAL and
    # make its tables: SQLite answers "locked" at once there, without the
    # busy wait (measured: 7 rounds in 30 of six first opens), so wait here.
    until = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(schema)
            return conn
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > until:
                conn.close()
                raise
            time.sleep(0.02)
        except BaseException:
            conn.close()
            raise


def check() -> str | None:
    """None when the database is usable (or not created yet: nothing was
    recorded), else `problem`'s line. Reads only; never creates it."""
    db = path()
    if not db.exists():
        return None
    import sqlite3

    try:
        _refuse_non_regular(db)
        conn = sqlite3.connect(f"{db.as_uri()}?mode=ro", uri=True, timeout=5)
        try:
            verdict = conn.execute("PRAGMA quick_check").fetchone()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return problem(exc, db)
    if verdict and verdict[0] != "ok":
        return problem(sqlite3.DatabaseError(f"database disk image is malformed: {verdict[0]}"), db)
    return None
