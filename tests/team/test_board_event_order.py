"""Board history in commit order (issue 28, the chaos round): events written
by processes racing for the board carry times that follow the order they
were committed in (113 of 600 were out of order: each took its time before
waiting for the lock). Real processes, the real database."""

from __future__ import annotations

import sqlite3
import subprocess
import sys

WRITERS, EACH = 4, 150


def test_events_are_timed_in_commit_order(zap):
    code = ("import sys\nfrom zapcli.team import board\n"
            "for i in range(int(sys.argv[1])):\n"
            "    board.add('race', f'task {sys.argv[2]}-{i}', by=sys.argv[2])\n")
    procs = [subprocess.Popen([sys.executable, "-c", code, str(EACH), f"w{n}"], env=zap.env)
             for n in range(WRITERS)]
    assert all(p.wait(timeout=300) == 0 for p in procs)
    conn = sqlite3.connect(zap.home / "zapcli.db")
    times = [at for (at,) in conn.execute("SELECT at FROM board_event WHERE session = 'race' "
                                          "ORDER BY rowid")]
    assert len(times) == WRITERS * EACH
    late = sum(1 for a, b in zip(times, times[1:], strict=False) if b < a)
    assert late == 0, f"{late} of {len(times)} events timed before the one committed ahead of them"
