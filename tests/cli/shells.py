"""Real zsh and fish, asked what they complete.

zsh completes only inside its line editor, so `Zsh` runs an interactive zsh
on a pty, types each command line and a TAB, and reads what zsh's own
completion system offered: the start-up file (the user's, then this hook)
wraps `compadd`, the builtin every completion function ends in, to append
each match to a file. After the TAB it types Ctrl-U and a command that
writes a marker, which the line editor runs only once the completion is
done. fish answers `complete -C LINE` without a terminal.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import shutil
import struct
import subprocess
import termios
import time
from pathlib import Path

import pytest

needs_zsh = pytest.mark.skipif(shutil.which("zsh") is None,
                               reason="needs zsh (make shells installs Debian's zsh)")
needs_fish = pytest.mark.skipif(shutil.which("fish") is None,
                                reason="needs fish (make shells installs Debian's fish)")

HOOK = """
LISTMAX=100000
compadd () {
  if [[ ${@[1,(i)(-|--)]} == *-(O|A|D)\\ * ]]; then builtin compadd "$@"; return $?; fi
  typeset -a __hits
  builtin compadd -A __hits "$@"
  local h; for h in $__hits; do print -r -- "$h" >> "$ZAPCLI_TEST_CAPTURE"; done
  builtin compadd "$@"
}
PROMPT='READY> '
"""
ZLE_READY = b"\x1b[?2004h"


class Zsh:
    """One interactive zsh: `setup` runs first (the user's .zshrc is read
    too when `user_rc`), then the capture hook."""

    def __init__(self, env: dict[str, str], cwd: Path, folder: Path, setup: str = "",
                 user_rc: bool = False):
        folder.mkdir(parents=True, exist_ok=True)
        self.capture = folder / "capture.txt"
        rc = (f'source "{env["HOME"]}/.zshrc"\n' if user_rc else "") + setup + HOOK
        (folder / ".zshrc").write_text(rc, encoding="utf-8")
        env = dict(env, ZDOTDIR=str(folder), TERM="xterm", ZAPCLI_TEST_CAPTURE=str(self.capture))
        self.master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 200, 400, 0, 0))
        self.proc = subprocess.Popen(["zsh", "-i"], stdin=slave, stdout=slave, stderr=slave, env=env,
                                     cwd=cwd, start_new_session=True)
        os.close(slave)
        self.seen = b""
        self.count = 0
        self._read_until(lambda: ZLE_READY in self.seen, 30)

    def _read_until(self, done, timeout: float) -> None:
        end = time.monotonic() + timeout
        while not done():
            if time.monotonic() > end:
                raise AssertionError(f"zsh did not answer; it showed:\n{self.seen[-3000:]!r}")
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    raise AssertionError(f"zsh ended:\n{self.seen[-3000:]!r}") from None

    def complete(self, line: str, timeout: float = 30) -> list[str]:
        """What zsh offers for `line` (the last word being typed), in order."""
        # the line editor must be reading again (bracketed paste switched on,
        # once per prompt): typed earlier, the terminal's own line discipline
        # would take the Ctrl-U
        self._read_until(lambda: self.seen.count(ZLE_READY) > self.count, timeout)
        self.count += 1
        marker = f"@@done-{self.count}@@"
        start = self.capture.stat().st_size if self.capture.exists() else 0
        os.write(self.master, line.encode() + b"\t\x15" + f"print -r -- {marker} >> $ZAPCLI_TEST_CAPTURE\r".encode())

        def finished() -> bool:
            return self.capture.exists() and marker in self.capture.read_text(errors="replace")[start:]

        self._read_until(finished, timeout)
        text = self.capture.read_bytes()[start:].decode(errors="replace")
        return [w for w in text.split("\n")[:-2] if w]  # up to the marker line

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)
        os.close(self.master)

    def __enter__(self) -> Zsh:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def fish_complete(script: Path, lines: list[str], env: dict[str, str], cwd: Path,
                  described: bool = False) -> list[list[str]]:
    """What fish offers for each of `lines` (candidates without their
    descriptions; `described`: each as fish shows it, "candidate<TAB>description")."""
    import shlex

    body = [f"source {shlex.quote(str(script))}"]
    for i, line in enumerate(lines):
        body += [f"complete -C {shlex.quote(line)}", f"echo @@done-{i}@@"]
    res = subprocess.run(["fish", "--no-config", "-c", "\n".join(body)], capture_output=True,
                         text=True, env=env, cwd=cwd, timeout=60)
    assert res.returncode == 0 and not res.stderr, res.stderr
    out: list[list[str]] = [[]]
    for row in res.stdout.splitlines():
        if row.startswith("@@done-"):
            out.append([])
        else:
            out[-1].append(row if described else row.split("\t")[0])
    return out[:-1]
