"""The task board (docs/explanation/rules.md#fleets-traces-teams, #22 item 1): real `zapcli board` processes on
one session's board in the real state database.

- 20 claimers at once, each claiming until nothing is left: every task is
  claimed exactly once (the claim is one IMMEDIATE transaction);
- --after: a task is claimable only once the tasks it waits for are done,
  and the claimer reads their results;
- a claimer that ends without `done` gives its task back — one that finished
  without marking it (completed), one SIGKILLed (found `lost` by the board's
  own look at its holder) — with a note naming who held it and how it ended;
- only the holder marks a task done, once; bad input is one clear line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from tests.conftest import wait_until

ZAP = f"{sys.executable} -m zapcli"


def _board(zap):
    return {t["id"]: t for t in zap.json("board", "list")["tasks"]}


def test_twenty_concurrent_claimers_get_each_task_exactly_once(zap):
    for i in range(60):
        assert zap("board", "add", f"task number {i}").returncode == 0
    loop = f'while t=$({ZAP} board claim); do echo "$t"; done'
    procs = [subprocess.Popen(["sh", "-c", loop], cwd=zap.cwd, env=zap.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for _ in range(20)]
    got = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert b"nothing to claim" in err, err  # the last claim found nothing left
        got += out.decode().split()
    assert sorted(got) == sorted(f"t{i}" for i in range(1, 61)), got  # each once, none twice
    board = _board(zap)
    assert {t["state"] for t in board.values()} == {"claimed"}
    events = zap.json("board", "show", "t7")["events"]
    assert [e["what"] for e in events] == ["added", "claimed"]


def test_after_tasks_gate_a_claim_and_their_results_reach_the_claimer(zap):
    assert zap("board", "add", "design the schema").out.strip() == "t1"
    assert zap("board", "add", "--after", "t1", "--label", "db", "write the migration").out.strip() == "t2"
    assert zap("board", "claim", "t2").returncode == 1  # waits on t1
    assert zap("board", "claim").out.strip() == "t1"
    res = zap("board", "claim")
    assert res.returncode == 3 and "1 open task(s) wait on others" in res.err
    assert zap("board", "done", "t1", "--result", "two tables: users, keys").returncode == 0
    doc = zap.json("board", "claim")
    assert doc["claimed"]["id"] == "t2" and doc["claimed"]["label"] == "db"
    assert doc["after"][0]["result"] == "two tables: users, keys"
    assert zap("board", "done", "t2", "--result", "done").returncode == 0
    again = zap("board", "done", "t2", "--result", "twice")
    assert again.returncode == 1 and "already done" in again.err
    finished = zap.json("board", "claim")
    assert finished["claimed"] is None and finished["finished"] is True
    # bad input: one line each, nothing changed
    for args, words in ((("board", "add", "  "), "empty"), (("board", "add", "--after", "t9", "x"), "t9"),
                        (("board", "show", "seven"), "not a task id"), (("board", "done", "t1"), "--result")):
        res = zap(*args)
        assert res.returncode == 2 and words in res.err and "Traceback" not in res.err, (args, res.err)
    assert len(_board(zap)) == 2


def test_a_claimer_that_ends_without_done_gives_its_task_back(zap):
    for text in ("first", "second", "third"):
        zap("board", "add", text, check=True)
    # an sh subagent claims and finishes without marking it done
    quitter = zap.spawn_sh(f"{ZAP} board claim")
    assert zap("wait", quitter, "--timeout", "60").returncode == 0
    # another claims and is SIGKILLed, runner and all, with no chance to record anything
    victim = zap.spawn_sh(f"{ZAP} board claim && sleep 300")
    held = wait_until(lambda: [t for t in _board(zap).values() if t["holder"] == victim], 60, 0.2)
    runner = next(r for r in _records(zap, victim) if r["type"] == "process")["pid"]
    os.killpg(runner, signal.SIGKILL)
    wait_until(lambda: _gone(runner), 10, 0.05)
    board = _board(zap)  # the board's own look at each holder finds both ended
    assert all(t["state"] == "open" for t in board.values()), board
    assert f"{victim} (sh) held it and ended lost" in board[held[0]["id"]]["note"]
    assert zap.status(victim) == "lost"
    # the victim took what the quitter gave back: t1's history says both
    shown = zap.json("board", "show", "t1")["events"]
    assert [e["what"] for e in shown] == ["added", "claimed", "released", "claimed", "released"]
    assert f"{quitter} (sh) held it and ended completed without marking it done" in shown[2]["note"]
    assert held[0]["id"] == "t1" and victim in shown[4]["note"]
    # what was given back is claimed again, by someone else
    assert zap("board", "claim", "t1").returncode == 0
    # a subagent may not finish or release what someone else holds; the person may release it
    other = zap.spawn_sh(f"{ZAP} board done t1 --result stolen; {ZAP} board release t1")
    zap("wait", other, "--timeout", "60")
    assert _board(zap)["t1"]["holder"] == "you"
    err = (zap.home / "subagents" / f"{other}.err").read_text()
    assert err.count("not claimed by you") == 2, err


def _records(zap, sid):
    from tests.conftest import trail_records

    return trail_records(zap.trail(sid))


def _gone(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False
