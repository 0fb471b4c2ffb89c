"""Tool arguments checked against the tool's JSON schema before anything runs.

Imports `zapcli.agent.types`; `jsonschema` when the first call is checked
(not at the runner's start). The loop checks every call this way, built-in
tools, capability tools, plugins' tools and the `subagent` tool alike, so
whatever a schema says (`additionalProperties: false`, types, enums, bounds,
patterns, nested objects) holds: the validation is jsonschema's, one
validator per schema, made once per process.

What stays ours is policy, not validation: lenient where models often slip
("10" for 10, "true" for true), null meaning "not given" for an optional or
nullable argument (strict-mode schemas list every property as required), and
the error message the model reads, worded to say which argument and how to
fix it. Measured (tests/bench/bench_arguments.py, tests/bench/bench_agent_loop.py):
a check costs 20-80 µs where the hand-written subset it replaced cost 1-23
µs; the loop's own overhead per model turn went from ~260 to ~320 µs, against
a model round trip of ~27 ms from a local scripted server (real ones take
100 times that). The first call pays jsonschema's import (~80 ms) once, in a
runner that paid the openai SDK's (~650 ms) to start: no hand-made part is
kept for speed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zapcli.agent.types import ToolSpec


class ArgumentError(Exception):
    """The arguments do not fit the schema; the message says which and how."""


_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}
_KIND = {"string": "a string", "integer": "a whole number", "number": "a number",
         "boolean": "true or false", "array": "a list", "object": "an object", "null": "null"}
_KINDS = {"string": "strings", "integer": "whole numbers", "number": "numbers",
          "boolean": "booleans (true or false)", "array": "lists", "object": "objects"}
_validators: dict[int, tuple[Mapping[str, Any], Any]] = {}  # id(parameters) -> (them, validator)


def _kind(prop: Any) -> Any:
    kind = prop.get("type") if isinstance(prop, Mapping) else None
    if isinstance(kind, list):  # ["string", "null"]: strict mode's optional parameter
        kind = next((k for k in kind if k != "null"), None)
    return kind


def _nullable(prop: Any) -> bool:
    kind = prop.get("type") if isinstance(prop, Mapping) else None
    return isinstance(kind, list) and "null" in kind


def _loosen(value: Any, prop: Any) -> Any:
    """A value as a model meant it: a number or a boolean sent as text."""
    kind = _kind(prop)
    if kind in ("integer", "number") and isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return value
        return int(number) if kind == "integer" and number.is_integer() else number
    if kind == "boolean" and isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
        return value.strip().lower() in _TRUE
    return value


def _validator(parameters: Mapping[str, Any]) -> Any:
    """jsonschema's validator for a tool's parameters, made once: `required`
    without the nullable properties (left out, they are not given)."""
    got = _validators.get(id(parameters))
    if got is not None and got[0] is parameters:
        return got[1]
    from jsonschema.validators import validator_for

    schema = dict(parameters)
    props = schema.get("properties") or {}
    if isinstance(schema.get("required"), list):
        schema["required"] = [r for r in schema["required"] if not _nullable(props.get(r))]
    validator = validator_for(schema)(schema)
    _validators[id(parameters)] = (parameters, validator)
    return validator


def _got(value: Any) -> str:
    if isinstance(value, (dict, list)):
        return type(value).__name__
    return f"{value!r:.60}"


def _message(spec: ToolSpec, err: Any, args: Mapping[str, Any]) -> str:
    """The model's reading of one jsonschema error (of an `anyOf`/`oneOf`:
    the error of the alternative that fits the value best)."""
    if err.context:  # the alternatives' errors: of one whose type the value has, the deepest
        fits = [e for e in err.context if not (e.validator == "type" and not e.relative_path)]
        return _message(spec, max(fits or err.context, key=lambda e: len(e.absolute_path)), args)
    path = list(err.absolute_path)
    props: Mapping[str, Any] = spec.parameters.get("properties", {})
    if not path and err.validator == "additionalProperties":
        unknown = sorted(k for k in args if k not in props)
        return (f"unknown argument(s) {', '.join(unknown)} for `{spec.name}`; "
                f"allowed: {', '.join(props)}")
    if not path and err.validator == "required":
        missing = [r for r in err.validator_value if r not in args]
        return f"missing required argument(s) {', '.join(missing)} for `{spec.name}`"
    name = str(path[0]) if path else "arguments"
    where = name + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path[1:])
    if err.validator == "type":
        given = err.validator_value if isinstance(err.validator_value, list) else [err.validator_value]
        kinds = [str(k) for k in given if k != "null"]
        if len(path) >= 2 and isinstance(path[-1], int) and len(kinds) == 1:
            return (f"argument `{where[:where.rindex('[')]}` must be a list of "
                    f"{_KINDS.get(kinds[0], kinds[0])} (item {path[-1]} is {_got(err.instance)})")
        want = " or ".join(_KIND.get(k, k) for k in kinds)
        return f"argument `{where}` must be {want}, got {_got(err.instance)}"
    if err.validator == "enum":
        choices = ", ".join(repr(c) for c in err.validator_value if c is not None)
        return f"argument `{where}` must be one of {choices}, got {_got(err.instance)}"
    if err.validator in ("minimum", "exclusiveMinimum"):
        edge = "at least" if err.validator == "minimum" else "more than"
        return f"argument `{where}` must be {edge} {err.validator_value}, got {err.instance}"
    if err.validator in ("maximum", "exclusiveMaximum"):
        edge = "at most" if err.validator == "maximum" else "less than"
        return f"argument `{where}` must be {edge} {err.validator_value}, got {err.instance}"
    return f"argument `{where}`: {err.message[:300]}"


def _order(err: Any, names: list[str]) -> tuple[int, int, str]:
    """Which error is told: an unknown argument first, then the arguments in
    the order given, a missing one last."""
    if err.validator == "additionalProperties" and not err.absolute_path:
        return (0, 0, "")
    if err.validator == "required" and not err.absolute_path:
        return (2, 0, "")
    first = str(next(iter(err.absolute_path), ""))
    return (1, names.index(first) if first in names else len(names), str(list(err.absolute_path)))


def check_args(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """Validate `args` against the spec's schema; return them normalized.
    Optional arguments sent as null count as absent; so does a left-out
    nullable one (strict-mode schemas list every property as required)."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ArgumentError(f"arguments of `{spec.name}` must be a JSON object")
    props: Mapping[str, Any] = spec.parameters.get("properties", {})
    required = spec.parameters.get("required", [])
    out = {name: _loosen(value, props.get(name)) for name, value in args.items()
           if not (value is None and (name not in required or _nullable(props.get(name))))}
    try:
        errors = list(_validator(spec.parameters).iter_errors(out))
    except RecursionError:
        raise ArgumentError(f"arguments of `{spec.name}` are nested too deeply") from None
    except Exception as exc:  # noqa: BLE001 - a schema jsonschema cannot apply (a plugin's)
        raise ArgumentError(f"`{spec.name}`'s parameter schema cannot be applied ({exc}); the "
                            "tool cannot be called until its author fixes it") from None
    if errors:
        names = list(out)
        raise ArgumentError(_message(spec, min(errors, key=lambda e: _order(e, names)), out))
    for name, value in out.items():  # 5.0 where a whole number is asked for: 5
        if _kind(props.get(name)) == "integer" and isinstance(value, float):
            out[name] = int(value)
    return out
