"""`zapcli top` as a person meets it before any key: it needs Textual (one
line saying how to install it, exit 2) and a terminal; a terminal too small
says so; NO_COLOR draws without colour; the keys are in the footer; a
click selects a row and the buttons approve; and looking writes nothing —
a runner that died shows as lost, recorded by the next acting command, not
by `top`."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import sysconfig

import pytest

from tests.conftest import REPO, Zap, record_of, sleep_marker, trail_records, wait_until
from tests.tui.conftest import Top, run_top

WITHOUT_TEXTUAL = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
sys.modules["textual"] = None  # as if the tui extra were not installed
from zapcli.cli.entry import main
raise SystemExit(main(["top"]))
"""


def test_without_textual_top_says_how_to_install_it_and_exits_2(zap: Zap):
    site = sysconfig.get_paths()["purelib"]
    res = subprocess.run([sys.executable, "-S", "-c", WITHOUT_TEXTUAL, str(REPO), site],
                         env=zap.env, cwd=zap.cwd, capture_output=True, text=True, timeout=60)
    assert res.returncode == 2, res.stderr
    assert res.stderr.count("\n") == 1 and "pip install 'zapcli[tui]'" in res.stderr, res.stderr
    assert res.stdout == ""


def test_without_a_terminal_top_is_a_usage_error(zap: Zap):
    res = zap("top")
    assert res.returncode == 2
    assert "terminal" in res.err and "zapcli list" in res.err and "Traceback" not in res.err


def test_a_terminal_too_small_says_so(zap: Zap):
    async def scenario(top: Top) -> None:
        note = top.screen.query_one("#too-small")
        assert note.display and top.screen.has_class("small")
        assert "too small" in str(note.content) and "50×10" in str(note.content)
        assert not top.screen.query_one("#main").display

    run_top(scenario, size=(50, 10))


def test_no_color_and_the_footer_lists_the_keys(zap: Zap, monkeypatch):
    monkeypatch.setenv("NO_COLOR", "1")

    async def scenario(top: Top) -> None:
        assert top.app.no_color
        keys = {b.key for b in top.screen.BINDINGS if getattr(b, "show", True)}
        assert {"a", "d", "x", "r", "space", "enter", "slash", "t", "b", "s", "q"} <= keys
        footer = top.screen.query_one("Footer")
        shown = " ".join(str(k.render()) for k in footer.query("FooterKey"))
        for word in ("Approve", "Deny", "Kill", "Rm", "Mark", "Filter", "Tree", "Board", "All", "Next",
                     "Attach", "Quit"):  # every one at 160 columns
            assert word in shown, shown

    run_top(scenario)


@pytest.mark.timeout(120)
def test_a_click_selects_a_row(zap: Zap):
    a = zap.spawn_sh(f"sleep {sleep_marker(3311)}")
    b = zap.spawn_sh(f"sleep {sleep_marker(3311)}")

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.status(a) == top.status(b) == "running")
        table = top.screen.table
        target = next(i for i, line in enumerate(table.lines) if line.sid != table.selected
                      and line.sid is not None)
        await top.pilot.click("#table", offset=(5, target + 1))
        await top.until(lambda: table.selected == table.lines[target].sid, 5, "the clicked row")
        assert top.screen.peek.sid == table.lines[target].sid

    run_top(scenario)
    zap("kill", a, b)


@pytest.mark.timeout(120)
def test_looking_writes_nothing_a_dead_runner_shows_lost_until_an_acting_command_records_it(
        zap: Zap):
    sid = zap.spawn_sh(f"sleep {sleep_marker(3312)}")
    done = zap.spawn_sh("echo ok")
    zap.wait_status(done)
    pid = int(wait_until(lambda: record_of(zap, sid, "process"), 10)["pid"])  # type: ignore[index]
    wait_until(lambda: record_of(zap, sid, "start"), 10)
    os.killpg(pid, signal.SIGKILL)  # the runner dies without a word
    folder = zap.home
    before = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.status(sid) == "lost", 20, "shown lost")
        assert "lost" in top.table_text()
        await top.pilot.pause(2.5)  # a few ticks of the feed thread

    run_top(scenario)
    after = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    assert after == before, sorted(str(p) for p in set(after) ^ set(before)) or "a file changed"
    assert not any(r.get("type") == "status" for r in trail_records(zap.trail(sid)))
    assert zap.status(sid) == "lost"  # poll acts: now it is recorded
    assert any(r.get("type") == "status" for r in trail_records(zap.trail(sid)))


def test_last_says_output_while_a_command_writes_it(zap: Zap):
    """A new user's finding: a `sh` subagent printing a line every second
    kept `LAST: started 14s` — no record said its output."""
    sid = zap.spawn_sh("sleep 1; while :; do echo tick; sleep 0.5; done")
    try:
        async def scenario(top: Top) -> None:
            await top.until(lambda: (r := top.row(sid)) is not None and r.last == "output", 30,
                            "LAST says output")

        run_top(scenario)
    finally:
        zap("kill", sid)


def test_every_key_of_the_footer_fits_an_80_column_terminal(zap: Zap):
    """A new user's trial at 80x24: the footer was cut at `b Boar`, so `s`,
    `n` and `q Quit` were out of sight. Every key shown lies on the screen."""

    async def scenario(top: Top) -> None:
        await top.pilot.pause()
        footer = top.screen.query_one("Footer")
        keys = list(footer.query("FooterKey"))
        width = top.app.size.width
        cut = [str(k.render()) for k in keys if k.region.right > width or k.region.width == 0]
        assert not cut, f"cut or out of sight at {width} columns: {cut}"
        words = " ".join(str(k.render()) for k in keys)
        for word in ("Approve", "Deny", "Kill", "Attach", "Filter", "Tree", "Board", "All", "Next",
                     "Quit"):
            assert word in words, words
        assert "Rm" not in words and "Mark" not in words, words  # these two give way at 80

    run_top(scenario, size=(80, 24))


@pytest.mark.parametrize("width", [60, 66, 72])
def test_q_quit_stays_in_sight_down_to_the_narrowest_terminal_top_draws(zap: Zap, width: int):
    """New user, round 5: at 62 columns (top draws down to 60) the footer
    was cut after `s All`: `n Next` and `q Quit` were out of sight. Keys give
    way, the least needed first; approve, deny, kill and quit stay."""

    async def scenario(top: Top) -> None:
        await top.pilot.pause()
        keys = list(top.screen.query_one("Footer").query("FooterKey"))
        cut = [str(k.render()) for k in keys if k.region.right > width or k.region.width == 0]
        assert not cut, f"cut or out of sight at {width} columns: {cut}"
        words = " ".join(str(k.render()) for k in keys)
        for word in ("Approve", "Deny", "Kill", "Quit"):
            assert word in words, words

    run_top(scenario, size=(width, 24))


def test_at_80_columns_a_tall_fleet_shows_its_columns_whole_and_every_session_says_whose(zap: Zap):
    """A new user's trial: `top --all` at 80 columns cut ELAPSED (a fleet
    taller than the screen has a scrollbar, which took two of the columns
    the lines were laid out for), and nothing said which session a row is of."""
    ids = [zap.spawn_sh(f"echo {n}") for n in range(24)]
    other = zap("spawn", "--cli", "sh", "--", "echo other", env={"ZAPCLI_SESSION": "other-s"}).out.strip()
    zap("wait", *ids)
    zap("wait", other, env={"ZAPCLI_SESSION": "other-s"})

    def drawn(top: Top) -> list[str]:
        table = top.screen.table
        seen = table.scrollable_content_region.width  # what a line has on screen
        return [table.render_line(y).text[:seen].rstrip() for y in range(table.size.height)]

    async def every_session(top: Top) -> None:
        await top.until(lambda: len(top.screen.rows) == 25, 30, "all 25 rows")
        await top.pilot.pause()
        assert top.screen.table.scrollable_content_region.width < 80  # the scrollbar is there
        lines = drawn(top)
        assert lines[0].split()[-2:] == ["SESSION", "ELAPSED"], lines[0]
        assert any("other-s" in line for line in lines), lines
        mine = zap("session").out.strip().rsplit("-", 1)[0]
        assert any(mine in line for line in lines), (mine, lines)

    async def this_session(top: Top) -> None:
        await top.until(lambda: len(top.screen.rows) == 24, 30, "24 rows")
        await top.pilot.pause()
        assert drawn(top)[0].split()[-2:] == ["BACKEND", "ELAPSED"], drawn(top)[0]

    run_top(every_session, size=(80, 24), all_sessions=True)
    run_top(this_session, size=(80, 24))
