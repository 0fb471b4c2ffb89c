"""Every other key path of `zapcli top`, with real subagents: kill from the
table (the whole process group ends), a batch kill of 10 marked rows, rm of
ended ones, the `/` filter, the tree, this session / every session, and
attach + send (the message reaches the model before its next call)."""

from __future__ import annotations

import json
import sys
from typing import Any

import pytest

from tests.conftest import Zap, final_status, pgrep, sleep_marker, trail_records, wait_until
from tests.tui.conftest import Top, run_top


def _running(zap: Zap, sid: str) -> bool:
    return any(r.get("type") == "start" for r in trail_records(zap.trail(sid)))


@pytest.mark.timeout(180)
def test_x_kills_the_selected_row_and_its_whole_process_group(zap: Zap):
    mark = sleep_marker(3301)
    # a shell with a child of its own in the group: both must end
    sid = zap.spawn_sh(f"sleep {mark} & sleep {mark}; wait")
    wait_until(lambda: len(pgrep(f"sleep {mark}")) == 2, 20)

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.status(sid) == "running", 10)
        assert top.screen.table.select(sid)
        await top.press("x")
        await top.until(lambda: type(top.app.screen).__name__ == "Confirm", 5, "the question")
        await top.press("y")
        await top.until(lambda: top.status(sid) == "cancelled", 30, "cancelled")

    run_top(scenario)
    assert final_status(zap.trail(sid)) == "cancelled"
    wait_until(lambda: not pgrep(f"sleep {mark}"), 15)


@pytest.mark.timeout(240)
def test_marks_kill_ten_rows_at_once_and_n_answers_no(zap: Zap, monkeypatch):
    zap.env["ZAPCLI_MAX_CONCURRENT"] = "0"  # eleven at once, none queued
    monkeypatch.setenv("ZAPCLI_MAX_CONCURRENT", "0")
    mark = sleep_marker(3302)
    ids = [zap.spawn_sh(f"sleep {mark}") for _ in range(10)]
    spare = zap.spawn_sh(f"sleep {mark}")  # not marked: it keeps running
    wait_until(lambda: len(pgrep(f"sleep {mark}")) == 11, 30)

    async def scenario(top: Top) -> None:
        await top.until(lambda: all(top.status(s) == "running" for s in ids + [spare]), 15)
        for sid in ids:
            assert top.screen.table.select(sid)
            await top.press("space")
        assert top.screen.marks == set(ids)
        assert "10 marked" in str(top.screen.query_one("#status").content)
        await top.press("x")
        await top.until(lambda: type(top.app.screen).__name__ == "Confirm", 5)
        await top.press("n")  # asked again, then yes
        assert all(top.status(s) == "running" for s in ids)
        await top.press("x")
        await top.until(lambda: type(top.app.screen).__name__ == "Confirm", 5)
        await top.press("y")
        await top.until(lambda: all(top.status(s) == "cancelled" for s in ids), 60, "all ten cancelled")
        await top.until(lambda: not top.screen.marks, 30, "the marks cleared once done")

    run_top(scenario)
    assert all(final_status(zap.trail(s)) == "cancelled" for s in ids)
    wait_until(lambda: len(pgrep(f"sleep {mark}")) == 1, 20)
    assert final_status(zap.trail(spare)) is None
    zap("kill", spare)


@pytest.mark.timeout(180)
def test_r_removes_ended_rows_and_refuses_a_running_one(zap: Zap):
    done = zap.spawn_sh("echo finished")
    running = zap.spawn_sh(f"sleep {sleep_marker(3303)}")
    zap.wait_status(done)

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.status(done) == "completed" and top.status(running) == "running")
        assert top.screen.table.select(running)
        await top.press("r")  # a running one: nothing to ask, it is said why
        assert type(top.app.screen).__name__ == "FleetScreen"
        assert top.screen.table.select(done)
        await top.press("r")
        await top.until(lambda: type(top.app.screen).__name__ == "Confirm", 5)
        await top.press("y")
        await top.until(lambda: top.row(done) is None, 20, "the row gone")

    run_top(scenario)
    assert not zap.trail(done).exists()
    assert zap.trail(running).exists()
    zap("kill", running)


@pytest.mark.timeout(180)
def test_the_filter_narrows_by_state_backend_agent_and_words(zap: Zap):
    own = zap.cwd / ".zapcli" / "subagents"
    sleeper = zap.spawn_sh(f"sleep {sleep_marker(3304)}")
    ended = zap.spawn_sh("echo the deploy notes")
    failed = zap.spawn_sh("exit 4")
    zap.wait_status(ended)
    zap.wait_status(failed)
    assert not own.exists()

    async def scenario(top: Top) -> None:
        await top.until(lambda: len(top.screen.rows) == 3)

        def shown() -> set[str]:
            return {line.sid for line in top.screen.table.lines if line.sid}

        await top.press("slash")
        await top.type("s:running")
        assert shown() == {sleeper}
        await top.press("enter")  # kept; the table has the keys again
        assert top.screen.table.has_focus and shown() == {sleeper}
        assert "filter: s:running" in str(top.screen.query_one("#status").content)
        await top.press("slash", "ctrl+u")
        await top.type("s:ended deploy")
        assert shown() == {ended}
        await top.press("ctrl+u")
        await top.type("!s:completed c:sh")
        assert shown() == {sleeper, failed}
        await top.press("ctrl+u")
        await top.type("a:explorer")
        assert shown() == set() and "nothing matches" in top.table_text()
        await top.press("escape")  # cleared
        await top.press("escape")
        assert shown() == {sleeper, ended, failed}

    run_top(scenario)
    zap("kill", sleeper)


@pytest.mark.timeout(180)
def test_t_shows_who_spawned_whom(zap: Zap):
    mark = sleep_marker(3305)
    spawn = f"{sys.executable} -m zapcli spawn --cli sh -- 'sleep {mark}'"
    parent = zap.spawn_sh(f"{spawn} && {spawn} && sleep {mark}")
    loner = zap.spawn_sh(f"sleep {mark}")
    wait_until(lambda: len(pgrep(f"sleep {mark}")) == 4, 30)

    async def scenario(top: Top) -> None:
        await top.until(lambda: len(top.screen.rows) == 4, 20)
        kids = {s for s, r in top.screen.rows.items() if r.view.parent == parent}
        assert len(kids) == 2
        await top.press("t")
        lines = top.screen.table.lines
        order = [line.sid for line in lines]
        at = order.index(parent)
        assert set(order[at + 1:at + 3]) == kids
        assert [lines[at + 1].branch, lines[at + 2].branch] == ["├─ ", "└─ "]
        text = top.table_text()
        assert "├─ " in text and "└─ " in text
        assert loner in order
        await top.press("t")
        assert not any(line.branch for line in top.screen.table.lines)

    run_top(scenario)
    zap("kill", "--all")


@pytest.mark.timeout(180)
def test_s_switches_between_this_session_and_every_session(zap: Zap):
    mine = zap.spawn_sh(f"sleep {sleep_marker(3306)}")
    theirs = zap("spawn", "--cli", "sh", "--", f"sleep {sleep_marker(3306)}",
                 env={"ZAPCLI_SESSION": "another-session"}).out.strip()

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.row(mine) is not None)
        assert top.row(theirs) is None
        await top.press("s")
        await top.until(lambda: top.row(theirs) is not None, 10, "every session's rows")
        assert "every session" in str(top.screen.query_one("#status").content)
        await top.press("s")
        await top.until(lambda: top.row(theirs) is None, 10, "this session's again")

    run_top(scenario)
    zap("kill", mine)
    zap("kill", theirs)


async def _attach(top: Top, sid: str) -> Any:
    """Select `sid` in the fleet, Enter, and the attach screen's log."""
    await top.until(lambda: top.row(sid) is not None)
    assert top.screen.table.select(sid)
    await top.press("enter")
    await top.until(lambda: type(top.app.screen).__name__ == "Attach", 5)
    return top.app.screen.query_one("#attach-log")

@pytest.mark.timeout(180)
def test_attach_follows_the_output_and_a_message_reaches_the_next_model_call(zap: Zap, model):
    marker = "TOP-ATTACH"
    note = "also check the changelog before you answer"
    go = zap.cwd / "go"  # its tool waits for this file: the message is sent while it works
    srv = model([{"match": marker, "turns": [
        {"text": "looking at the repository first", "tool_calls": [
            {"name": "bash", "arguments": {"command": f"until [ -e {go} ]; do sleep 0.1; done"}}]},
        {"text": f"{marker} done"}]}])
    sid = zap("spawn", "--approval", "full", "--", f"{marker}: summarise").out.strip()
    wait_until(lambda: _running(zap, sid), 30)

    async def scenario(top: Top) -> None:
        log = await _attach(top, sid)
        await top.until(lambda: any("looking at the repository" in line for line in log.lines),
                        30, "its output followed")
        await top.type(note)
        await top.press("enter")
        await top.until(lambda: any("sent:" in line for line in log.lines), 20, "sent")
        assert len(srv.requests) == 1  # still in its first turn's tool
        go.write_text("")
        await top.press("escape")
        assert type(top.app.screen).__name__ == "FleetScreen"
        await top.until(lambda: top.status(sid) == "completed", 60)

    run_top(scenario)
    assert len(srv.requests) == 2
    assert note not in json.dumps(srv.requests[0])
    assert note in json.dumps(srv.requests[1]), "the message reached the next model call"


@pytest.mark.timeout(120)
def test_enter_on_a_subagent_that_takes_no_messages_follows_its_output_without_a_message_box(
        zap: Zap, model):
    """A new user's trial: Enter on an `sh` subagent opened a message box that
    could not send. Its output is followed as for any other, but no box is
    offered: the title and a notification say why (a shell command reads no
    messages; one that ended reads none either)."""
    sid = zap.spawn_sh("echo shell-out; sleep 30")
    model([{"match": "ENDED-AGENT", "turns": [{"text": "agent done-out"}]}])
    ended = zap("spawn", "--", "ENDED-AGENT: say it").out.strip()
    assert zap.wait_status(ended) == "completed"

    async def scenario(top: Top) -> None:
        for one, why in ((sid, "a shell command takes no messages"),
                         (ended, "it ended (completed): nothing reads a message now")):
            await top.until(lambda: top.row(one) is not None)  # noqa: B023
            assert top.screen.table.select(one)
            await top.press("enter")
            await top.until(lambda: type(top.app.screen).__name__ == "Attach", 5)
            screen = top.app.screen
            log = screen.query_one("#attach-log")
            await top.until(lambda: any("-out" in line for line in log.lines), 20)  # noqa: B023
            assert not screen.query("#attach-input"), "a message box that cannot send"
            assert why in str(screen.query_one("#attach-title").content)
            assert any(why in n.message for n in top.app._notifications)
            await top.press("escape")
            assert type(top.app.screen).__name__ == "FleetScreen"

    run_top(scenario)
    zap("kill", sid)


@pytest.mark.timeout(180)
def test_a_message_the_work_ended_before_reading_is_said_in_attach_row_and_peek(zap: Zap, model):
    """A new user's trial: sent from attach ("it reaches the work before its
    next model call"), the subagent ended without another call and nothing
    said the message was lost. The send says `if it makes one`; the attach
    log says it ended with it unread; the row and the peek say so after."""
    srv = model([{"match": "TOP-LATE", "turns": [{"text": "TOP-LATE answer", "hold": "late"}]}])
    sid = zap("spawn", "--", "TOP-LATE: answer").out.strip()
    wait_until(lambda: srv.requests, 30, 0.1)  # inside its one and last model call

    async def scenario(top: Top) -> None:
        log = await _attach(top, sid)
        await top.type("one more thing")
        await top.press("enter")
        await top.until(lambda: any("sent:" in line for line in log.lines), 20, "sent")
        assert any("if it makes one" in line for line in log.lines), log.lines
        srv.release("late")  # its one and last model call answers: it ends without reading it
        await top.until(lambda: any("Not delivered: 1 message(s)" in line for line in log.lines),
                        30, "the attach log says the message was never read")
        await top.press("escape")
        await top.until(lambda: top.status(sid) == "completed", 30)
        row = next(line for line in top.table_text().splitlines() if sid[-8:] in line)
        assert "completed 1 unread" in row, row
        assert top.screen.table.select(sid)
        await top.until(lambda: "Not delivered: 1 message(s)" in top.peek_text(), 10,
                        "the peek says it")
        assert f"zapcli continue {sid} TEXT" in top.peek_text()

    run_top(scenario)
    assert len(srv.requests) == 1
