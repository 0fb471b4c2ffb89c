"""Retention (docs/explanation/rules.md#retention): trim big trails, keep at most `max_kept` subagents.

Imports `zapcli.lifecycle.observe`, `zapcli.lifecycle.session`,
`zapcli.lifecycle.removed` (a note of each removed one's end), `zapcli.trail`,
`zapcli.supervisor.liveness` (is an on-finish helper alive). Runs only
while no subagent is running, under a file lock; counts by scanning the
directory; deletes the oldest finished subagents first; never touches a
running one, nor one that must stay a moment (`held`: its on-finish
command is not done, a continuation or `--after` successor has not started
with it, its worktree holds work not merged); deletes nothing by `max_kept` while a config layer is invalid
(leniently loaded settings carry `problems`): it still trims.
"""

from __future__ import annotations

import contextlib
import os
import time

from zapcli import ids
from zapcli.config import Settings
from zapcli.errors import NotFound
from zapcli.lifecycle import removed
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import observe, view_of
from zapcli.locks import LockTimeout, exclusive
from zapcli.paths import ensure_dir, locks_dir, subagents_dir
from zapcli.plain import field, plain
from zapcli.trail import reader, runs, store
from zapcli.trail import trim as retention
from zapcli.trail.reader import load

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

FOLDERS = store.FOLDERS  # an agent CLI's home, the scratch folder
FINISH_START_S = 60.0  # a claimed on-finish command whose helper never said it runs: given up after
KEPT_FOR_FINISH = "kept: on-finish still running"


def finish_pending(s: Any) -> str | None:
    """Why an ended subagent (a `reader.Summary`) cannot be removed yet: its
    on-finish command is not `done` — unclaimed (about to be started), claimed
    and starting, or running in a helper that is alive. A helper that died
    without `done` (or a claim whose helper never started within
    FINISH_START_S) does not hold it back. None when it can go."""
    if s.final is None or not s.spawn.on_finish or "done" in s.finish:
        return None
    if not s.finish:
        return "its on-finish command has not started yet"
    helper = s.finish.get("running")
    if helper is not None:
        from zapcli.supervisor.liveness import is_alive

        if is_alive(helper.get("pid"), helper.get("create_time")):
            return f"its on-finish command is still running (pid {helper.get('pid')})"
        return None
    import time

    from zapcli.trail.records import parse_iso

    try:
        age = time.time() - parse_iso(str(s.finish.get("claimed", {}).get("ts")))
    except ValueError:
        return None
    return "its on-finish command is starting" if age < FINISH_START_S else None


@plain
class GcResult:
    kept: int = 0
    deleted: list[str] = field(default_factory=list)
    trimmed: dict[str, int] = field(default_factory=dict)  # id -> bytes dropped
    skipped_reason: str | None = None
    kept_reason: str | None = None  # why nothing was deleted by max_kept (an invalid config)
    held: dict[str, str] = field(default_factory=dict)  # id -> why it is kept this time (on-finish)
    dry_run: bool = False
    worktrees: list[Any] = field(default_factory=list)  # lifecycle.worktrees.Decision, `zapcli gc` only
    placeholders: list[str] = field(default_factory=list)  # placeholders a killed sandbox left
    dropped_envs: list[str] = field(default_factory=list)  # ids whose kept environment went


def _ids_on_disk(names: list[str] | None = None) -> list[str]:
    """The ids of the trails in the subagents folder (`names`: its listing, made already)."""
    if names is None:
        try:
            names = os.listdir(subagents_dir())
        except FileNotFoundError:
            return []
    return sorted(ids.valid_among([n[:-6] for n in names if n.endswith(".jsonl")]))


def awaited() -> dict[str, str]:
    """Finished subagents a queued one still waits for (`--after`): dependency
    id -> the id waiting. Removing one would fail its successor with a false
    "dependency ended lost", so rm/clean/gc keep it until that one starts."""
    waiting: dict[str, str] = {}
    for _key, sid in sessions.all_active():
        try:
            s = load(sid)
        except NotFound:
            continue
        if s.queued:
            for dep in s.spawn.after:
                waiting.setdefault(dep, sid)
    return waiting


KEPT_FOR_AFTER = "kept: a queued subagent waits for it"
KEPT_FOR_CONTINUE = "kept: a continuation has not read it yet"
KEPT_FOR_TREE = "kept: its worktree holds work"


def tree_work(s: Any) -> str | None:
    """Why the tree holds work ("1 untracked file") when the ended subagent `s` (a
    `reader.Summary`) has a worktree that still exists and holds work its
    checkout does not have (changes, untracked files, commits on no other
    branch): removing the subagent would leave that work where `merge`,
    `diff` and `poll` can no longer reach it. A subagent continued by
    another (which carries the tree on) is not asked."""
    receipt = s.spawn.worktree
    path = receipt.get("path") if isinstance(receipt, dict) else None
    if not path or not os.path.isdir(path):
        return None
    if s.continued_by is not None and store.path_for(s.continued_by).exists():
        return None
    from zapcli.lifecycle.worktrees import receipt_of
    from zapcli.worktrees.inspect import state

    r = receipt_of(s.spawn)
    if r is None:
        return None
    st = state(r)
    return ", ".join(st.reasons()) if st.holds_work else None


def unread_by(s: Any) -> str | None:
    """The continuation of an ended subagent (a `reader.Summary`) that has not
    read it yet (`zapcli continue`: queued, or started but not `resumed`), or
    None. Removing it would fail that one with "the trail of … cannot be
    read". The chain is followed: a continuation reads all its predecessors."""
    seen: set[str] = set()
    succ = s.continued_by
    while succ is not None and succ not in seen and len(seen) < 64:
        seen.add(succ)
        try:
            nxt = load(succ)
        except NotFound:  # removed: it needs nothing any more
            return None
        if nxt.final is None and nxt.resumed_from is None:
            return succ
        succ = nxt.continued_by
    return None


def held(sid: str, s: Any, after: Callable[[], dict[str, str]] = awaited) -> tuple[str, str] | None:
    """(kept note, refusal) while an ended subagent (a `reader.Summary`) must
    stay a moment: its on-finish command has not finished, a continuation
    has not read it yet, or a queued subagent waits for it (`after()`: the
    dependency map, asked only when the rest allow removal), or its
    worktree holds work not merged (`tree_work`). rm refuses then, clean
    and gc keep it this time: one rule for all three."""
    waiting = finish_pending(s)
    if waiting is not None:
        return (f"{KEPT_FOR_FINISH} ({waiting})",
                f"{waiting}; it is removed once that is done (try again in a moment)")
    reader = unread_by(s)
    if reader is not None:
        return (f"{KEPT_FOR_CONTINUE} ({reader}, continue)",
                f"{reader} continues it and has not read it yet; it can be removed once "
                f"{reader} has started")
    why = tree_work(s)
    if why is not None:
        return (f"{KEPT_FOR_TREE} ({why}; zapcli merge {sid})",
                f"its worktree holds work ({why}): merge it (zapcli merge {sid}) or discard "
                f"it (zapcli worktree rm --force {sid}) first")
    successor = after().get(sid)
    if successor is not None:
        return (f"{KEPT_FOR_AFTER} ({successor}, --after)",
                f"the queued {successor} waits for it (--after); it can be removed once "
                f"{successor} has started")
    return None


def _running(first: bool = False) -> list[str]:
    """The active subagents that have not ended; with `first`, only the first
    one found (whether any runs is all an opportunistic run asks: a fleet's
    every runner asks it at its end, and observing each of a long queue made
    that end's cost grow with the queue)."""
    busy = []
    for _key, sid in sessions.all_active():
        try:
            if not observe(sid).terminal:
                busy.append(sid)
                if first:
                    break
        except NotFound:
            continue
    return busy


def collect(settings: Settings, *, dry_run: bool = False, opportunistic: bool = False) -> GcResult:
    """Apply retention now. `opportunistic` (a spawn's, a runner's end) returns
    quietly when busy, after looking for one running subagent, not all: a
    fleet's every runner asks at its end, and what it asked of every queued
    one (its trail read for a kept environment, observed for its state) grew
    with the queue (~18 ms a runner at 190 queued). Kept environments go at
    `gc` whatever runs; an opportunistic run drops them once none runs: each
    subagent's own end drops its own (`zapcli.trail.ending`), this is what an
    earlier version left."""
    result = GcResult(dry_run=dry_run)
    path = ensure_dir(locks_dir()) / "retention.lock"
    try:
        with exclusive(path, 2 if opportunistic else 30):  # brief: a spawn may be checking
            if not dry_run:
                removed.sweep()  # notes of removed subagents older than a week
            busy = _running(first=opportunistic)
            listing = None if busy and opportunistic else _listing()
            if listing is not None:
                _drop_kept_envs(result, dry_run, listing)  # at `gc`, keys go whatever else runs
            if busy:
                result.skipped_reason = ("a subagent is running" if opportunistic else
                                         f"{len(busy)} subagent(s) running; retention runs only when none is")
                result.kept = len(_ids_on_disk(listing))
                return result
            _apply(settings, result, dry_run, listing or [])
    except LockTimeout:
        result.skipped_reason = "another retention run holds the lock"
    return result


def delete_files(sid: str, session: str | None) -> None:
    """Remove everything of one finished subagent: its files (the trail last,
    under its lock), its folders (an agent CLI's home, its scratch folder),
    its session markers. `gc` and `rm`/`clean` both go through here. A note
    of the end it had is written first (`lifecycle.removed`): a `wait` given
    its id still counts it by that end."""
    path = store.path_for(sid)
    with contextlib.suppress(FileNotFoundError), store.locked(path):
        removed.note(sid, _ended(sid))
        for suffix in store.SUFFIXES[1:]:
            store.path_for(sid, suffix).unlink(missing_ok=True)
        for copy in retention.copies(path):  # a trim killed halfway (none runs: we hold the lock)
            copy.unlink(missing_ok=True)
        import shutil

        for folder in FOLDERS:
            shutil.rmtree(store.path_for(sid, folder), ignore_errors=True)
        path.unlink(missing_ok=True)
    path.unlink(missing_ok=True)
    if session is not None:
        sessions.forget(session, sid)


def _ended(sid: str) -> Any:
    """The view of `sid` as it ended, read from its trail (None: damaged)."""
    try:
        return view_of(sid, load(sid))
    except NotFound:
        return None


KEPT_ENV_ORPHAN_S = 60.0  # a spawn writes the kept environment a moment before its trail


def _listing() -> list[str]:
    """The names in the subagents folder (none when it cannot be listed)."""
    try:
        return os.listdir(subagents_dir())
    except OSError:
        return []


def _drop_kept_envs(result: GcResult, dry_run: bool, listing: list[str]) -> None:
    """Remove every kept environment (`<id>.env`, a spawner's keys) whose
    subagent can no longer start: it has started or ended (an earlier
    version left those), or its trail is gone (after a minute: a spawn
    writes it just before the trail). A queued one keeps its own. `listing`:
    the subagents folder's names."""
    names = set(listing)
    for name in sorted(n for n in listing if n.endswith(store.ENV)):
        sid = name[:-len(store.ENV)]
        if not ids.is_valid(sid):
            continue
        path = subagents_dir() / name
        if f"{sid}.jsonl" in names:
            try:
                if load(sid).queued:
                    continue
            except NotFound:
                continue  # a trail being written (or damaged): not decided on a guess
        else:
            try:
                if time.time() - os.stat(path, follow_symlinks=False).st_mtime < KEPT_ENV_ORPHAN_S:
                    continue
            except OSError:
                continue
        result.dropped_envs.append(sid)
        if not dry_run:
            path.unlink(missing_ok=True)


_CAPTURES = frozenset(store.SUFFIXES[1:]) - {store.ENV}


def _orphan_captures(listing: list[str]) -> list[str]:
    """`<id>.out` / `.err` / `.end` / `.home` / `.tmp` whose trail is gone
    (deleted by hand), of the subagents folder's `listing`; a kept `.env`
    goes in `_drop_kept_envs`."""
    names = set(listing)
    files = [n for n in listing if n[-4:] in _CAPTURES and f"{n[:-4]}.jsonl" not in names]
    folders = [n for n in listing if n.endswith(FOLDERS) for f in FOLDERS if n.endswith(f)
               and f"{n[:-len(f)]}.jsonl" not in names and ids.is_valid(n[:-len(f)])]
    return sorted(n for n in files if ids.is_valid(n[:-4])) + sorted(folders)


def _trim(path: Any) -> int:
    with store.locked(path):  # an on-finish helper or an observer may append meanwhile
        return retention.trim(path)


def _apply(settings: Settings, result: GcResult, dry_run: bool, listing: list[str]) -> None:
    """`listing`: the subagents folder's names."""
    folder = subagents_dir()
    for copy in retention.stale(folder, listing):  # what a killed trim left
        if not dry_run:
            copy.unlink(missing_ok=True)
    for name in _orphan_captures(listing):
        if not dry_run:
            if name.endswith(FOLDERS):
                import shutil

                shutil.rmtree(folder / name, ignore_errors=True)
            else:
                (folder / name).unlink(missing_ok=True)
    ids_ = _ids_on_disk(listing)
    finished: list[tuple[float, str, str]] = []  # (mtime, id, session)
    unreadable = 0  # no spawn record (damaged by hand): never deleted, and not counted
    # Every runner's end collects: only when some may be deleted (more than
    # max_kept) or a run trail may go with its session is every trail read;
    # else a trail is read only when its size asks for a trim (a stat each).
    # A run trail may go when its run ended (or is a week old) and its
    # session's markers name no subagent on disk; the trails say whether
    # one without a marker (an older zapcli's) is left.
    may_go = _runs_that_may_go(set(ids_))
    whole = bool(settings.max_kept) and len(ids_) > settings.max_kept or bool(may_go)
    where = str(folder)
    for sid in ids_:
        if not whole and not _over_trim(f"{where}/{sid}.jsonl"):
            continue
        try:
            view = observe(sid)
        except NotFound:
            unreadable += 1
            continue
        if not view.terminal:
            continue
        path = store.path_for(sid)
        try:
            stat = os.stat(path, follow_symlinks=False)
        except OSError:
            continue
        finished.append((stat.st_mtime, sid, view.session))
        if stat.st_size > retention.TRIM_OVER_BYTES:
            result.trimmed[sid] = stat.st_size - retention.KEEP_BYTES if dry_run else _trim(path)
    excess = len(ids_) - unreadable - settings.max_kept if settings.max_kept else 0  # 0 = keep all
    if settings.problems:  # max_kept may be in the file that was skipped: never delete on a guess
        excess = 0
        result.kept_reason = ("a config file is invalid, so max_kept is unknown and no subagent "
                              "was deleted for it; fix the config and run zapcli gc again")
    finished.sort()
    needed = awaited() if excess > 0 else {}
    for _mtime, sid, session in finished[:max(excess, 0)]:
        try:  # decided and done under the trail's lock, as rm does: a `continue` is seen
            with store.locked(store.path_for(sid)):
                why = held(sid, load(sid), lambda: needed)
                if why is None:
                    result.deleted.append(sid)
                    if not dry_run:
                        delete_files(sid, session)
        except (NotFound, FileNotFoundError):
            continue
        if why is not None:  # its turn comes at the next gc
            result.held[sid] = why[0]
    result.kept = len(ids_) - len(result.deleted)  # with --dry-run: what would be kept
    if whole:  # and with the sessions' subagents this pass deleted, their runs' trails
        left = {session for _m, sid, session in finished if sid not in result.deleted}
        if result.deleted:
            may_go = _runs_that_may_go(set(ids_).difference(result.deleted))
        result.deleted += _prune_runs([r for r in may_go if r not in left], dry_run)


def _over_trim(path: str) -> bool:
    try:
        return os.stat(path, follow_symlinks=False).st_size > retention.TRIM_OVER_BYTES
    except OSError:
        return False


RUN_KEPT_S = 7 * 86400  # a run trail that never ended (its process was killed) goes after a week


def _runs_that_may_go(alive: set[str]) -> list[str]:
    """The runs whose trail may go with their session (`_prune_runs`): ended
    (or a week old), and no subagent of `alive` named by their session's
    markers."""
    out = []
    for run_id in runs.ids_on_disk():
        if any(sid in alive for sid in sessions.members(run_id)):
            continue
        path = runs.path_for(run_id)
        try:
            old = time.time() - os.stat(path, follow_symlinks=False).st_mtime > RUN_KEPT_S
        except OSError:
            continue
        if old or reader.first_terminal(path) is not None:
            out.append(run_id)
    return out


def _prune_runs(gone: list[str], dry_run: bool) -> list[str]:
    """The trail of a `zapcli run` goes with the last of its subagents: once
    none of its session is left and it has ended (or is a week old)."""
    if not dry_run:
        for run_id in gone:
            runs.path_for(run_id).unlink(missing_ok=True)
    return gone
