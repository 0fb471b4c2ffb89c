"""`zapcli list --watch` on the change feed (issue 29 item 2): on a real
terminal, each refresh re-reads only the trails that changed — counted in
the watching process itself — and shows a change at once."""

from __future__ import annotations

import time
from collections import Counter

from tests.conftest import REPO, wait_until
from tests.lifecycle.watching import list_watch

# The watching process counts its own trail reads: every one goes through
# `zapcli.trail.reader.read` (`load` is every command's way to a summary).
COUNTER = '''
import os
import zapcli.trail.reader as _reader

_read, _log = _reader.read, os.environ["ZAPCLI_TEST_READS"]


def read(path):
    with open(_log, "a") as fh:
        fh.write(path.name + "\\n")
    return _read(path)


_reader.read = read
'''


def test_list_watch_rereads_only_the_trails_that_changed(zap, tmp_path):
    done = [zap.spawn_sh("true") for _ in range(12)]
    zap("wait", *done, "--timeout", "30", check=True)
    later = zap.spawn_sh("sleep 3; echo finished")
    seam = tmp_path / "seam"
    seam.mkdir()
    (seam / "sitecustomize.py").write_text(COUNTER)
    log = tmp_path / "reads.log"
    env = {"PYTHONPATH": f"{seam}:{REPO}", "ZAPCLI_TEST_READS": str(log)}
    with list_watch(zap, env=env) as screen:
        wait_until(lambda: "sleep 3; echo finished" in screen.text, 20)
        started = time.monotonic()
        wait_until(lambda: "completed" in _row(screen.text, later), 20, 0.05)
        assert time.monotonic() - started < 6
        time.sleep(3.5)  # three more refreshes of the interval, where nothing changed
    reads = Counter(name[:-6] for name in log.read_text().split())
    assert all(reads[sid] == 1 for sid in done), reads  # read once, on the first refresh
    assert 2 <= reads[later] <= 8, reads  # again only as its trail changed (start, output, end)


def _row(text: str, sid: str) -> str:
    rows = [line for line in text.splitlines() if sid[-8:] in line]
    return rows[-1] if rows else ""


def test_list_watch_needs_a_terminal(zap):
    proc = zap("list", "--watch")
    assert proc.returncode == 2 and "--watch draws a live table on a terminal" in proc.err


