"""Tool arguments checked against the tool's JSON schema before anything runs.

Imports `zapcli.agent.types` only. The loop checks every call this way, built-in
tools, capability tools and the `subagent` tool alike, so a schema's
`additionalProperties: false`, types, enums and bounds always hold. It is a
small subset of JSON Schema (the one our tool specs use), lenient only where
models often slip: "10" for 10, "true" for true.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zapcli.agent.types import ToolSpec


class ArgumentError(Exception):
    """The arguments do not fit the schema; the message says which and how."""


_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def _coerce(name: str, value: Any, prop: Mapping[str, Any]) -> Any:
    """Check one value against its property schema. Lenient where models often
    slip (a number sent as "10", a boolean as "true"), strict otherwise."""
    kind = prop.get("type")
    if isinstance(kind, list):  # ["string", "null"]: strict mode's optional parameter
        kind = next((k for k in kind if k != "null"), None)
    if kind == "string":
        if not isinstance(value, str):
            raise ArgumentError(f"argument `{name}` must be a string, got {type(value).__name__}")
    elif kind in ("integer", "number"):
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ArgumentError(f"argument `{name}` must be a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ArgumentError(f"argument `{name}` must be a number, got {type(value).__name__}")
        if kind == "integer":
            if value != int(value):
                raise ArgumentError(f"argument `{name}` must be a whole number, got {value}")
            value = int(value)
        if "minimum" in prop and value < prop["minimum"]:
            raise ArgumentError(f"argument `{name}` must be at least {prop['minimum']}, got {value}")
        if "maximum" in prop and value > prop["maximum"]:
            raise ArgumentError(f"argument `{name}` must be at most {prop['maximum']}, got {value}")
    elif kind == "boolean":
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            value = value.strip().lower() in _TRUE
        if not isinstance(value, bool):
            raise ArgumentError(f"argument `{name}` must be true or false, got {value!r}")
    elif kind == "array":
        if not isinstance(value, list):
            raise ArgumentError(f"argument `{name}` must be a list, got {type(value).__name__}")
        if (prop.get("items") or {}).get("type") == "string" and not all(
                isinstance(v, str) for v in value):
            raise ArgumentError(f"argument `{name}` must be a list of strings")
    elif kind == "object" and not isinstance(value, dict):
        raise ArgumentError(f"argument `{name}` must be an object, got {type(value).__name__}")
    if "enum" in prop and value not in prop["enum"]:
        choices = ", ".join(repr(c) for c in prop["enum"])
        raise ArgumentError(f"argument `{name}` must be one of {choices}, got {value!r}")
    return value


def _nullable(prop: Any) -> bool:
    kind = prop.get("type") if isinstance(prop, Mapping) else None
    return isinstance(kind, list) and "null" in kind


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
    unknown = sorted(k for k in args if k not in props)
    if unknown and spec.parameters.get("additionalProperties") is False:
        raise ArgumentError(f"unknown argument(s) {', '.join(unknown)} for `{spec.name}`; "
                            f"allowed: {', '.join(props)}")
    out: dict[str, Any] = {}
    for name, value in args.items():
        if value is None and (name not in required or _nullable(props.get(name))):
            continue
        out[name] = _coerce(name, value, props[name]) if name in props else value
    missing = [r for r in required if r not in out and not _nullable(props.get(r))]
    if missing:
        raise ArgumentError(f"missing required argument(s) {', '.join(missing)} for `{spec.name}`")
    return out
