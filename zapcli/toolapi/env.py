"""What a tool call runs in and answers with: `Env` (the surface, the
session's settings, the subagents a caller may reach, progress) and `Reply`.

Imports `zapcli.errors` only (the rest where used), so the dispatcher and the
handlers both stand on it.
"""

from __future__ import annotations

import _thread

from zapcli.errors import ZapcliError

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable, Iterable
    from pathlib import Path
    from typing import Any

    from zapcli.config import Settings


class Reply:
    """`text` for the model; `doc` the JSON document; `exit_code` as the CLI
    command's (wait: 0 / 3 / 4); `error`: the call failed, `text` says why and
    what to do; `code`: the error's stable code. (Plain classes: `zapcli call`
    is on the fast path, and a dataclass costs ~1 ms to create at import.)"""

    def __init__(self, text: str, doc: Any, exit_code: int = 0, error: bool = False,
                 code: str = ""):
        self.text, self.doc, self.exit_code, self.error, self.code = text, doc, exit_code, error, code


class Env:
    """Where a call runs. `surface` "tool" (MCP, `zapcli call`) or "run" (the
    `subagent` tool of `zapcli run`: it reaches only the subagents it started,
    and its children inherit its approval mode). `tick(views, elapsed)` is
    called while poll/wait block (progress, approvals); `stop_on_approval`
    makes them return as soon as a subagent asks for approval (the caller
    decides; inside `zapcli run` the person at the terminal does). `cap_s`:
    the longest a poll/wait call blocks before it answers "still running"
    (MCP: clients give up on a call after about a minute; None: no cap).
    `durable`: the caller lives one process a call (`zapcli call`), so what it
    started and what its results showed ended is kept in its session's
    markers (`lifecycle.session.unreported`), not in this object alone."""

    def __init__(self, surface: str = "tool", *, durable: bool = False, cwd: str | None = None,
                 approval: str | None = None, unattended: bool = False,
                 shell_allowed: bool = True, stop_on_approval: bool = True,
                 on_tick: Callable[[list[Any], float], None] | None = None):
        self.surface, self.cwd, self.approval, self.unattended = surface, cwd, approval, unattended
        self.durable = durable
        self.shell_allowed, self.stop_on_approval, self.on_tick = shell_allowed, stop_on_approval, on_tick
        self.cap_s: float | None = None
        self.started: list[str] = []
        self.announced: set[str] = set()
        # `zapcli run`: its id (the parent of what it spawns) and identity (so
        # they never outlive it); `siblings`: spawns in the same model message
        self.parent: str | None = None
        self.run: dict[str, Any] | None = None
        self.siblings, self.batch = 1, 0  # spawns in one model message (and its number)
        # this call's place among them (`zapcli.agent.types.Party`): a spawn waits, once its
        # share is reserved, until its siblings have reserved theirs (None: made alone)
        self.party: Any = None
        self.relay: dict[str, Any] | None = None  # `zapcli run` that relays approvals (ops.spawn)
        self.traceparent: str | None = None  # the tool call a spawn is made from (ops.spawn)
        # asks the caller's user to approve `what` (a merge): (approved, why); None: nobody to ask
        self.confirm: Callable[[str], tuple[bool, str]] | None = None
        self.sandbox: str | None = None  # `zapcli run`'s: its shell spawns run in one too
        # `zapcli run --model`'s model: its tree's session default, what a child gets when
        # nothing names one (`SpawnRequest.default_model`)
        self.default_model: str | None = None
        # the variables a shell the model starts keeps (`zapcli run`: its definition's `env`)
        self.shell_env: tuple[str, ...] = ()
        # delegation never widens: `zapcli run`'s own spawn-record fields (its definition and
        # grant, mode, roots, sandbox), which bound what it spawns and what a fork keeps; who
        # asks the person about a child that would hold more (None: `confirm`, else refused)
        self.spawner: dict[str, Any] | None = None
        self.ask_widening: Callable[[str], tuple[bool, str]] | None = None
        # `zapcli run`'s conversation so far, for a fork (`zapcli.ops.fork.Conversation.snapshot`)
        self.conversation: Callable[[], dict[str, Any]] | None = None
        self.lock = _thread.allocate_lock()
        self._settings: Settings | None = None

    def copy(self, **changes: Any) -> Env:
        """This Env with `changes`, sharing its ids, lock and settings (one
        MCP connection, several calls at once)."""
        other = object.__new__(Env)
        other.__dict__.update(self.__dict__)
        other.__dict__.update(changes)
        return other

    def settings(self) -> Settings:
        if self._settings is None:
            from zapcli.backends.sections import OWNERS
            from zapcli.config import load_settings

            self._settings = load_settings(lenient=True, owners=OWNERS)
        return self._settings

    def workspace(self) -> Path:
        from pathlib import Path

        from zapcli.paths import workspace_of

        return workspace_of(Path(self.cwd or Path.cwd()))

    def started_one(self, sid: str) -> None:
        with self.lock:
            self.started.append(sid)
        if self.durable:
            from zapcli.lifecycle import session

            session.add_unreported(session.current(), sid)

    def seen(self, ids: Iterable[str]) -> None:
        """These ended and the model saw it: no announcement needed."""
        ids = list(ids)
        with self.lock:
            self.announced.update(ids)
        if self.durable:
            from zapcli.lifecycle import session

            session.reported(session.current(), ids)

    def tick(self, views: list[Any], elapsed: float) -> None:
        if self.on_tick is not None:
            self.on_tick(views, elapsed)

    def outstanding(self) -> list[str]:
        """What `wait` with no ids waits for: as on the CLI, every subagent of
        this session that has not ended (`ops.poll.outstanding`); and the ones
        this caller started that ended unseen (no result has shown their end
        yet), so a wait right after they finished still shows their output.
        `durable`: the ones this session's earlier calls started, likewise.
        Inside `zapcli run` only its own."""
        from zapcli.ops.poll import outstanding

        with self.lock:
            mine, seen = list(self.started), set(self.announced)
        if self.durable:
            from zapcli.lifecycle import session
            from zapcli.trail import store

            mine += [s for s in session.unreported(session.current())
                     if store.path_for(s).exists()]
        ids = list(dict.fromkeys([*outstanding(), *(s for s in mine if s not in seen)]))
        return [s for s in ids if s in mine] if self.surface == "run" else ids

    def ids(self, given: list[str] | None) -> list[str]:
        """The ids asked for; inside `zapcli run` all of them its own (the
        tool never reaches another session's work)."""
        ids = list(given or [])
        if self.surface != "run":
            return ids
        with self.lock:
            mine = list(self.started)
        if not ids:
            raise ZapcliError("no subagent ids given and none started yet; spawn first")
        foreign = [i for i in ids if i not in mine]
        if foreign:
            raise ZapcliError(f"{', '.join(foreign)}: not a subagent this run started; this tool "
                              f"reaches only its own ({', '.join(mine) or 'none yet'})",
                              code="not_yours")
        return ids

    def one(self, sid: str) -> str:
        return self.ids([sid])[0]
