"""Shared plumbing of the built-in tools: argument checking, paths, folding, deadlines.
Imports: stdlib and zapcli.agent.types only.

Every tool derives from `BaseTool`, whose `run()` never raises: bad arguments,
OS errors and bugs all come back as `ToolResult(ok=False, ...)` saying what to do.
Paths are opened through the context's view (`zapcli.beneath`), never by name.
"""

from __future__ import annotations

import os
import time
from typing import Any

from zapcli.agent.arguments import ArgumentError, check_args
from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.beneath import Refused, View


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


class BaseTool:
    """A tool: `spec` for the model, `_run` for the work. `run` is the safe wrapper."""

    spec: ToolSpec

    def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        try:
            return self._run(check_args(self.spec, args), ctx)
        except (ToolError, ArgumentError, Refused) as e:
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


def view_of(ctx: ToolContext) -> View:
    """The context's view, or (a context built without one) the workspace and
    writable roots as roots, zapcli's own folders hidden but the scratch
    folder (TMPDIR) and the workspace's own tree in them."""
    if ctx.view is None:
        from zapcli.paths import control_roots, own_tree

        ctx.view = View((ctx.workspace, *ctx.writable_roots), control_roots(),
                        (os.environ.get("TMPDIR", ""), own_tree(ctx.workspace) or ""))
    return ctx.view  # type: ignore[no-any-return]


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

