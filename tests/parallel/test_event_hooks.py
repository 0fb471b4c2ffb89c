"""Event hooks beyond "finished" (issue 29 item 3): `hooks:` in the user's
config.yaml and `spawn --on-event EVENT=CMD` run a command exactly once per
occurrence — by the runner that wrote the event, or by whichever observer
sees it first — with the on-finish environment plus ZAPCLI_EVENT,
ZAPCLI_DETAIL and, for needs_input, the pending request's whole text."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import yaml

from tests.conftest import trail_records, wait_until
from tests.lifecycle.watching import list_watch
from zapcli.supervisor.launch import process_create_time

LINE = 'printf "%s|%s|%s|%s\\n" "$ZAPCLI_EVENT" "$ZAPCLI_ID" "$ZAPCLI_STATUS" "$ZAPCLI_DETAIL" >> {log}'


def _config(zap, **keys) -> None:
    folder = Path(zap.env["ZAPCLI_CONFIG_HOME"])
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.yaml").write_text(yaml.safe_dump(keys))


def _lines(log: Path, event: str | None = None) -> list[list[str]]:
    if not log.exists():
        return []
    rows = [line.split("|") for line in log.read_text().splitlines() if line]
    return [r for r in rows if event is None or r[0] == event]


def _states(zap, sid: str, event: str) -> list[str]:
    return [r["state"] for r in trail_records(zap.trail(sid))
            if r["type"] == "event" and r.get("event") == event]


def _settled(zap, sid: str, event: str, count: int = 1) -> None:
    """Wait until `count` helpers of `event` recorded their end, then a little
    more: a late duplicate would show up."""
    wait_until(lambda: _states(zap, sid, event).count("done") >= count, 30, 0.1)
    time.sleep(0.7)


def _approval_script(model, marker: str):
    return model([{"match": marker, "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": f"echo {marker} > out.txt"}}]},
        {"text": "finished"}]}])


def test_needs_input_runs_once_while_wait_and_list_watch_race(zap, model, tmp_path):
    log = tmp_path / "events.log"
    request = tmp_path / "request.txt"
    _config(zap, hooks={"needs_input": LINE.format(log=log) + f'; printf "%s" "$ZAPCLI_REQUEST" > {request}'})
    _approval_script(model, "ask-first")
    sid = zap("spawn", "--", "ask-first").out.strip()
    waiter = subprocess.Popen([sys.executable, "-m", "zapcli", "wait", sid, "--timeout", "90"],
                              env=zap.env, cwd=zap.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with list_watch(zap):
        pollers = [subprocess.Popen([sys.executable, "-m", "zapcli", "poll", "--wait-secs", "10", sid],
                                    env=zap.env, cwd=zap.cwd, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL) for _ in range(3)]
        wait_until(lambda: _lines(log, "needs_input"), 60, 0.1)
        _settled(zap, sid, "needs_input")
        for p in pollers:
            p.wait(timeout=60)
    assert _lines(log, "needs_input") == [["needs_input", sid, "awaiting_approval", "awaits approval of bash"]]
    assert "echo ask-first > out.txt" in request.read_text()  # the request, whole
    assert _states(zap, sid, "needs_input") == ["claimed", "running", "done"]
    assert zap("approve", sid).returncode == 0
    assert waiter.wait(timeout=60) == 0
    assert (zap.cwd / "out.txt").read_text().strip() == "ask-first"
    assert len(_lines(log)) == 1  # nothing else named a hook


def _hand_made(zap, hooks: dict[str, str], *, approval: bool = True) -> tuple[str, subprocess.Popen]:
    """A subagent whose runner wrote its request and never fired its hook (a
    backend that does not emit, a runner that died right after): a trail
    made with the store API, its `process` a live `sleep` of ours."""
    from zapcli import ids
    from zapcli.lifecycle import session as sessions
    from zapcli.trail import records, store

    sleeper = subprocess.Popen(["sleep", "120"], start_new_session=True)
    ctime = process_create_time(sleeper.pid)  # as a runner records it
    sid = ids.new_id()
    now, mono = time.time(), time.monotonic()
    store.create_trail(sid, {
        "session": zap.env["ZAPCLI_SESSION"], "cli": "zapcli", "task": "deploy the thing",
        "cwd": str(zap.cwd), "workspace": str(zap.cwd), "timeout_s": 300.0, "approval": "workspace",
        "unattended": False, "after": [], "mono": mono, "deadline": records.iso_utc(now + 300),
        "kill_grace_s": 3.0, "hooks": hooks}, [])
    path = store.path_for(sid)
    run = {"pid": sleeper.pid, "create_time": ctime, "mono": mono, "deadline_mono": mono + 300}
    store.append(path, "process", run)
    store.append(path, "start", run)
    if approval:
        store.append(path, "approval_request", {
            "req_id": "r1", "tool": "bash", "summary": "bash: make deploy\nline two of it",
            "arguments": {"command": "make deploy\nline two of it"}})
    sessions.add(zap.env["ZAPCLI_SESSION"], sid)
    return sid, sleeper


def test_observers_racing_run_a_needs_input_nobody_fired_once(zap, tmp_path):
    log = tmp_path / "events.log"
    request = tmp_path / "request.txt"
    sid, sleeper = _hand_made(zap, {"needs_input": LINE.format(log=log)
                                    + f'; printf "%s" "$ZAPCLI_REQUEST" > {request}'})
    try:
        with list_watch(zap):
            observers = [subprocess.Popen([sys.executable, "-m", "zapcli", *args], env=zap.env,
                                          cwd=zap.cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                         for args in [("wait", sid, "--timeout", "3")] + [("poll", "--no-wait", sid)] * 8
                         + [("list",)] * 2]
            for p in observers:
                p.wait(timeout=60)
            _settled(zap, sid, "needs_input")
        assert _lines(log, "needs_input") == [["needs_input", sid, "awaiting_approval", "awaits approval of bash"]]
        assert request.read_text() == "bash: make deploy\nline two of it"
        assert _states(zap, sid, "needs_input") == ["claimed", "running", "done"]
    finally:
        sleeper.kill()


def test_started_runs_once_when_it_starts_not_while_it_waits(zap, tmp_path):
    log = tmp_path / "events.log"
    hook = f"started={LINE.format(log=log)}"
    go = zap.cwd / "go"  # the first runs until the test has looked, however slow the machine
    first = zap.spawn_sh(f"until [ -e {go} ]; do sleep 0.1; done", "--on-event", hook)
    second = zap.spawn_sh("true", "--on-event", hook, "--after", first)
    wait_until(lambda: _lines(log, "started"), 30, 0.1)
    _settled(zap, first, "started")
    assert [r[1] for r in _lines(log, "started")] == [first]  # the second waits for the first
    assert zap.status(second) == "queued"
    go.touch()
    assert zap("wait", first, second, "--timeout", "60", timeout=90).returncode == 0
    _settled(zap, second, "started")
    rows = {r[1]: r for r in _lines(log, "started")}
    assert sorted(rows) == sorted([first, second]) and len(_lines(log, "started")) == 2
    assert rows[first][2] == "running"  # it ran on until the test had seen its hook end
    # ZAPCLI_STATUS is its status when the hook's helper starts: `true` may have
    # ended by then; never `queued`, as it was while it waited
    assert rows[second][2] in ("running", "completed"), rows
    assert _states(zap, first, "started") == ["claimed", "running", "done"]


def test_stalled_runs_once_per_stall_and_again_after_it_went_on(zap, tmp_path):
    log = tmp_path / "events.log"
    _config(zap, stall_s=1, hooks={"stalled": LINE.format(log=log)})
    sid = zap.spawn_sh("sleep 3; echo went on; sleep 30")

    def stalls() -> int:  # observers look every 300 ms, as a person's `list` would
        zap("poll", "--no-wait", sid)
        return len(_lines(log, "stalled"))

    wait_until(lambda: stalls() >= 1, 20, 0.3)
    end = time.monotonic() + 1.5
    while time.monotonic() < end:  # more looks at the same stall run nothing more
        stalls()
    assert len(_lines(log, "stalled")) == 1
    wait_until(lambda: stalls() >= 2, 20, 0.3)  # its output moved: a new stall, a new occurrence
    end = time.monotonic() + 1.5
    while time.monotonic() < end:
        stalls()
    rows = _lines(log, "stalled")
    assert len(rows) == 2 and {r[2] for r in rows} == {"running"}
    assert all(r[3].startswith("nothing written for ") for r in rows)
    keys = {r["key"] for r in trail_records(zap.trail(sid)) if r["type"] == "event"}
    assert len(keys) == 2
    zap("kill", sid)


def test_rate_limited_runs_once_per_episode_with_nobody_looking(zap, model, tmp_path):
    log = tmp_path / "events.log"
    model([{"match": "limited", "turns": [
        {"http_error": {"status": 429, "retry_after": 1}},
        {"http_error": {"status": 429, "retry_after": 1}},
        {"text": "done after the limit"}]}])
    sid = zap("spawn", "--on-event", f"rate_limited={LINE.format(log=log)}", "--", "limited work").out.strip()
    # no zapcli command looks until the hook has run: the runner fires it
    wait_until(lambda: _lines(log, "rate_limited"), 30, 0.1)
    assert zap("wait", sid, "--timeout", "60").returncode == 0
    _settled(zap, sid, "rate_limited")
    rows = _lines(log, "rate_limited")
    assert len(rows) == 1, rows  # two 429s in a row are one episode
    assert rows[0][:3] == ["rate_limited", sid, "running"] and "429" in rows[0][3]
    assert sum(1 for r in trail_records(zap.trail(sid)) if r["type"] == "rate_limit") == 2


def test_finished_in_hooks_is_the_on_finish_command_with_its_event_named(zap, tmp_path):
    log = tmp_path / "events.log"
    _config(zap, hooks={"finished": LINE.format(log=log)})
    sid = zap.spawn_sh("exit 3")
    wait_until(lambda: _lines(log, "finished"), 20, 0.1)
    assert _lines(log) == [["finished", sid, "failed", ""]]
    assert [r["state"] for r in trail_records(zap.trail(sid)) if r["type"] == "on_finish"][0] == "claimed"


def test_usage_limited_fires_from_its_emission_point(zap, tmp_path):
    """The usage-limit work records a `usage_limit` record and calls
    `events.emit(path, "usage_limited")`; an observer fires one it missed."""
    from zapcli.trail import events, store

    log = tmp_path / "events.log"
    sid, sleeper = _hand_made(zap, {"usage_limited": LINE.format(log=log)}, approval=False)
    try:
        path = store.path_for(sid)
        store.append(path, "usage_limit", {"provider": "anthropic", "message": "5-hour limit reached"})
        assert events.emit(path, "usage_limited") == 1
        assert events.emit(path, "usage_limited") == 0  # claimed: once
        zap("poll", "--no-wait", sid)
        _settled(zap, sid, "usage_limited")
        assert _lines(log) == [["usage_limited", sid, "running", "anthropic 5-hour limit reached"]]
    finally:
        sleeper.kill()


def test_an_end_on_a_usage_limit_fires_usage_limited_once(zap, tmp_path):
    """The usage-limit work ends a subagent with `usage_limit` on its status
    (the runner's `TrailWriter.end`): its hook runs from there, once."""
    from zapcli.trail import store
    from zapcli.trail.model import Outcome, Status
    from zapcli.trail.writer import TrailWriter

    log = tmp_path / "events.log"
    sid, sleeper = _hand_made(zap, {"usage_limited": LINE.format(log=log)}, approval=False)
    try:
        writer = TrailWriter(store.path_for(sid), start_seq=10, secrets=[])
        assert writer.end(Outcome(Status.FAILED, 1, "usage limit"), usage_limit={
            "cli": "claude", "message": "You've hit your limit", "resets_at": 1893456000})
        writer.close()
        zap("poll", "--no-wait", sid)  # an observer after it: nothing more
        _settled(zap, sid, "usage_limited")
        assert _lines(log) == [["usage_limited", sid, "failed",
                                "claude usage limit: You've hit your limit (resets at 2030-01-01T00:00:00Z)"]]
    finally:
        sleeper.kill()


def test_bad_hooks_are_refused_before_anything_starts(zap, tmp_path):
    bad = zap("spawn", "--cli", "sh", "--on-event", "needs_inptu=true", "--", "true")
    assert bad.returncode == 2 and "unknown event 'needs_inptu'" in bad.err and "needs_input" in bad.err
    shape = zap("spawn", "--cli", "sh", "--on-event", "needs_input", "--", "true")
    assert shape.returncode == 2 and "EVENT=CMD" in shape.err
    both = zap("spawn", "--cli", "sh", "--on-finish", "true", "--on-event", "finished=true", "--", "true")
    assert both.returncode == 2 and "give one of them" in both.err
    _config(zap, hooks={"stalld": "true"})
    typo = zap("spawn", "--cli", "sh", "--", "true")
    assert typo.returncode != 0 and "unknown event 'stalld'" in typo.err and "stalled" in typo.err
    assert not list(zap.home.glob("subagents/*.jsonl"))
    assert "Traceback" not in bad.err + shape.err + both.err + typo.err
