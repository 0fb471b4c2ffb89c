"""`zapcli top` in a real terminal: tmux runs it, `send-keys` types, and
`capture-pane` reads the screen — a real scripted-model subagent's pending
request is on screen whole and `a` approves it; the subagent completes.
NO_COLOR is honoured: the captured screen's colours are greys only.

Skipped, saying why, without tmux (`make test` installs Debian's tmux).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import uuid

import pytest

from tests.conftest import Zap, final_status, trail_records, wait_until

pytest.importorskip("textual", reason="the tui extra is not installed (make install does it)")
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None,
                                reason="tmux is not installed (make test installs it)")

COMMAND = ("echo checked-in-tmux; " + " ".join(f"--option-{i:02d}=value" for i in range(12))
           + " ; echo end-of-the-command")


GREYS = {0, 7, 8, 15, 16, 231, *range(232, 256)}  # the 256-colour palette's greys


def hues(ansi: str) -> list[str]:
    """The colours with a hue among the SGR sequences of a captured screen."""
    found = []
    for params in re.findall(r"\x1b\[([0-9;]*)m", ansi):
        p = [int(x) for x in params.split(";") if x]
        i = 0
        while i < len(p):
            if p[i] in (38, 48) and i + 1 < len(p) and p[i + 1] == 5:
                if p[i + 2] not in GREYS:
                    found.append(params)
                i += 3
            elif p[i] in (38, 48) and i + 1 < len(p) and p[i + 1] == 2:
                if len(set(p[i + 2:i + 5])) > 1:
                    found.append(params)
                i += 5
            else:
                if 31 <= p[i] <= 36 or 41 <= p[i] <= 46 or 91 <= p[i] <= 96 or 101 <= p[i] <= 106:
                    found.append(params)
                i += 1
    return found


class Tmux:
    """A tmux server of its own (its own socket), started with the test's
    environment, running one command in a window of a fixed size."""

    def __init__(self, env: dict[str, str], cwd: str, argv: list[str], size: tuple[int, int]):
        self.socket = f"zapcli-top-{uuid.uuid4().hex[:8]}"
        self.env, self.cwd = env, cwd
        command = " ".join(f"'{a}'" for a in argv)
        self.run("new-session", "-d", "-s", "top", "-x", str(size[0]), "-y", str(size[1]),
                 f"{command}; echo TOP-EXITED-$?; sleep 30")

    def run(self, *args: str) -> str:
        res = subprocess.run(["tmux", "-L", self.socket, *args], env=self.env, cwd=self.cwd,
                             capture_output=True, text=True, timeout=30)
        assert res.returncode == 0, res.stderr
        return res.stdout

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-t", "top")

    def showing(self, *words: str, absent: str | None = None) -> str | None:
        """The screen once it shows every one of `words` (and not `absent`)."""
        screen = self.screen()
        ok = all(w in screen for w in words) and (absent is None or absent not in screen)
        return screen if ok else None

    def keys(self, *keys: str) -> None:
        self.run("send-keys", "-t", "top", *keys)

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.mark.timeout(240)
def test_top_in_tmux_approves_a_real_pending_request(zap: Zap, model):
    marker = "TOP-TMUX"
    srv = model([{"match": marker, "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": COMMAND}}]},
        {"text": f"{marker} finished"}]}])
    sid = zap("spawn", "--", f"{marker}: check it").out.strip()
    wait_until(lambda: any(r.get("type") == "approval_request"
                           for r in trail_records(zap.trail(sid))), 60)
    env = {**zap.env, "TERM": "xterm-256color"}
    term = Tmux(env, str(zap.cwd), [sys.executable, "-m", "zapcli", "top"], (150, 45))
    try:
        screen = wait_until(lambda: term.showing("awaiting approval", "end-of-the-command"), 60)
        flat = "".join(str(screen).replace("│", "").split())  # the box's sides out
        assert "NEEDSINPUT(1)" in flat, screen
        assert "".join(COMMAND.split()) in flat, screen  # the whole request, wrapped, not cut
        assert sid in str(screen) and "Approve" in str(screen) and "Deny" in str(screen)
        # NO_COLOR (set for every test): drawn in greys, no colour with a hue
        assert not hues(term.run("capture-pane", "-e", "-p", "-t", "top"))
        term.keys("a")
        wait_until(lambda: final_status(zap.trail(sid)) == "completed", 60)
        # the table and the detail pane are refreshed apart: the pane may say "completed"
        # a refresh before the table moves the row (full run 19 caught that moment)
        after = wait_until(lambda: term.showing("completed", "ENDED (1)", absent="awaiting approval"),
                           30)
        assert "RUNNING (" not in str(after), after
        term.keys("q")
        wait_until(lambda: "TOP-EXITED-0" in term.screen(), 20)
    finally:
        term.close()
    assert "checked-in-tmux" in str(srv.requests[-1])
