"""Status derivation (docs/explanation/rules.md#status) as a pure function, and the `View` every
command reports.

Imports `zapcli.trail` only. `derive(summary, facts)` reads nothing and
changes nothing: given a trail's summary and the facts an observer gathered
(is the process alive, now, boot time, how long since the files grew), it
returns the view and what the observer must do, if anything (`Finding`).
`zapcli.lifecycle.observe` gathers the facts and acts.
"""

from __future__ import annotations

from zapcli.plain import frozen, plain
from zapcli.redact import display
from zapcli.trail import reader, records
from zapcli.trail.model import Status, is_terminal

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

OBSERVER_DEADLINE_SLACK_S = 10.0
LOST_REASON = "its process died without recording a result"
INTERRUPTED_REASON = "the machine restarted while it ran"
OVERDUE_REASON = "deadline passed; killed by an observer"


@plain
class View:
    """One subagent as commands report it. Times are epoch seconds / seconds."""

    id: str
    status: Status
    session: str
    cli: str
    agent: str | None
    task: str
    created: str
    reason: str | None = None
    exit_code: int | None = None
    elapsed_s: float | None = None
    stalled_s: float | None = None
    pid: int | None = None
    report: str | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float | None = None  # reported by the backend, or from the model's price
    cache_write_tokens: int = 0  # of input_tokens: written to the provider's cache
    calls: int = 0  # model calls counted
    # parked on a provider's rate limit: {until (epoch), status, provider, message}
    rate_limit: dict[str, Any] | None = None
    # queued and held back: {reason, until (epoch), kind ("usage_limit", "throttle", or a
    # provider's rate limit), provider, zone}
    held: dict[str, Any] | None = None
    # ended on its account's usage limit (C42): {cli, account, resets_at (epoch; None: not
    # said), zone, message (the CLI's words)}
    usage_limit: dict[str, Any] | None = None
    parent: str | None = None  # the run or subagent whose work spawned it (its tree)
    pending_approval: dict[str, Any] | None = None
    undelivered_messages: int = 0  # sent with `zapcli send`, but it ended before reading them
    pending: tuple[str, ...] = ()  # its own subagents still running when it ended (C27)
    stdout_written: int | None = None
    stderr_written: int | None = None
    after: tuple[str, ...] = ()
    ended: str | None = None
    # docs/explanation/rules.md#parallel-coding: the tree receipt (path, branch, base, ...; `ready`: made, or
    # `error`: git's message), and the links `zapcli continue` made.
    worktree: dict[str, Any] | None = None
    continue_of: str | None = None
    continued_by: str | None = None
    # handed to its executor, which has not started it yet (status queued): the
    # executor's words for the wait, e.g. `ray: placement pending 45s`
    queued_out_there: str | None = None

    @property
    def terminal(self) -> bool:
        return is_terminal(self.status)


@frozen
class Facts:
    """What an observer knows besides the trail. `alive`: the runner is alive
    (True), dead (False) or cannot be told now (None: not started, or its
    executor is unreachable); `why` is the executor's word on a death."""

    alive: bool | None
    now_mono: float
    boot_time: float = 0.0
    activity_age: float | None = None  # seconds since trail or output last grew
    why: str | None = None


@frozen
class Finding:
    """What the observer must record (and, for `overdue`, kill)."""

    status: Status
    reason: str
    overdue: bool = False  # alive past its deadline: kill the tree too


def _elapsed(s: reader.Summary, now_mono: float) -> float | None:
    proc = s.runner
    if proc is None:
        return None
    start_mono = proc.mono
    if s.final is not None:
        end_mono = s.final.mono
        # interrupted: recorded after a reboot, on another boot's monotonic clock; it
        # ran until its last record before the machine went down
        if s.final.status == Status.INTERRUPTED:
            end_mono, end_ts = None, s.last_ts
        else:
            end_ts = s.final.ts
        if start_mono is not None and end_mono is not None and end_mono >= start_mono:
            return end_mono - start_mono
        if end_ts is None or proc.ts is None:
            return None
        try:
            return max(records.parse_iso(end_ts) - records.parse_iso(proc.ts), 0.0)
        except ValueError:
            return None
    if start_mono is not None and now_mono >= start_mono:
        return now_mono - start_mono
    return None


def to_view(sid: str, s: reader.Summary, facts: Facts, *, stall_s: float = 0.0) -> View:
    """The view of a trail summary as it stands (no finding applied)."""
    sp = s.spawn
    view = View(
        id=sid, status=Status.QUEUED, session=sp.session, cli=sp.cli, agent=sp.agent,
        task=display(sp.task), created=sp.created, report=s.report,
        input_tokens=s.input_tokens, output_tokens=s.output_tokens,
        cached_tokens=s.cached_tokens, cost_usd=s.cost_usd, after=sp.after,
        cache_write_tokens=s.cache_write_tokens, calls=s.calls,
        parent=sp.raw.get("parent") if isinstance(sp.raw.get("parent"), str) else None,
        continue_of=sp.continue_of,
        continued_by=s.continued_by, worktree=_receipt(s),
    )
    if s.runner is not None:
        view.pid = s.runner.pid
        view.status = Status.RUNNING
    if s.final is not None:
        f = s.final
        view.status = f.status
        view.reason = f.reason
        view.exit_code = f.exit_code
        view.stdout_written = f.stdout_bytes
        view.stderr_written = f.stderr_bytes
        view.ended = f.ts
        view.undelivered_messages = max(s.messages_sent - s.messages_delivered, 0)
        view.pending = tuple(str(p) for p in f.raw.get("pending") or ())
        if isinstance(f.raw.get("usage_limit"), dict):
            view.usage_limit = f.raw["usage_limit"]
    elif s.pending_approval is not None:
        view.status = Status.AWAITING_APPROVAL
        view.pending_approval = {k: v for k, v in s.pending_approval.items()
                                 if k not in ("v", "seq", "type")}  # the request, not the record
    if view.status == Status.RUNNING and s.rate_limit is not None:
        view.rate_limit = _fields(s.rate_limit, ("until", "status", "provider", "message"))
    elif view.status == Status.QUEUED and s.held is not None:
        view.held = _fields(s.held, ("reason", "until", "provider", "kind", "zone"))
    view.elapsed_s = _elapsed(s, facts.now_mono)
    if view.status.live and stall_s > 0:
        if facts.activity_age is not None and facts.activity_age >= stall_s:
            view.stalled_s = facts.activity_age
    return view


def _fields(rec: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: rec.get(k) for k in keys}


def _receipt(s: reader.Summary) -> dict[str, Any] | None:
    tree = s.spawn.worktree
    if tree is None:
        return None
    out = dict(tree)
    made = s.worktree
    out["ready"] = bool(made and made.get("ok"))
    if made and not made.get("ok"):
        out["error"] = made.get("error")
    out["merged"] = s.merged.get("how") if s.merged else None  # how `zapcli merge` took it
    out["removed"] = s.tree_removed is not None  # `worktree rm` or `gc` removed it
    return out


def _spawned_epoch(s: reader.Summary) -> float:
    try:
        return records.parse_iso(s.spawn.created) if s.spawn.created else 0.0
    except ValueError:  # a damaged timestamp: it cannot have been before a reboot
        return float("inf")


def derive(sid: str, s: reader.Summary, facts: Facts, *,
           stall_s: float = 0.0) -> tuple[View, Finding | None]:
    """(the view, what the observer must record) for one trail and its facts.

    A terminal status recorded in the trail is final; a runner alive past its
    deadline by more than 10 s is overdue (timeout); a dead one without a
    result is lost, or interrupted when the machine booted after its spawn.
    """
    view = to_view(sid, s, facts, stall_s=stall_s)
    proc = s.runner  # `start` is the runner's own word if the spawner died early
    if s.final is not None or proc is None or facts.alive is None:
        return view, None
    if facts.alive:
        deadline = proc.deadline_mono
        if deadline is not None and facts.now_mono > deadline + OBSERVER_DEADLINE_SLACK_S:
            return view, Finding(Status.TIMEOUT, OVERDUE_REASON, overdue=True)
        return view, None
    if facts.boot_time > _spawned_epoch(s):
        return view, Finding(Status.INTERRUPTED, INTERRUPTED_REASON)
    return view, Finding(Status.LOST, facts.why or LOST_REASON)


def apply(view: View, finding: Finding, *, recorded: bool) -> View:
    """The view once `finding` holds; `recorded` False says it could not be
    written (a full or read-only state folder), so the caller still sees it."""
    view.status, view.reason, view.stalled_s = finding.status, finding.reason, None
    if not recorded:
        view.reason += NOT_RECORDED
    return view


NOT_RECORDED = " (not recorded: the state folder is full or read-only)"
