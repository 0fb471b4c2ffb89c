"""One call of the tool: check the arguments against the declaration, run the
action, answer with a `Reply` (text for the model, JSON document, exit code).

Imports `zapcli.toolapi.spec`, `.env` (Env, Reply: used from here too) and
`.handlers`, `zapcli.errors`; `jsonschema` for the arguments (its validator
is made from the declaration once per process, so what is published and
what is enforced cannot differ). What stays ours is policy: null means not
given, one id stands for a list of one, and the error names the parameter
as the caller spelled it. Measured (tests/bench/bench_arguments.py): ~8 µs
a call (the subset it replaced: ~4 µs); `zapcli call` pays jsonschema's
import (~80 ms) once per process, an MCP server once in its life. Errors never
escape `call`: a ZapcliError becomes a Reply with `error=True` and the
message spelled with parameter names (`for_tool`); anything unexpected
becomes a Reply that says so, so no surface (MCP, run, call) crashes on input.
"""

from __future__ import annotations

from zapcli.errors import UsageError, ZapcliError
from zapcli.render.docschema import error_doc
from zapcli.toolapi.env import Env, Reply
from zapcli.toolapi.spec import BY_NAME, Action

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any



_schemas: dict[str, Any] = {}  # action name -> jsonschema validator of its arguments


def _validator(action: Action) -> Any:
    """jsonschema's validator of an action's arguments, made once per
    process from the declaration: each parameter's type (an `object_ok` one
    also takes the object), arrays of strings, and the enums the dispatcher
    checks (a computed enum, the backend names, is the action's to check)."""
    got = _schemas.get(action.name)
    if got is not None:
        return got
    from jsonschema.validators import Draft202012Validator

    props: dict[str, Any] = {}
    for p in action.params:
        prop: dict[str, Any] = {"type": ["object", p.type] if p.object_ok else p.type}
        if p.type == "array":
            prop["items"] = {"type": "string"}
        if not p.checked_by_action and p.enum is not None:
            prop["enum"] = list(p.enum)
        props[p.name] = prop
    got = Draft202012Validator({"type": "object", "properties": props,
                                "additionalProperties": False})
    _schemas[action.name] = got
    return got


def _loosen(action: Action, name: str, value: Any) -> Any:
    """A value as a caller meant it: one id where a list is asked for, 3.0
    for the whole number 3."""
    p = action.param(name)
    if p is not None and p.type == "array" and isinstance(value, str):
        return [value]
    if p is not None and p.type == "integer" and isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _message(action: Action, err: Any, args: dict[str, Any]) -> str:
    """One jsonschema error, said with the action's parameter names."""
    path = list(err.absolute_path)
    if not path and err.validator == "additionalProperties":
        name = next(k for k in args if action.param(k) is None)
        names = ", ".join(x.name for x in action.params) or "none"
        return f"`{name}` is not a parameter of {action.name} (its parameters: {names})"
    name = str(path[0]) if path else "arguments"
    value = args.get(name)
    if len(path) > 1:
        return f"`{name}` of {action.name} must be a list of strings"
    if err.validator == "type":
        kind = next(k for k in ([err.validator_value] if isinstance(err.validator_value, str)
                                else err.validator_value) if k != "object")
        return (f"`{name}` of {action.name} must be {'an' if kind[0] in 'aei' else 'a'} {kind}, "
                f"got {_said(value)}")
    if err.validator == "enum":
        return (f"`{name}` of {action.name} must be one of {', '.join(err.validator_value)}, "
                f"got {_said(value)}")
    return f"`{name}` of {action.name}: {err.message[:300]}"


_JSON_TYPES = ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string"),
               (list, "array"), (dict, "object"))


def _said(value: Any) -> str:
    """A value a caller sent, in JSON's words (never Python's `str '3'`)."""
    import orjson

    kind = next((k for t, k in _JSON_TYPES if isinstance(value, t)), "null")
    text = orjson.dumps(value, default=str).decode()
    return f"the {kind} {text if len(text) <= 60 else text[:59] + '…'}"


def check(name: Any, args: Any) -> tuple[Action, dict[str, Any]]:
    """The action and its arguments (every parameter present; absent = None).
    Null values are absent: a strict-mode model sends every parameter."""
    action = BY_NAME.get(name) if isinstance(name, str) else None
    if action is None and name is None:
        raise UsageError(f"`action` is missing; give one of: {', '.join(BY_NAME)}")
    if action is None:
        what = _said(name).split(" ", 2)[2] if isinstance(name, str) else f"({_said(name)})"
        raise UsageError(f"unknown action {what}; use one of: {', '.join(BY_NAME)}")
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise UsageError(f"the arguments of {action.name} must be a JSON object")
    given = {key: _loosen(action, key, value) for key, value in args.items() if value is not None}
    errors = list(_validator(action).iter_errors(given))
    if errors:  # an unknown parameter first, then the parameters in the order given
        order = list(given)
        first = min(errors, key=lambda e: order.index(str(e.absolute_path[0]))
                    if e.absolute_path and str(e.absolute_path[0]) in order else -1)
        raise UsageError(_message(action, first, given))
    checked: dict[str, Any] = {p.name: None for p in action.params}
    checked.update(given)
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
        return Reply(exc.for_tool(), error_doc(exc.code, exc.for_tool(), exc.exit_code),
                     exc.exit_code, error=True, code=exc.code)
    except Exception as exc:  # noqa: BLE001 - a tool answers; it never takes its host down
        message = (f"internal error in {name}: {type(exc).__name__}: {exc}; this is a zapcli bug, "
                   "the call can be retried")
        return Reply(message, error_doc("internal", message, 1), 1, error=True, code="internal")


def call_document(document: Any, env: Env) -> Reply:
    """`{"action": ..., <parameters>}` — one call of the `subagent` tool."""
    if not isinstance(document, dict):
        return call(None, None, env) if document is None else Reply(
            "the call must be a JSON object like {\"action\": \"list\"}",
            error_doc("usage", "not a JSON object", 2),
            2, error=True, code="usage")
    args = dict(document)
    return call(args.pop("action", None), args, env)
