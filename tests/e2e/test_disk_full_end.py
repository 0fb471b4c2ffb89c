"""A disk that stays full while a subagent finishes (#12.4): its end is
kept in the space its runner reserved at start and recorded as it really
was once an observer comes — never `lost`. On a real 1 MB tmpfs."""

from __future__ import annotations

import json
import time

import psutil

from tests.conftest import final_status, record_of, trail_records, wait_until
from zapcli.trail.records import parse_iso


def _pad_to_page(path) -> None:
    """Append one record that makes the trail end exactly on a 4 KB page."""
    base = {"v": 1, "seq": 900, "ts": "2026-01-01T00:00:00.000000Z", "type": "diagnostic",
            "dimension": "test", "name": "pad", "message": ""}
    size = path.stat().st_size
    empty = len(json.dumps(base, separators=(",", ":"))) + 1
    room = -size % 4096
    room += 4096 if room < empty else 0
    base["message"] = "p" * (room - empty)
    with open(path, "ab") as f:
        f.write(json.dumps(base, separators=(",", ":")).encode() + b"\n")
    assert path.stat().st_size % 4096 == 0


def test_an_end_that_cannot_be_written_is_kept_not_lost(zap, small_disk):
    home = small_disk.path / "state"
    env = {"ZAPCLI_HOME": str(home)}
    zap.env.update(env)
    zap.home = home
    sid = zap.spawn_sh("sleep 1.5; echo done; exit 3")
    pid = int(wait_until(lambda: record_of(zap, sid, "start"), 10)["pid"])
    assert (home / "subagents" / f"{sid}.end").exists()
    _pad_to_page(zap.trail(sid))  # so the end needs a new page of its own
    small_disk.fill()

    def gone():
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True
    wait_until(gone, 30, 0.2)
    ended = time.time()
    assert final_status(zap.trail(sid)) is None  # it really could not write it
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert doc["status"] == "failed" and doc["exit_code"] == 3, doc  # as it ended, not lost
    time.sleep(2)  # tryout c3: the end was stamped when an observer moved it, not when it ended
    small_disk.free()
    doc = zap.json("poll", "--no-wait", sid)["subagents"][0]
    assert doc["status"] == "failed" and doc["exit_code"] == 3, doc
    statuses = [r["status"] for r in trail_records(zap.trail(sid)) if r["type"] == "status"]
    assert statuses == ["failed"]
    assert parse_iso(doc["ended"]) <= ended, (doc["ended"], ended)
    assert not (home / "subagents" / f"{sid}.end").exists()
