"""Machine-local definition facts in `<state>/zapcli.db` (docs/explanation/rules.md#where-things-live, docs/explanation/rules.md#managing-definitions): switches,
model overrides, where saved files came from, which files zapcli wrote (and their bytes' hash:
a later save removes only those, unchanged). Imports zapcli.paths, zapcli.statedb
(what to say when the database cannot be used); sqlite3 only when the database is
there to read, or is written.

Never written into definition files. Tables are prefixed `definition_`; the
database is shared with other rooms (token ledger), opened in WAL mode. Reads
never create the database: a machine where nothing was switched has no rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from zapcli import statedb
from zapcli.definitions.model import Definition
from zapcli.errors import StateError
from zapcli.plain import frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    import sqlite3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS definition_switches (
    name TEXT PRIMARY KEY,
    enabled INTEGER NOT NULL DEFAULT 1,
    model TEXT,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS definition_saved (
    scope_dir TEXT NOT NULL,
    source TEXT NOT NULL,
    name TEXT NOT NULL,
    PRIMARY KEY (scope_dir, source)
);
CREATE TABLE IF NOT EXISTS definition_written (
    path TEXT PRIMARY KEY,
    sha256 TEXT NOT NULL
);
"""


@frozen
class Switch:
    """One definition's local switch: `enabled`, and `model` (None = no override)."""

    enabled: bool = True
    model: str | None = None


class Switches:
    """Access to the definition tables. `db_path` defaults to `<state>/zapcli.db`."""

    def __init__(self, db_path: Path | None = None):
        self.db_path = db_path or statedb.path()

    @contextmanager
    def _connect(self, write: bool) -> Iterator[sqlite3.Connection | None]:
        if not write and not self.db_path.exists():
            yield None
            return
        import sqlite3

        try:
            conn = statedb.connect(_SCHEMA, self.db_path, timeout=10)
        except sqlite3.Error as exc:
            raise StateError(statedb.problem(exc, self.db_path)) from None
        try:
            with conn:
                yield conn
        except sqlite3.Error as exc:
            raise StateError(statedb.problem(exc, self.db_path)) from None
        finally:
            conn.close()

    def all(self) -> dict[str, Switch]:
        """Every switched definition: name → Switch. Empty when the database does not exist."""
        with self._connect(write=False) as conn:
            if conn is None:
                return {}
            rows = conn.execute("SELECT name, enabled, model FROM definition_switches").fetchall()
        return {name: Switch(bool(enabled), model) for name, enabled, model in rows}

    def get(self, name: str) -> Switch:
        return self.all().get(name, Switch())

    def model_overrides(self) -> Mapping[str, str]:
        """name → overriding model, only for definitions that have one."""
        return {name: s.model for name, s in self.all().items() if s.model}

    def set_enabled(self, name: str, enabled: bool) -> Switch:
        """Record the switch; returns the previous one."""
        previous = self.get(name)
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute(
                "INSERT INTO definition_switches (name, enabled, model, updated_at) "
                "VALUES (?, ?, NULL, ?) ON CONFLICT(name) DO UPDATE SET enabled=excluded.enabled, "
                "updated_at=excluded.updated_at", (name, int(enabled), time.time()))
        return previous

    def set_model(self, name: str, model: str | None) -> Switch:
        """Set (or with None clear) the model override; returns the previous switch."""
        previous = self.get(name)
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute(
                "INSERT INTO definition_switches (name, enabled, model, updated_at) "
                "VALUES (?, 1, ?, ?) ON CONFLICT(name) DO UPDATE SET model=excluded.model, "
                "updated_at=excluded.updated_at", (name, model, time.time()))
        return previous

    def forget(self, name: str) -> None:
        """Drop a definition's switch (after it was deleted everywhere)."""
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute("DELETE FROM definition_switches WHERE name = ?", (name,))

    def saved_name(self, scope_dir: Path, source: Path) -> str | None:
        """The name last saved into `scope_dir` from `source`, if any."""
        with self._connect(write=False) as conn:
            if conn is None:
                return None
            row = conn.execute("SELECT name FROM definition_saved WHERE scope_dir=? AND source=?",
                               (str(scope_dir), str(source))).fetchone()
        return row[0] if row else None

    def record_saved(self, scope_dir: Path, source: Path, name: str) -> None:
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute("INSERT OR REPLACE INTO definition_saved (scope_dir, source, name) "
                         "VALUES (?, ?, ?)", (str(scope_dir), str(source), name))

    def record_written(self, path: Path, data: bytes) -> None:
        """zapcli wrote `data` to `path` (a save or copy)."""
        with self._connect(write=True) as conn:
            assert conn is not None
            conn.execute("INSERT OR REPLACE INTO definition_written (path, sha256) VALUES (?, ?)",
                         (str(path.resolve()), _sha256(data)))

    def written_unchanged(self, path: Path) -> bool:
        """Whether zapcli wrote `path` and it still holds those bytes: only such a
        file is zapcli's to remove; any other is the person's."""
        with self._connect(write=False) as conn:
            if conn is None:
                return False
            row = conn.execute("SELECT sha256 FROM definition_written WHERE path=?",
                               (str(path.resolve()),)).fetchone()
        if row is None:
            return False
        try:
            return _sha256(path.read_bytes()) == row[0]
        except OSError:
            return False


def _sha256(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


class ReadOnce(Switches):
    """The switches as one read found them, for one resolution that asks
    twice (enabled, then the model override): one connection, not two."""

    def __init__(self, db_path: Path | None = None):
        super().__init__(db_path)
        self._table = super().all()

    def all(self) -> dict[str, Switch]:
        return dict(self._table)


def model_origin(flag: str | None, definition: Definition | None,
                 overrides: Mapping[str, str], session_default: str | None
                 ) -> tuple[str | None, str]:
    """(model, where it came from): origin is "flag", "override", "definition",
    "session" or "none". Precedence as in `effective_model`."""
    override = overrides.get(definition.name) if definition is not None else None
    candidates = (("flag", flag), ("override", override),
                  ("definition", definition.model if definition is not None else None),
                  ("session", session_default))
    for origin, candidate in candidates:
        if candidate:
            return candidate, origin
    return None, "none"


def effective_model(flag: str | None, definition: Definition | None,
                    overrides: Mapping[str, str], session_default: str | None) -> str | None:
    """docs/explanation/rules.md#managing-definitions precedence: `--model` flag > local override (by definition name) >
    the definition's `model` > session default. Empty strings count as absent;
    None when nothing is set."""
    return model_origin(flag, definition, overrides, session_default)[0]
