"""Result types a verb (`zapcli.ops`) returns and a renderer (`zapcli.render`)
shows, below both so a renderer never imports a verb's module.

Imports only `zapcli.plain`. Folded captured output (poll, wait, a tool's
answer) and one subagent's answer to `kill`.
"""

from __future__ import annotations

from zapcli.plain import plain

CAP_BYTES = 1024 * 1024  # what capture keeps of each stream, at most
# Past the cap, capture keeps the first and the last part of a stream with one
# marker line between (`zapcli.supervisor.capture`): its head ends, and its tail
# starts, at a line boundary when one is within LINE_SLACK bytes of the cut
# (a longer line is cut on a character).
PART_BYTES = 512 * 1024
LINE_SLACK = 64 * 1024
MARKER_PREFIX = b"[zapcli: "
MARKER_ROOM = 160  # the marker line's bytes, at most
KEPT_WORDS = "the first and last 512 KB kept"


def left_out_line(dropped: int) -> bytes:
    """The one line between a capped stream's head and tail."""
    return MARKER_PREFIX + (f"{dropped:,} bytes of output left out here; {KEPT_WORDS}]\n"
                            ).encode()


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
    ends_kept: bool = False  # capped: its first and last part kept, a marker line between

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
