"""Everyday use, third round (#24 items 4, 9): what a person or a model meets
when it leaves things out — `wait` with no ids, short id prefixes — and what
the listings and the run's stream say."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest


@pytest.mark.timeout(90)
def test_wait_without_ids_waits_for_this_sessions_unfinished_ones_on_cli_and_call(zap):
    early = zap.spawn_sh("echo early")
    assert zap.wait_status(early) == "completed"  # ended before: nothing to wait for
    a = zap.spawn_sh("sleep 1; echo a-out")
    b = zap.spawn_sh("sleep 1.5; echo b-out")
    res = zap("wait")
    assert res.returncode == 0, res.err
    assert f"{a}: completed" in res.out and f"{b}: completed" in res.out
    assert early not in res.out
    assert zap.status(a) == zap.status(b) == "completed"
    idle = zap("wait")  # as a shell's `wait`: nothing unfinished, exit 0 at once
    assert idle.returncode == 0 and "nothing to wait for" in idle.out, (idle.out, idle.err)
    assert "zapcli list shows the finished ones" in idle.out
    # `zapcli call` (what any framework's model calls) means the same
    c = zap.spawn_sh("sleep 1; echo c-out")
    called = zap("call", json.dumps({"action": "wait"}))
    assert called.returncode == 0 and f"{c}: completed" in called.out and "c-out" in called.out
    again = zap("call", json.dumps({"action": "wait", "ids": []}))
    assert again.returncode == 0 and "nothing to wait for" in again.out
    assert "action list shows" in again.out
    # `ids: []` given is nothing to wait for, as in the Python API — never the session's
    # work (it waited for every running one); leaving `ids` out is the session's
    running = zap.spawn_sh("sleep 30")
    began = time.monotonic()
    empty = zap("call", json.dumps({"action": "wait", "ids": [], "timeout": 20}))
    assert empty.returncode == 0 and time.monotonic() - began < 10, empty.out
    assert "`ids` is empty: nothing to wait for" in empty.out and running not in empty.out
    assert json.loads(zap("call", "--json", json.dumps(
        {"action": "wait", "ids": [], "timeout": 20})).out)["subagents"] == []
    zap("kill", running)
    # another session's subagents are not this session's work
    other = zap.spawn_sh("sleep 30")
    mine = zap("wait", "--timeout", "0", env={"ZAPCLI_SESSION": "someone-else"})
    assert mine.returncode == 0 and "nothing to wait for" in mine.out
    zap("kill", other)


@pytest.mark.timeout(90)
def test_call_wait_without_ids_shows_a_fast_subagents_end_once_across_processes(zap):
    """`zapcli call` is one process a call: what its spawns' ends were already
    shown is kept for the session, so `wait` without ids right after a spawn
    whose subagent already ended shows that end (its output), then no more."""
    def call(doc: dict) -> subprocess.CompletedProcess:
        return zap("call", json.dumps(doc))

    def spawn(task: str) -> str:
        return call({"action": "spawn", "task": task, "cli": "sh"}).out.split()[1].rstrip(":")

    sid = spawn("echo fast-out")
    assert zap.wait_status(sid) == "completed"  # ended before the wait began
    shown = call({"action": "wait", "timeout": 20})
    assert shown.returncode == 0 and f"{sid}: completed" in shown.out, (shown.out, shown.err)
    assert "fast-out" in shown.out
    again = call({"action": "wait", "timeout": 20})  # reported once: nothing left
    assert again.returncode == 0 and "nothing to wait for" in again.out, again.out
    # `any` returns the ended one at once, beside one still running
    slow, quick = spawn("sleep 30"), spawn("echo quick-out")
    assert zap.wait_status(quick) == "completed"
    first = call({"action": "wait", "any": True, "timeout": 20})
    assert first.returncode == 0 and "quick-out" in first.out, (first.out, first.err)
    # a poll that showed an end reports it too
    polled = spawn("echo polled")
    assert zap.wait_status(polled) == "completed"
    assert "polled" in call({"action": "poll", "ids": [polled]}).out
    rest = call({"action": "wait", "any": True, "timeout": 1})
    assert rest.returncode == 4 and polled not in rest.out, rest.out  # only `slow` is left
    zap("kill", slow)


@pytest.mark.timeout(60)
def test_a_unique_start_of_an_ids_tail_works_as_git_and_docker_take_one(zap):
    sid = zap.spawn_sh("echo prefix-works")
    tail = sid[-8:]
    assert zap("wait", tail[:4]).returncode == 0
    assert "prefix-works" in zap("output", tail[:5]).out
    assert f"{sid}: completed" in zap("poll", tail[:6]).out
    short = zap("poll", tail[:3])
    assert short.returncode == 1 and "too short: give at least 4 of an id's last 8 hex" in short.err
    odd = zap("poll", "nope")
    assert odd.returncode == 1 and "ids look like sa_20260101_0badc0de" in odd.err
    assert "their last 8 hex digits (or a unique start of them, 4 or more)" in odd.err
    # two subagents whose tails start alike: the start names neither
    subagents = zap.home / "subagents"
    for name in ("sa_20260101_abcd0001", "sa_20260101_abcd0002"):
        (subagents / f"{name}.jsonl").write_text("")
    both = zap("poll", "abcd")
    assert both.returncode == 1 and "2 subagents' ids end in abcd…: give more of it" in both.err


@pytest.mark.timeout(60)
def test_poll_and_list_long_never_cut_the_advice_at_the_end_of_a_reason(zap):
    schema = zap.cwd / "object.json"
    schema.write_text('{"type": "object"}')
    sid = zap.spawn_sh("echo not-json", "--output-schema", str(schema))
    assert zap.wait_status(sid) == "failed"
    whole = zap.json("poll", sid)["subagents"][0]["reason"]
    assert len(whole) > 120 and whole.endswith("(text around the fence is allowed)"), whole
    for args in (("poll", sid), ("list", "-l"), ("wait", sid)):
        out = zap(*args).out
        assert f"  Reason: {whole}\n" in out, (args, out)


@pytest.mark.timeout(60)
def test_list_all_shows_sessions_and_a_queued_row_says_what_it_waits_for(zap):
    from tests.conftest import sleep_marker

    zap.env["ZAPCLI_MAX_CONCURRENT"] = "1"
    busy = zap.spawn_sh(f"sleep {sleep_marker(30)}")
    capped = zap.spawn_sh("true")
    later = zap.spawn_sh("true", "--after", capped)
    elsewhere = zap("spawn", "--cli", "sh", "--", "true",
                    env={"ZAPCLI_SESSION": "the-other-session"}).out.strip()
    try:
        rows = {line[:8]: line for line in zap("list").out.splitlines()}
        assert "queued (cap 1)" in rows[capped[-8:]]
        assert f"queued (after {capped[-8:]})" in rows[later[-8:]]
        listed = zap("list", "--all").out.splitlines()
        assert listed[1].split() == ["ID", "STATUS", "SESSION", "CLI", "TASK"]
        row = next(line for line in listed if line.startswith(elsewhere[-8:]))
        assert "the-other-session" in row
        assert zap.env["ZAPCLI_SESSION"] in next(x for x in listed if x.startswith(busy[-8:]))
        docs = {v["id"]: v for v in zap.json("list")["subagents"]}
        assert docs[capped]["waiting_for"] == "cap 1" and docs[busy]["waiting_for"] is None
    finally:
        zap("kill", "--all")


@pytest.mark.timeout(60)
def test_the_run_stream_shows_subagents_list_as_one_line_a_definition(zap, model):
    srv = model([{"match": "list the definitions", "turns": [
        {"tool_calls": [{"name": "subagents_list", "arguments": {}}]}, {"text": "listed"}]}])
    proc = subprocess.run([sys.executable, "-m", "zapcli", "run", "list the definitions"],
                          env=zap.env, cwd=zap.cwd, capture_output=True, text=True, timeout=50,
                          stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stderr
    shown = [x for x in proc.stderr.splitlines() if x.startswith("  │")]
    assert shown[0] == "  │ 5 definitions:" and len(shown) == 6, proc.stderr
    assert "  │ explorer (builtin) model scripted; tools read, glob, grep" in shown
    # the model still read the whole document
    sent = srv.requests[-1]["messages"][-1]["content"]
    assert json.loads(sent)["agents"][0]["declares"]["prompt"]
