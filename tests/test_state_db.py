"""A damaged `$ZAPCLI_HOME/zapcli.db` (tryout: `echo garbage > zapcli.db`):
every command that uses it says what the file holds and to move it aside
(not "set ZAPCLI_HOME to a writable folder" or "free some space"), and
doctor's state-folder check finds it."""

from __future__ import annotations


def _garbage(zap) -> str:
    zap.home.mkdir(parents=True, exist_ok=True)
    db = zap.home / "zapcli.db"
    db.write_text("garbage\n")
    return str(db)


def _says_move_aside(text: str, db: str) -> None:
    assert f"mv {db} {db}.broken" in text and "token ledger" in text, text
    assert "writable folder" not in text and "free some space" not in text, text


def test_spawn_and_usage_say_what_the_file_holds_and_to_move_it_aside(zap, model):
    model([{"turns": [{"text": "x"}]}])
    db = _garbage(zap)
    spawn = zap("spawn", "--", "say hi")
    assert spawn.returncode == 1, spawn.err
    _says_move_aside(spawn.err, db)
    usage = zap("usage")
    assert usage.returncode == 1, usage.err
    _says_move_aside(usage.err, db)


def test_doctor_checks_the_database(zap):
    db = _garbage(zap)
    proc = zap("doctor")
    assert proc.returncode != 0, proc.out
    state = proc.out.split("state folder", 1)[1].split("\n\n")[0]
    assert proc.out.splitlines()[1].startswith("FAIL state folder"), proc.out
    _says_move_aside(state, db)
    (zap.home / "zapcli.db").rename(db + ".broken")
    proc = zap("doctor")
    assert any(line.startswith("ok   state folder") for line in proc.out.splitlines()), proc.out


def test_doctor_on_a_read_only_state_folder_reports_it_and_goes_on(zap):
    """Tryout: doctor died with "Read-only file system (…/.cli-versions.json.N)"
    and printed no check: writing the CLI version cache stopped it."""
    import shutil
    import subprocess
    import sys

    import pytest

    from tests.backends.clitest import configure

    configure(zap, "codex")  # a CLI whose version doctor looks up (and caches)
    (zap.home / "subagents").mkdir(parents=True)
    home = str(zap.home)
    script = (f"mount --bind {home} {home} && mount -o remount,bind,ro {home} || exit 97; "
              f"exec {sys.executable} -m zapcli doctor")
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=zap.cwd, env=zap.env)
    if proc.returncode == 97 or "unshare failed" in proc.stderr:
        pytest.skip(f"cannot mount a read-only folder here: {proc.stderr.strip()}")
    heads = [line for line in proc.stdout.splitlines() if not line.startswith(" ")]
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert any(h.startswith("FAIL state folder") and "Read-only" in h for h in heads), proc.stdout
    assert any(h.split(":")[0].endswith("backends") for h in heads), proc.stdout
    assert "codex-cli" in proc.stdout or "codex: " in proc.stdout, proc.stdout


def test_a_fifo_in_place_of_the_database_is_refused_not_waited_on(zap, model):
    """Tryout c6: `usage` and `doctor` hung for ever (SQLite's open of a FIFO
    blocks); every user of the database refuses it with the same advice."""
    import os

    model([{"turns": [{"text": "x"}]}])
    zap.home.mkdir(parents=True, exist_ok=True)
    db = str(zap.home / "zapcli.db")
    os.mkfifo(db)
    for args in (("usage",), ("doctor",), ("spawn", "--", "say hi"), ("agents", "list"),
                 ("usage", "--json")):
        proc = zap(*args, timeout=20)
        assert proc.returncode == 1, (args, proc.returncode, proc.out, proc.err)
        said = proc.out + proc.err
        assert "is a FIFO (named pipe), not a regular file" in said, (args, said)
        assert "writable folder" not in said and "token ledger" in said, (args, said)
    os.unlink(db)
    os.mkfifo(db + "-wal")
    assert "zapcli.db-wal is a FIFO" in zap("usage", timeout=20).err


FIRST_OPEN = r'''
import sys, time
from pathlib import Path
from zapcli import statedb
from zapcli.team import board
start = float(sys.argv[2])
while time.time() < start:
    pass
statedb.connect(board.SCHEMA, Path(sys.argv[1]), timeout=60, isolation_level=None).close()
'''


def test_processes_opening_a_new_database_at_once_all_get_it(tmp_path):
    """Six processes opening a new database at the same moment (a fleet's
    first board writes, a full suite's stress test): SQLite answered
    "database is locked" at once to one of them in about a quarter of the
    rounds, without waiting — it failed that writer."""
    import subprocess
    import sys
    import time

    for n in range(15):
        db, start = tmp_path / f"r{n}" / "zapcli.db", time.time() + 0.4
        db.parent.mkdir()
        procs = [subprocess.Popen([sys.executable, "-c", FIRST_OPEN, str(db), str(start)],
                                  stderr=subprocess.PIPE, text=True) for _ in range(6)]
        failed = [err for p in procs if (err := p.communicate(timeout=60)[1]) and p.returncode]
        assert not failed, f"round {n}: {failed[0][-300:]}"
