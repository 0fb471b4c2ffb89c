"""`b` opens the board pane: the session's tasks, who holds each (a real
subagent that claimed one), what waits on what (a task after another, a
queued subagent after a running one)."""

from __future__ import annotations

import sys

import pytest

from tests.conftest import Zap, sleep_marker, wait_until
from tests.tui.conftest import Top, run_top


@pytest.mark.timeout(180)
def test_b_shows_the_board_its_holders_and_what_waits_on_what(zap: Zap):
    assert zap("board", "add", "build the wheel").returncode == 0
    assert zap("board", "add", "publish it", "--after", "t1").returncode == 0
    mark = sleep_marker(3321)
    holder = zap.spawn_sh(f"{sys.executable} -m zapcli board claim t1 && sleep {mark}")
    waiting = zap("spawn", "--cli", "sh", "--after", holder, "--", "echo after it").out.strip()
    wait_until(lambda: "claimed by" in zap("board", "list").out, 30)

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.row(holder) is not None and top.row(waiting) is not None)
        pane = top.screen.query_one("#board")
        assert not pane.display
        await top.press("b")
        assert pane.display

        def text() -> str:
            return str(pane.query_one("#board-text").content)

        await top.until(lambda: "t1 claimed by" in text(), 10, "the board")
        shown = text()
        assert f"t1 claimed by {holder}" in shown and "build the wheel" in shown
        assert "t2 open" in shown and "(after t1)" in shown and "waits on t1" in shown
        assert f"{waiting[-8:]} waits on after {holder[-8:]}" in shown
        await top.press("b")
        assert not pane.display

    run_top(scenario)
    zap("kill", holder, waiting)


@pytest.mark.timeout(120)
def test_top_all_shows_every_sessions_board_not_only_its_own(zap: Zap):
    """A new user's trial: `top --all` showed top's own session's board. With
    every session shown, the pane shows the board of each session that has
    tasks (this one has none here)."""
    other = {"ZAPCLI_SESSION": "another-team"}
    assert zap("board", "add", "their task", env=other).returncode == 0
    theirs = zap("spawn", "--cli", "sh", "--", "sleep 30", env=other).out.strip()

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.row(theirs) is not None)
        await top.press("b")
        pane = top.screen.query_one("#board-text")
        await top.until(lambda: "their task" in str(pane.content), 10, "their board")
        assert "board of another-team" in str(pane.content)

    run_top(scenario, all_sessions=True)
    zap("kill", theirs)
