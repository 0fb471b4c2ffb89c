"""What the Python API returns: frozen dataclasses over the records that
`--json` prints.

Imports `zapcli.trail.model` (Status) and the standard library. Each result
is made from its command's JSON document (`zapcli.render`): `document` is
that document whole, exactly as `zapcli <command> --json` prints it (with
its `"schema": "zapcli/<name>@1"`), and the typed fields are read from it,
so the API and the CLI cannot say different things. A field the document
gains later appears in `document` first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zapcli.results import STOPPED
from zapcli.trail.model import Status


def _status(value: Any) -> Status:
    return Status.parse(value) or Status.LOST


@dataclass(frozen=True)
class Output:
    """Captured stdout folded to its head and tail, as `poll` shows it."""

    head: str
    tail: str
    folded_bytes: int  # bytes left out between head and tail (0: nothing folded)
    kept_bytes: int
    written_bytes: int
    truncated: bool  # more was written than the 1 MB kept
    missing: bool  # the file was removed since

    @property
    def text(self) -> str:
        """Head and tail joined (the whole output when nothing was folded)."""
        return self.head + self.tail

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> Output:
        return cls(str(rec.get("head") or ""), str(rec.get("tail") or ""),
                   int(rec.get("folded_bytes") or 0), int(rec.get("kept_bytes") or 0),
                   int(rec.get("written_bytes") or 0), bool(rec.get("truncated")),
                   bool(rec.get("missing")))


@dataclass(frozen=True)
class Subagent:
    """One subagent as `poll`, `wait` and `list` report it. `record` is its
    entry of the command's JSON document, whole."""

    id: str
    status: Status
    cli: str
    agent: str | None
    task: str  # folded to 2 KB (`task_bytes` in `record` is its size)
    session: str
    created: str
    reason: str | None
    exit_code: int | None
    elapsed_s: float | None
    report: str | None  # the final report (the built-in agent, agent CLIs)
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    pending_approval: dict[str, Any] | None  # {req_id, tool, summary, ...} while it waits
    worktree: dict[str, Any] | None
    output: Output | None  # poll only: its stdout so far, folded
    stderr_tail: str | None  # poll only: the end of stderr of one that did not complete
    structured: Any  # poll and wait: the parsed report of a spawn with an output schema
    record: dict[str, Any] = field(repr=False, compare=False)

    @property
    def terminal(self) -> bool:
        """It has ended (completed or otherwise)."""
        return self.status.terminal

    @property
    def completed(self) -> bool:
        return self.status == Status.COMPLETED

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> Subagent:
        out = rec.get("output")
        return cls(
            id=rec["id"], status=_status(rec.get("status")), cli=str(rec.get("cli") or ""),
            agent=rec.get("agent"), task=str(rec.get("task") or ""),
            session=str(rec.get("session") or ""), created=str(rec.get("created") or ""),
            reason=rec.get("reason"), exit_code=rec.get("exit_code"),
            elapsed_s=rec.get("elapsed_s"), report=rec.get("report"),
            input_tokens=int(rec.get("input_tokens") or 0),
            output_tokens=int(rec.get("output_tokens") or 0), cost_usd=rec.get("cost_usd"),
            pending_approval=rec.get("pending_approval"), worktree=rec.get("worktree"),
            output=Output.from_record(out) if isinstance(out, dict) else None,
            stderr_tail=rec.get("stderr_tail"), structured=rec.get("structured"), record=rec)


@dataclass(frozen=True)
class Spawned:
    """A subagent just started (or queued)."""

    id: str
    status: Status
    cli: str
    agent: str | None
    task: str
    created: str
    warnings: tuple[str, ...]
    document: dict[str, Any] = field(repr=False, compare=False)

    @classmethod
    def from_record(cls, rec: dict[str, Any], document: dict[str, Any]) -> Spawned:
        return cls(rec["id"], _status(rec.get("status")), str(rec.get("cli") or ""),
                   rec.get("agent"), str(rec.get("task") or ""), str(rec.get("created") or ""),
                   tuple(rec.get("warnings") or ()), document)


@dataclass(frozen=True)
class PollResult:
    """`poll`: each subagent asked for, with its output so far."""

    subagents: tuple[Subagent, ...]
    waited_s: float
    document: dict[str, Any] = field(repr=False, compare=False)

    @property
    def all_ended(self) -> bool:
        return all(s.terminal for s in self.subagents)


@dataclass(frozen=True)
class WaitResult:
    """`wait`: the awaited subagents once they ended, or when the wait timed
    out (`timed_out`). `exit_code` is the CLI's: 0 every one completed, 3 one
    ended otherwise, 4 the wait timed out."""

    subagents: tuple[Subagent, ...]
    timed_out: bool
    waited_s: float
    exit_code: int
    document: dict[str, Any] = field(repr=False, compare=False)

    @property
    def all_completed(self) -> bool:
        return not self.timed_out and all(s.completed for s in self.subagents)


@dataclass(frozen=True)
class Listing:
    """`list`: this session's subagents (or every session's), newest first."""

    subagents: tuple[Subagent, ...]
    session: str
    more: int  # how many `limit` left out
    document: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Killed:
    """What became of one subagent asked to stop. `outcome`: cancelled,
    killed (not recorded), not cancelled, already <status>, does not exist."""

    id: str
    outcome: str
    pid: int | None
    signals: str | None
    error: str | None

    @property
    def stopped(self) -> bool:
        """This call stopped it."""
        return self.outcome in STOPPED


@dataclass(frozen=True)
class KillResult:
    subagents: tuple[Killed, ...]
    document: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class CapturedOutput:
    """`output`: one subagent's whole captured stdout (or stderr), as text
    (invalid UTF-8 replaced) and as the bytes it wrote."""

    id: str
    stream: str  # stdout | stderr
    text: str
    data: bytes
    written_bytes: int
    truncated: bool  # it wrote more than the 1 MB kept
    document: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Sent:
    """`send`: a message queued for a running subagent's model."""

    id: str
    steer_id: str
    status: str
    document: dict[str, Any] = field(repr=False, compare=False)


@dataclass(frozen=True)
class Decision:
    """`approve` / `deny`: the request decided."""

    id: str
    req_id: str
    decision: str  # approve | deny
    tool: str | None
    summary: str | None
    document: dict[str, Any] = field(repr=False, compare=False)
