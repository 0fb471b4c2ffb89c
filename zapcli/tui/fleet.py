"""What `top` shows, as data: one row per subagent, its group (needs input
first, then running, queued, ended), the words of each column, the `/`
filter, and the order of the lines in the table and in the tree.

Imports `zapcli.lifecycle.status` (the View), `zapcli.render.common` (the
words every verb uses for durations and statuses), `zapcli.trail.model`.
No Textual and no files: everything here is a pure function of rows, so the
table's order and the filter are tested without a terminal.
"""

from __future__ import annotations

import time
from typing import Any

from zapcli.lifecycle.status import View
from zapcli.money import dollars
from zapcli.plain import plain
from zapcli.render.common import duration, task_line
from zapcli.render.text import escape_controls
from zapcli.trail.model import Status

NEEDS, RUNNING, QUEUED, ENDED = 0, 1, 2, 3
GROUP_NAMES = {NEEDS: "needs input", RUNNING: "running", QUEUED: "queued", ENDED: "ended"}
# what makes a row need the person, in the order they are shown
NEED_ORDER = ("approval", "stalled", "rate-limited", "usage-limited")
USAGE_LIMIT_WORDS = ("usage limit", "usage-limit", "session limit", "weekly limit")


@plain
class Row:
    """One subagent as `top` knows it: its view (the lifecycle's look), where
    its runner runs, and what it did last (a record's kind and when)."""

    view: View
    executor: str = "local"
    last: str = ""  # "bash", "text", "asks bash", "model call", "completed", ...
    last_epoch: float | None = None  # when that record was written (epoch seconds)
    created_epoch: float = 0.0
    need: str | None = None  # why it needs the person (NEED_ORDER), set from the view
    group: int = ENDED  # NEEDS, RUNNING, QUEUED or ENDED, set from the view

    def __post_init__(self) -> None:
        self.need = _need(self.view)
        self.group = _group(self.view, self.need)

    @property
    def id(self) -> str:
        return self.view.id


def _usage_limited(v: View) -> bool:
    """Parked or ended on an account's usage limit (an agent CLI's session or
    weekly limit): queued until its reset, or ended saying so and not continued."""
    if v.continued_by:
        return False
    if getattr(v, "usage_limit", None):  # an ended one's record of its limit
        return True
    held = (v.held or {}) if v.status == Status.QUEUED else {}
    if held.get("kind") == "usage_limit":
        return True
    words = str(held.get("reason") or (v.reason if v.status == Status.FAILED else "") or "").lower()
    return any(w in words for w in USAGE_LIMIT_WORDS)


def resets_at(v: View) -> float | None:
    """When a usage limit resets (epoch), where it was said."""
    limit = getattr(v, "usage_limit", None) or {}
    when = limit.get("resets_at") if isinstance(limit, dict) else None
    if when is None and v.held and v.held.get("kind") == "usage_limit":
        when = v.held.get("until")
    return when if isinstance(when, (int, float)) and not isinstance(when, bool) else None


def need(row: Row) -> str | None:
    """Why the row needs the person (one of NEED_ORDER), or None."""
    return row.need


def group(row: Row) -> int:
    return row.group


def place(row: Row) -> tuple[int, str | None, str]:
    """What decides where a row stands in the table: its group, its need, its status."""
    return row.group, row.need, str(row.view.status)


def _need(v: View) -> str | None:
    if v.status == Status.AWAITING_APPROVAL:
        return "approval"
    if v.status.live and v.stalled_s is not None:
        return "stalled"
    if v.status == Status.RUNNING and v.rate_limit:
        return "rate-limited"
    if _usage_limited(v):
        return "usage-limited"
    return None


def _group(v: View, kind: str | None) -> int:
    if kind is not None:
        return NEEDS
    status = v.status
    if status.live:
        return RUNNING
    if status == Status.QUEUED:
        return QUEUED
    return ENDED


def state_text(row: Row) -> str:
    """The STATE column: `awaiting approval`, `stalled 2m05s`, `rate-limited`,
    `running`, `queued`, `failed exit 2`, `completed 1 unread` (a message
    sent to it that it ended before reading), ..."""
    v = row.view
    kind = need(row)
    if kind == "approval":
        return "awaiting approval"
    if kind == "stalled":
        return f"stalled {duration(v.stalled_s)}"
    if kind == "usage-limited" and resets_at(v) is not None:
        return f"usage-limited, resets {time.strftime('%H:%M', time.localtime(resets_at(v)))}"
    if kind is not None:
        return kind
    text = str(v.status)
    if v.terminal and v.exit_code not in (None, 0):
        text += f" exit {v.exit_code}"
    if v.terminal and v.undelivered_messages:  # sent to it, never read: the peek says more
        text += f" {v.undelivered_messages} unread"
    return text


def tokens_text(v: View) -> str:
    total = v.input_tokens + v.output_tokens
    if not total:
        return "-"
    if total < 10_000:
        return str(total)
    if total < 1_000_000:
        return f"{total / 1000:.1f}k"
    return f"{total / 1_000_000:.1f}M"


def cost_text(v: View) -> str:
    if v.cost_usd is None:
        return "-"
    return dollars(v.cost_usd)


def ago(epoch: float | None, now: float | None = None) -> str:
    if epoch is None:
        return ""
    return duration(max((now or time.time()) - epoch, 0.0))


def last_text(row: Row, now: float | None = None) -> str:
    """LAST: what it did last and how long ago (`bash 3.2s`)."""
    if not row.last:
        return "-"
    when = ago(row.last_epoch, now)
    last = escape_controls(row.last)  # a tool's name as the model sent it
    return f"{last} {when}" if when else last


def backend_text(v: View) -> str:
    return v.cli + (f"/{v.agent}" if v.agent else "")


def worktree_text(v: View, full: bool = False) -> str:
    """WORKTREE: what became of its tree (its branch is the id's: the ID
    column names it) — `making`, `ready`, `merged`, `removed`, `error`; `-`
    without one. `full`: how it was merged too (`merged (squash), removed`)."""
    tree = v.worktree
    if not tree:
        return "-"
    if tree.get("error"):
        return "error"
    how = tree.get("merged")
    said = [(f"merged ({how})" if full else "merged") if how else "",
            "removed" if tree.get("removed") else ""]
    said = [w for w in said if w]
    if not said:
        return "ready" if tree.get("ready") else "making"
    return ", ".join(said) if full else said[-1]


def session_text(v: View) -> str:
    """SESSION (with every session's shown), short enough for its column: a
    run's by its id's tail (`run e54b5e48`), a terminal's by its process
    session (`tty-27338`), any other name as it is."""
    s = v.session or "-"
    if s.startswith("run_") and len(s) > 12:
        return "run " + s[-8:]
    if s.startswith("tty-") and s.count("-") == 2:
        return s.rsplit("-", 1)[0]
    return s


def elapsed_text(v: View) -> str:
    return duration(v.elapsed_s) if v.elapsed_s is not None else "-"


def task_text(v: View, limit: int | None = None) -> str:
    return task_line(v.task, limit)


# --- the `/` filter -------------------------------------------------------

FIELDS = {"s": "state", "state": "state", "status": "state", "a": "agent", "agent": "agent",
          "c": "cli", "cli": "cli", "e": "executor", "executor": "executor", "id": "id",
          "t": "task", "task": "task"}


@plain
class Term:
    field: str  # state, agent, cli, executor, id, task, or "" for free text
    value: str
    negated: bool = False


@plain
class Filter:
    """`s:running a:explorer c:claude free words`: every term must hold (a
    leading `!` negates one). Free text matches the task or the id."""

    text: str = ""
    terms: tuple[Term, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Filter:
        terms = []
        for word in text.split():
            negated = word.startswith("!") and len(word) > 1
            if negated:
                word = word[1:]
            name, sep, value = word.partition(":")
            if sep and name.lower() in FIELDS and value:
                terms.append(Term(FIELDS[name.lower()], value.lower(), negated))
            else:
                terms.append(Term("", word.lower(), negated))
        return cls(text, tuple(terms))

    def matches(self, row: Row) -> bool:
        return all(_holds(t, row) != t.negated for t in self.terms)

    def describe(self) -> str:
        return self.text.strip()


def _state_words(row: Row) -> list[str]:
    v = row.view
    words = [str(v.status), GROUP_NAMES[group(row)].replace(" ", "-"), "needs"
             if group(row) == NEEDS else "", "live" if v.status.live else "",
             "ended" if v.terminal else ""]
    kind = need(row)
    if kind:
        words += [kind, "awaiting" if kind == "approval" else ""]
    return [w for w in words if w]


def _holds(term: Term, row: Row) -> bool:
    v = row.view
    value = term.value
    if term.field == "state":
        return any(w.startswith(value) for w in _state_words(row))
    if term.field == "agent":
        return value in (v.agent or "").lower()
    if term.field == "cli":
        return value in v.cli.lower()
    if term.field == "executor":
        return row.executor.lower().startswith(value)
    if term.field == "id":
        return value in v.id.lower()
    if term.field == "task":
        return value in v.task.lower()
    return value in v.task.lower() or value in v.id.lower()


# --- the order of the lines ----------------------------------------------

@plain
class Line:
    """One line of the table: a group's header (`sid` None) or a row,
    indented by `depth` under its parent in the tree."""

    sid: str | None
    label: str = ""  # a header's words
    depth: int = 0
    branch: str = ""  # the tree's drawing before the id: "├─ ", "└─ "


def _flat_key(row: Row) -> tuple[Any, ...]:
    g = group(row)
    v = row.view
    if g == NEEDS:
        return (g, NEED_ORDER.index(need(row) or "approval"), row.created_epoch)
    if g == QUEUED:
        return (g, 0, row.created_epoch)  # the next to start first
    if g == ENDED:
        return (g, 0, -_ended_epoch(v, row))
    return (g, 0, -row.created_epoch)  # running: the newest first


def _ended_epoch(v: View, row: Row) -> float:
    from zapcli.trail.records import parse_iso

    try:
        return parse_iso(v.ended) if v.ended else row.created_epoch
    except ValueError:
        return row.created_epoch


def flat(rows: list[Row]) -> list[Line]:
    """Grouped by state, needs input first; a header line opens each group."""
    out: list[Line] = []
    current = -1
    ordered = sorted(rows, key=_flat_key)
    counts: dict[int, int] = {}
    for row in ordered:
        counts[group(row)] = counts.get(group(row), 0) + 1
    for row in ordered:
        g = group(row)
        if g != current:
            out.append(Line(None, f"{GROUP_NAMES[g].upper()} ({counts[g]})"))
            current = g
        out.append(Line(row.id))
    return out


def tree(rows: list[Row]) -> list[Line]:
    """Who spawned whom: each subagent under the subagent or `zapcli run` whose
    work spawned it. A run is a header; a parent not shown (another session,
    filtered out, removed) leaves its children at the top. Trees whose rows
    need the person come first, then the newest."""
    by_id = {r.id: r for r in rows}
    children: dict[str | None, list[Row]] = {}
    for r in rows:
        parent = r.view.parent if r.view.parent in by_id else None
        key = parent if parent is not None else _run_of(r)
        children.setdefault(key, []).append(r)
    best: dict[str, int] = {}

    def rank(r: Row) -> int:
        if r.id not in best:
            best[r.id] = min([group(r), *(rank(c) for c in children.get(r.id, ()))])
        return best[r.id]

    out: list[Line] = []

    def walk(r: Row, depth: int, prefix: str, last: bool) -> None:
        branch = (prefix + ("└─ " if last else "├─ ")) if depth else ""
        out.append(Line(r.id, depth=depth, branch=branch))
        kids = sorted(children.get(r.id, ()), key=lambda c: c.created_epoch)
        inner = prefix + ("   " if last else "│  ") if depth else ""
        for i, kid in enumerate(kids):
            walk(kid, depth + 1, inner, i == len(kids) - 1)

    tops: list[tuple[tuple[int, float], str | None, list[Row]]] = []
    for key, kids in children.items():
        if key is not None and (key in by_id):
            continue  # drawn under its parent
        if key is None:
            tops += [((rank(r), -r.created_epoch), None, [r]) for r in kids]
        else:  # the subagents of one `zapcli run`
            first = min(rank(r) for r in kids)
            tops.append(((first, -max(r.created_epoch for r in kids)), key, kids))
    for _key, run, kids in sorted(tops, key=lambda t: t[0]):
        if run is None:
            walk(kids[0], 0, "", True)
            continue
        out.append(Line(None, f"zapcli run {run} ({len(kids)})"))
        ordered = sorted(kids, key=lambda c: c.created_epoch)
        for i, kid in enumerate(ordered):
            walk(kid, 1, "", i == len(ordered) - 1)
    return out


def _run_of(r: Row) -> str | None:
    parent = r.view.parent
    return parent if parent and parent.startswith("run_") else None


def lines(rows: list[Row], *, as_tree: bool) -> list[Line]:
    return tree(rows) if as_tree else flat(rows)
