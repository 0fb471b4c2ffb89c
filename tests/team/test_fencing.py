"""Board fencing (issue 30 item 4, C44): a claim hands its claimer a fencing
number (the task's claim count), and `done` / `release` under a number
that is no longer the task's current claim are refused, changing nothing.

- the person, through the CLI: `claim --json` gives the number, `done
  --fence N` / `release --fence N` check it;
- two attempts of one subagent (its team MCP server started twice, as a
  retried runner would): the first attempt's claim was given back and the
  second attempt claimed the task again, so the holder id is the same — only
  the fencing number tells them apart, and the first attempt's `done` is
  refused while the second's lands;
- a quiet but live holder keeps its claim however long it says nothing
  (there is no timer that reclaims it): its files and its claim aged three
  hours, other claimers find the task held, and its `done` lands.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time

from mcp import Client, StdioServerParameters

from tests.conftest import wait_until
from tests.mcp.conftest import run, text

ZAP = f"{sys.executable} -m zapcli"


def _board(zap):
    return {t["id"]: t for t in zap.json("board", "list")["tasks"]}


def _events(zap, tid):
    return [e["what"] for e in zap.json("board", "show", tid)["events"]]


def test_the_persons_stale_fence_is_refused_and_the_current_one_lands(zap):
    zap("board", "add", "write the parser", check=True)
    first = zap.json("board", "claim")["claimed"]
    assert first["id"] == "t1" and first["fence"] == 1
    zap("board", "release", "t1", check=True)  # given back (another terminal, a script)
    again = zap.json("board", "claim", "t1")["claimed"]
    assert again["fence"] == 2

    late = zap("board", "done", "t1", "--fence", "1", "--result", "from the first claim")
    assert late.returncode == 1 and "fence 1" in late.err and "fence 2" in late.err, late.err
    assert "Traceback" not in late.err
    gone = zap("board", "release", "t1", "--fence", "1")
    assert gone.returncode == 1 and "fence 1" in gone.err, gone.err
    task = _board(zap)["t1"]
    assert task["state"] == "claimed" and task["fence"] == 2 and task["result"] is None
    assert _events(zap, "t1") == ["added", "claimed", "released", "claimed"]

    bad = zap("board", "done", "t1", "--fence", "two", "--result", "x")
    assert bad.returncode == 2 and "--fence" in bad.err, bad.err
    assert zap("board", "done", "t1", "--fence", "2", "--result", "parser written").returncode == 0
    assert _board(zap)["t1"]["result"] == "parser written"


def _team_server(zap, sid):
    env = {k: v for k, v in zap.env.items() if k != "ZAPCLI_SUBAGENT_ID"}
    return StdioServerParameters(command=sys.executable, args=["-m", "zapcli.mcpserver.team",
                                                               "--id", sid],
                                 env=env, cwd=str(zap.cwd))


def test_an_earlier_attempt_of_the_same_subagent_cannot_finish_a_task_claimed_again(zap):
    zap("board", "add", "migrate the schema", check=True)
    holder = zap.spawn_sh("sleep 300", timeout=300)

    async def go():
        async with Client(_team_server(zap, holder)) as first:
            claimed = await first.call_tool("board", {"action": "claim"})
            assert not claimed.is_error and "claimed t1" in text(claimed), text(claimed)
            # the task is given back (the person releases it: the first attempt looked stuck)
            zap("board", "release", "t1", check=True)
            async with Client(_team_server(zap, holder)) as second:  # the retried attempt
                again = await second.call_tool("board", {"action": "claim", "task": "t1"})
                assert not again.is_error, text(again)
                late = await first.call_tool("board", {"action": "done",
                                                       "result": "stale result"})
                dropped = await first.call_tool("board", {"action": "release"})
                held = _board(zap)["t1"]
                landed = await second.call_tool("board", {"action": "done",
                                                          "result": "fresh result"})
                return late, dropped, held, landed

    late, dropped, held, landed = run(go)
    assert late.is_error and "fence 1" in text(late) and "fence 2" in text(late), text(late)
    assert dropped.is_error and "fence 1" in text(dropped), text(dropped)
    assert held["state"] == "claimed" and held["holder"] == holder and held["fence"] == 2
    assert not landed.is_error, text(landed)
    done = _board(zap)["t1"]
    assert done["state"] == "done" and done["result"] == "fresh result", done
    assert _events(zap, "t1").count("done") == 1


def test_a_quiet_live_holder_is_never_reclaimed_on_a_timer(zap):
    zap("board", "add", "a long build", check=True)
    holder = zap.spawn_sh(f"{ZAP} board claim t1 && sleep 300", timeout=600)
    wait_until(lambda: _board(zap)["t1"]["holder"] == holder, 60, 0.2)
    # three hours of silence: its files unchanged, its claim and its events that old
    old = time.time() - 3 * 3600
    for suffix in (".jsonl", ".out", ".err"):
        path = zap.home / "subagents" / f"{holder}{suffix}"
        if path.exists():
            os.utime(path, (old, old))
    db = sqlite3.connect(zap.home / "zapcli.db")
    with db:
        db.execute("UPDATE board_task SET updated = ?", (old,))
        db.execute("UPDATE board_event SET at = ?", (old,))
    db.close()

    other = zap("board", "claim", "--wait", "2", env={"ZAPCLI_STALL_S": "1"})
    assert other.returncode == 3 and "claimed by others" in other.err, other.err
    shown = zap.json("poll", "--no-wait", holder, env={"ZAPCLI_STALL_S": "1"})["subagents"][0]
    assert shown["status"] == "running"  # quiet (stalled) is not ended
    task = _board(zap)["t1"]
    assert task["state"] == "claimed" and task["holder"] == holder, task
    assert "released" not in _events(zap, "t1")
    # its work, still there, finishes it
    done = zap("board", "done", "t1", "--result", "built", env={"ZAPCLI_SUBAGENT_ID": holder})
    assert done.returncode == 0, done.err
    assert _board(zap)["t1"]["done_by"].startswith(holder)
    assert zap.status(holder) == "running"
