"""Retention at every runner's end reads only what it may act on (#32: the
per-subagent cost of a fan-out must not grow with the subagents kept).

Every runner collects when it ends and nothing else runs. Within `max_kept`
and with no run trail to prune, nothing is deleted: only a trail whose size
asks for a trim is read. Over `max_kept`, every trail is read as before and
the oldest go. Counts the trails observed (a wrapper around the real
`observe`), never time.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.conftest import runner_gone
from zapcli.config import load_settings
from zapcli.lifecycle import retention
from zapcli.trail import trim


@pytest.fixture
def finished(zap, monkeypatch):
    sids = [zap.spawn_sh(f"echo {i}") for i in range(6)]
    for sid in sids:
        assert zap.wait_status(sid) == "completed"
        runner_gone(zap, sid)  # its trail is written no more
    # the oldest by their trails' last write (what retention goes by): under load the runners
    # of subagents spawned one after another can end in another order
    sids.sort(key=lambda sid: os.stat(zap.trail(sid)).st_mtime_ns)
    for k, v in zap.env.items():
        if k.startswith("ZAPCLI_"):
            monkeypatch.setenv(k, v)
    observed: list[str] = []
    real = retention.observe

    def counting(sid, *a, **kw):
        observed.append(sid)
        return real(sid, *a, **kw)

    monkeypatch.setattr(retention, "observe", counting)
    return sids, observed


def _settings(monkeypatch, max_kept: int):
    monkeypatch.setenv("ZAPCLI_MAX_KEPT", str(max_kept))
    return load_settings(lenient=True)


def test_within_max_kept_only_a_trail_over_the_trim_size_is_read(zap, finished, monkeypatch):
    sids, observed = finished
    big = sids[2]
    line = json.dumps({"v": 1, "seq": 0, "ts": "2026-01-01T00:00:00.000000Z", "type": "diagnostic",
                       "dimension": "bench", "name": "pad", "message": "x" * 4000}) + "\n"
    text = zap.trail(big).read_text()
    head, _, end = text.rstrip("\n").rpartition("\n")  # the pad goes before the final status
    pad = line * (trim.TRIM_OVER_BYTES // len(line) + 10)
    zap.trail(big).write_text(head + "\n" + pad + end + "\n")
    res = retention.collect(_settings(monkeypatch, 100))  # waits for a runner's own collect
    assert res.skipped_reason is None and res.deleted == []
    assert set(observed) <= {big}, observed  # the others: a stat each
    assert big in res.trimmed and os.path.getsize(zap.trail(big)) < trim.TRIM_OVER_BYTES
    assert zap.json("poll", "--no-wait", big)["subagents"][0]["status"] == "completed"


def test_over_max_kept_the_oldest_still_go(zap, finished, monkeypatch):
    sids, observed = finished
    res = retention.collect(_settings(monkeypatch, 2))  # waits for a runner's own collect
    assert sorted(res.deleted) == sorted(sids[:4])
    assert set(observed) >= set(sids)
    assert [s for s in sids if zap.trail(s).exists()] == sids[4:]
