"""What an approval shows a person: the whole call, never a summary.
Imports: stdlib only.

`describe()` is the text of one tool call as a person approves it — a
command whole (however long, every line), a write with its content, an edit
with what it replaces, an MCP call with its arguments — in the order a
person reads it: what, where, then all of it. It is raw text: every surface
shows it through `zapcli.render.text.shown` (control characters, bidi
overrides and secret-reference markers escaped; padding made visible),
wrapped to its width, never cut (`zapcli.approvals.decide` puts it in each
Decision; the trail's `approval_request` keeps it as `summary`).
"""

from __future__ import annotations

import json
import os

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

CONFIG = frozenset({"subagents_save", "subagents_delete"})


def _under(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives
        return False


def where(path: str, cwd: str, workspace: str) -> str:
    """`path` as a person reads it: relative to the workspace inside it, else absolute."""
    absolute = os.path.normpath(os.path.join(cwd, os.path.expanduser(path)))
    ws = os.path.normpath(workspace)
    return os.path.relpath(absolute, ws) if _under(absolute, ws) and absolute != ws else absolute


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return str(value)


def describe(tool: str, args: dict[str, Any], *, workspace: str, cwd: str) -> str:
    """Everything `tool(args)` would do, for a person to approve or deny."""
    key = tool.lower()
    args = args if isinstance(args, dict) else {}
    path = args.get("path")
    at = where(path, cwd, workspace) if isinstance(path, str) and path.strip() else "?"
    if key == "bash":
        label = "bash (background)" if args.get("background") is True else "bash"
        return f"{label}: {args.get('command', '')}"
    if key == "write":
        content = args.get("content")
        text = content if isinstance(content, str) else ""
        size = len(text.encode("utf-8", "replace"))
        return f"write: {at} ({size:,} bytes)" + (f"\n{text}" if text else "")
    if key == "edit":
        every = " (replace all)" if args.get("replace_all") is True else ""
        return (f"edit: {at}{every}\nreplace:\n{args.get('old_string', '')}\n"
                f"with:\n{args.get('new_string', '')}")
    if key in ("merge", "pick"):
        how = " --squash" if args.get("squash") else " --rebase" if args.get("rebase") else ""
        what = ("merge it into the checkout" if key == "merge" else
                "merge it, remove the other attempts' trees")
        return f"{key}{how} {args.get('id')}: {what}"
    if key in CONFIG:
        return f"{tool}: {_config_name(args)} ({args.get('scope') or 'workspace'})"
    if key == "mcp_call":
        rest = {k: v for k, v in args.items() if k not in ("server", "tool")}
        return f"mcp_call: {args.get('server', '?')}/{args.get('tool', '?')} {_json(rest)}"
    if key in ("read", "glob", "grep") and isinstance(path, str):
        extra = f" {args.get('pattern')}" if "pattern" in args else ""
        return f"{tool}:{extra} {at}"
    for field in ("url", "query", "pattern", "job_id", "command"):
        if isinstance(args.get(field), str) and len(args) == 1:
            return f"{tool}: {args[field]}"
    return f"{tool}: {_json(args)}"


def _config_name(args: dict[str, Any]) -> str:
    name = args.get("name") or (args.get("fields") or {}).get("name") or "?"
    if not isinstance(name, str) or name == "?":
        import re

        found = re.search(r"(?m)^name:\s*(\S+)", str(args.get("yaml") or ""))
        name = found.group(1) if found else "?"
    return name
