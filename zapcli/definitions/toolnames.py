"""Tool names a definition may declare: canonical spelling, refusals, suggestions.
Imports zapcli.tools.registry (names only: GRANTABLE and the never-grantable list).

docs/explanation/rules.md#built-in-tools lists the grantable built-in tools; names match case-insensitively and
are stored in the canonical spelling below. docs/explanation/rules.md#undeclared-means-unreachable lists what is never grantable.
"""

from __future__ import annotations

# The grantable set and the refusal list live in the tools room's registry (one
# place for both rooms); this module adds only suggestions and a few prefixes.
from zapcli.tools.registry import GRANTABLE, canonical_name
from zapcli.tools.registry import never_grantable_reason as _registry_reason

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


def canonical_tool(name: str) -> str | None:
    """The canonical spelling of a grantable tool (`webfetch` → `WebFetch`), else None."""
    return canonical_name(name)


def never_grantable_reason(name: str) -> str | None:
    """Why `name` can never be granted by name, or None when it is not such a name."""
    reason = _registry_reason(name)
    if reason:
        return reason
    low = name.strip().lower()
    if low.startswith("mcp:"):
        return _registry_reason("mcp__")
    if low.startswith(("agents_", "definition")):
        return _registry_reason("agents")
    return None


def suggest_tool(name: str) -> str | None:
    """The closest grantable tool for a misspelt `name` (`Serch` → `grep`), or None.

    difflib over the canonical names and well-known synonyms, case-insensitive;
    a synonym match suggests the tool it stands for.
    """
    from difflib import SequenceMatcher  # only for a name that is not a tool

    low = name.strip().lower()
    candidates = list(_CANONICAL) + list(_SYNONYMS)
    best, best_ratio = None, 0.0
    for cand in candidates:
        ratio = SequenceMatcher(None, low, cand).ratio()
        if ratio > best_ratio:
            best, best_ratio = cand, ratio
    if best is None or best_ratio < 0.6:
        return None
    return _CANONICAL.get(best) or _SYNONYMS[best]
