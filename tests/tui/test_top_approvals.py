"""Approving and denying in `zapcli top`, with real scripted-model subagents.

A subagent's model asks to run a long bash command; `top` opens with that
row selected and the request on screen WHOLE (never cut), without a key
pressed. `a` approves it in place and the subagent goes on (the command
ran, its model got the result); `d` denies it with a reason that reaches
the model (the scripted server's next request carries it).
"""

from __future__ import annotations

import json

import pytest

from tests.conftest import Zap, final_status, trail_records, wait_until
from tests.tui.conftest import Top, run_top

PAD = " ".join(f"tests/unit/test_module_{i:02d}.py" for i in range(8))  # ~230 characters


def _asking(marker: str, command: str) -> list[dict]:
    return [{"match": marker, "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": f"{marker} finished"}]}]


def _pending(zap: Zap, sid: str) -> bool:
    return any(r.get("type") == "approval_request" for r in trail_records(zap.trail(sid)))


@pytest.mark.timeout(180)
def test_a_pending_request_is_on_screen_whole_at_once_and_a_approves_it_in_place(zap: Zap, model):
    marker = "TOP-APPROVE"
    command = f"echo approved-ran {PAD} --maxfail=1 && echo tail-of-the-command"
    srv = model(_asking(marker, command))
    other = zap.spawn_sh("sleep 60")
    sid = zap("spawn", "--", f"{marker}: run the tests").out.strip()
    wait_until(lambda: _pending(zap, sid), 60)

    async def scenario(top: Top) -> None:
        # on opening: the row that needs input is selected, its request shown whole
        await top.until(lambda: top.screen.table.selected == sid, 10, "the needs-input row selected")
        await top.until(lambda: top.ask_text(), 10, "the request on screen")
        shown = top.ask_text()
        assert "".join(command.split()) in "".join(shown.split()), shown
        assert "…" not in shown
        lines = top.table_text().splitlines()
        assert lines[1].strip().startswith("NEEDS INPUT (1)"), lines
        assert sid[-8:] in lines[2] and "awaiting approval" in lines[2]
        await top.press("a")
        await top.until(lambda: top.status(sid) in ("running", "completed"), 30, "it goes on")
        await top.until(lambda: top.status(sid) == "completed", 60, "it completes")

    run_top(scenario)
    assert final_status(zap.trail(sid)) == "completed"
    decision = next(r for r in trail_records(zap.trail(sid)) if r.get("type") == "approval_decision")
    assert decision["decision"] == "approve" and decision["by"] == "user"
    # the command ran and its output reached the model's next request
    assert "tail-of-the-command" in json.dumps(srv.requests[-1])
    zap("kill", other)


@pytest.mark.timeout(180)
def test_d_denies_with_a_reason_that_reaches_the_model(zap: Zap, model):
    marker = "TOP-DENY"
    srv = model(_asking(marker, "rm -rf build && make release"))
    sid = zap("spawn", "--", f"{marker}: release it").out.strip()
    wait_until(lambda: _pending(zap, sid), 60)
    reason = "not on a Friday: open a pull request instead"

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.ask_text(), 10, "the request on screen")
        await top.press("d")
        await top.until(lambda: top.app.screen.__class__.__name__ == "Reason", 5, "the reason box")
        await top.type(reason)
        await top.press("enter")
        await top.until(lambda: top.status(sid) == "completed", 60, "it completes")

    run_top(scenario)
    decision = next(r for r in trail_records(zap.trail(sid)) if r.get("type") == "approval_decision")
    assert decision["decision"] == "deny" and decision["reason"] == reason
    assert len(srv.requests) >= 2
    assert reason in json.dumps(srv.requests[1]), srv.requests[1]


@pytest.mark.timeout(240)
def test_a_click_approves_and_marked_requests_are_approved_together_each_shown_whole(
        zap: Zap, model):
    commands = {m: f"echo {m}-ran {PAD} --end-{m}" for m in ("ONE", "TWO", "THREE")}
    model([rule for m, c in commands.items() for rule in _asking(f"TOP-{m}", c)])
    ids = {}
    for m in commands:
        ids[m] = zap("spawn", "--", f"TOP-{m}: go").out.strip()
        wait_until(lambda m=m: _pending(zap, ids[m]), 60)  # in this order: ONE is the oldest

    async def scenario(top: Top) -> None:
        await top.until(lambda: all(top.status(s) == "awaiting_approval" for s in ids.values()), 20)
        await top.until(lambda: top.screen.table.selected == ids["ONE"] and top.ask_text(), 10)
        await top.click("#approve")  # the mouse, on the button in the peek
        await top.until(lambda: top.status(ids["ONE"]) in ("running", "completed"), 30)
        for m in ("TWO", "THREE"):
            assert top.screen.table.select(ids[m])
            await top.press("space")
        await top.press("a")
        await top.until(lambda: type(top.app.screen).__name__ == "Confirm", 5, "the question")
        body = " ".join(str(w.content) for w in top.app.screen.query("Static"))
        flat = "".join(body.split())
        for m in ("TWO", "THREE"):
            assert "".join(commands[m].split()) in flat, body
        assert "ONE-ran" not in body
        await top.click("#yes")
        await top.until(lambda: all(top.status(s) == "completed" for s in ids.values()), 90,
                        "all three go on and complete")

    run_top(scenario)
    for sid in ids.values():
        assert final_status(zap.trail(sid)) == "completed"


@pytest.mark.timeout(240)
def test_the_request_on_screen_is_never_swapped_for_another_and_n_goes_to_the_next(
        zap: Zap, model):
    """An older subagent asking later sorts first; it must not take the
    selection from the request the person is reading — nor, after `a`, slip
    under a second `a`: `n` goes to it."""
    srv = model([{"match": "TOP-LATE", "turns": [  # its first answer: once the early one is read
               {"tool_calls": [{"name": "read", "arguments": {"path": "README.md"}}],
                "hold": "late asks"},
               {"tool_calls": [{"name": "bash", "arguments": {"command": "echo late-asker"}}]},
               {"text": "late done"}]},
           *_asking("TOP-EARLY", "echo early-asker")])
    (zap.cwd / "README.md").write_text("notes\n")
    late = zap("spawn", "--", "TOP-LATE: go").out.strip()  # created first, asks last
    early = zap("spawn", "--", "TOP-EARLY: go").out.strip()
    wait_until(lambda: _pending(zap, early), 60)

    async def scenario(top: Top) -> None:
        await top.until(lambda: top.screen.table.selected == early and "early-asker" in
                        top.ask_text(), 10, "the early request selected")
        srv.release("late asks")
        await top.until(lambda: top.status(late) == "awaiting_approval", 60, "the late one asks")
        lines = [line.sid for line in top.screen.table.lines if line.sid]
        assert lines.index(late) < lines.index(early)  # it sorts first...
        assert top.screen.table.selected == early and "early-asker" in top.ask_text()  # ...unseen
        await top.press("a")
        await top.until(lambda: top.status(early) in ("running", "completed"), 30)
        await top.pilot.pause(1.5)
        assert top.screen.table.selected == early  # not moved to the other request
        await top.press("a")  # a second press: nothing to approve here
        assert top.status(late) == "awaiting_approval"
        await top.press("n")
        await top.until(lambda: top.screen.table.selected == late and "late-asker" in
                        top.ask_text(), 10, "n goes to the next request")
        await top.press("a")
        await top.until(lambda: top.status(late) == "completed", 60)

    run_top(scenario)
    decisions = [r for r in trail_records(zap.trail(late)) if r.get("type") == "approval_decision"]
    assert len(decisions) == 1
