"""One call of the tool: check the arguments against the declaration, run the
action, answer with a `Reply` (text for the model, JSON document, exit code).

Imports `zapcli.toolapi.spec` and `.handlers`, `zapcli.errors`. Errors never
escape `call`: a ZapcliError becomes a Reply with `error=True` and the
message spelled with parameter names (`for_tool`); anything unexpected
becomes a Reply that says so, so no surface (MCP, run, call) crashes on input.
"""

from __future__ import annotations

import _thread

from zapcli.errors import UsageError, ZapcliError
from zapcli.toolapi.spec import BY_NAME, Action

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
    decides; inside `zapcli run` the person at the terminal does)."""

    def __init__(self, surface: str = "tool", *, cwd: str | None = None,
                 approval: str | None = None, unattended: bool = False,
                 shell_allowed: bool = True, stop_on_approval: bool = True,
                 on_tick: Callable[[list[Any], float], None] | None = None):
        self.surface, self.cwd, self.approval, self.unattended = surface, cwd, approval, unattended
        self.shell_allowed, self.stop_on_approval, self.on_tick = shell_allowed, stop_on_approval, on_tick
        self.started: list[str] = []
        self.announced: set[str] = set()
        self.budget: Any = None  # ops.budget.TreeBudget of `zapcli run --max-tokens`
        self.relay: dict[str, Any] | None = None  # `zapcli run` that relays approvals (ops.spawn)
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
            from zapcli.config import load_settings

            self._settings = load_settings(lenient=True)
        return self._settings

    def workspace(self) -> Path:
        from pathlib import Path

        from zapcli.paths import workspace_of

        return workspace_of(Path(self.cwd or Path.cwd()))

    def started_one(self, sid: str) -> None:
        with self.lock:
            self.started.append(sid)

    def seen(self, ids: Iterable[str]) -> None:
        """These ended and the model saw it: no announcement needed."""
        with self.lock:
            self.announced.update(ids)

    def tick(self, views: list[Any], elapsed: float) -> None:
        if self.on_tick is not None:
            self.on_tick(views, elapsed)

    def ids(self, given: list[str] | None, all_if_none: bool = False) -> list[str]:
        """The ids asked for; inside `zapcli run` all of them its own (the
        tool never reaches another session's work)."""
        ids = list(given or [])
        if self.surface != "run":
            return ids
        with self.lock:
            mine = list(self.started)
        if not ids and all_if_none:
            ids = mine
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


_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": (int, float),
                          "boolean": bool, "array": list}


def _value(action: Action, name: str, value: Any) -> Any:
    p = action.param(name)
    if p is None:
        names = ", ".join(x.name for x in action.params) or "none"
        raise UsageError(f"`{name}` is not a parameter of {action.name} (its parameters: {names})")
    if p.type == "array" and isinstance(value, str):
        value = [value]  # one id where a list was asked for
    if p.type == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) != (p.type == "boolean") or not isinstance(value, _TYPES[p.type]):
        raise UsageError(f"`{name}` of {action.name} must be {'an' if p.type[0] in 'aei' else 'a'} "
                         f"{p.type}, got {type(value).__name__} {value!r:.60}")
    if p.type == "array" and not all(isinstance(v, str) for v in value):
        raise UsageError(f"`{name}` of {action.name} must be a list of strings")
    if p.enum is not None and value not in p.enum:
        raise UsageError(f"`{name}` of {action.name} must be one of {', '.join(p.enum)}, got {value!r:.60}")
    return value


def check(name: Any, args: Any) -> tuple[Action, dict[str, Any]]:
    """The action and its arguments (every parameter present; absent = None).
    Null values are absent: a strict-mode model sends every parameter."""
    action = BY_NAME.get(name) if isinstance(name, str) else None
    if action is None:
        raise UsageError(f"unknown action {name!r}; use one of: {', '.join(BY_NAME)}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise UsageError(f"the arguments of {action.name} must be a JSON object")
    checked: dict[str, Any] = {p.name: None for p in action.params}
    for key, value in args.items():
        if value is None:
            continue
        checked[key] = _value(action, key, value)
    missing = [p.name for p in action.params if p.required and checked[p.name] in (None, "", [])]
    if missing and not (action.name == "wait" and missing == ["ids"]):
        raise UsageError(f"{action.name} needs `{missing[0]}`")
    return action, checked


def call(name: Any, args: Any, env: Env) -> Reply:
    """Run one action; never raises for bad input or a failed operation."""
    from zapcli.toolapi.handlers import HANDLERS

    try:
        action, checked = check(name, args)
        if env.surface == "run" and not action.in_run:
            raise UsageError(f"{action.name} is not available inside zapcli run")
        return HANDLERS[action.name](checked, env)
    except ZapcliError as exc:
        return Reply(exc.for_tool(), {"error": {"code": exc.code, "message": exc.for_tool(),
                                                "exit_code": exc.exit_code}},
                     exc.exit_code, error=True, code=exc.code)
    except Exception as exc:  # noqa: BLE001 - a tool answers; it never takes its host down
        message = (f"internal error in {name}: {type(exc).__name__}: {exc}; this is a zapcli bug, "
                   "the call can be retried")
        return Reply(message, {"error": {"code": "internal", "message": message, "exit_code": 1}},
                     1, error=True, code="internal")


def call_document(document: Any, env: Env) -> Reply:
    """`{"action": ..., <parameters>}` — one call of the `subagent` tool."""
    if not isinstance(document, dict):
        return call(None, None, env) if document is None else Reply(
            "the call must be a JSON object like {\"action\": \"list\"}",
            {"error": {"code": "usage", "message": "not a JSON object", "exit_code": 2}},
            2, error=True, code="usage")
    args = dict(document)
    return call(args.pop("action", None), args, env)
