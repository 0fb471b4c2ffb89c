"""The `todo` tool: the model's own checklist, kept in the tool instance.
Imports: stdlib, zapcli.agent.types, zapcli.tools._base.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from zapcli.agent.types import ToolContext, ToolResult, ToolSpec
from zapcli.tools._base import BaseTool, ToolError, ok, schema

STATUSES = ("pending", "in_progress", "done")
MARKS = {"pending": "[ ]", "in_progress": "[~]", "done": "[x]"}
MAX_ITEMS = 50
MAX_TEXT = 500


@dataclass
class TodoItem:
    text: str
    status: str = "pending"


class TodoTool(BaseTool):
    spec = ToolSpec(
        name="todo",
        description=(
            "Your own checklist for multi-step work; nobody else reads it. "
            "`action: \"set\"` replaces the whole list with `items` (each {text, status}, "
            "status pending, in_progress or done) — send the full list every time, with "
            "the step you are on as in_progress. `action: \"list\"` shows it. Use it for "
            "tasks of three or more steps; skip it for simple ones."),
        parameters=schema({
            "action": {"type": "string", "enum": ["set", "list"],
                       "description": "set: replace the list with `items`; list: show it."},
            "items": {
                "type": "array",
                "description": "The complete list, in order (for set).",
                "items": {"anyOf": [  # a bare string is a pending item: forgiving, said here
                    schema({
                        "text": {"type": "string", "description": "What to do."},
                        "status": {"type": "string", "enum": list(STATUSES)},
                    }, ["text", "status"]),
                    {"type": "string", "description": "A pending item's text."}]},
            },
        }, ["action"]),
    )

    def __init__(self) -> None:
        self.items: list[TodoItem] = []

    def _run(self, args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        if args["action"] == "set":
            if "items" not in args:
                raise ToolError("action \"set\" needs `items`: the complete list, e.g. "
                                "[{\"text\": \"write tests\", \"status\": \"pending\"}]")
            self.items = self._parse(args["items"])
        return ok(self.render())

    @staticmethod
    def _parse(raw: list[Any]) -> list[TodoItem]:
        if len(raw) > MAX_ITEMS:
            raise ToolError(f"{len(raw)} items is too many (at most {MAX_ITEMS}); merge steps")
        items = []
        for i, entry in enumerate(raw, start=1):
            if isinstance(entry, str):  # a bare string is a pending item: be forgiving
                entry = {"text": entry, "status": "pending"}
            if not isinstance(entry, dict):
                raise ToolError(f"item {i} must be an object {{text, status}}")
            text, status = entry.get("text"), entry.get("status", "pending")
            if not isinstance(text, str) or not text.strip():
                raise ToolError(f"item {i} needs a non-empty `text`")
            if status not in STATUSES:
                raise ToolError(f"item {i} has status {status!r}; use one of "
                                f"{', '.join(STATUSES)}")
            items.append(TodoItem(text.strip()[:MAX_TEXT], status))
        return items

    def render(self) -> str:
        if not self.items:
            return "the checklist is empty"
        done = sum(1 for it in self.items if it.status == "done")
        lines = [f"{i}. {MARKS[it.status]} {it.text}" for i, it in enumerate(self.items, 1)]
        return "\n".join([*lines, f"({done}/{len(self.items)} done)"])
