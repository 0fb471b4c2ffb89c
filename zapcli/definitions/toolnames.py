"""Tool names a definition may declare: the grantable set, canonical spelling, suggestions.
Imports only the standard library (the lead may point GRANTABLE at zapcli.tools.registry).

SPEC §7.3 lists the grantable built-in tools; names match case-insensitively and
are stored in the canonical spelling below. §8.4 lists what is never grantable.
"""

from __future__ import annotations

import difflib

# The one place the grantable set lives in this package (SPEC §7.3).
GRANTABLE: tuple[str, ...] = (
    "bash", "task_output", "task_stop", "read", "write", "edit", "glob", "grep",
    "WebFetch", "WebSearch", "use_skill", "todo",
)

_CANONICAL = {name.lower(): name for name in GRANTABLE}

# Names other agent tools use, mapped to ours: only ever offered as suggestions,
# never accepted silently (an unknown name is a diagnostic).
_SYNONYMS = {
    "search": "grep", "find": "glob", "ls": "glob", "list": "glob", "cat": "read",
    "view": "read", "open": "read", "shell": "bash", "sh": "bash", "run": "bash",
    "exec": "bash", "terminal": "bash", "bashoutput": "task_output",
    "killshell": "task_stop", "killbash": "task_stop", "multiedit": "edit",
    "replace": "edit", "create": "write", "fetch": "WebFetch", "http": "WebFetch",
    "todowrite": "todo", "todos": "todo", "skill": "use_skill", "skills": "use_skill",
    "notebookedit": "edit", "websearchtool": "WebSearch",
}

# Never grantable by name (SPEC §8.4), with the reason a user can act on.
_NEVER = {
    "ask_user": "asking the user is never granted to a subagent",
    "askuser": "asking the user is never granted to a subagent",
    "askuserquestion": "asking the user is never granted to a subagent",
    "mcp_search": "MCP tools come from `mcp: {servers: [...]}`, not from `tools`",
    "mcp_describe": "MCP tools come from `mcp: {servers: [...]}`, not from `tools`",
    "mcp_call": "MCP tools come from `mcp: {servers: [...]}`, not from `tools`",
    "memory_write": "memory tools come from `memory: private|shared`, not from `tools`",
    "memory_read": "memory tools come from `memory: private|shared`, not from `tools`",
    "memory_search": "memory tools come from `memory: private|shared`, not from `tools`",
    "kb_search": "kb_search comes from `knowledge: [...]`, not from `tools`",
    "subagent": "only the parent agent has the subagent tool",
    "task": "only the parent agent starts subagents",
    "agents": "definition-management tools are never granted",
    "exitplanmode": "UI tools are never granted",
}


def canonical_tool(name: str) -> str | None:
    """The canonical spelling of a grantable tool (`webfetch` → `WebFetch`), else None."""
    return _CANONICAL.get(name.strip().lower())


def never_grantable_reason(name: str) -> str | None:
    """Why `name` can never be granted by name, or None when it is not such a name."""
    low = name.strip().lower()
    if low.startswith("mcp__") or low.startswith("mcp:"):
        return "raw MCP tools are never granted; declare `mcp: {servers: [...]}`"
    if low.startswith("agents_") or low.startswith("definition"):
        return "definition-management tools are never granted"
    return _NEVER.get(low)


def suggest_tool(name: str) -> str | None:
    """The closest grantable tool for a misspelt `name` (`Serch` → `grep`), or None.

    difflib over the canonical names and well-known synonyms, case-insensitive;
    a synonym match suggests the tool it stands for.
    """
    low = name.strip().lower()
    candidates = list(_CANONICAL) + list(_SYNONYMS)
    best, best_ratio = None, 0.0
    for cand in candidates:
        ratio = difflib.SequenceMatcher(None, low, cand).ratio()
        if ratio > best_ratio:
            best, best_ratio = cand, ratio
    if best is None or best_ratio < 0.6:
        return None
    return _CANONICAL.get(best) or _SYNONYMS[best]
