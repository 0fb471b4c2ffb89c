"""The version of every `--json` document: its `"schema"` key,
`"zapcli/<name>@<major>"`, first in the document. The JSON Schema of each
lives in docs/reference/json/<name>.schema.json (tests/e2e/test_json_schemas.py
runs every command and validates what it prints against them).

Imports nothing. The promise: within a major version a document only gains
keys (a script that reads the keys it knows keeps working); removing or
renaming a key, or changing what a value means or its type, makes a new
major (`@2`), said in the changelog. Records nested in a document (a poll
entry, a spawned attempt) carry no key of their own: the document's covers
them. Documents of other formats (`tool-schema`'s tool definitions, `export`
ATIF, `timeline --format perfetto`, `replay --raw`'s trail records) are not
zapcli documents and carry none.
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from typing import Any

MAJOR = 1
# every document name, with the commands that print it
NAMES = {
    "spawn": "spawn, continue", "spawn-attempts": "spawn --attempts", "poll": "poll",
    "wait": "wait", "list": "list", "kill": "kill", "output": "output", "replay": "replay",
    "send": "send", "decision": "approve, deny", "diff": "diff", "attempts": "attempts",
    "merge": "merge", "pick": "pick", "gc": "gc", "remove": "rm, clean", "usage": "usage",
    "doctor": "doctor", "agents": "agents list", "agent": "agents show",
    "agent-change": "agents save, delete, enable, disable, model, copy",
    "board": "board list", "board-claim": "board claim", "board-change": "board add, done, release",
    "board-task": "board show", "trace-export": "trace export",
    "written": "export --output, timeline --output", "worktrees": "worktree list",
    "worktree-rm": "worktree rm", "session": "session", "run": "run",
    "trust": "trust, trust --show, trust --revoke, untrust", "trust-list": "trust --list",
    "error": "any command that fails",
}


def name_of(name: str) -> str:
    """`zapcli/<name>@<major>`."""
    return f"zapcli/{name}@{MAJOR}"


def stamp(name: str, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with its `"schema"` key first (a document it was built from
    gives up its own)."""
    out: dict[str, Any] = {"schema": name_of(name)}
    out.update((k, v) for k, v in doc.items() if k != "schema")
    return out


def error_doc(code: str, message: str, exit_code: int) -> dict[str, Any]:
    """The document of a command (or a tool call) that failed."""
    return stamp("error", {"error": {"code": code, "message": message, "exit_code": exit_code}})
