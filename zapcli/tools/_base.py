"""Shared plumbing of the built-in tools: argument checking, paths, folding, deadlines.
Imports: stdlib and zapcli.agent.types only.

Every tool derives from `BaseTool`, whose `run()` never raises: bad arguments,
OS errors and bugs all come back as `ToolResult(ok=False, ...)` saying what to do.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec


class ToolError(Exception):
    """Raised inside a tool body; becomes an error ToolResult with this message."""


def ok(content: str) -> ToolResult:
    return ToolResult(ok=True, content=content)


def fail(content: str) -> ToolResult:
    return ToolResult(ok=False, content=content)


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A strict object schema: no properties beyond the ones listed."""
    return {"type": "object", "properties": properties, "required": required,
            "additionalProperties": False}


_TRUE = {"true", "yes", "1"}
_FALSE = {"false", "no", "0"}


def _coerce(name: str, value: Any, prop: Mapping[str, Any]) -> Any:
    """Check one value against its property schema. Lenient where models often
    slip (a number sent as "10", a boolean as "true"), strict otherwise."""
    kind = prop.get("type")
    if kind == "string":
        if not isinstance(value, str):
            raise ToolError(f"argument `{name}` must be a string, got {type(value).__name__}")
    elif kind in ("integer", "number"):
        if isinstance(value, str):
            try:
                value = float(value.strip())
            except ValueError:
                raise ToolError(f"argument `{name}` must be a number, got {value!r}") from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ToolError(f"argument `{name}` must be a number, got {type(value).__name__}")
        if kind == "integer":
            if value != int(value):
                raise ToolError(f"argument `{name}` must be a whole number, got {value}")
            value = int(value)
        if "minimum" in prop and value < prop["minimum"]:
            raise ToolError(f"argument `{name}` must be at least {prop['minimum']}, got {value}")
    elif kind == "boolean":
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            value = value.strip().lower() in _TRUE
        if not isinstance(value, bool):
            raise ToolError(f"argument `{name}` must be true or false, got {value!r}")
    elif kind == "array":
        if not isinstance(value, list):
            raise ToolError(f"argument `{name}` must be a list, got {type(value).__name__}")
    elif kind == "object" and not isinstance(value, dict):
        raise ToolError(f"argument `{name}` must be an object, got {type(value).__name__}")
    if "enum" in prop and value not in prop["enum"]:
        choices = ", ".join(repr(c) for c in prop["enum"])
        raise ToolError(f"argument `{name}` must be one of {choices}, got {value!r}")
    return value


def check_args(spec: ToolSpec, args: Any) -> dict[str, Any]:
    """Validate `args` against the spec's schema; return them normalized.
    Optional arguments sent as null count as absent."""
    if args is None:
        args = {}
    if not isinstance(args, dict):
        raise ToolError(f"arguments of `{spec.name}` must be a JSON object")
    props: Mapping[str, Any] = spec.parameters.get("properties", {})
    required = spec.parameters.get("required", [])
    unknown = sorted(k for k in args if k not in props)
    if unknown:
        raise ToolError(f"unknown argument(s) {', '.join(unknown)} for `{spec.name}`; "
                        f"allowed: {', '.join(props)}")
    out: dict[str, Any] = {}
    for name, value in args.items():
        if value is None and name not in required:
            continue
        out[name] = _coerce(name, value, props[name])
    missing = [r for r in required if r not in out]
    if missing:
        raise ToolError(f"missing required argument(s) {', '.join(missing)} for `{spec.name}`")
    return out


class BaseTool:
    """A tool: `spec` for the model, `_run` for the work. `run` is the safe wrapper."""

    spec: ToolSpec

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return self._run(check_args(self.spec, args), ctx)
        except ToolError as e:
            return fail(str(e))
        except OSError as e:
            where = f" ({e.filename})" if getattr(e, "filename", None) else ""
            return fail(f"{self.spec.name} failed: {e.strerror or e}{where}")
        except Exception as e:  # a bug in a tool must not end the loop
            return fail(f"{self.spec.name} failed unexpectedly: {type(e).__name__}: {e}")

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        raise NotImplementedError


def resolve_path(ctx: ToolContext, path: str) -> str:
    """Absolute, normalized path: `~` expanded, relative paths taken from ctx.cwd.
    Symlinks are not resolved here (approvals do that before a write runs)."""
    if not path.strip():
        raise ToolError("`path` is empty; give a file path relative to the working "
                        "directory or an absolute one")
    if "\x00" in path:
        raise ToolError("`path` contains a NUL character")
    return os.path.normpath(os.path.join(ctx.cwd, os.path.expanduser(path)))


def show_path(ctx: ToolContext, path: str) -> str:
    """How a path is shown to the model: relative to cwd when under it."""
    try:
        rel = os.path.relpath(path, ctx.cwd)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def remaining_s(ctx: ToolContext) -> float | None:
    """Seconds left before the run's deadline, or None without a deadline."""
    if ctx.deadline_monotonic is None:
        return None
    return ctx.deadline_monotonic - time.monotonic()


def capped_timeout(ctx: ToolContext, wanted: float) -> tuple[float, bool]:
    """`wanted` capped by the deadline; (timeout, capped). Raises when none is left."""
    left = remaining_s(ctx)
    if left is None or left >= wanted:
        return wanted, False
    if left <= 0:
        raise ToolError("the run's deadline has passed; no time is left to run this. "
                        "Finish now and report what you have.")
    return left, True


def fold(text: str, limit: int, what: str = "characters") -> str:
    """Keep head and tail of `text` within `limit` characters, marking the fold."""
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n… [{cut:,} {what} folded] …\n{text[len(text) - half:]}"


def is_binary(sample: bytes) -> bool:
    """A NUL byte in the first block means binary, as git and grep decide."""
    return b"\x00" in sample
