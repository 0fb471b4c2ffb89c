"""Result types a verb (`zapcli.ops`) returns and a renderer (`zapcli.render`)
shows, below both so a renderer never imports a verb's module.

Imports only `zapcli.plain`. Folded captured output (poll, wait, a tool's
answer) and one subagent's answer to `kill`.
"""

from __future__ import annotations

from zapcli.plain import plain

CAP_BYTES = 1024 * 1024  # what capture keeps of each stream (SPEC §5)


@plain
class Folded:
    """`head` and `tail` are text; `folded_bytes` the bytes between them (0 =
    nothing folded, `tail` empty). `written` is what the subagent wrote in all."""

    head: str
    tail: str
    folded_bytes: int
    kept: int
    written: int
    missing: bool = False  # the file is gone (deleted by hand) though bytes were written
    unreadable: str = ""  # why the file in its place cannot be read (e.g. "not a regular file")

    @property
    def truncated(self) -> bool:
        return self.written > self.kept and not self.missing


STOPPED = ("cancelled", "killed")  # outcomes that stopped something ("killed": not recorded)
FAILED = ("does not exist", "killed", "not cancelled")  # outcomes that make `kill` exit 1


@plain
class KillEntry:
    id: str
    outcome: str  # cancelled | killed (not recorded) | not cancelled | already <status> | does not exist
    pid: int | None = None
    signals: str | None = None  # e.g. "SIGTERM" or "SIGTERM, SIGKILL"
    error: str | None = None
    session: str | None = None  # whose queue the freed slot belongs to

    @property
    def stopped(self) -> bool:
        """This kill stopped it (recorded as cancelled, or only signalled)."""
        return self.outcome in STOPPED

    @property
    def failed(self) -> bool:
        """It makes `kill` exit 1: not there, or not recorded as cancelled."""
        return self.outcome in FAILED
