"""The run's own approval question in a real terminal: the set-up the
attacks on what an approval shows share (`test_adv3_approval_screen`,
`test_adv4_approval_width`, `test_approvals_whole`)."""

from __future__ import annotations

import fcntl
import struct
import sys
import termios
from collections.abc import Iterator
from contextlib import contextmanager

from tests.cli.test_run_approvals_pty import Terminal
from tests.conftest import Zap
from zapcli.testing import ScriptedServer


@contextmanager
def bash_question(zap: Zap, marker: str, command: str, key: str,
                  size: tuple[int, int] | None = None) -> Iterator[Terminal]:
    """`zapcli run RUN-<marker>` in a pty (`size`: its rows and columns),
    its scripted model (API key `key`) asking to run `command` in bash, then
    done. Yields the terminal, the model's server still up."""
    script = [{"match": f"RUN-{marker}", "turns": [
        {"tool_calls": [{"name": "bash", "arguments": {"command": command}}]},
        {"text": "parent done"}]}]
    with ScriptedServer(script) as srv:
        env = dict(zap.env, OPENAI_BASE_URL=srv.base_url, ZAPCLI_MODEL="scripted",
                   OPENAI_API_KEY=key, TERM="dumb")
        term = Terminal([sys.executable, "-m", "zapcli", "run", f"RUN-{marker}"], env, str(zap.cwd))
        if size is not None:
            fcntl.ioctl(term.master, termios.TIOCSWINSZ, struct.pack("HHHH", *size, 0, 0))
        yield term


def yes_to(zap: Zap, marker: str, command: str, key: str, size: tuple[int, int]) -> bytes:
    """The person answers `y` to `bash_question`'s question (the run then
    ends): what the terminal got up to the question."""
    with bash_question(zap, marker, command, key, size) as term:
        raw = term.expect(b"[y/n]")
        term.send(b"y\r")  # the person allows what the screen shows them
        term.finish()
    return raw
