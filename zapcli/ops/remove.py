"""`zapcli rm` and `zapcli clean`: remove finished subagents (like pueue's
`remove` / `clean`). Imports `zapcli.lifecycle`, `zapcli.trail`.

Only a terminal subagent is removed — its trail, captured output and
session markers; a running or queued one is refused (kill it first), and so
is one that must stay a moment (`lifecycle.retention.held`: its on-finish
command is not done, a continuation or an `--after` successor has not
started with it yet; `clean` keeps it this time).
`rm` also removes a damaged trail (no spawn record) whose process is not alive. Each
removal happens under the trail's lock, after the status was checked there.
A subagent's worktree goes with it, as `worktree rm` removes one (one that
holds unmerged work keeps its subagent: `held`); one still in use stays, said.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass, field

from zapcli.config import Settings
from zapcli.errors import Damaged, NotFound, UsageError, ZapcliError, param
from zapcli.lifecycle import retention
from zapcli.lifecycle import session as sessions
from zapcli.lifecycle.observe import observe
from zapcli.lifecycle.retention import delete_files
from zapcli.ops.listing import _newest_first
from zapcli.trail import reader, store
from zapcli.trail.model import TERMINAL
from zapcli.trail.reader import load

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Iterable


@dataclass
class RemoveResult:
    removed: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # id -> why not
    kept: dict[str, str] = field(default_factory=dict)  # clean: id -> why not this time
    missing: list[str] = field(default_factory=list)  # the refused ids that name no subagent
    trees: dict[str, str] = field(default_factory=dict)  # removed id -> its worktree, removed too
    trees_left: dict[str, str] = field(default_factory=dict)  # removed id -> why its tree stays


def _remove_one(sid: str, settings: Settings, res: RemoveResult, *, later: bool = False) -> None:
    """Remove `sid` if it has ended and its on-finish command is done (or
    gone); `later` (clean) notes one whose command still runs as kept."""
    try:
        view = observe(sid, kill_grace_s=settings.kill_grace_s)  # fires an unclaimed on-finish
    except Damaged as exc:
        if not later:
            _remove_damaged(sid, exc.message, res)
        return
    except NotFound as exc:
        res.refused[sid] = exc.message
        res.missing.append(sid)
        return
    if not view.terminal:
        res.refused[sid] = f"{sid} is {view.status}; only finished subagents are removed (zapcli kill {sid} first)"
        return
    try:
        # decided and done under the trail's lock: a `continue` (which records its
        # successor under it) is either seen here, or finds the trail gone
        with store.locked(store.path_for(sid)):
            summary = load(sid)
            held = retention.held(sid, summary)
            if held is not None:  # clean notes it as kept this time; rm says why not yet
                kept, refusal = held
                if later:
                    res.kept[sid] = kept
                else:
                    res.refused[sid] = f"{sid} has ended but {refusal}"
                return
            tree = _tree_on_disk(summary)
            delete_files(sid, summary.spawn.session)
    except NotFound as exc:  # removed meanwhile by another rm, clean or gc
        res.refused[sid] = exc.message
        return
    except OSError as exc:  # one damaged file stops only its own subagent's removal
        if isinstance(exc, FileNotFoundError) and not store.path_for(sid).exists():
            res.refused[sid] = f"{sid} does not exist (removed meanwhile)"
            return
        if exc.errno in (errno.EROFS, errno.ENOSPC, errno.EDQUOT):
            raise  # the state folder itself: the command's error, said once
        where = f" ({exc.filename})" if exc.filename else ""
        res.refused[sid] = f"{sid} could not be removed: {exc.strerror or exc}{where}"
        return
    res.removed.append(sid)
    if tree is not None:
        _remove_tree(sid, tree, res)


def _tree_on_disk(summary: reader.Summary) -> str | None:
    """The worktree of a subagent being removed, when it is on disk."""
    path = (summary.spawn.worktree or {}).get("path")
    if not isinstance(path, str) or summary.tree_removed is not None or not os.path.isdir(path):
        return None
    return path


def _remove_tree(sid: str, path: str, res: RemoveResult) -> None:
    """A removed subagent's tree goes with it, as `worktree rm` removes one
    (its teardown, its branch when merged): it held no unmerged work, or the
    subagent would have been kept (`retention.held`). One still in use (a
    continuation works in it) or that cannot go stays, said with why."""
    from zapcli.ops.worktree import remove

    try:
        remove(sid)
    except ZapcliError as exc:
        res.trees_left[sid] = f"its worktree stays at {path}: {exc.message}"
        return
    res.trees[sid] = path


def _remove_damaged(sid: str, why: str, res: RemoveResult) -> None:
    """`rm` of a trail without its spawn record: its files go once no
    recorded process of it is alive."""
    from zapcli.lifecycle import damaged

    found = damaged.inspect(sid)
    if found is None:  # repaired or removed meanwhile
        res.refused[sid] = why
    elif found.fresh:
        res.refused[sid] = (f"{sid} has an empty trail made moments ago (a spawn may still be "
                            "writing it); try again in a moment")
    elif found.alive:
        pid = found.process.pid if found.process else None
        res.refused[sid] = (f"{sid} is damaged ({found.reason}) and its process (pid {pid}) still "
                            f"runs; zapcli kill {sid} first")
    else:
        delete_files(sid, None)  # and its markers in every session: the one it named is unknown
        sessions.forget_everywhere(sid)
        res.removed.append(sid)


def rm(ids: list[str], settings: Settings) -> RemoveResult:
    """Remove the named finished subagents; each id answers on its own."""
    if not ids:
        raise UsageError("rm needs subagent ids (zapcli clean removes every finished one)")
    res = RemoveResult()
    for sid in dict.fromkeys(store.resolve(i) for i in ids):
        _remove_one(sid, settings, res)
    return res


def clean(settings: Settings, *, all_sessions: bool = False,
          status: str | Iterable[str] | None = None) -> RemoveResult:
    """Remove every finished subagent of this session (`all_sessions`: of
    every session), or only those that ended with `status` (several: any
    of them)."""
    asked = () if status is None else (status,) if isinstance(status, str) else tuple(status)
    for s in asked:
        if s not in TERMINAL:
            raise UsageError(f"{param('status')} '{s}' is not a finished status; choose one of: "
                             f"{', '.join(sorted(TERMINAL))}")
    res = RemoveResult()
    for sid in _newest_first(all_sessions, sessions.current()):
        try:
            view = observe(sid, kill_grace_s=settings.kill_grace_s)
        except NotFound:
            continue
        if view.terminal and (not asked or view.status in asked):
            _remove_one(sid, settings, res, later=True)
    return res
