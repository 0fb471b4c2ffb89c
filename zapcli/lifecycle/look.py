"""The pure look: what a subagent is now, from its files, writing nothing.

Imports `zapcli.lifecycle.status`, `zapcli.trail`, `zapcli.executors` (a
local runner's liveness, read from /proc). `look_at` reads a trail (or takes
a summary already read), asks a LOCAL runner whether it lives, stats its
output files, and returns a `Look`: the `View` every command reports, with
what an acting observer would record applied but not recorded (a dead
runner shows `lost`, an overdue one `timeout`), plus what is left to do —
the `Finding` to record, the event hooks due, an on-finish nobody started,
a remote runner's files to bring home. It never writes, never signals,
never starts a hook, and never asks a remote executor (asking Ray may
resubmit or replace a job): a remote subagent is seen as far as its files
have come home. `Looker` keeps the summaries of many subagents between
refreshes and re-reads a trail only when it changed (told by a
`zapcli.lifecycle.feed.Feed`, or by its size and time).

Who acts (`zapcli.lifecycle.observe`): looking is not acting, but someone
must record a death and run the hooks. The rule:
- the runner fires the hooks of what it writes itself (started,
  needs_input, rate_limited, usage_limited, finished): they run with nobody
  looking;
- every command that answers about a subagent at one moment acts through
  `observe`: poll, wait, list, list --watch, kill, send, approve, output,
  the queue — each records `lost` / `timeout`, fires the hooks due (stalled
  included, which only an outsider sees), settles the ledger, collects a
  remote runner's files; list --watch and wait act only when a look says
  something is due (`Look.acts`), so watching a thousand costs no writes;
- views that only show (`zapcli top`'s refresh, the board's refusal of an
  ended holder, a dashboard) use `look` / `Looker` and write nothing; what
  they show as lost is recorded by the next acting command.
"""

from __future__ import annotations

import os
import time

from zapcli.lifecycle.status import Facts, Finding, View, derive
from zapcli.plain import plain
from zapcli.trail import store
from zapcli.trail.model import HELPER_STATES, Status
from zapcli.trail.reader import Summary, load

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Iterable

    from zapcli.errors import NotFound
    from zapcli.trail.events import Occurrence
    from zapcli.trail.model import SpawnRecord


@plain
class Look:
    """One subagent as its files show it now. `view`: as commands report it,
    the `finding` applied (not recorded: `view.reason` says what an observer
    will record). `activity`: epoch of its last sign of life (a record, or
    its output growing); None when it has not started."""

    view: View
    summary: Summary
    finding: Finding | None = None  # what an acting observer records (lost, interrupted, timeout)
    due: tuple[Occurrence, ...] = ()  # event hooks that occurred and nobody claimed
    stale: tuple[tuple[Occurrence, str], ...] = ()  # claims whose claimer died unstarted: (it, token)
    orphaned_finish: bool = False  # ended, and its on-finish command has not started
    remote: bool = False  # runs elsewhere and not all of its files are home yet
    activity: float | None = None

    @property
    def id(self) -> str:
        return self.view.id

    @property
    def executor(self) -> str:
        """Where its runner runs: `local`, `ray`, ..."""
        return self.summary.spawn.executor

    @property
    def acts(self) -> bool:
        """Whether an acting observer has anything to do for it now."""
        return bool(self.finding is not None or self.due or self.stale or self.orphaned_finish
                    or self.remote)


def look(sid: str, *, stall_s: float = 0.0) -> View:
    """The status an observer would find now — a dead runner's `lost`, an
    overdue one's `timeout` — recording nothing and stopping nothing.
    Raises NotFound (Damaged for a trail without its spawn record)."""
    return look_at(sid, stall_s=stall_s).view


def look_at(sid: str, *, stall_s: float = 0.0, summary: Summary | None = None) -> Look:
    """The whole look at `sid` (`summary`: its trail, read already). Raises NotFound."""
    s = load(sid) if summary is None else summary
    remote = s.spawn.executor != "local"
    now = time.monotonic()
    activity = activity_of(sid, s) if s.final is None and s.runner is not None else None
    age = time.time() - activity if activity is not None else None
    alive, boot, why = _alive(s, remote)
    facts = Facts(alive, now, boot, age, why)
    view, finding = derive(sid, s, facts, stall_s=stall_s)
    if finding is not None:
        view.status, view.reason, view.stalled_s = finding.status, finding.reason, None
    stalled = activity if view.stalled_s is not None and view.status == Status.RUNNING else None
    due = tuple(_due(s, stalled)) if s.spawn.hooks else ()
    stale = tuple(_stale(s)) if s.events else ()
    orphaned = bool(s.final is not None and s.spawn.on_finish and not s.finish.keys() & HELPER_STATES)
    collect = remote and s.process is not None and s.collected is None
    return Look(view, s, finding, due, stale, orphaned, collect, activity)


def _alive(s: Summary, remote: bool) -> tuple[bool | None, float, str | None]:
    """(alive, boot time, why) of a started, unended LOCAL runner; a remote
    one cannot be asked without acting: (None, 0, None)."""
    proc = s.runner
    if s.final is not None or proc is None or remote:
        return None, 0.0, None
    from zapcli import executors

    live = executors.get(s.spawn.executor).alive(proc.raw)
    boot = 0.0
    if live.alive is False:
        from zapcli.supervisor.liveness import boot_time

        boot = boot_time()
    return live.alive, boot, live.reason


def activity_of(sid: str, s: Summary) -> float | None:
    """Its last sign of life (epoch): its last record's time (an event hook's
    claim is not one), or its output files growing since."""
    newest = 0.0
    if s.last_ts is not None:
        from zapcli.trail.records import parse_iso

        try:
            newest = parse_iso(s.last_ts)
        except ValueError:
            newest = 0.0
    base = str(store.path_for(sid))[:-6]  # one path for its three files: pathlib costs
    for suffix in (".out", ".err") if newest else (".jsonl", ".out", ".err"):
        try:
            newest = max(newest, os.stat(base + suffix, follow_symlinks=False).st_mtime)
        except OSError:
            continue
    return newest or None


def _due(s: Summary, stalled: float | None) -> list[Occurrence]:
    from zapcli.trail import events  # only for a subagent with hooks

    return events.due(s, stalled_since=stalled)


def _stale(s: Summary) -> list[tuple[Occurrence, str]]:
    """Hook claims whose claimer died before starting its helper."""
    from zapcli.supervisor.liveness import is_alive
    from zapcli.trail import events

    return [(occ, str(rec["token"])) for occ, rec in events.unstarted(s)
            if not is_alive(rec.get("pid"), rec.get("create_time"))]


def _signature(sid: str) -> tuple[int, int, int] | None:
    try:
        st = os.stat(store.path_for(sid), follow_symlinks=False)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


class Looker:
    """Looks at many subagents again and again, re-reading a trail only when
    it changed: `changed` (from a feed) names the ids whose files changed —
    of those, only a trail whose inode, size or time moved is read again;
    without it every trail is checked by its size and time. A look whose
    subagent ended and has nothing left to do is kept whole. `reads` counts
    the trails read."""

    def __init__(self, *, stall_s: float = 0.0):
        self.stall_s = stall_s
        self.reads = 0
        self._seen: dict[str, tuple[tuple[int, int, int] | None, Summary, Look | None]] = {}

    def look(self, sid: str, *, changed: bool = True) -> Look:
        """The look at `sid` now (`changed` False: a feed said its files did
        not change). Raises NotFound (Damaged) as `look_at`."""
        had = self._seen.get(sid)
        sig = had[0] if had is not None and not changed else _signature(sid)
        if had is None or had[0] != sig or sig is None:
            self._seen.pop(sid, None)
            s = load(sid)
            self.reads += 1
            had = (sig, s, None)
        elif had[2] is not None:
            return had[2]  # ended and settled: nothing about it can change without its trail
        seen = look_at(sid, stall_s=self.stall_s, summary=had[1])
        keep = seen if seen.view.terminal and not seen.acts else None
        self._seen[sid] = (had[0], had[1], keep)
        return seen

    def look_all(self, ids: Iterable[str], changed: Iterable[str] | None = None
                 ) -> dict[str, Look | NotFound]:
        """The look at each id, in order; a gone or damaged one maps to its
        NotFound (Damaged) error, said as every command says it."""
        from zapcli.errors import NotFound

        fresh = None if changed is None else set(changed)
        out: dict[str, Look | NotFound] = {}
        for sid in ids:
            try:
                out[sid] = self.look(sid, changed=fresh is None or sid in fresh)
            except NotFound as exc:
                self.forget(sid)
                out[sid] = exc
        return out

    def spawn(self, sid: str) -> SpawnRecord | None:
        """The spawn record of `sid` as last read, if it was."""
        had = self._seen.get(sid)
        return had[1].spawn if had is not None else None

    def forget(self, sid: str) -> None:
        """Drop what is kept of `sid` (removed, or no longer shown)."""
        self._seen.pop(sid, None)

    def known(self) -> set[str]:
        return set(self._seen)
