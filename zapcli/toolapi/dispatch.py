"""One call of the tool: check the arguments against the declaration, run the
action, answer with a `Reply` (text for the model, JSON document, exit code).

Imports `zapcli.toolapi.spec`, `.env` (Env, Reply: used from here too) and
`.handlers`, `zapcli.errors`. Errors never
escape `call`: a ZapcliError becomes a Reply with `error=True` and the
message spelled with parameter names (`for_tool`); anything unexpected
becomes a Reply that says so, so no surface (MCP, run, call) crashes on input.
"""

from __future__ import annotations

from zapcli.errors import UsageError, ZapcliError
from zapcli.toolapi.env import Env, Reply
from zapcli.toolapi.spec import BY_NAME, Action

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any



_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": (int, float),
                          "boolean": bool, "array": list}


def _value(action: Action, name: str, value: Any) -> Any:
    p = action.param(name)
    if p is None:
        names = ", ".join(x.name for x in action.params) or "none"
        raise UsageError(f"`{name}` is not a parameter of {action.name} (its parameters: {names})")
    if p.object_ok and isinstance(value, dict):
        return value  # the JSON object itself, where its text is asked for
    if p.type == "array" and isinstance(value, str):
        value = [value]  # one id where a list was asked for
    if p.type == "integer" and isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) != (p.type == "boolean") or not isinstance(value, _TYPES[p.type]):
        raise UsageError(f"`{name}` of {action.name} must be {'an' if p.type[0] in 'aei' else 'a'} "
                         f"{p.type}, got {type(value).__name__} {value!r:.60}")
    if p.type == "array" and not all(isinstance(v, str) for v in value):
        raise UsageError(f"`{name}` of {action.name} must be a list of strings")
    if not p.checked_by_action and p.enum is not None and value not in p.enum:
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
    if missing:
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
