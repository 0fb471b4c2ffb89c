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


def test_a_runners_end_in_a_long_queue_reads_one_trail_and_keeps_the_queues_keys(
        tmp_path, monkeypatch):
    """Every runner of a fleet collects at its end (`opportunistic`): with 40
    queued behind a running one, it observed all 41 and read each queued
    one's trail for its kept environment (~18 ms a runner at 190 queued, the
    cost growing with the queue). Now: one observed (the first that has not
    ended says it is busy), no queued trail read, the queued ones' kept
    environments untouched (they start with them); a leftover of an ended
    subagent (what an earlier version left) goes once none runs."""
    from tests.conftest import isolate
    from tests.lifecycle.test_queue_reads import SESSION, _running, _trail
    from zapcli.lifecycle import queue
    from zapcli.lifecycle import session as sessions
    from zapcli.trail import store

    isolate(tmp_path, monkeypatch)
    cwd = str(tmp_path)
    runs = _running(cwd)
    queued = [_trail(f"true {i}", cwd) for i in range(40)]
    for sid in queued:
        queue.keep_env(sid)
    left = _trail("ended long ago", cwd)
    store.append(store.path_for(left), "status", {"status": "completed", "exit_code": 0})
    sessions.deactivate(SESSION, left)
    queue.keep_env(left)  # as an earlier version left it
    observed: list[str] = []
    real = retention.observe
    monkeypatch.setattr(retention, "observe", lambda sid, *a, **kw: observed.append(sid) or real(sid, *a, **kw))
    read: list[str] = []
    load = retention.load
    monkeypatch.setattr(retention, "load", lambda sid, *a, **kw: read.append(sid) or load(sid, *a, **kw))
    settings = load_settings(lenient=True)

    res = retention.collect(settings, opportunistic=True)
    assert res.skipped_reason == "a subagent is running" and res.deleted == []
    assert len(observed) == 1 and read == [], (observed, read)
    assert all(store.path_for(sid, queue.ENV_SUFFIX).exists() for sid in queued)

    for sid in [runs, *queued]:  # the fleet ends
        store.append(store.path_for(sid), "status", {"status": "cancelled", "exit_code": None})
        store.path_for(sid, queue.ENV_SUFFIX).unlink(missing_ok=True)  # its end drops its own
    res = retention.collect(settings, opportunistic=True)
    assert res.skipped_reason is None
    assert not store.path_for(left, queue.ENV_SUFFIX).exists()  # the leftover's key is gone
    # `gc` drops a leftover whatever runs (tests/redteam/test_keys.py)


def _run_with_children(zap, model, n: int) -> tuple[str, list[str]]:
    """A `zapcli run` whose model spawned `n` sh subagents and waited for them."""
    model([{"turns": [
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "spawn", "task": f"echo {i}",
                                                          "cli": "sh"}} for i in range(n)]},
        {"tool_calls": [{"name": "subagent", "arguments": {"action": "wait", "timeout": 30}}]},
        {"text": "done."}]}])
    proc = zap("run", "--approval", "full", "--json", "--", "fan out", timeout=120)
    doc = json.loads(proc.stdout)
    assert doc["status"] == "completed" and len(doc["subagents"]) == n, doc
    for sid in doc["subagents"]:
        runner_gone(zap, sid)
    return doc["run_id"], doc["subagents"]


def _counting(monkeypatch) -> list[str]:
    observed: list[str] = []
    real = retention.observe
    monkeypatch.setattr(retention, "observe", lambda sid, *a, **kw: observed.append(sid) or real(sid, *a, **kw))
    return observed


def test_an_ended_run_whose_subagents_are_kept_makes_no_trail_read(zap, model, monkeypatch):
    """A run trail may go once none of its session's subagents is left: every
    runner's end read every trail to learn it while any run trail was kept
    (~190 ms a runner with 1,000 kept). The session's markers say it now; a
    run whose subagents went (`rm`) still goes at the next collect, and one
    whose subagents have no marker (an older zapcli's) is kept, by their trails."""
    from zapcli.lifecycle import session as sessions
    from zapcli.paths import state_dir
    from zapcli.trail import runs

    run_id, children = _run_with_children(zap, model, 2)
    for k, v in zap.env.items():
        if k.startswith("ZAPCLI_"):
            monkeypatch.setenv(k, v)
    observed = _counting(monkeypatch)
    settings = _settings(monkeypatch, 100)
    res = retention.collect(settings, opportunistic=True)
    assert res.skipped_reason is None and res.deleted == [] and observed == [], (res, observed)
    assert runs.path_for(run_id).exists()

    markers = state_dir() / "sessions" / sessions.key(run_id) / "all"
    kept = sorted(os.listdir(markers))
    for name in kept:  # as an older zapcli left them: no marker, the trails say it
        (markers / name).unlink()
    res = retention.collect(settings, opportunistic=True)
    assert runs.path_for(run_id).exists() and res.deleted == [], res
    assert set(observed) >= set(children)
    for name in kept:
        (markers / name).touch()

    for sid in children:
        assert zap("rm", sid).returncode == 0
    res = retention.collect(settings, opportunistic=True)
    assert res.deleted == [run_id] and not runs.path_for(run_id).exists(), res


def test_a_run_goes_in_the_pass_that_deletes_its_last_subagents(zap, model, monkeypatch):
    from zapcli.trail import runs

    run_id, children = _run_with_children(zap, model, 2)
    later = [zap.spawn_sh(f"echo later {i}") for i in range(2)]
    for sid in later:
        assert zap.wait_status(sid) == "completed"
        runner_gone(zap, sid)
    for k, v in zap.env.items():
        if k.startswith("ZAPCLI_"):
            monkeypatch.setenv(k, v)
    res = retention.collect(_settings(monkeypatch, 2))
    assert sorted(res.deleted) == sorted([*children, run_id]), res
    assert not runs.path_for(run_id).exists()
    assert all(zap.trail(s).exists() for s in later)
