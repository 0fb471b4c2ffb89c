"""The tolerant trail reader and the per-trail summary status is derived from.

Imports `zapcli.trail.model`, `zapcli.trail.store`, `zapcli.trail.jsonl`,
`zapcli.errors`. Reads on demand only. A torn last line (a crash mid-write)
is skipped and reported; a corrupt line in the middle is kept as a `Corrupt`
entry and reading goes on. The FIRST terminal `status` record is final
(docs/explanation/rules.md#the-trail), so a killer and a dying child cannot disagree. `load` is every
command's way from an id to its summary.
"""

from __future__ import annotations

import os
from pathlib import Path

from zapcli.errors import Damaged, NotFound
from zapcli.plain import field, plain
from zapcli.trail import jsonl, removals, store
from zapcli.trail.model import (
    Corrupt,
    FinalStatus,
    ProcessRecord,
    RunnerRecord,
    SpawnRecord,
    StartRecord,
    is_terminal,
)

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


@plain
class Trail:
    """Parsed trail. `entries` holds the records (dicts) and `Corrupt` lines, in order."""

    entries: list[dict[str, Any] | Corrupt] = field(default_factory=list)
    torn_tail: bytes = b""
    size: int = 0
    skipped: int = 0  # bytes in the middle of an oversized trail not read (store.read_bounded)

    @property
    def records(self) -> list[dict[str, Any]]:
        return [e for e in self.entries if isinstance(e, dict)]


def parse(data: bytes) -> Trail:
    """Split JSONL bytes into records; never raises for bad content."""
    trail = Trail(size=len(data))
    loads = jsonl.loader(len(data))
    lines = data.split(b"\n")
    last = lines.pop()  # b"" when the data ends in a newline
    if last.strip(b"\x00 \t\r"):
        trail.torn_tail = last
    for no, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = loads(line)
        except ValueError:
            rec = None
        if isinstance(rec, dict) and isinstance(rec.get("type"), str):
            trail.entries.append(rec)
        else:
            trail.entries.append(Corrupt(no, line[:200].decode("utf-8", "replace")))
    return trail


def first_terminal(path: Path) -> FinalStatus | None:
    """The first terminal `status` record of the trail (the final one), if any."""
    for rec in read(path).records:
        final = FinalStatus.from_record(rec)
        if final is not None:
            return final
    return None


def first_line_end(fd: int, size: int) -> int:
    """The offset just past the first newline of the file open on `fd`
    (`size` bytes); 0 when it has none yet."""
    at = 0
    while at < size:
        chunk = os.pread(fd, 1 << 16, at)
        if not chunk:
            break
        newline = chunk.find(b"\n")
        if newline >= 0:
            return at + newline + 1
        at += len(chunk)
    return 0


def spawn_of(path: Path) -> SpawnRecord | None:
    """The `spawn` record alone, for who needs only what the subagent is: the
    trail's first line is read, nothing after it. None when that line is no
    whole `spawn` record. Raises OSError as `store.open_read`."""
    fd = store.open_read(path)
    try:
        end = first_line_end(fd, os.fstat(fd).st_size)
        line = os.pread(fd, end, 0) if end else b""
    finally:
        os.close(fd)
    recs = parse(line).records
    return SpawnRecord.from_record(recs[0]) if recs and recs[0].get("type") == "spawn" else None


def read(path: Path) -> Trail:
    """Read and parse a trail — an oversized one as its head and tail, the
    middle said as one corrupt entry. Raises FileNotFoundError / OSError
    (symlink: ELOOP)."""
    data, skipped = store.read_bounded(path)
    trail = parse(data)
    if skipped:
        trail.skipped = skipped
        trail.entries.insert(1, Corrupt(0, f"{skipped:,} bytes in the middle not read: the trail "
                                        f"is over {store.READ_MAX_BYTES >> 20} MB (damaged, or a "
                                        "runaway subagent); zapcli gc trims a finished one"))
    return trail


@plain
class Summary:
    """What poll/list/wait need from one trail, gathered in one pass."""

    spawn: SpawnRecord
    process: ProcessRecord | None = None  # the latest `process` record
    start: StartRecord | None = None  # the latest `start` record
    final: FinalStatus | None = None  # the first terminal `status` record
    report: str | None = None
    pending_approval: dict[str, Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    last_seq: int = 0
    torn: bool = False
    corrupt: int = 0
    messages_sent: int = 0  # `steer` records from `zapcli send`
    messages_delivered: int = 0  # `steer` records the subagent wrote on delivery
    cost_usd: float | None = None  # summed where the backend reports a cost (or a price is known)
    cache_write_tokens: int = 0  # input tokens written to the provider's cache (of input_tokens)
    calls: int = 0  # model calls (`usage` records)
    rate_limit: dict[str, Any] | None = None  # a `rate_limit` record no model call has followed yet
    held: dict[str, Any] | None = None  # the queue's latest `held` record (why it waits)
    cli_session: dict[str, Any] | None = None  # an agent CLI's own session id, version (`session`)
    helpers: list[dict[str, Any]] = field(default_factory=list)  # `helper` records (C17)
    continued_by: str | None = None  # `zapcli continue` made this subagent's successor
    resumed_from: str | None = None  # a continuation that has read its predecessors (`resumed`)
    finish_claimed: bool = False  # its on-finish command was claimed (run once)
    finish: dict[str, dict[str, Any]] = field(default_factory=dict)  # on_finish state -> its record
    worktree: dict[str, Any] | None = None  # the runner's `worktree` record: the tree is made
    collected: dict[str, Any] | None = None  # a remote runner's files are all home (docs/explanation/rules.md#remote-execution)
    merged: dict[str, Any] | None = None  # the last `merged` record: `zapcli merge` took its work
    tree_removed: dict[str, Any] | None = None  # the last `worktree_removed` record: its tree went
    last_ts: str | None = None  # the last record's time before the end: its last sign of life
    # event hooks (`zapcli.trail.events`): "event key" -> {state: its latest record}
    events: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)
    rate_limit_seq: int = 0  # the seq of the first `rate_limit` record of the episode `rate_limit` is in
    usage_limit: dict[str, Any] | None = None  # a `usage_limit` record no model call has followed yet
    requeued: int = 0  # `requeued` records: its runner put it back in the queue (C43)

    @property
    def runner(self) -> RunnerRecord | None:
        """Where its runner runs: the `process` record, or the runner's own
        `start` when its launcher died before writing that."""
        return self.process or self.start

    @property
    def queued(self) -> bool:
        """Not started and not ended: still waiting for a slot (or its `--after` ones)."""
        return self.final is None and self.process is None and self.start is None


def summarize(trail: Trail) -> Summary | None:
    """None when the trail has no `spawn` record as its first record."""
    recs = trail.records
    if not recs or recs[0].get("type") != "spawn":
        return None
    s = Summary(spawn=SpawnRecord.from_record(recs[0]), torn=bool(trail.torn_tail))
    s.corrupt = len(trail.entries) - len(recs)
    pending: dict[str, dict[str, Any]] = {}
    for rec in recs[1:]:
        rtype = rec.get("type")
        seq = rec.get("seq")
        if isinstance(seq, int) and seq > s.last_seq:
            s.last_seq = seq
        if s.final is None and isinstance(rec.get("ts"), str) and rtype != "event" and not (
                rtype == "status" and is_terminal(rec.get("status"))):
            s.last_ts = rec["ts"]  # an event hook's bookkeeping is nobody's sign of life
        if rtype == "process":
            s.process = ProcessRecord.from_record(rec)
        elif rtype == "start":
            s.start = StartRecord.from_record(rec)
        elif rtype == "requeued" and s.final is None:  # back in the queue: no runner now
            s.process = s.start = None
            s.requeued += 1
        elif rtype == "helper":
            s.helpers.append(rec)
        elif rtype == "status":
            if s.final is None:
                s.final = FinalStatus.from_record(rec)
        elif rtype == "report":
            s.report = rec.get("text")
        elif rtype == "usage":
            _add_usage(s, rec)
            s.rate_limit = s.usage_limit = None
        elif rtype == "trimmed" and isinstance(rec.get("usage"), dict):
            _add_usage(s, rec["usage"], _int(rec["usage"].get("calls")))  # those a trim dropped, summed
        elif rtype == "session":
            s.cli_session = {**(s.cli_session or {}),
                             **{k: v for k, v in rec.items() if k not in ("v", "seq", "ts", "type")
                                and v is not None}}
        elif rtype == "steer":
            if rec.get("delivered"):
                s.messages_delivered += 1
            else:
                s.messages_sent += 1
        elif rtype == "continued":
            s.continued_by = rec.get("by") if isinstance(rec.get("by"), str) else None
        elif rtype == "resumed":
            s.resumed_from = rec.get("from") if isinstance(rec.get("from"), str) else None
        elif rtype == "on_finish":
            s.finish_claimed = True
            s.finish[str(rec.get("state"))] = rec
        elif rtype == "worktree":
            s.worktree = rec
        elif rtype == "rate_limit":
            if s.rate_limit is None:
                s.rate_limit_seq = seq if isinstance(seq, int) else 0
            s.rate_limit = rec
        elif rtype == "usage_limit":
            s.usage_limit = rec
        elif rtype == "event":
            s.events.setdefault(f"{rec.get('event')} {rec.get('key')}", {})[str(rec.get("state"))] = rec
        elif rtype in ("text", "thinking", "tool_call") and s.rate_limit is not None:
            s.rate_limit = None  # the model answers again
        elif rtype == "held":
            s.held = rec
        elif rtype == "collected":
            s.collected = rec
        elif rtype == "merged":
            s.merged = rec
        elif rtype == "worktree_removed":
            s.tree_removed = rec
        elif rtype == "approval_request":
            pending[str(rec.get("req_id"))] = rec
        elif rtype == "approval_decision":
            pending.pop(str(rec.get("req_id")), None)
    if pending and s.final is None:
        s.pending_approval = next(iter(pending.values()))
    return s


def _add_usage(s: Summary, rec: dict[str, Any], calls: int = 1) -> None:
    """A `usage` record (one model call), or a trim's sum of those it dropped."""
    s.input_tokens += _int(rec.get("input_tokens"))
    s.output_tokens += _int(rec.get("output_tokens"))
    s.cached_tokens += _int(rec.get("cached_tokens"))
    s.cache_write_tokens += _int(rec.get("cache_write_tokens"))
    s.calls += calls
    cost = rec.get("cost_usd")
    if isinstance(cost, (int, float)) and not isinstance(cost, bool) and cost >= 0:
        s.cost_usd = (s.cost_usd or 0.0) + float(cost)


def _int(value: Any) -> int:
    """A count from a record: a whole number, never below 0 (a damaged trail's
    negative count would subtract from totals and budgets)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def load(sid: str) -> Summary:
    """Read and summarise the trail of `sid`. Raises NotFound for a bad or
    unknown id, Damaged (a NotFound) for a trail without its spawn record."""
    path = store.path_for(sid)
    try:
        trail = read(path)
    except (FileNotFoundError, NotADirectoryError):
        raise NotFound(removals.missing(sid)) from None  # a removed one says when
    except OSError:  # a symlink or FIFO planted in place of a trail is not a trail
        raise NotFound(f"{sid} does not exist (what is in place of its trail is not a "
                       "regular file)") from None
    summary = summarize(trail)
    if summary is None:
        raise Damaged(f"{sid} is damaged: {damage(trail)}; zapcli rm {sid} removes its files "
                      f"(zapcli kill {sid} stops it if it still runs)")
    return summary


def damage(trail: Trail) -> str:
    """Why `trail` is not a subagent's (it has no spawn record as its first)."""
    recs = trail.records
    if not trail.size:
        return "its trail is empty (no spawn record)"
    if not recs:
        return "its trail has no readable record (no spawn record)"
    return f"its trail has no spawn record (its first record is a `{recs[0].get('type')}` one)"


def final_text(sid: str, report: str | None) -> str | None:
    """A subagent's final answer: its `report` record (`report`), or (for a
    shell command) its captured stdout; None when neither can be read."""
    if report is not None:
        return report
    try:
        return store.read_bytes(store.path_for(sid, ".out")).decode("utf-8", "replace")
    except OSError:
        return None
