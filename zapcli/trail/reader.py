"""The tolerant trail reader and the per-trail summary status is derived from.

Imports `zapcli.trail.model`, `zapcli.trail.store`, `zapcli.trail.jsonl`. Reads on demand only. A
torn last line (a crash mid-write) is skipped and reported; a corrupt line in
the middle is kept as a `corrupt` entry and reading goes on. The FIRST terminal
`status` record is final (SPEC §4), so a killer and a dying child cannot
disagree.
"""

from __future__ import annotations

from pathlib import Path

from zapcli.plain import field, plain
from zapcli.trail import jsonl, store
from zapcli.trail.model import SpawnRecord, is_terminal

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any


@plain
class Trail:
    """Parsed trail. `entries` holds dicts, or ("corrupt", line_no, text) tuples."""

    entries: list[Any] = field(default_factory=list)
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
            trail.entries.append(("corrupt", no, line[:200].decode("utf-8", "replace")))
    return trail


def first_terminal(path: Path) -> dict[str, Any] | None:
    """The first terminal `status` record of the trail (the final one), if any."""
    for rec in read(path).records:
        if rec.get("type") == "status" and is_terminal(rec.get("status")):
            return rec
    return None


def read(path: Path) -> Trail:
    """Read and parse a trail — an oversized one as its head and tail, the
    middle said as one corrupt entry. Raises FileNotFoundError / OSError
    (symlink: ELOOP)."""
    data, skipped = store.read_bounded(path)
    trail = parse(data)
    if skipped:
        trail.skipped = skipped
        trail.entries.insert(1, ("corrupt", 0, f"{skipped:,} bytes in the middle not read: the "
                                 f"trail is over {store.READ_MAX_BYTES >> 20} MB (damaged, or a "
                                 "runaway subagent); zapcli gc trims a finished one"))
    return trail


@plain
class Summary:
    """What poll/list/wait need from one trail, gathered in one pass."""

    spawn: SpawnRecord
    process: dict[str, Any] | None = None  # the latest `process` record
    start: dict[str, Any] | None = None
    final: dict[str, Any] | None = None  # the first terminal `status` record
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
    finish_claimed: bool = False  # its on-finish command was claimed (run once)
    finish: dict[str, dict[str, Any]] = field(default_factory=dict)  # on_finish state -> its record
    worktree: dict[str, Any] | None = None  # the runner's `worktree` record: the tree is made
    collected: dict[str, Any] | None = None  # a remote runner's files are all home (SPEC §15)
    last_ts: str | None = None  # the last record's time before the end: its last sign of life


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
        if s.final is None and isinstance(rec.get("ts"), str) and not (
                rtype == "status" and is_terminal(rec.get("status"))):
            s.last_ts = rec["ts"]
        if rtype == "process":
            s.process = rec
        elif rtype == "start":
            s.start = rec
        elif rtype == "helper":
            s.helpers.append(rec)
        elif rtype == "status":
            if s.final is None and is_terminal(rec.get("status")):
                s.final = rec
        elif rtype == "report":
            s.report = rec.get("text")
        elif rtype == "usage":
            s.input_tokens += _int(rec.get("input_tokens"))
            s.output_tokens += _int(rec.get("output_tokens"))
            s.cached_tokens += _int(rec.get("cached_tokens"))
            s.cache_write_tokens += _int(rec.get("cache_write_tokens"))
            s.calls += 1
            s.rate_limit = None
            cost = rec.get("cost_usd")
            if isinstance(cost, (int, float)) and not isinstance(cost, bool):
                s.cost_usd = (s.cost_usd or 0.0) + float(cost)
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
        elif rtype == "on_finish":
            s.finish_claimed = True
            s.finish[str(rec.get("state"))] = rec
        elif rtype == "worktree":
            s.worktree = rec
        elif rtype == "rate_limit":
            s.rate_limit = rec
        elif rtype in ("text", "thinking", "tool_call") and s.rate_limit is not None:
            s.rate_limit = None  # the model answers again
        elif rtype == "held":
            s.held = rec
        elif rtype == "collected":
            s.collected = rec
        elif rtype == "approval_request":
            pending[str(rec.get("req_id"))] = rec
        elif rtype == "approval_decision":
            pending.pop(str(rec.get("req_id")), None)
    if pending and s.final is None:
        s.pending_approval = next(iter(pending.values()))
    return s


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
